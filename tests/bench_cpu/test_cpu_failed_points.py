"""A failed point never feeds a derived figure: plots, peaks and bandwidths leave out checksum_ok=false rows and say
how many they left out (issue 13)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from archline.fit.errors import ArchlineFitError
from archline.fit.plots.inputs import measured_from_results, observed_curve


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
