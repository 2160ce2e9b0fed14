"""Power / energy-efficiency roofline ceilings (S4; model.md §11, RECONSTRUCTED) from the gtx580 profile
(S1 Tables 3-4)."""

from __future__ import annotations

from pathlib import Path

import pytest

from archline.fit.analyses import power_roofline as pr
from archline.fit.platforms.profiles import load_platform


def test_use_power_ceilings_gtx580() -> None:
    """P_peak = pi0 + eps/tau: SP 122 + 99.7 pJ x 1581.06 GFLOP/s = 279.6 W; DRAM 122 + 513 pJ/B x 192.4 GB/s
    = 220.7 W (S1 Tables 3-4). EE at the peak = F/P (S4 eq.9)."""
    cs = {c.label: c for c in pr.ceilings_from_platform(load_platform("gtx580"))}
    assert cs["SP flops"].peak_power_w == pytest.approx(122 + 99.7e-12 * 1581.06e9)
    assert cs["DP flops"].peak_power_w == pytest.approx(122 + 212e-12 * 197.63e9)
    assert cs["DRAM"].peak_power_w == pytest.approx(122 + 513e-12 * 192.4e9)
    assert cs["SP flops"].efficiency_per_j == pytest.approx(1581.06e9 / 279.631682)
    assert cs["DRAM"].kind == "memory"


def test_use_power_ceiling_shape() -> None:
    """P <= min(P_peak, F * E/W): a line through the origin of slope F, flat at P_peak (S4 eq.6, eq.8)."""
    p = pr.power_ceiling_w([0.0, 50e-12, 1e-9], 1e12, 200.0)
    assert list(p) == pytest.approx([0.0, 50.0, 200.0])


def test_use_power_roofline_plot(tmp_path: Path) -> None:
    cs = pr.ceilings_from_platform(load_platform("gtx580"))
    out = pr.plot_power_roofline(cs, tmp_path / "p.png", [pr.KernelPoint("k", "compute", 150e-12, 230.0)])
    assert out.stat().st_size > 5000
