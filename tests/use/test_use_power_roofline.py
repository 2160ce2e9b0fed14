"""Power and energy-efficiency rooflines with optimisation ceilings (S4; docs/model.md), from the gtx580 profile
(S1 Tables 3-4), from result rows of the ceiling kernels, from cost tables and from a user's table."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from archline.fit.analyses.s4 import power_roofline as pr
from archline.fit.analyses.s4.inputs import load_ceiling_inputs
from archline.fit.plots.power_roofline import plot_power_roofline
from archline.formats.platforms.profiles import load_platform
from archline.model.errors import ArchlineFitError


def test_use_power_ceilings_gtx580() -> None:
    """Each roof's cap is the board's highest power in the model, pi0 + pi_flop + pi_mem (S0 eq.8 at I = B_tau;
    S4 measures P_peak on the whole board): SP 122 + 99.7 pJ x 1581.06 GFLOP/s + 513 pJ/B x 192.4 GB/s = 378.3 W,
    DP 122 + 212 pJ x 197.63 GFLOP/s + 98.7 W = 262.6 W (S1 Tables 3-4). EE at the peak = F/P (S4 eq.9)."""
    cs = {c.label: c for c in pr.ceilings_from_platform(load_platform("gtx580"))}
    mem_w = 513e-12 * 192.4e9
    assert cs["SP flops"].peak_power_w == pytest.approx(122 + 99.7e-12 * 1581.06e9 + mem_w)
    assert cs["DP flops"].peak_power_w == pytest.approx(122 + 212e-12 * 197.63e9 + mem_w)
    assert cs["DRAM with SP flops"].peak_power_w == cs["SP flops"].peak_power_w
    assert cs["DRAM with DP flops"].peak_power_w == cs["DP flops"].peak_power_w
    assert cs["SP flops"].efficiency_per_j == pytest.approx(1581.06e9 / 378.332882)
    assert cs["DRAM with SP flops"].kind == "memory"


@pytest.mark.parametrize("name", ["gtx580", "gtx680", "i7-950", "fermi-sample", "gtx580-capped"])
def test_use_every_model_point_on_or_under_its_roof(name: str) -> None:
    """issue 27 item 4: every kernel the model places (I = 1/4 ... 64, each precision) is on or under its roof,
    and compute- and memory-bound ones lie on the roof's slope; with a power cap (delta_pi = 150 W on the GTX 580)
    the cap pi0 + delta_pi bounds the throttled kernels too."""
    from dataclasses import replace as dc_replace

    pl = load_platform("gtx580" if name == "gtx580-capped" else name)
    if name == "gtx580-capped":
        pl = dc_replace(pl, constants={**pl.constants, "delta_pi": dc_replace(pl.constants["pi0"], value=150.0)})
    cs = pr.ceilings_from_platform(pl)
    pts = pr.model_points(pl)
    assert pts
    touching = 0
    for p in pts:
        c = pr.roof_for(p, cs)
        assert c is not None, p
        roof = float(pr.power_ceiling_w(p.energy_per_unit_j, c.rate_per_s, c.peak_power_w))
        assert p.power_w <= roof * (1 + 1e-9), f"{name} {p.precision} {p.kind} {p.label}: {p.power_w} > {roof}"
        touching += p.power_w >= roof * (1 - 1e-9)
    assert touching >= len(pts) // 2     # uncapped, every point touches its slope


def test_use_power_ceiling_shape() -> None:
    """P <= min(P_peak, F * E/W): a line through the origin of slope F, flat at P_peak (S4 eq.6, eq.8); over EE
    the same ceiling is P = min(P_peak, F/EE) (eq.9); no P_peak (time-only) leaves the line uncapped."""
    p = pr.power_ceiling_w([0.0, 50e-12, 1e-9], 1e12, 200.0)
    assert list(p) == pytest.approx([0.0, 50.0, 200.0])
    assert list(pr.efficiency_ceiling_w([1e9, 20e9, 1e12], 1e12, 200.0)) == pytest.approx([200.0, 50.0, 1.0])
    assert list(pr.power_ceiling_w([1e-9], 1e12, None)) == pytest.approx([1000.0])


def test_use_model_points_sit_on_the_peak_lines() -> None:
    """The gtx580 model's compute-bound kernels (I >= B_tau) run at F = 1/tau_flop, so P = E/T = F * E/W: on the
    line of slope F; memory-bound ones (I <= B_tau) on the line of slope BW = 1/tau_mem (S0 eq.1-8, S4 eq.6-8)."""
    pl = load_platform("gtx580")
    pts = pr.model_points(pl, ("sp",))
    f, bw = 1 / pl.value("tau_flop_sp"), 1 / pl.value("tau_mem")
    comp = [p for p in pts if p.kind == "compute"]
    mem = [p for p in pts if p.kind == "memory"]
    b_tau = pl.value("tau_mem") / pl.value("tau_flop_sp")                   # 8.22 flop/B (S1 Table 3)
    assert len(comp) == sum(i >= b_tau for i in pr.MODEL_INTENSITIES) == 3   # I = 16, 32, 64
    assert len(mem) == sum(i <= b_tau for i in pr.MODEL_INTENSITIES) == 6    # I = 1/4 ... 8
    for p in comp:
        assert p.power_w == pytest.approx(f * p.energy_per_unit_j)
    for p in mem:
        assert p.power_w == pytest.approx(bw * p.energy_per_unit_j)


def _rows(path: Path, rows: list[dict[str, Any]]) -> Path:
    base = {"schema": "archline.results/1", "run_id": "t", "platform": "box", "backend": "emulated",
            "level": "mem", "reps": 1, "flops_sp": 0, "flops_dp": 0, "bytes_mem": 0, "checksum_ok": "true"}
    pd.DataFrame([{**base, **r} for r in rows]).to_csv(path, index=False)
    return path


CEILING_ROWS = [  # label, kernel, flops, bytes, time, energy: rates 1, 4 TFLOP/s and 200 GB/s
    ("t×b 1×1", "ceil_flop", 2e12, 1e6, 2.0, 200.0),
    ("FMA+ILP", "ceil_flop", 8e12, 1e6, 2.0, 300.0),
    ("normal", "ceil_mem", 1e11, 4e11, 2.0, 260.0),
]


def test_use_ceilings_from_result_rows(tmp_path: Path) -> None:
    """A ceiling kernel's row gives rate = W/T (or Q/T) and P_peak = E/T; its point (E/W, P) lies on its own
    ceiling's slope, at the knee."""
    csv = _rows(tmp_path / "r.csv", [{"kernel": k, "precision": "sp", "flops_sp": w, "bytes_mem": q, "time_s": t,
                                      "energy_j": e, "params": f"ceiling={lab};chains=8"}
                                     for lab, k, w, q, t, e in CEILING_ROWS])
    got = load_ceiling_inputs([str(csv)])
    cs = {c.label: c for c in got.ceilings}
    assert set(cs) == {"box [emulated] SP t×b 1×1", "box [emulated] SP FMA+ILP", "box [emulated] SP normal"}
    assert cs["box [emulated] SP FMA+ILP"].rate_per_s == pytest.approx(4e12)
    assert cs["box [emulated] SP FMA+ILP"].peak_power_w == pytest.approx(150.0)
    assert cs["box [emulated] SP normal"].kind == "memory"
    assert cs["box [emulated] SP normal"].rate_per_s == pytest.approx(2e11)
    for p in got.points:
        c = cs[p.label]
        assert p.power_w == pytest.approx(c.rate_per_s * p.energy_per_unit_j)
        assert p.energy_per_unit_j == pytest.approx(c.knee_j_per_unit)
    assert not got.notes


