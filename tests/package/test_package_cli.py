"""The package as a user meets it: the console script, every subcommand loads, the native CPUID probe."""

from __future__ import annotations

import importlib
import json
import os
import pty
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.powermon_helpers import run

from archline.cli.main import SUBCOMMANDS


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_every_subcommand_imports_and_has_help(name: str, run_cli) -> None:  # type: ignore[no-untyped-def]
    module, attr = SUBCOMMANDS[name].split(":")
    assert getattr(importlib.import_module(module), attr) is not None
    r = run_cli(name, "--help")
    assert r.exit_code == 0, r.stderr
    assert "Usage:" in r.stdout


def test_console_script_top_level_help() -> None:
    r = subprocess.run([sys.executable, "-m", "archline.cli", "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    for name in SUBCOMMANDS:
        assert name in r.stdout


def test_unknown_command_is_one_line(run_cli) -> None:  # type: ignore[no-untyped-def]
    r = run_cli("no-such-command")
    assert r.exit_code == 2
    assert "Traceback" not in r.stderr


def test_cpuid_probe_matches_proc_cpuinfo() -> None:
    from archline.bench.cpu_asm.cpu_features import cpu_features

    f = cpu_features()
    if f["arch"] != "x86_64":
        pytest.skip("x86-64 only check")
    flags = set()
    with open("/proc/cpuinfo") as fh:
        for line in fh:
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    assert f["sse2"] == ("sse2" in flags)
    assert f["avx2"] == ("avx2" in flags)
    assert f["fma"] == ("fma" in flags)
    assert f["avx512f"] == ("avx512f" in flags)


# --- folded from test_breaker_cli.py (a review round's regression tests) -----------------------------------------
# Cases a hostile tester found (issue 22's before-resolve review), kept as regression tests: closed and full
# standard streams, figures to pipes, numbers a machine cannot have, labels that must travel, checks before work.


REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "results" / "sample"
RESULTS = next(iter(sorted(SAMPLE.glob("*.csv"))))
COSTS = SAMPLE / "gtx580.costs.json"


def _sh(cmd: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    exe = f"{sys.executable} -m archline.cli"
    return subprocess.run(["bash", "-c", cmd.replace("archline", exe)], cwd=cwd, capture_output=True, timeout=120)


@pytest.mark.parametrize(("redirect", "code"), [(">&-", 0), ("2>&-", 2), ("2>/dev/full", 2),
                                                (">/dev/full 2>/dev/full", 7)])
def test_closed_or_full_standard_streams_keep_the_exit_code(tmp_path: Path, redirect: str, code: int) -> None:
    cmd = "archline model show gtx580 --format json" if "full 2" in redirect else \
        "archline platforms list" if redirect == ">&-" else "archline fit nonexistent.csv"
    r = _sh(f"{cmd} {redirect}; echo rc=$?", tmp_path)
    assert r.stdout.decode().strip().endswith(f"rc={code}"), r
    assert b"Traceback" not in r.stderr


def test_no_raw_python_warning_reaches_the_user(tmp_path: Path) -> None:
    lines = RESULTS.read_text().splitlines(keepends=True)
    small = tmp_path / "h10.csv"
    small.write_text("".join(lines[:11]))
    r = _sh(f"archline fit {small}", tmp_path)
    err = r.stderr.decode()
    assert "Warning:" not in err and "warnings.warn" not in err, err
    assert all(ln.startswith("archline: ") for ln in err.splitlines() if ln.strip()), err


def test_a_figure_is_written_to_a_pipe_and_a_fifo(tmp_path: Path) -> None:
    r = _sh("archline plot gtx580 --out /dev/stdout | wc -c", tmp_path)
    assert r.returncode == 0 and int(r.stdout.decode().split()[0]) > 10000, r
    fifo = tmp_path / "f.png"
    os.mkfifo(fifo)
    got: list[bytes] = []
    t = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    t.start()
    r = _sh(f"archline model plot gtx580 --out {fifo}", tmp_path)
    t.join(60)
    assert r.returncode == 0, r.stderr
    assert got and got[0][:8] == b"\x89PNG\r\n\x1a\n" and fifo.is_fifo()


@pytest.mark.parametrize("where", ["costs", "profile"])
def test_a_value_in_pj_without_its_unit_is_refused(tmp_path: Path, run_cli: Callable[..., Any], where: str) -> None:
    if where == "costs":
        d = json.loads(COSTS.read_text())
        d["coefficients"]["eps_mem"].pop("unit")
        d["coefficients"]["eps_mem"]["value"] = 512.9
        f = tmp_path / "nu.json"
        f.write_text(json.dumps(d))
    else:
        text = (REPO / "formats" / "platforms" / "gtx580.toml").read_text()
        f = tmp_path / "mine.toml"
        import re

        f.write_text(re.sub(r"(?m)^eps_mem\s*=.*$", "eps_mem = { value = 513 }", text, count=1))
        assert "eps_mem = { value = 513 }" in f.read_text()
    r = run_cli("model", "show", str(f), "--format", "json")
    assert r.exit_code == 2 and "eps_mem" in r.stderr and "not a real machine's" in r.stderr, r.stderr
    assert r.stdout == ""


def test_fit_points_carry_the_emulated_label(tmp_path: Path, run_cli: Callable[..., Any]) -> None:
    pts = tmp_path / "pts.csv"
    assert run_cli("fit", str(RESULTS), "--points", str(pts)).exit_code == 0
    header, first = pts.read_text().splitlines()[:2]
    k = header.split(",").index("emulated")
    assert first.split(",")[k] == "true"          # results/sample is an emulated GTX 580 run


def test_compare_checks_its_figure_before_any_work(tmp_path: Path, run_cli: Callable[..., Any]) -> None:
    a = tmp_path / "s.csv"
    a.write_bytes(RESULTS.read_bytes())
    (tmp_path / "cmp.png").symlink_to(a)
    r = run_cli("compare", str(a), "--by", "run", "--figure", str(tmp_path / "cmp.png"))
    assert r.exit_code == 2 and "is an input" in r.stderr and r.stdout == ""
    assert a.read_bytes() == RESULTS.read_bytes()


@pytest.mark.parametrize(("body", "needle"), [
    ("name,time_s,flops_sp,bytes_mem,bytes_mem\napp,1.0,1e9,1e9,5e12\n", "appears more than once"),
    ("name,time_s,flops_sp,bytes_mem\napp,0,1e9,1e9\n", "must be positive"),
])
def test_predict_refuses_a_counts_file_it_would_misread(tmp_path: Path, run_cli: Callable[..., Any], body: str,
                                                        needle: str) -> None:
    f = tmp_path / "p.csv"
    f.write_text(body)
    r = run_cli("predict", str(f), "--costs", str(COSTS), "--format", "json")
    assert r.exit_code == 2 and needle in r.stderr and r.stdout == "", r.stderr


def test_control_characters_from_data_or_names_are_shown_escaped(tmp_path: Path,
                                                                 run_cli: Callable[..., Any]) -> None:
    import csv

    rows = list(csv.reader(RESULTS.open()))
    k = rows[0].index("platform")
    for r in rows[1:]:
        r[k] = "gtx\x1b]0;pwned\x07580"
    f = tmp_path / "esc.csv"
    with f.open("w", newline="") as fh:
        csv.writer(fh, lineterminator="\n").writerows(rows)
    r = run_cli("fit", str(f), "--model", "basic")
    assert r.exit_code == 0 and "\x1b" not in r.stdout and "\x07" not in r.stdout
    assert "gtx\\x1b]0;pwned\\x07580" in r.stdout
    out = tmp_path / "a\nb.png"
    r = run_cli("model", "plot", "gtx580", "--out", str(out))
    assert r.exit_code == 0 and out.exists()
    assert [ln for ln in r.stdout.splitlines() if ln.startswith("wrote")] == [f"wrote {tmp_path}/a\\nb.png"]


def test_issue27_commands_show_the_reading_and_refuse_an_empty_item(run_cli: Callable[..., Any]) -> None:
    r = run_cli("bound", "fft", "--fast-memory", "512K", "--fft-bound", "half")
    assert r.exit_code == 0 and "[0.5*log2(S) flop/word]" in r.stdout and "/ (0.5*log2(S))" in r.stdout
    r = run_cli("bound", "fft", "--fast-memory", "512K")
    assert "[log2(S) flop/word]" in r.stdout and "0.5*" not in r.stdout
    r = run_cli("tradeoff", "fermi-sample", "--f", "1,,2")
    assert r.exit_code == 2 and "--f" in r.stderr and r.stdout == ""


def test_a_new_name_under_dev_is_a_file_not_a_stream(tmp_path: Path) -> None:
    from archline.common.outputs import is_stream

    assert is_stream("/dev/null") and not is_stream("/dev/no-such-archline-output.png")


def test_a_ceiling_without_pi0_says_so(tmp_path: Path) -> None:
    from archline.fit.analyses.s4.power_roofline import ceilings_from_platform
    from archline.formats.platforms.profiles import load_platform

    (roof,) = ceilings_from_platform(load_platform("titan"))       # the Titan profile has no pi0 (S1 Table 6)
    assert "without pi0" in roof.label


# --- folded from test_breaker26_cli.py (a review round's regression tests) ---------------------------------------
# Regressions from the 26th hostile pass over the CLI's conventions: shell completion with a malformed
# environment, tables on a terminal (NO_COLOR, narrow), and the one-line messages of typed values.


_RUN = [sys.executable, "-c", "import sys; from archline.cli.main import main; sys.exit(main())"]


def _run_env(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*_RUN, *args], env=env, capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.parametrize("cword", ["abc", None, "1.5"])
@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_completion_with_a_malformed_environment_offers_nothing(shell: str, cword: str | None) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("COMP_CWORD", "COMP_WORDS")}
    env.update({"_ARCHLINE_COMPLETE": f"{shell}_complete", "COMP_WORDS": "archline bench run --kernel "})
    if cword is not None:
        env["COMP_CWORD"] = cword
    res = _run_env(env)
    assert res.returncode == 0, res.stderr
    assert res.stderr == "" and res.stdout.strip() == ""
    env.pop("COMP_WORDS")    # nothing at all: still nothing
    res = _run_env(env)
    assert (res.returncode, res.stderr, res.stdout.strip()) == (0, "", "")


def test_completion_still_completes_kernels() -> None:
    env = {**os.environ, "_ARCHLINE_COMPLETE": "bash_complete", "COMP_WORDS": "archline bench run --kernel cha",
           "COMP_CWORD": "4"}
    res = _run_env(env)
    assert res.returncode == 0 and res.stdout.splitlines() == ["plain,chase"], res.stderr


def _on_a_terminal(env: dict[str, str], *args: str) -> str:
    """What the command prints with stdout and stderr on a pseudo-terminal."""
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen([*_RUN, *args], stdout=slave, stderr=slave, stdin=subprocess.DEVNULL, env=env)
        os.close(slave)
        chunks = []
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:       # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        assert proc.wait(timeout=60) == 0
    finally:
        os.close(master)
    return b"".join(chunks).decode()


def test_no_color_means_no_escapes_on_a_terminal() -> None:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "120"}
    out = _on_a_terminal(env, "platforms", "list")
    assert "gtx580" in out and "\x1b" not in out
    env.pop("NO_COLOR")
    assert "\x1b[1m" in _on_a_terminal(env, "platforms", "list")   # the bold header, when colour is allowed


def test_a_narrow_terminal_never_cuts_a_value() -> None:
    env = {**os.environ, "COLUMNS": "20", "NO_COLOR": "1"}
    out = _on_a_terminal(env, "platforms", "list")
    assert "…" not in out
    listed = subprocess.run([*_RUN, "platforms", "list", "--format", "json"], env=env, capture_output=True,
                            text=True, timeout=60, check=True).stdout
    rows = json.loads(listed)
    rows = rows if isinstance(rows, list) else next(v for v in rows.values() if isinstance(v, list))
    words = {w for r in rows for k in ("name", "device_kind", "title") for w in str(r[k]).split()}
    assert words and all(w in out for w in words), sorted(w for w in words if w not in out)[:5]


_cli = run       # archline ARGS in this process: (exit code, stdout, stderr)


def test_out_dash_is_refused_in_one_line_and_makes_no_file(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = _cli(capsys, "model", "plot", "gtx580", "--out", "-")
    assert code == 2 and err.count("\n") == 1 and "'-' is not an output here" in err and "/dev/stdout" in err
    code, _, err = _cli(capsys, "lab", "collect", "lab.toml", "--out", "-")
    assert code == 2 and "'-'" in err
    assert list(tmp_path.iterdir()) == []


def test_a_device_is_no_results_directory(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _cli(capsys, "bench", "run", "--emulate", "--out", "/dev/null")
    assert code == 7 and "/dev/null is a device or pipe, not a directory" in err and "is a file" not in err


@pytest.mark.parametrize(("size", "says"), [("1e400", "must be a finite size in bytes, got 1e400"),
                                            ("nan", "must be a finite size"),
                                            ("1e308G", "too large: 1e308G"), ("2E", "cannot read size"),
                                            ("-5", "must be positive, got -5")])
def test_fast_memory_says_what_is_wrong(capsys: pytest.CaptureFixture[str], size: str, says: str) -> None:
    code, _, err = _cli(capsys, "bound", "fft", "--fast-memory", size)
    assert code == 2 and says in err and err.count("\n") == 1


def test_fast_memory_in_range_still_works(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _cli(capsys, "bound", "fft", "--fast-memory", "512K", "--format", "json")
    assert code == 0 and json.loads(out)["fast_memory_bytes"] == 524288


def test_an_intensity_that_underflows_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _cli(capsys, "model", "predict", "gtx580", "-i", "1e-320", "--format", "json")
    assert code == 2 and out == "" and "too small" in err and "--intensity" in err
    code, out, _ = _cli(capsys, "model", "predict", "gtx580", "-i", "1e-300,1e300", "--format", "json")
    points = json.loads(out)["points"]
    assert code == 0 and len(points) == 2 and all(p["power_w"] is not None for p in points)


def test_a_value_missing_after_an_option_names_the_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _cli(capsys, "model", "show", "gtx580", "--format")
    assert code == 2
    assert err.startswith("archline: error: archline model show: Option '--format' requires an argument")
    assert "see 'archline model show --help'" in err


@pytest.fixture()
def samples_csv(tmp_path: Path) -> Path:
    """A short emulated recording: its t_s is the meter's clock, far from zero."""
    out = tmp_path / "t.csv"
    res = subprocess.run([*_RUN, "meter", "record", "--meter", "emulated:8", "--duration", "0.5", "--out", str(out)],
                         capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 0, res.stderr
    return out


def test_integrate_names_the_samples_file_for_its_sidecar(capsys: pytest.CaptureFixture[str],
                                                          samples_csv: Path) -> None:
    sidecar = Path(f"{samples_csv}.json")
    assert sidecar.exists()
    code, out, err = _cli(capsys, "meter", "integrate", str(sidecar))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "is a JSON sidecar" in err and f"give the samples file it describes: {samples_csv}" in err
    assert "middle of a line" not in err


def test_integrate_prints_the_timeline_start_and_end_take(capsys: pytest.CaptureFixture[str],
                                                          samples_csv: Path) -> None:
    code, out, _ = _cli(capsys, "meter", "integrate", str(samples_csv), "--format", "json")
    t0, t1 = json.loads(out)["t_start_s"], json.loads(out)["t_end_s"]
    assert code == 0 and t0 > 3        # not seconds from the start: --start 1 --end 3 cannot work on it
    code, out, _ = _cli(capsys, "meter", "integrate", str(samples_csv))
    assert code == 0 and f"t_s {t0:.6f} to {t1:.6f}" in out
    code, out, _ = _cli(capsys, "meter", "integrate", str(samples_csv), "--start", f"{t0 + (t1 - t0) / 4:.6f}",
                        "--end", f"{t1 - (t1 - t0) / 4:.6f}", "--format", "json")
    assert code == 0 and json.loads(out)["t_start_s"] > t0


@pytest.mark.parametrize(("fmt", "name"), [("table", "x.json"), ("csv", "x.json"), ("json", "x.csv")])
def test_fit_refuses_an_out_suffix_of_another_format(capsys: pytest.CaptureFixture[str], tmp_path: Path, fmt: str,
                                                     name: str) -> None:
    results = Path(__file__).parents[1] / "data" / "derived_basic_model_params.csv"
    code, _, err = _cli(capsys, "fit", str(results), "--format", fmt, "--out", str(tmp_path / name))
    assert code == 2 and f"--format is {fmt}" in err and list(tmp_path.iterdir()) == []


def test_a_bad_value_of_a_repeatable_option_names_the_option_not_an_index(run_cli) -> None:  # type: ignore[no-untyped-def]
    """Breaker 26 item 20: '--kernel[0] must be one of ...' showed an internal index."""
    r = run_cli("bench", "run", "--kernel", "nosuch")
    assert r.exit_code == 2 and "bench run --kernel must be one of" in r.stderr and "[0]" not in r.stderr
