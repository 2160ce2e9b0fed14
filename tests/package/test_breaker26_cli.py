"""Regressions from the 26th hostile pass over the CLI's conventions: shell completion with a malformed
environment, tables on a terminal (NO_COLOR, narrow), and the one-line messages of typed values."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from support.powermon_helpers import run

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
