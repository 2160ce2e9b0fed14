"""Issue 36 (hangs): a memory limit is one line naming it, never a spin (common/limits.py), and SIGTERM is answered
while the main thread is stuck in C (common/sigwatch.py)."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.datasets import part_csv

from archline.fit.regress.synthetic import GTX580

#: a command stuck in one C call that never returns and never sees SIGTERM (blocked in its thread, as a BLAS
#: routine retrying a failed mmap is deaf to it), writing an output through the atomic writer when it gets stuck
STUCK = """
import ctypes, signal, sys
import click
from archline.cli import main as m
from archline.common.atomic import atomic_path
OUT, READY, COMMAND = sys.argv[1:4]

@click.command()
def stuck():
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    with atomic_path(OUT) as tmp:
        tmp.write_text("half")
        open(READY, "w").close()
        ctypes.CDLL(None).sleep(600)

@click.command()
def deferred():
    noted = []
    signal.signal(signal.SIGTERM, lambda *a: noted.append(a[0]))   # this command defers the stop on purpose
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    open(READY, "w").close()
    ctypes.CDLL(None).usleep(800000)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    click.echo(f"deferred {noted}")

@click.command()
def sleepy():
    with atomic_path(OUT) as tmp:
        tmp.write_text("half")
        open(READY, "w").close()
        import time
        time.sleep(600)

@click.command()
def botched():
    open(READY, "w").close()
    try:
        import time
        time.sleep(600)
    except KeyboardInterrupt:          # a library's clean-up that fails because it was cut off
        raise RuntimeError("Invalid bounding box") from None

