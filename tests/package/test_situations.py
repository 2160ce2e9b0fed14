"""Never destroy, leak or misread a user's data (issue 22): every command, enumerated from the click tree, run with
its *situation* varied rather than its values (tests/support/situations.py): input file kinds (FIFO, /dev/fd pipe,
devices, links, loops, directories), the same file in and out, /dev/null and /dev/full, links to new files, odd
names, a read-only directory and a full disk, signals, a closed stdout, state files from a newer version or with
wrong types, and content that parses but lies. Each case keeps the invariants of ``situations.judge``."""

from __future__ import annotations

import csv
import io
import os
import random
import re
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import badinputs as bi
from support import situations as si

COMMANDS = sorted({" ".join(p) for p, _ in bi.commands()})
SEED = int(os.environ.get("ARCHLINE_SITUATION_SEED", "22"))


@pytest.fixture(scope="module")
def tmpdir_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The temp dir every command sees: whatever is left there is theirs (other processes write to /tmp)."""
    d = tmp_path_factory.mktemp("tmpdir")
    mp = pytest.MonkeyPatch()
    mp.setenv("TMPDIR", str(d))
    mp.setattr(tempfile, "tempdir", str(d))
    yield d
    mp.undo()


@pytest.fixture(scope="module")
def fx(tmp_path_factory: pytest.TempPathFactory, tmpdir_env: Path) -> bi.Fixtures:
    return bi.Fixtures(tmp_path_factory.mktemp("fx"))


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, fx: bi.Fixtures) -> si.LabTemplate:
    return si.LabTemplate(fx, tmp_path_factory.mktemp("lab"))


@pytest.fixture(scope="module")
def situations(fx: bi.Fixtures, lab: si.LabTemplate) -> list[si.Situation]:
    return si.all_situations(fx, lambda: lab)


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory, tmpdir_env: Path) -> si.Runner:
    return si.Runner(tmp_path_factory.mktemp("work"), tmpdir_env)


def _report(results: list[si.Result]) -> str:
    bad = [r for r in results if r.problems]
    return f"{len(bad)} of {len(results)} situations:\n" + "\n".join(r.line() for r in bad)


def _run(sits: list[si.Situation], runner: si.Runner, all_sits: list[si.Situation]) -> list[si.Result]:
    by_id = {s.id: s for s in all_sits}
    return [runner.run(s, by_id) for s in sits]


def test_every_command_has_situations(situations: list[si.Situation], lab: si.LabTemplate) -> None:
    assert lab.ok, f"the lab template could not be submitted: {lab.why}"
    covered = {s.command for s in situations}
    # every command has situations but these, which read no file
    assert set(COMMANDS) - {"lab submit", "ipp example", "ipp optimal", "ipp savings", "ipp timing", "bound",
                            "bench list", "meter list", "platforms list", "model keckler", "model peak",
                            "ipp power", "design-space", "power-bound", "ipp microbench"} <= covered
    assert len(situations) >= 300
    # every case can fail: it expects something, or names the codes or the result it must give
    assert all(s.expect in ("ok", "fail") or s.codes or s.same_as or s.check for s in situations)


@pytest.mark.parametrize("command", COMMANDS)
def test_situations(command: str, situations: list[si.Situation], runner: si.Runner) -> None:
    sits = [s for s in situations if s.command == command and not s.slow and not s.guarded]
    if not sits:
        pytest.skip(f"{command}: every situation it has runs elsewhere (slow, guarded or subprocess)")
    results = _run(sits, runner, situations)
    assert not any(r.problems for r in results), _report(results)


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS)
def test_situations_slow(command: str, situations: list[si.Situation], runner: si.Runner) -> None:
    sits = [s for s in situations if s.command == command and s.slow and not s.guarded]
    if not sits:
        pytest.skip(f"{command}: no slow situations")
    results = _run(sits, runner, situations)
    assert not any(r.problems for r in results), _report(results)


def test_devices_that_never_end_are_refused(situations: list[si.Situation], runner: si.Runner) -> None:
    """/dev/zero as every input, in one child limited to 3 GiB: refused at once as a device (exit 2)."""
    sits = [s for s in situations if s.guarded]
    assert sits
    results = runner.run_guarded(sits)
    assert not any(r.problems for r in results), _report(results)


# --- subprocesses ------------------------------------------------------------------------------------------------

BIG_SWEEP = ('[sweep]\nplatform = "gtx580"\nemulate = true\nquick = true\nkernels = ["intensity"]\n'
             'precisions = ["sp", "dp"]\nout = "sweep-out"\n')

LONG = {
    "bench run": (["bench", "run", "--platform", "gtx580", "--emulate", "--out", "run-out"], 4.0),
    "meter record": (["meter", "record", "--meter", "emulated:4", "--duration", "5", "--out", "rec.csv"], 3.5),
    "bench sweep": (["bench", "sweep", "sweep.toml"], 2.0),
}


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
@pytest.mark.parametrize("command", sorted(LONG))
def test_a_signal_at_a_random_point(command: str, sig: int, tmp_path: Path, tmpdir_env: Path) -> None:
    """SIGTERM does what Ctrl-C does: exit 130, one line, finished outputs whole, no temp file, no process left."""
    args, window = LONG[command]
    cwd = tmp_path / "case"
    cwd.mkdir()
    (cwd / "sweep.toml").write_text(BIG_SWEEP)
    rng = random.Random(f"{SEED}:{command}:{int(sig)}")
    r = si.run_signalled(f"{command} :: {signal.Signals(sig).name} at a random point", args, cwd, tmpdir_env,
                         sig, window_s=window, rng=rng)
    assert r.signalled or r.code == 0, "the command ended before the signal"
    assert not r.problems, r.line()


def test_sigkill_then_rerun_of_a_sweep(tmp_path: Path, tmpdir_env: Path) -> None:
    """A sweep killed outright (no handler runs) and run again: the rerun takes the stale lock, finishes every
    point exactly once, and nothing temporary is left."""
    cwd = tmp_path / "case"
    cwd.mkdir()
    (cwd / "sweep.toml").write_text(BIG_SWEEP)
    rng = random.Random(f"{SEED}:kill")
    killed = si.run_signalled("bench sweep :: SIGKILL", ["bench", "sweep", "sweep.toml"], cwd, tmpdir_env,
                              signal.SIGKILL, window_s=2.0, rng=rng)
    assert killed.signalled, "the sweep ended before SIGKILL"
    again = si.run_signalled("bench sweep :: rerun after SIGKILL", ["bench", "sweep", "sweep.toml"], cwd,
                             tmpdir_env, None, window_s=0.0, rng=rng)
    problems = list(again.problems)
    left = [p for p in si.snapshot(cwd) if p.endswith(".tmp")]
    if left:
        problems.append(f"temp files of the killed run still there after the rerun: {left[:3]}")
    results = cwd / "sweep-out" / "results.csv"
    rows = list(csv.DictReader(io.StringIO(results.read_text()))) if results.exists() else []
    ids = [r["point_id"] for r in rows]
    m = re.search(r"sweep complete: (\d+) points", again.stderr)
    planned = int(m.group(1)) if m else -1
    if len(set(ids)) != planned or len(ids) != planned:
        problems.append(f"{len(ids)} rows, {len(set(ids))} distinct points after the rerun; expected {planned} "
                        "once each")
    assert not problems, again.line().replace(f"problems: {'; '.join(again.problems)}",
                                              f"problems: {'; '.join(problems)}")


@pytest.mark.parametrize("args", [["platforms", "list"], ["model", "show", "gtx580"], ["ipp", "example"],
                                  ["bench", "list"], ["meter", "list"]], ids=lambda a: " ".join(a))
def test_a_closed_stdout_ends_quietly(args: list[str], tmp_path: Path, tmpdir_env: Path) -> None:
    """``archline platforms list | true``: exit 0, nothing on stderr."""
    code, err = si.run_closed_stdout(args, tmp_path, tmpdir_env)
    assert code == 0 and not err.strip(), f"exit {code}; stderr: {err.strip()[-300:]!r}"
    assert not os.listdir(tmp_path)


def test_process_substitution_gives_the_plain_file_result(fx: bi.Fixtures, tmp_path: Path,
                                                           tmpdir_env: Path) -> None:
    """``archline fit <(cat a.csv)`` (a real shell's /dev/fd pipe) prints the coefficients ``fit a.csv`` prints."""
    a = tmp_path / "a.csv"
    a.write_bytes(fx.files["results"].read_bytes())
    env = {**os.environ, "TMPDIR": str(tmpdir_env)}
    cmd = " ".join(si.archline_cmd())
    plain = subprocess.run(["bash", "-c", f"{cmd} fit --format json a.csv"], cwd=tmp_path, capture_output=True,
                           text=True, env=env, timeout=120)
    piped = subprocess.run(["bash", "-c", f"{cmd} fit --format json <(cat a.csv)"], cwd=tmp_path,
                           capture_output=True, text=True, env=env, timeout=120)
    assert plain.returncode == 0, plain.stderr
    assert piped.returncode == 0 and "Traceback" not in piped.stderr, piped.stderr.strip()[-300:]
    assert piped.stdout.replace("/dev/fd/63", "a.csv") == plain.stdout.replace(str(a), "a.csv")
    assert sorted(os.listdir(tmp_path)) == ["a.csv"]


# --- issue 36: what only a process of its own shows ------------------------------------------------------------------

@pytest.mark.parametrize("home", ["a regular file", "unwritable", "XDG_CACHE_HOME", "MPLCONFIGDIR", "missing",
                                  "XDG_CACHE_HOME's parent missing"])
def test_matplotlib_is_given_a_directory_it_can_make(home: str, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The choice ``archline.common.mpl.configure`` makes before matplotlib is imported: archline's own cache dir
    where it can be made, else a private temp dir (removed at exit); a MPLCONFIGDIR the user set is kept."""
    from archline.common import mpl

    (tmp_path / "home-file").write_text("")
    monkeypatch.setattr(mpl, "_DONE", {"dir": ""})
    monkeypatch.setattr(tempfile, "tempdir", os.fspath(tmp_path))
    monkeypatch.delenv("MPLCONFIGDIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", {"a regular file": os.fspath(tmp_path / "home-file"),
                                "unwritable": "/proc/1",
                                "missing": os.fspath(tmp_path / "nonexistent")}.get(home, os.fspath(tmp_path)))
    if home == "XDG_CACHE_HOME's parent missing":      # issue 36 U #5: neither HOME nor that parent is ever made
        monkeypatch.setenv("XDG_CACHE_HOME", os.fspath(tmp_path / "gone" / "xdg"))
    if home == "XDG_CACHE_HOME":
        monkeypatch.setenv("XDG_CACHE_HOME", os.fspath(tmp_path / "xdg"))
    if home == "MPLCONFIGDIR":
        monkeypatch.setenv("MPLCONFIGDIR", os.fspath(tmp_path / "mine"))
    got = mpl.configure()
    assert os.environ["MPLCONFIGDIR"] == got
    want = {"XDG_CACHE_HOME": tmp_path / "xdg" / "archline" / "matplotlib", "MPLCONFIGDIR": tmp_path / "mine"}
    if home in want:
        assert got == os.fspath(want[home])
    else:       # nowhere under HOME: a private dir in the temp dir, not made yet (matplotlib makes it if it runs)
        assert Path(got).parent == tmp_path and Path(got).name.startswith("archline-mpl-") and not Path(got).exists()
        assert not (tmp_path / "nonexistent").exists() and not (tmp_path / "gone").exists()
    assert mpl.configure() == got       # once per process


@pytest.mark.slow
@pytest.mark.parametrize("home", ["a regular file", "unwritable", "unset"])
def test_matplotlib_says_nothing_and_leaves_nothing_whatever_home_is(home: str, tmp_path: Path) -> None:
    """``model plot`` with HOME a regular file, a directory nobody may write (/proc/1), or unset as under cron's
    ``env -i``: exit 0, nothing on stderr (cron mails it), nothing left in the temp dir (matplotlib made a
    ``matplotlib-*`` there and said so in two lines)."""
    tmpd = tmp_path / "tmp"
    tmpd.mkdir()
    (tmp_path / "home-file").write_text("")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TMPDIR": os.fspath(tmpd), "LANG": "C.UTF-8"}
    env.update({k: v for k, v in os.environ.items() if k in ("PYTHONPATH", "VIRTUAL_ENV")})
    if home != "unset":
        env["HOME"] = os.fspath(tmp_path / "home-file") if home == "a regular file" else "/proc/1"
        env["XDG_CACHE_HOME"] = env["HOME"] + "/cache"      # the same trouble for archline's own cache dir
    p = subprocess.run([*si.archline_cmd(), "model", "plot", "gtx580", "--out", "g.png"], cwd=tmp_path,
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0 and not p.stderr.strip(), p.stderr[-400:]
    assert (tmp_path / "g.png").stat().st_size > 0
    assert not os.listdir(tmpd), os.listdir(tmpd)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["Ctrl-C", "SIGTERM"])
def test_port_file_goes_with_the_emulator(sig: int, tmp_path: Path, tmpdir_env: Path) -> None:
    """``meter emulate --port-file F`` stopped by Ctrl-C or SIGTERM: exit 130 and F removed (it named a pty that
    is closed now, a pts number the next terminal gets)."""
    rng = random.Random(f"{SEED}:port:{int(sig)}")
    r = si.run_signalled(f"meter emulate --port-file :: {signal.Signals(sig).name}",
                         ["meter", "emulate", "--port-file", "port.txt"], tmp_path / "case", tmpdir_env, sig,
                         window_s=0.3, rng=rng)
    assert r.signalled and not r.problems, r.line()
    assert not (tmp_path / "case" / "port.txt").exists(), "the port file outlived its pty"
