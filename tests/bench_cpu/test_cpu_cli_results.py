"""`archline bench list/run` and the archline.results/1 writer."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pytest

from archline.bench.kernels import Counts, KernelSpec, RunResult
from archline.bench.run.rows import MeterInfo, Region, ResultsFile, RunContext, build_row
from archline.cli.main import main
from archline.formats.schema import COLUMNS, SCHEMA, check_row


def test_bench_list(cpu_backend, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "list"]) == 0
    out = capsys.readouterr().out
    assert "cpu_asm" in out and "intensity" in out and "chase" in out
    assert "neon needs aarch64" in out
    assert main(["bench", "list", "--format", "json"]) == 0


@pytest.mark.parametrize("store", [None, "none"])
def test_bench_run_writes_rows(cpu_backend, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                               store: str | None) -> None:
    rc = main(["bench", "run", "--platform", "localhost", "--backend", "cpu_asm", "--kernel", "intensity",
               "--precision", "dp", "--working-set", "96K", "--reps", "2", "--out", str(tmp_path),
               *([] if store is None else ["--store", store])])
    assert rc == 0
    files = list(tmp_path.glob("*.csv"))
    assert len(files) == 1 and not list(tmp_path.glob(".*.tmp"))
    rows = list(csv.DictReader(files[0].open()))
    assert len(rows) >= 33
    assert list(rows[0])[: len(COLUMNS)] == list(COLUMNS)
    for r in rows:
        assert r["schema"] == SCHEMA and r["backend"] == "cpu_asm" and r["kernel"] == "intensity"
        assert r["precision"] == "dp" and r["level"] == "mem" and r["reps"] == "2"
        assert r["checksum_ok"] == "true"
        assert r["energy_j"] == "" and r["meter"] == "" and r["note"].startswith("time only")
        assert float(r["time_s"]) > 0 and int(r["flops_dp"]) > 0 and r["flops_sp"] == "0"
        assert int(r["flops_dp"]) / int(r["bytes_mem"]) == pytest.approx(float(r["intensity_flop_per_byte"]))
    ints = [float(r["intensity_flop_per_byte"]) for r in rows]
    # default: reads + streamed writes from the triad's 1/12 flop/B; --store none: read-only from 0.25
    assert min(ints) == pytest.approx(0.25 if store == "none" else 1 / 12) and max(ints) == pytest.approx(64)
    assert any(x == pytest.approx(0.25) for x in ints)
    assert str(files[0]) in capsys.readouterr().out


@pytest.mark.parametrize("kernel", ["cache", "chase", "int"])
def test_bench_run_other_kernels(cpu_backend, tmp_path: Path, kernel: str) -> None:
    rc = main(["bench", "run", "--kernel", kernel, "--working-set", "64K", "--reps", "1", "--out", str(tmp_path)])
    assert rc == 0
    rows = list(csv.DictReader(next(tmp_path.glob("*.csv")).open()))
    assert rows and all(r["checksum_ok"] == "true" for r in rows)


def test_bench_run_bad_input(cpu_backend, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["bench", "run", "--isa", "avx1024", "--working-set", "64K", "--out", str(tmp_path)])
    assert e.value.code == 2
    assert "archline: error:" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["bench", "run", "--working-set", "-5", "--out", str(tmp_path)])
    assert e.value.code == 2
    with pytest.raises(SystemExit) as e:
        main(["bench", "run", "--reps", "0", "--working-set", "64K", "--out", str(tmp_path)])
    assert e.value.code == 2
    with pytest.raises(SystemExit) as e:
        main(["bench", "run", "--kernel", "cache", "--precision", "sp", "--out", str(tmp_path)])
    assert e.value.code == 2
    assert not list(tmp_path.glob("*.csv"))


def test_row_builder_and_atomic_results_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = KernelSpec("cpu_asm", "intensity", "dp", "mem", {"fma_per_trip": 12})
    res = RunResult(time_s=0.5, reps=3, counts=Counts(flops_dp=6, bytes_mem=24), checksum_ok=True,
                    extra={"isa": "avx2", "effective_clock_hz": 3.0e9, "t0_host_s": 1.0})
    ctx = RunContext.new("localhost", "cpu", "cpu_asm", False)
    row = build_row(ctx, spec, "p0", [Region(res, 0.5)], MeterInfo("", None, False, "time only: test"),
                    ci_rel=0.01, max_regions=9)
    check_row(row)
    assert row["core_mhz"] == 3000.0 and row["bus_bytes"] is None and row["isa"] == "avx2"
    assert "t0_host_s" not in row and row["platform"] == "localhost" and row["note"] == "time only: test"
    out = tmp_path / "a.csv"
    ResultsFile(out).append(row)
    got = list(csv.DictReader(out.open()))
    assert got[0]["flops_dp"] == "6" and got[0]["checksum_ok"] == "true" and got[0]["params"] == "fma_per_trip=12"

    def boom(*a: object, **k: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        ResultsFile(tmp_path / "b.csv")
    assert not (tmp_path / "b.csv").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
