"""PMD-USB end to end: ``archline meter record`` on the ``pmd://`` emulator (clean and with faults), and
``bench run --emulate`` on a profile whose meter is a PMD-USB on a card's PCIe cables, whose fit recovers the
profile's coefficients within the 3% of the PowerMon 2 test."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.made_up_profile import VALUES, made_up_profile
from support.stream_e2e import record, registered, run_and_fit

from archline.bench.config.options import RunOptions

TOL_REL = 0.03
PROFILE = made_up_profile("pmdbox", "a made-up card measured on its PCIe cables by a PMD-USB", """
[[meters]]
name = "pmd"
kind = "pmd"
port = "/dev/ttyUSB0"
rate_hz = 500
channels = [
  { id = 0, rail = "pcie1_12v", device = "card", nominal_v = 12.0, share = 0.6 },
  { id = 1, rail = "pcie2_12v", device = "card", nominal_v = 12.0, share = 0.4 },
]
""")


def test_meter_record_pmd(tmp_path: Path) -> None:
    with registered("pmd-e2e") as name:
        rc, summary, samples, meta = record("pmd", f"pmd://{name}?speed=2&rate=2000", tmp_path / "t.parquet")
    assert rc == 0
    m = summary["pmd"]
    assert m["emulated"] is True and m["lost_samples"] == 0 and m["sample_hz"] == 2000.0
    assert m["channels"]["0"]["mean_power_w"] == pytest.approx(60.0, rel=0.01)
    assert m["channels"]["1"]["mean_power_w"] == pytest.approx(6.6, rel=0.05)
    assert meta["emulated"] is True and samples.channels() == [0, 1]


def test_meter_record_pmd_counts_faults(tmp_path: Path) -> None:
    with registered("pmd-e2e-faults") as name:
        rc, summary, _, _ = record("pmd", f"pmd://{name}?speed=2&rate=2000&drop=2005&stall=0.3:0.05",
                                   tmp_path / "t.csv", "--max-lost", "0.5")
    assert rc == 0                                     # within --max-lost 0.5, every loss still reported
    m = summary["pmd"]
    assert summary["decoder"]["frames_missing"] == 1 + 100 and summary["decoder"]["frames_discarded"] == 1
    assert summary["decoder"]["bytes_skipped"] == 19
    assert m["lost_samples"] == 2 * 101


def test_bench_run_emulate_through_pmd_recovers_the_profile(tmp_path: Path) -> None:
    prof = tmp_path / "pmdbox.toml"
    prof.write_text(PROFILE)
    rows, got = run_and_fit(RunOptions(platform=str(prof), emulate=True, kernels=("intensity",),
                                       precisions=("sp", "dp"), quick=True, time_compression=20.0, seed=3),
                            tmp_path / "out")
    for r in rows:
        assert r["emulated"] == "true" and "pmd:pmd-emulated" in r["meter"] and int(r["lost_samples"]) == 0
    for k, want in VALUES.items():
        assert got[k] == pytest.approx(want, rel=TOL_REL), (k, got[k], want)