def test_use_time_only_ceilings_say_so(tmp_path: Path) -> None:
    csv = _rows(tmp_path / "r.csv", [{"kernel": k, "precision": "dp", "flops_dp": w, "bytes_mem": q, "time_s": t,
                                      "energy_j": "", "params": f"ceiling={lab}", "backend": "opencl"}
                                     for lab, k, w, q, t, _ in CEILING_ROWS])
    got = load_ceiling_inputs([str(csv)], "dp")
    assert [c.peak_power_w for c in got.ceilings] == [None, None, None] and not got.points
    assert "3 ceiling(s) were measured without power" in got.notes[0]
    out = plot_power_roofline(got.ceilings, tmp_path / "c.png", got.points, notes=got.notes)
    assert out.read_bytes()[:4] == b"\x89PNG"
    assert not load_ceiling_inputs([str(csv)], "dp").ceilings[0].label.startswith("box [emulated]")


def test_use_intensity_rows_go_to_the_side_that_bounds_them(tmp_path: Path) -> None:
    """The rows' own balance (fastest flop rate / fastest bandwidth, here 8 flop/B) splits them: I >= 8 on the
    compute plot, I <= 8 on the memory plot; failed checksums and non-positive energies are left out, said."""
    rows = []
    for i in (0.5, 2.0, 8.0, 32.0):
        w, q = i * 1e9, 1e9
        t = max(w / 80e9, q / 10e9)
        rows.append({"kernel": "intensity", "precision": "sp", "flops_sp": w, "bytes_mem": q, "time_s": t,
                     "energy_j": 50 * t})
    rows.append({**rows[0], "checksum_ok": "false"})
    rows.append({**rows[1], "energy_j": -1.0})
    got = load_ceiling_inputs([str(_rows(tmp_path / "r.csv", rows))])
    comp = sorted(p.energy_per_unit_j for p in got.points if p.kind == "compute")
    mem = sorted(p.energy_per_unit_j for p in got.points if p.kind == "memory")
    assert len(comp) == 2 and len(mem) == 3                  # I = 8 on both plots
    assert all(p.power_w == pytest.approx(50.0) for p in got.points)
    assert any("1 row(s) failed their checksum" in n for n in got.notes)
    assert any("non-positive energy_j" in n for n in got.notes)


