"""A failed point never feeds a derived figure: plots, peaks and bandwidths leave out checksum_ok=false rows and say
how many they left out (issue 13)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from archline.fit.plots.inputs import measured_from_results, observed_curve
from archline.model.errors import ArchlineFitError


def _write(path: Path, rows: list[dict[str, object]]) -> Path:
    cols = ["schema", "platform", "backend", "kernel", "precision", "time_s", "flops_sp", "flops_dp", "bytes_mem",
            "checksum_ok"]
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols)
        w.writeheader()
        for r in rows:
            w.writerow({"schema": "archline.results/1", "platform": "localhost", "backend": "cpu_asm",
                        "kernel": "intensity", "precision": "dp", "flops_sp": 0, **r})
    return path


def test_failed_rows_left_out_of_points_and_peaks(tmp_path: Path) -> None:
    # two good points (10 GFLOP/s at 1 flop/B, 40 GFLOP/s at 8 flop/B) and one failed point that would set both
    # the peak (100 GFLOP/s) and the bandwidth (50 GB/s) if it were drawn
    path = _write(tmp_path / "r.csv", [
        {"time_s": 1.0, "flops_dp": 10e9, "bytes_mem": 10e9, "checksum_ok": "true"},
        {"time_s": 1.0, "flops_dp": 40e9, "bytes_mem": 5e9, "checksum_ok": "true"},
        {"time_s": 1.0, "flops_dp": 100e9, "bytes_mem": 50e9, "checksum_ok": "false"},
    ])
    (m,) = measured_from_results(path, "dp")
    assert m.left_out == 1 and "1 failed checksum, left out" in m.label
    assert len(m.intensity_flop_per_byte) == 2
    curve = observed_curve(m)
    assert curve.machine.tau_flop_s == pytest.approx(1 / 40e9)        # peak from the good rows only
    assert curve.machine.tau_mem_s_per_byte == pytest.approx(1 / 10e9)  # bandwidth from the good rows only


def test_all_failed_is_an_error(tmp_path: Path) -> None:
    path = _write(tmp_path / "r.csv", [{"time_s": 1.0, "flops_dp": 1e9, "bytes_mem": 1e9, "checksum_ok": "false"}])
    with pytest.raises(ArchlineFitError, match="failed its checksum"):
        measured_from_results(path, "dp")


def test_bench_run_with_a_failed_checksum_exits_3_and_keeps_the_row(run_cli, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The real cpu_asm path, with the L2 point's read-back spoiled after the kernel ran: the run writes every row,
    the spoiled one with checksum_ok=false, says so on stderr and exits 3 (docs/errors.md)."""
    from dataclasses import replace

    from archline.bench.cpu_asm.prepared import CpuPrepared
    from archline.common.exits import EXIT_POINTS_FAILED

    real_run = CpuPrepared.run

    def spoiled(self: CpuPrepared, reps: int):  # type: ignore[no-untyped-def]
        res = real_run(self, reps)
        return replace(res, checksum_ok=False) if self.spec.level == "l2" else res

    monkeypatch.setattr(CpuPrepared, "run", spoiled)
    r = run_cli("bench", "run", "--platform", "localhost", "--kernel", "cache", "--quick", "--reps", "1",
                "--out", str(tmp_path / "o"))
    assert r.exit_code == EXIT_POINTS_FAILED, r.stderr
    assert "failed their checksum" in r.stderr and "Traceback" not in r.stderr
    rows = list(csv.DictReader(next((tmp_path / "o").glob("*.csv")).open()))
    bad = [row for row in rows if row["checksum_ok"] == "false"]
    assert bad and {row["level"] for row in bad} == {"l2"}
    assert any(row["checksum_ok"] == "true" for row in rows)
