"""bench sweep: lock, resume by config hash, atomic appends under SIGKILL, log, exit codes (issue 7)."""

from __future__ import annotations

import csv
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.cli_errors import one_line_error

from archline.bench.run.sweep import EXIT_CONFIG, EXIT_LOCKED, EXIT_MORE_TO_DO, EXIT_OK, RESULTS_NAME, load_config

SWEEP = [sys.executable, "-m", "archline.bench.run.sweep"]


def _config(tmp: Path, name: str = "nightly", **extra: object) -> Path:
    keys: dict[str, object] = {"platform": '"gtx580"', "emulate": "true", "quick": "true",
                               "time_compression": 100.0, "out": '"out"', **extra}
    lines = ["[sweep]"] + [f"{k} = {v}" for k, v in keys.items()]
    p = tmp / f"{name}.toml"
    p.write_text("\n".join(lines) + "\n")
    return p


def _check_results(path: Path) -> list[dict[str, str]]:
    """Every line complete (ends in a newline, as many fields as the header); return the rows."""
    data = path.read_bytes()
    assert data.endswith(b"\n"), "results file ends in a partial line"
    lines = data.decode().splitlines()
    header = next(csv.reader([lines[0]]))
    rows = []
    for i, line in enumerate(lines[1:], start=2):
        fields = next(csv.reader([line]))
        assert len(fields) == len(header), f"line {i} has {len(fields)} fields, header has {len(header)}"
        rows.append(dict(zip(header, fields, strict=False)))
    for r in rows:
        assert r["schema"] == "archline.results/1"
        assert float(r["time_s"]) > 0 and float(r["energy_j"]) > 0
        assert r["emulated"] == "true" and r["backend"] == "emulated"
    return rows


def _n_points(cfg: Path) -> int:
    from archline.bench.run.session import open_session

    s = open_session(load_config(cfg).options)
    try:
        return len(s.points)
    finally:
        s.close()


def _kill_and_finish(tmp: Path, kills: int, seed: int) -> None:
    cfg = _config(tmp)
    rng = random.Random(seed)
    for _ in range(kills):
        p = subprocess.Popen([*SWEEP, str(cfg)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.2, 0.9))
        p.send_signal(signal.SIGKILL)
        p.wait()
    done = subprocess.run([*SWEEP, str(cfg)], capture_output=True, text=True, timeout=120)
    assert done.returncode == EXIT_OK, done.stderr
    rows = _check_results(tmp / "out" / RESULTS_NAME)
    ids = [r["point_id"] for r in rows]
    assert len(ids) == len(set(ids)), "a point was written twice"
    assert len(ids) == _n_points(cfg)
    assert len({r["config_hash"] for r in rows}) == 1
    # a further run has nothing to do and says so
    again = subprocess.run([*SWEEP, str(cfg)], capture_output=True, text=True, timeout=60)
    assert again.returncode == EXIT_OK
    assert len(_check_results(tmp / "out" / RESULTS_NAME)) == len(ids)
    log = (tmp / "out" / "sweep.log").read_text()
    assert "already done" in log


@pytest.mark.slow
def test_runner_sigkill_20_times_then_finish(tmp_path: Path) -> None:
    """Acceptance: SIGKILL at random points 20 times, then finish: every point once, no partial row."""
    _kill_and_finish(tmp_path, 20, seed=2)


@pytest.mark.slow
def test_runner_sigkill_50_times_then_finish(tmp_path: Path) -> None:
    _kill_and_finish(tmp_path, 50, seed=3)