TABLE = """
[[ceiling]]
label = "FMA+ILP"
kind = "compute"
rate_per_s = 3.4e12
peak_power_w = 148.0
[[ceiling]]
label = "strided"
kind = "memory"
rate_per_s = 4.0e10
[[point]]
label = "my stencil"
kind = "memory"
energy_per_unit_j = 4.1e-10
power_w = 121.0
"""


def test_use_users_table(tmp_path: Path) -> None:
    f = tmp_path / "mine.toml"
    f.write_text(TABLE)
    got = load_ceiling_inputs([str(f)])
    assert [(c.label, c.rate_per_s, c.peak_power_w) for c in got.ceilings] == [
        ("FMA+ILP", 3.4e12, 148.0), ("strided", 4.0e10, None)]
    assert got.points[0].energy_per_unit_j == 4.1e-10 and got.points[0].kind == "memory"


@pytest.mark.parametrize(("text", "match"), [
    ('[[ceiling]]\nlabel = "x"\nkind = "cache"\nrate_per_s = 1.0\n', "'kind' must be compute or memory"),
    ('[[ceiling]]\nkind = "compute"\nrate_per_s = -1\n', "'rate_per_s' must be a positive number"),
    ('[[ceiling]]\nkind = "compute"\nrate_per_s = 1\ngflops = 2\n', "unknown field"),
    ('[[ceiling]\n', "not valid TOML"),
])
def test_use_bad_users_table_is_one_line(run_cli: Callable[..., Any], tmp_path: Path, text: str,
                                          match: str) -> None:
    f = tmp_path / "mine.toml"
    f.write_text(text)
    r = run_cli("plot", str(f), "--kind", "ceilings", "--out", str(tmp_path / "c.png"))
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and match in r.stderr, r.stderr
    assert str(f) in r.stderr or "not valid TOML" in r.stderr
    assert not (tmp_path / "c.png").exists()


def test_use_cli_ceilings_of_rows_costs_and_table(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    """`archline plot R/*.csv costs.json table.toml --kind ceilings`: a table on stdout, the figure written."""
    csv = _rows(tmp_path / "r.csv", [{"kernel": k, "precision": "sp", "flops_sp": w, "bytes_mem": q, "time_s": t,
                                      "energy_j": e, "params": f"ceiling={lab}"}
                                     for lab, k, w, q, t, e in CEILING_ROWS])
    table = tmp_path / "mine.toml"
    table.write_text(TABLE)
    out = tmp_path / "c.png"
    r = run_cli("plot", str(csv), "gtx580", str(table), "--kind", "ceilings", "--out", str(out))
    assert r.exit_code == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("box [emulated] SP FMA+ILP"))
    assert line.split()[4:8] == ["compute", "4000", "GFLOP/s", "150"]
    assert "gtx580 SP flops" in r.stdout and "FMA+ILP" in r.stdout and out.exists()
    r = run_cli("plot", str(tmp_path / "nothing.csv"), "--kind", "ceilings", "--out", str(out))
    assert r.exit_code == 2 and "does not exist" in r.stderr


def test_use_nothing_to_draw(tmp_path: Path) -> None:
    csv = _rows(tmp_path / "r.csv", [{"kernel": "chase", "precision": "int32", "time_s": 1.0, "energy_j": 1.0}])
    with pytest.raises(ArchlineFitError, match="nothing to draw"):
        load_ceiling_inputs([str(csv)])
    assert np.isfinite(pr.MODEL_INTENSITIES).all()
