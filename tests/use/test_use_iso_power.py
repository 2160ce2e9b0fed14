"""`archline iso-power`: N small systems against one big one at equal power (S1 §4.1, §4.4.4, §5.2.3)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from archline.fit.analyses.choi.cluster import iso_power, system
from archline.formats.platforms.profiles import load_platform
from archline.model.errors import ArchlineFitError

TITAN = system(load_platform("titan"))


def test_q062_arndales_per_titan_from_the_profiles() -> None:
    """Q062: N from the profiles alone: the Titan's 250 W TDP (S1 §4.1) over the Arndale board's "less than
    10 W" (S1 §4.1) gives N = 25. The thesis's "up to 47" divides *measured* maximum powers it does not print
    (250 W / 47 = 5.3 W per board, within the < 10 W bound); with the profiles' inputs N is 25."""
    r = iso_power(TITAN, system(load_platform("arndale-gpu")))
    assert (r.n_small, r.n_exact) == (25, pytest.approx(25.0))
    assert 250.0 / 47 < 10.0


def test_q060_q064_arndale_aggregate_peak() -> None:
    """Q064: the thesis says 47 Arndales have "less than 1/2" of the Titan's peak. From the inputs, 47 x 72
    GFLOP/s (Q060) = 3.38 TFLOP/s is 0.68 of 5 TFLOP/s (Q058; 0.72 of 4.7): Fig. 9's curves are measured, not
    vendor peaks, so this test asserts what the inputs give."""
    r = iso_power(TITAN, system(load_platform("arndale-gpu")), n=47)
    assert r.compute_ratio == pytest.approx(47 * 72 / 4700)
    assert 47 * 72 / 5000 == pytest.approx(0.677, abs=1e-3)


def test_q098_22_jetsons_against_a_titan() -> None:
    """Q098, computed as the thesis does (S1 §5.2.3.1): N = 22 (Q096, from measured maximum powers), Jetson TK1
    SP peak = 192 cores x 2 flops x 852 MHz = 327.2 GFLOP/s, so 22 boards give 7.20 TFLOP/s, 1.53x the Titan's
    4.7 TFLOP/s: "at least 50% better". Bandwidth: 22 x 14.78 GB/s (64-bit DDR3L at 924 MHz) = 325 GB/s, 1.13x
    the Titan's 288: "slightly higher"."""
    jet = system(load_platform("jetson-tk1"))
    assert jet.peak_flop_per_s == pytest.approx(192 * 2 * 852e6)
    r = iso_power(TITAN, jet, n=22)
    assert r.compute_ratio == pytest.approx(22 * 192 * 2 * 852e6 / 4.7e12)
    assert 1.5 <= r.compute_ratio < 1.6
    assert r.bandwidth_ratio == pytest.approx(22 * 8 * 2 * 924e6 / 288e9)
    assert 1.0 < r.bandwidth_ratio < 1.2                                  # type: ignore[operator]
    top = r.rows[-1]                                                      # compute-bound: 1.53x faster
    assert top["speedup_b_over_a"] == pytest.approx(r.compute_ratio)
    with pytest.raises(ArchlineFitError, match="jetson-tk1' has no peak power"):
        iso_power(TITAN, jet)                                             # the thesis's powers are not given


def test_q097_titan_time_balance() -> None:
    """Q097: the Titan's time balance 4.7 TFLOP/s / 288 GB/s = 16.3 flop/B (~16)."""
    assert TITAN.peak_flop_per_s / TITAN.peak_byte_per_s == pytest.approx(16.3, abs=0.05)  # type: ignore[operator]


def test_iso_power_with_full_models() -> None:
    """With every constant (S1 Tables 3-4: GTX 580 and i7-950), N = floor(P_max(A)/P_max(B)); N x B runs N times
    B's flop rate at B's energy per flop and N times its power."""
    a, b = system(load_platform("gtx580")), system(load_platform("i7-950"))
    assert a.machine is not None and b.machine is not None
    r = iso_power(a, b, intensities=[0.5, 8.0], work_flop=1e12)
    assert r.n_exact == pytest.approx(a.machine.peak_power_w / b.machine.peak_power_w)
    assert r.n_small == 2
    for row in r.rows:
        i = row["intensity"]
        assert row["b_flop_per_s"] == pytest.approx(2 * float(b.machine.performance_flop_per_s(i)))
        assert row["b_energy_j"] == pytest.approx(1e12 / float(b.machine.efficiency_flop_per_j(i)))
        assert row["b_power_w"] == pytest.approx(2 * float(b.machine.power_w(i)))
        assert row["a_time_s"] == pytest.approx(1e12 / float(a.machine.performance_flop_per_s(i)))
    assert iso_power(a, b, budget_w=200.0).n_small == 1


def test_cli_iso_power(tmp_path: Path, run_cli: Callable[..., object]) -> None:
    r = run_cli("iso-power", "titan", "jetson-tk1", "--n", "22", "--format", "json", "--plot", str(tmp_path / "f.png"))
    d = json.loads(r.stdout)                                               # type: ignore[attr-defined]
    assert d["n_small"] == 22 and d["compute_ratio"] == pytest.approx(1.531, abs=1e-3)
    assert (tmp_path / "f.png").read_bytes()[:4] == b"\x89PNG"
    r = run_cli("iso-power", "titan", "arndale-gpu")
    assert "N = 25 x arndale-gpu" in r.stdout                              # type: ignore[attr-defined]
    r = run_cli("iso-power", "gtx580", "i7-950", "--budget-w", "140", "--power-b", "35", "--format", "json")
    assert json.loads(r.stdout)["n_small"] == 4                            # type: ignore[attr-defined]