def test_runner_second_sweep_exits_at_once_saying_locked(tmp_path: Path) -> None:
    cfg = _config(tmp_path, time_compression=5.0)
    first = subprocess.Popen([*SWEEP, str(cfg)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        lock = tmp_path / "out" / ".sweep.lock"
        t_end = time.monotonic() + 30
        while time.monotonic() < t_end and not (lock.exists() and lock.read_text().startswith("pid")):
            time.sleep(0.05)
        t0 = time.monotonic()
        second = subprocess.run([*SWEEP, str(cfg)], capture_output=True, text=True, timeout=30)
        assert time.monotonic() - t0 < 10
        assert second.returncode == EXIT_LOCKED
        assert "locked" in second.stderr and f"pid {first.pid}" in second.stderr
        assert "Traceback" not in second.stderr
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    # the kernel dropped the dead process's lock: the next run gets it (one point is enough to show it)
    cfg.write_text(cfg.read_text() + "max_points = 1\n")
    third = subprocess.run([*SWEEP, str(cfg)], capture_output=True, text=True, timeout=120)
    assert third.returncode in (EXIT_OK, EXIT_MORE_TO_DO), third.stderr


def test_runner_sweep_config_typo_names_the_key(tmp_path: Path) -> None:
    cfg = tmp_path / "bad.toml"
    cfg.write_text('[sweep]\nplatfrom = "gtx580"\n')
    r = subprocess.run([*SWEEP, str(cfg)], capture_output=True, text=True, timeout=60)
    assert r.returncode == EXIT_CONFIG
    assert "platfrom" in r.stderr and "did you mean 'platform'" in r.stderr
    assert "Traceback" not in r.stderr


def test_runner_sweep_unknown_platform_and_bad_cap(tmp_path: Path) -> None:
    cfg = tmp_path / "a.toml"
    cfg.write_text('[sweep]\nplatform = "gtx9999"\nemulate = true\n')
    r = subprocess.run([*SWEEP, str(cfg)], capture_output=True, text=True, timeout=60)
    assert r.returncode == EXIT_CONFIG and "unknown platform 'gtx9999'" in r.stderr
    cfg.write_text('[sweep]\nplatform = "gtx580"\nemulate = true\npower_caps_w = [5000.0]\n')
    r = subprocess.run([*SWEEP, str(cfg)], capture_output=True, text=True, timeout=60)
    assert r.returncode == EXIT_CONFIG and "outside" in r.stderr and "allowed range" in r.stderr


@pytest.mark.slow
def test_runner_sweep_resume_max_points_and_config_change(tmp_path: Path) -> None:
    from archline.bench.run.sweep import main

    cfg = _config(tmp_path, max_points=5)
    assert main([str(cfg)], echo=lambda s: None) == EXIT_MORE_TO_DO
    rows = _check_results(tmp_path / "out" / RESULTS_NAME)
    assert len(rows) == 5
    # a partial line left by a power cut is cut off before appending
    with open(tmp_path / "out" / RESULTS_NAME, "ab") as f:
        f.write(b"archline.results/1,half-a-row")
    assert main([str(cfg)], echo=lambda s: None) == EXIT_MORE_TO_DO
    rows = _check_results(tmp_path / "out" / RESULTS_NAME)
    assert len(rows) == 10
    assert "removed a partial last line" in (tmp_path / "out" / "sweep.log").read_text()
    # another config (other precisions) hashes differently: its points are measured afresh in the same file
    cfg2 = _config(tmp_path, precisions='["dp"]', kernels='["intensity"]')
    assert main([str(cfg2)], echo=lambda s: None) == EXIT_OK
    rows = _check_results(tmp_path / "out" / RESULTS_NAME)
    assert len({r["config_hash"] for r in rows}) == 2


def test_runner_sigterm_exits_130_and_keeps_rows(tmp_path: Path) -> None:
    from archline.bench.run.sweep import EXIT_INTERRUPTED

    cfg = _config(tmp_path, time_compression=20.0)
    p = subprocess.Popen([*SWEEP, str(cfg)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    results = tmp_path / "out" / RESULTS_NAME
    t_end = time.monotonic() + 60
    while time.monotonic() < t_end and (not results.exists() or results.read_text().count("\n") < 2):
        time.sleep(0.05)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode == EXIT_INTERRUPTED, err
    assert "interrupted" in err and "Traceback" not in err
    assert len(_check_results(results)) >= 1
    assert "interrupted; finished rows are kept" in (tmp_path / "out" / "sweep.log").read_text()


# --- folded from test_breaker_results.py, F8 (a review round's regression tests) ---------------------------------
# Regression tests for the hostile tester's findings on results, sweeps and the lab (F4, F5, F8, F13, F14, F20):
# each test is the tester's reproducer, asserting the contract (one line, the documented exit code, no input
# destroyed, nothing half-written left).


RunCli = Callable[..., Any]


_one_line_error = one_line_error



# --- F8: a sweep never writes over its own config -------------------------------------------------------------


def _sweep_config(out: str) -> str:
    return ('[sweep]\nplatform="gtx580"\nkernels=["intensity"]\nprecisions=["sp"]\nquick=true\nemulate=true\n'
            f'out="{out}"\n')


@pytest.mark.parametrize("name", [".sweep.lock", "sweep.log", "results.csv", "traces"])
def test_f8_sweep_refuses_its_config_as_an_output(tmp_path: Path, run_cli: RunCli, name: str) -> None:
    out = tmp_path / "o"
    out.mkdir()
    config = out / name
    text = _sweep_config(str(out))
    config.write_text(text)
    line = _one_line_error(run_cli("bench", "sweep", str(config)))
    assert "is an input" in line
    assert config.read_text() == text
    assert sorted(p.name for p in out.iterdir()) == [name]     # no lock, log, results or traces made


def test_f8_sweep_refuses_a_log_that_links_to_its_config(tmp_path: Path, run_cli: RunCli) -> None:
    out = tmp_path / "o2"
    out.mkdir()
    config = out / "sweep.log"
    text = _sweep_config(".")
    config.write_text(text)
    _one_line_error(run_cli("bench", "sweep", str(config)))
    assert config.read_text() == text
    linked = tmp_path / "o3"
    linked.mkdir()
    cfg2 = tmp_path / "cfg.toml"
    cfg2.write_text(_sweep_config(str(linked)))
    (linked / "sweep.log").symlink_to(cfg2)
    _one_line_error(run_cli("bench", "sweep", str(cfg2)))
    assert cfg2.read_text() == _sweep_config(str(linked))


def test_f8_sweep_module_entry_point_refuses_too(tmp_path: Path) -> None:
    from archline.bench.run.sweep import main
    from archline.common.outputs import reset

    out = tmp_path / "o"
    out.mkdir()
    config = out / ".sweep.lock"
    config.write_text(_sweep_config(str(out)))
    said: list[str] = []
    reset()
    try:
        assert main([str(config)], echo=said.append) == 2
    finally:
        reset()
    assert len(said) == 1 and "is an input" in said[0]
    assert config.read_text() == _sweep_config(str(out))


