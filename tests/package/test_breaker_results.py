"""Regression tests for the hostile tester's findings on results, sweeps and the lab (F4, F5, F8, F13, F14, F20):
each test is the tester's reproducer, asserting the contract (one line, the documented exit code, no input
destroyed, nothing half-written left)."""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "results" / "sample" / "gtx580-20261123T010316Z-16c5ec.csv"

RunCli = Callable[..., Any]


def _one_line_error(res: Any, code: int = 2) -> str:
    assert res.exit_code == code, (res.exit_code, res.stdout, res.stderr)
    err = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(err) == 1 and err[0].startswith("archline: error:"), res.stderr
    assert "Traceback" not in res.stderr
    return err[0]


# --- F4: a duplicate column in a results CSV ------------------------------------------------------------------


def _dup_energy_csv(src: Path, out: Path) -> None:
    rows = list(csv.reader(src.open()))
    i = rows[0].index("energy_j")
    with out.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        for k, x in enumerate(rows):
            w.writerow([*x[:i], "energy_j" if k == 0 else str(float(x[i]) * 10), *x[i:]])


def test_f4_duplicate_csv_column_is_refused(tmp_path: Path, run_cli: RunCli) -> None:
    dup = tmp_path / "dup.csv"
    _dup_energy_csv(SAMPLE, dup)
    line = _one_line_error(run_cli("fit", str(dup), "--model", "basic"))
    assert "energy_j" in line and "more than once" in line


def test_f4_writer_refuses_to_append_to_a_duplicate_header(tmp_path: Path) -> None:
    from archline.fit.io.results_file import NotResultsError, ResultsFile

    dup = tmp_path / "dup.csv"
    _dup_energy_csv(SAMPLE, dup)
    before = dup.read_bytes()
    with pytest.raises(NotResultsError, match="energy_j"):
        ResultsFile(dup)
    assert dup.read_bytes() == before


# --- F5: a duplicate column in a Parquet results file or data set ---------------------------------------------


def _dup_energy_parquet(out: Path) -> None:
    import pyarrow.csv as pc
    import pyarrow.parquet as pq

    t = pc.read_csv(SAMPLE)
    pq.write_table(t.append_column("energy_j", t["energy_j"]), out)


def test_f5_duplicate_parquet_column_is_refused(tmp_path: Path, run_cli: RunCli) -> None:
    dup = tmp_path / "dup.parquet"
    _dup_energy_parquet(dup)
    line = _one_line_error(run_cli("fit", str(dup)))
    assert "energy_j" in line


def test_f5_duplicate_column_inside_a_data_set_is_refused(tmp_path: Path, run_cli: RunCli) -> None:
    part = tmp_path / "ds" / "platform=gtx580" / "host=h" / "run_id=r"
    part.mkdir(parents=True)
    _dup_energy_parquet(part / "part-0.parquet")
    line = _one_line_error(run_cli("fit", str(tmp_path / "ds")))
    assert "energy_j" in line and "part-0.parquet" in line


def test_f5_data_set_reader_refuses_duplicate_columns(tmp_path: Path) -> None:
    from archline.fit.io.dataset import DatasetError, ResultsDataset

    part = tmp_path / "ds" / "platform=gtx580" / "host=h" / "run_id=r"
    part.mkdir(parents=True)
    _dup_energy_parquet(part / "part-0.parquet")
    with pytest.raises(DatasetError, match="energy_j"):
        ResultsDataset(tmp_path / "ds").table()
    with pytest.raises(DatasetError, match="energy_j"):
        ResultsDataset(part / "part-0.parquet").table()


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


# --- F14: a lab whose python cannot run -----------------------------------------------------------------------


def _lab_file(tmp_path: Path, python: str, extra: str = "") -> Path:
    lab = tmp_path / "bad.toml"
    lab.write_text(f'[lab]\nresults="r"\nscheduler="local"\npython="{python}"\n{extra}[[machine]]\nname="n1"\n'
                   'platform="gtx580"\nemulate=true\nquick=true\nprecisions=["sp"]\nkernels=["intensity"]\n')
    return lab


def test_f14_missing_python_is_refused_at_submit(tmp_path: Path, run_cli: RunCli) -> None:
    lab = _lab_file(tmp_path, "/nonexistent/python")
    line = _one_line_error(run_cli("lab", "submit", str(lab)))
    assert "/nonexistent/python" in line and "python" in line
    assert not (tmp_path / "r").exists()        # nothing created, nothing submitted


def test_f14_not_executable_python_is_refused_at_submit(tmp_path: Path, run_cli: RunCli) -> None:
    py = tmp_path / "python"
    py.write_text("#!/bin/sh\n")
    py.chmod(0o644)
    line = _one_line_error(run_cli("lab", "submit", str(_lab_file(tmp_path, str(py)))))
    assert "not an executable" in line


@pytest.mark.parametrize("python, extra", [("/bin/false", ""), ("no-such-python-x", 'setup=["true"]\n')],
                         ids=["exits-at-once", "cannot-start"])
def test_f14_local_task_that_cannot_start_ends_failed(tmp_path: Path, python: str, extra: str) -> None:
    """A Python that passes the check but cannot run the task (or a setup line that hides a missing one): the
    controller ends at once; the task is recorded failed, never waited on forever."""
    import subprocess
    import sys

    lab = _lab_file(tmp_path, python, extra)
    r = subprocess.run([sys.executable, "-m", "archline.cli", "lab", "submit", str(lab)], cwd=tmp_path,
                       capture_output=True, text=True, timeout=90)
    assert r.returncode == 3, (r.stdout, r.stderr)
    assert "n1: failed" in r.stderr and "ended before its sweep started" in r.stderr