@pytest.mark.parametrize(("args", "message"), [
    (("titan", "jetson-tk1"), "has no peak power"),
    (("titan", "nope"), "unknown platform 'nope'"),
    (("titan", "arndale-gpu", "--budget-w", "5"), "exceeds the 5 W budget"),
    (("titan", "arndale-gpu", "--power-b", "-3"), "must be positive"),
    (("titan", "arndale-gpu", "-i", "0"), "intensities must be positive"),
])
def test_cli_iso_power_errors(args: tuple[str, ...], message: str, run_cli: Callable[..., object]) -> None:
    r = run_cli("iso-power", *args)
    assert r.exit_code == 2 and message in r.stderr and r.stderr.count("\n") == 1  # type: ignore[attr-defined]


def test_cli_iso_power_malformed_cost_table(tmp_path: Path, run_cli: Callable[..., object]) -> None:
    bad = tmp_path / "c.json"
    bad.write_text('{"schema": "archline.costs/1", "coefficients": {"eps_mem": {"value": "x"}}}')
    r = run_cli("iso-power", "titan", str(bad))
    assert r.exit_code == 2 and str(bad) in r.stderr                       # type: ignore[attr-defined]


def test_cli_iso_power_with_fitted_cost_tables(tmp_path: Path, run_cli: Callable[..., object]) -> None:
    """Two cost tables (archline fit output): N from their model P_max, energies from their costs."""
    def table(name: str, eps_s: float, eps_mem: float, pi0: float, peak: float, bw: float) -> Path:
        p = tmp_path / f"{name}.json"
        p.write_text(json.dumps({"schema": "archline.costs/1", "platform": name, "model": "basic", "emulated": True,
                                 "coefficients": {"eps_flop_sp": {"value": eps_s}, "eps_mem": {"value": eps_mem},
                                                  "pi0": {"value": pi0}},
                                 "tau": {"tau_flop_sp": {"value": 1 / peak}, "tau_mem": {"value": 1 / bw}}}))
        return p
    big = table("big", 50e-12, 300e-12, 100.0, 4e12, 300e9)      # P_max = 100 + 200 + 90 = 390 W
    small = table("small", 20e-12, 200e-12, 2.0, 200e9, 20e9)    # P_max = 2 + 4 + 4 = 10 W
    r = run_cli("iso-power", str(big), str(small), "-i", "1", "--format", "json")
    d = json.loads(r.stdout)                                                 # type: ignore[attr-defined]
    assert d["n_exact"] == pytest.approx(39.0) and d["n_small"] == 39
    p = d["points"][0]                                                      # I = 1: memory-bound on both
    assert p["b_flop_per_s"] == pytest.approx(39 * 20e9)
    assert p["b_energy_j"] == pytest.approx(1e12 * (20e-12 + 200e-12 + 2.0 / 20e9))
    assert p["b_power_w"] == pytest.approx(39 * (2.0 + 20e-12 * 20e9 + 4.0))
    assert d["small"]["emulated"] is True
    r = run_cli("iso-power", str(big), str(small))
    assert "[emulated]" in r.stdout                                          # type: ignore[attr-defined]


def test_fig16_energy_and_power_panels_from_given_constants(tmp_path: Path,
                                                            run_cli: Callable[..., object]) -> None:
    """S1 Fig. 16 (§5.2.3.1): time, energy and power of 22 Jetson TK1 against one GTX Titan. The energy
    constants (S1 Tables 6-7) are not printed; given with --set-a/--set-b, N x B draws N times one board's
    power (eq. for P(I), model.md §3) at one board's energy per flop, and the figure has three panels."""
    from archline.fit.analyses.choi.cluster import missing_energy, with_constants

    jet = with_constants(load_platform("jetson-tk1"), {"eps_flop_sp": 25e-12, "eps_mem": 200e-12, "pi0": 2.0})
    titan = with_constants(load_platform("titan"), {"eps_flop_sp": 40e-12, "pi0": 120.0})
    assert missing_energy(jet, "sp") == [] and missing_energy(load_platform("jetson-tk1"), "sp") == \
        ["eps_flop_sp", "eps_mem", "pi0"]
    assert jet.source("pi0") == "given on the command line"
    b = system(jet)
    r = iso_power(system(titan), b, n=22, intensities=[0.25, 64.0])
    assert b.machine is not None
    for row in r.rows:
        i = row["intensity"]
        assert row["b_power_w"] == pytest.approx(22 * float(b.machine.power_w(i)))
        assert row["b_energy_j"] == pytest.approx(1e12 / float(b.machine.efficiency_flop_per_j(i)))
    # 25 pJ/flop + 2 W / 327 GFLOP/s = 31.1 pJ/flop at high intensity
    assert r.rows[-1]["b_energy_j"] == pytest.approx(1e12 * (25e-12 + 200e-12 / 64 + 2.0 / 327.168e9), rel=1e-9)
    with pytest.raises(ArchlineFitError, match="cannot set 'tdp_w'"):
        with_constants(jet, {"tdp_w": 3.0})
    out = tmp_path / "fig16.png"
    res = run_cli("iso-power", "titan", "jetson-tk1", "--n", "22", "--set-a", "eps_flop_sp=40e-12",
                  "--set-a", "pi0=120", "--set-b", "eps_flop_sp=25e-12", "--set-b", "eps_mem=200e-12",
                  "--set-b", "pi0=2", "--format", "json", "--plot", str(out))
    d = json.loads(res.stdout)                                               # type: ignore[attr-defined]
    assert d["small"]["energy_known"] and d["big"]["energy_known"]
    assert out.read_bytes()[:4] == b"\x89PNG"
    res = run_cli("iso-power", "titan", "jetson-tk1", "--set-b", "pi0=-2")
    assert res.exit_code == 2 and "positive" in res.stderr                   # type: ignore[attr-defined]