m.SUBCOMMANDS["sleepy"] = "__main__:sleepy"
m.SUBCOMMANDS["botched"] = "__main__:botched"
m.SUBCOMMANDS["stuck"] = "__main__:stuck"
m.SUBCOMMANDS["deferred"] = "__main__:deferred"
sys.argv = ["archline", COMMAND]
m.main()
"""


def _signal_when_ready(tmp_path: Path, command: str, sig: int = signal.SIGTERM
                       ) -> tuple[subprocess.CompletedProcess[str], Path]:
    out, ready = tmp_path / "out.txt", tmp_path / "ready"
    proc = subprocess.Popen([sys.executable, "-c", STUCK, str(out), str(ready), command], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ready.exists(), proc.communicate()[1]
    proc.send_signal(sig)
    try:
        stdout, stderr = proc.communicate(timeout=60)    # a safety net: before the fix it waited 600 s
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError("SIGTERM was not answered") from None
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr), out


def test_sigterm_is_answered_while_the_main_thread_is_stuck_in_c(tmp_path: Path) -> None:
    res, out = _signal_when_ready(tmp_path, "stuck")
    assert res.returncode == 130, res.stderr
    assert res.stderr.strip().splitlines()[-1] == "archline: interrupted"
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["ready"]   # its temp file removed


def test_a_command_that_defers_sigterm_on_purpose_is_left_to_do_so(tmp_path: Path) -> None:
    res, _ = _signal_when_ready(tmp_path, "deferred")
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == f"deferred [{int(signal.SIGTERM)}]"


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGTERM])
def test_sighup_stops_a_command_as_sigterm_does(tmp_path: Path, sig: int) -> None:
    """Issue 36 S #4: a closed terminal (SIGHUP) is 130, 'archline: interrupted', its temp files removed (was
    killed by the signal, 129, temp files left)."""
    res, out = _signal_when_ready(tmp_path, "sleepy", sig)
    assert res.returncode == 130, res.stderr
    assert res.stderr.strip().splitlines() == ["archline: interrupted"]
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["ready"]


def test_an_error_the_interrupt_caused_is_still_an_interrupt(tmp_path: Path) -> None:
    """Issue 36 S #10: an error raised because a write was cut off by SIGTERM (matplotlib's 'Invalid bounding
    box') is 130, not that error's code."""
    res, _ = _signal_when_ready(tmp_path, "botched")
    assert res.returncode == 130, res.stderr
    assert res.stderr.strip().splitlines() == ["archline: interrupted"]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_while_the_console_script_imports_is_130_without_a_traceback(sig: int) -> None:
    """Issue 36 S #8: the console script's handlers are in before anything heavy is imported (archline/__init__):
    a signal during the imports is 130 and 'archline: interrupted' (was a KeyboardInterrupt traceback, or killed
    by SIGTERM)."""
    code = (f"import sys; sys.argv = ['/usr/bin/archline']; import archline, os; os.kill(os.getpid(), {int(sig)}); "
            "import archline.cli.main; print('not stopped')")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 130, res.stderr
    assert res.stderr.strip().splitlines() == ["archline: interrupted"] and res.stdout == ""


def test_importing_archline_as_a_library_leaves_the_signals_alone() -> None:
    code = ("import signal, archline, archline.cli.main; "
            "print(signal.getsignal(signal.SIGTERM) == signal.SIG_DFL, signal.getsignal(signal.SIGHUP) == "
            "signal.SIG_DFL)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert res.stdout.split() == ["True", "True"], res.stderr


def _limited(limit_b: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (limit_b, limit_b))


def _fit(tmp_path: Path, limit_b: int, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    csv = part_csv(tmp_path, "r", GTX580, "node01", "run-a", 1)
    return subprocess.run([sys.executable, "-c", "import sys; from archline.cli.main import main; main()", "fit",
                           str(csv), "--model", "basic", "--one-precision"], capture_output=True, text=True,
                          timeout=120, preexec_fn=lambda: _limited(limit_b), env={**os.environ, **(env or {})},
                          check=False)


def test_a_memory_limit_too_small_is_one_line_naming_it(tmp_path: Path) -> None:
    res = _fit(tmp_path, 200 * 2**20)
    assert res.returncode == 2, res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith("archline: error: out of memory under the address-space limit of 200 MiB "
                           "(ulimit -v 204800)") and "raise the limit" in line


def test_fit_under_a_batch_systems_limit_never_spins(tmp_path: Path) -> None:
    """The issue's case: `ulimit -v 600000` spun at 100% CPU, deaf to SIGTERM. Now it fits, or (libraries
    larger elsewhere) says the limit in one line; a spin would be the timeout."""
    res = _fit(tmp_path, 600000 * 1024)
    assert res.returncode in (0, 2), res.stderr
    if res.returncode == 2:
        assert len(res.stderr.strip().splitlines()) == 1 and "ulimit -v 600000" in res.stderr
    else:
        assert "eps_flop_sp" in res.stdout


def test_prepare_keeps_threads_lean_only_under_a_limit_and_keeps_the_users_choice() -> None:
    code = ("import json, os; from archline.common.limits import prepare; env = {'OPENBLAS_NUM_THREADS': '4'}; "
            "print(json.dumps([prepare(env), env]))")
    free = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert free.stdout.strip() == '[false, {"OPENBLAS_NUM_THREADS": "4"}]'
    held = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True,
                          preexec_fn=lambda: _limited(2 * 2**30))
    import json

    on, env = json.loads(held.stdout)
    assert on is True and env == {"OPENBLAS_NUM_THREADS": "4", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                                  "ARROW_IO_THREADS": "1", "ARROW_DEFAULT_MEMORY_POOL": "system",
                                  "MALLOC_ARENA_MAX": "1",
                                  "JE_ARROW_MALLOC_CONF": "background_thread:false,narenas:1"}


def test_a_measured_command_keeps_its_own_thread_counts_under_a_limit() -> None:
    """The thread limits archline sets for itself under ulimit -v are not the measured program's: it sees the
    environment it was given (a variable the user set, kept; one archline added, gone)."""
    shell = 'echo "OB=${OPENBLAS_NUM_THREADS-unset} OMP=${OMP_NUM_THREADS-unset}" >&2'
    res = subprocess.run([sys.executable, "-c", "import sys; from archline.cli.main import main; main()", "measure",
                          "--platform", "localhost", "--format", "json", "--", "sh", "-c", shell],
                         capture_output=True, text=True, timeout=120, preexec_fn=lambda: _limited(3 * 2**30),
                         env={**{k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"},
                              "OMP_NUM_THREADS": "3"}, check=False)
    assert res.returncode == 0, res.stderr
    assert "OB=unset OMP=3" in res.stderr.splitlines()


def test_fit_under_a_limit_does_not_abort_when_its_reader_thread_allocates(tmp_path: Path) -> None:
    """Issue 36 #2: under `ulimit -v 550000` the fit's reader thread got a malloc arena of its own (128 MiB of
    address space); that failed, pyarrow's CSV reader threw std::bad_alloc in the thread and the process aborted
    (exit 134). One arena for all threads (limits.lean_malloc) keeps it a plain fit."""
    res = _fit(tmp_path, 550000 * 1024)
    assert res.returncode == 0, res.stderr
    assert "eps_flop_sp" in res.stdout


def test_a_limit_below_archlines_footprint_is_refused_before_anything_starts(tmp_path: Path) -> None:
    """Issue 36 #9: `lab submit` under `ulimit -v 300000` started the task, then failed to import pyarrow while
    waiting, stopped the task and recorded it as interrupted (exit 130). Below the floor nothing starts."""
    (tmp_path / "lab.toml").write_text('[lab]\nresults = "res"\nscheduler = "local"\n[[machine]]\nname = "z"\n'
                                       'platform = "gtx580"\nkernels = ["intensity"]\nprecisions = ["sp"]\n'
                                       'emulate = true\nquick = true\n')
    res = subprocess.run([sys.executable, "-c", "import sys; from archline.cli.main import main; main()", "lab",
                          "submit", "lab.toml"], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                         preexec_fn=lambda: _limited(300000 * 1024), check=False)
    assert res.returncode == 2, res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert "need 400 MiB of address space" in line and "(ulimit -v 300000)" in line
    assert not (tmp_path / "res").exists()        # nothing prepared, submitted or started