# --- F20: lab collect refuses rows the fit would refuse -------------------------------------------------------


@pytest.mark.parametrize("column, value, says", [("energy_j", "-7", "negative energy_j"),
                                                 ("time_s", "0", "time_s must be a positive number"),
                                                 ("energy_j", "nan", "energy_j is missing or NaN")])
def test_f20_collect_refuses_non_physical_rows(tmp_path: Path, run_cli: RunCli, column: str, value: str,
                                               says: str) -> None:
    node = tmp_path / "res" / "node01"
    node.mkdir(parents=True)
    rows = list(csv.reader(SAMPLE.open()))
    rows[3][rows[0].index(column)] = value
    with (node / "results.csv").open("w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)
    lab = tmp_path / "lab.toml"
    lab.write_text('[lab]\nresults="res"\nscheduler="local"\n[[machine]]\nname="node01"\nplatform="gtx580"\n'
                   'emulate=true\nquick=true\nprecisions=["sp"]\nkernels=["intensity"]\n')
    line = _one_line_error(run_cli("lab", "collect", str(lab), "--out", str(tmp_path / "ds")))
    assert says in line and "results.csv:4" in line
    assert not (tmp_path / "ds").exists()      # nothing written


def test_f20_collect_uses_the_fit_readers_checks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One validator: the data set writer calls the fit reader's (a second copy would drift)."""
    import archline.fit.io.results as results
    from archline.fit.io.dataset import DatasetError, write_dataset

    calls: list[int] = []
    real = results.from_frame

    def spy(frame: Any, *a: Any, **k: Any) -> Any:
        calls.append(len(frame))
        return real(frame, *a, **k)

    monkeypatch.setattr(results, "from_frame", spy)
    write_dataset([SAMPLE], tmp_path / "ds")
    assert calls and calls[0] > 0

    def refuse(frame: Any, *a: Any, **k: Any) -> Any:
        raise results.BadValueError("refused by the fit's validator")

    monkeypatch.setattr(results, "from_frame", refuse)
    with pytest.raises(DatasetError, match="refused by the fit's validator"):
        write_dataset([SAMPLE], tmp_path / "ds2")
    assert not (tmp_path / "ds2").exists()


# --- F13: bench run on a full disk: one line, nothing half-written ---------------------------------------------


def _tmpfs(mnt: Path, size: str, fill_kib: int) -> None:
    import subprocess

    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)], capture_output=True,
                       text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({r.stderr.strip() or 'not root'}); the injected test covers it")
    if fill_kib:
        (mnt / "fill").write_bytes(b"\0" * (fill_kib << 10))


@pytest.mark.parametrize("size, fill_kib", [("64k", 62), ("64k", 58), ("400k", 0)],
                         ids=["full-at-once", "raw-capture-fails", "full-after-some-points"])
def test_f13_bench_run_on_a_full_disk(tmp_path: Path, size: str, fill_kib: int) -> None:
    import subprocess
    import sys

    mnt = tmp_path / "full"
    _tmpfs(mnt, size, fill_kib)
    try:
        r = subprocess.run([sys.executable, "-m", "archline.cli", "bench", "run", "--platform", "gtx580",
                            "--emulate", "--quick", "--out", str(mnt / "R")], capture_output=True, text=True,
                           timeout=300)
        left = sorted(str(p.relative_to(mnt)) for p in mnt.rglob("*") if p.name != "fill")
    finally:
        if subprocess.run(["umount", str(mnt)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(mnt)], check=False)
    assert r.returncode == 7, r.stderr
    errors = [ln for ln in r.stderr.splitlines() if "error" in ln or "while closing" in ln]
    assert len(errors) == 1 and errors[0].startswith("archline: error:"), r.stderr
    assert "no space left" in errors[0]
    assert left == []        # no .csv.partial naming captures never written, no capture directory


def test_f13_capture_that_cannot_be_finished_discards_the_run(tmp_path: Path, run_cli: RunCli,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a mount: every point measured, then the recorder's capture cannot be finished (ENOSPC while the
    session closes). The rows would name a capture that was never written: the run's files go, one line, exit 7;
    an earlier run's file in the same directory stays."""
    import errno

    from archline.powermon.record.recorder import Recorder

    out = tmp_path / "R"
    out.mkdir()
    (out / "older.csv").write_text("kept\n")
    real_stop = Recorder.stop

    def stop(self: Recorder, *a: Any, **k: Any) -> Any:
        real_stop(self, *a, **k)
        raise OSError(errno.ENOSPC, "No space left on device", str(out / "x" / "powermon-0000.raw"))

    monkeypatch.setattr(Recorder, "stop", stop)
    res = run_cli("bench", "run", "--platform", "gtx580", "--emulate", "--quick", "--kernel", "intensity",
                  "--precision", "sp", "--out", str(out))
    assert res.exit_code == 7, res.stderr
    errors = [ln for ln in res.stderr.splitlines() if "error" in ln or "while closing" in ln]
    assert len(errors) == 1 and errors[0].startswith("archline: error:") and "no space left" in errors[0]
    assert sorted(p.name for p in out.iterdir()) == ["older.csv"]
