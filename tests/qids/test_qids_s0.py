"""Every Q id of S0 (Choi et al., IPDPS 2013) that follows from the paper's inputs, named in the test.

The table of all Q ids, with the ones that cannot be computed and why, is tests/qids/qid_coverage.csv."""

from __future__ import annotations

import pytest

from archline.fit.analyses.choi import keckler as kk
from archline.formats.platforms.profiles import load_platform

FERMI = load_platform("fermi-sample").machine("dp")
GTX580 = load_platform("gtx580")
K = kk.keckler_comparison(GTX580)
PJ = 1e-12


def test_q001_q002_fermi_balance_points() -> None:
    """Q001: B_tau = tau_mem/tau_flop = 6.9/1.9 ps = 3.6 flop/B; Q002: B_eps = 360/25 pJ = 14.4 flop/B (Fig. 2a
    draws it at 14) (S0 Table II)."""
    assert FERMI.B_tau == pytest.approx(3.6, abs=0.05)
    assert FERMI.B_eps == pytest.approx(14.4)


def test_q003_fig2_normalisation() -> None:
    """Q003: Fig. 2a normalises to 515 GFLOP/s = 1/tau_flop and 40 GFLOP/J = 1/eps_flop (pi0 = 0, 25 pJ)."""
    assert 1 / FERMI.tau_flop_s / 1e9 == pytest.approx(515, abs=1)
    assert 1 / FERMI.eps_hat / 1e9 == pytest.approx(40)


def test_q004_q005_power_line_limits() -> None:
    """Q004: P -> pi_mem = pi_flop*B_eps/B_tau = 4.0 pi_flop as I -> 0; Q005: the maximum pi_flop*(1 + B_eps/B_tau)
    = 5.0 pi_flop at I = B_tau (pi0 = 0, eq.8)."""
    assert float(FERMI.power_w(1e-6)) / FERMI.pi_flop == pytest.approx(4.0, abs=0.05)
    assert float(FERMI.power_w(FERMI.B_tau)) / FERMI.pi_flop == pytest.approx(5.0, abs=0.05)


def test_q007_q008_q009_powermon_limits() -> None:
    """Q007: up to 8 channels; Q008: up to 1024 Hz per channel (S1 §3.3.1); Q009: 3072 samples/s in all (S0
    §IV-A), as the PowerMon 2 driver enforces."""
    from archline.powermon.powermon2 import protocol
    assert protocol.MAX_CHANNELS == 8
    assert protocol.MAX_AGGREGATE_RECORDS_PER_S == 3072 and protocol.MAX_CHANNEL_HZ == 1024


def test_q010_q011_q012_sampling_and_repetitions() -> None:
    """Q011: 128 Hz per channel, so Q010: 1/128 s = 7.8125 ms, which the PowerMon 2 driver sets as a period of 8
    ticks of 1/1024 s; Q012: 100 repetitions (S0 §IV-A), as the GTX 580 profile runs them."""
    from archline.powermon.powermon2 import protocol
    meter = GTX580.raw["meters"][0]
    period = protocol.period_for_rate(meter["rate_hz"])
    assert meter["rate_hz"] == 128 and period == 8
    assert 1000 * period / protocol.TICK_HZ == 7.8125
    assert GTX580.raw["bench"]["reps"] == 100


def test_q013_q014_rails() -> None:
    """Q013: 4 GPU rails (8-pin and 6-pin 12 V, slot 12 V and 3.3 V); Q014: 4 CPU rails (ATX 3.3, 5, 12 V and
    the 4-pin 12 V) (S0 §IV-A), as the GTX 580 and i7-950 profiles map them."""
    gpu = {c["rail"] for c in GTX580.raw["meters"][0]["channels"]}
    assert gpu == {"pcie_slot_12v", "pcie_slot_3v3", "aux_6pin_12v", "aux_8pin_12v"}
    cpu = load_platform("i7-950").raw["meters"][0]["channels"]
    assert len(cpu) == 4


def test_q015_q017_idle_and_power_limit() -> None:
    """Q015: 39.6 W idle (S0 §V-A); Q017: NVIDIA's 244 W limit (S0 §V-B, S1 Table 3)."""
    assert GTX580.value("idle_w") == 39.6 and GTX580.value("tdp_w") == 244.0


def test_q016_predicted_power_demand_from_tables_3_and_4() -> None:
    """Q016: S0 §V-B prints a predicted 387 W for the GTX 580 in single precision. From Tables 3-4,
    pi0 + pi_flop + pi_mem = 122 + 99.7 pJ x 1581.06 GFLOP/s + 513 pJ/B x 192.4 GB/s = 378.3 W: the inputs give
    378 W (model.md §13 item 3), which is what archline asserts. Either way it exceeds the 244 W limit."""
    m = GTX580.machine("sp")
    assert m.peak_power_w == pytest.approx(122 + 99.7e-12 * 1581.06e9 + 513e-12 * 192.4e9)
    assert m.peak_power_w == pytest.approx(378.3, abs=0.1)


def test_q019_q020_q021_keckler_flop() -> None:
    """Q019: Keckler's DP FMA costs 50 pJ, Q020: 25 pJ per flop; Q021: the fitted eps_d = 212 pJ (S0 Table IV) is
    212/25 = 8.5, "about eight times larger"."""
    assert kk.KECKLER_DP_FMA_J == 50 * PJ and kk.KECKLER_FLOP_J == 25 * PJ
    assert K.ratio_to_keckler_flop == pytest.approx(8.48)


def test_q022_q024_instruction_overhead() -> None:
    """Q022: overhead per flop 212 - 25 = 187 pJ; Q024: spread over a 4-byte SP word, 46.75 ~ 47 pJ/B."""
    assert K.overhead_per_flop_j / PJ == pytest.approx(187)
    assert K.overhead_per_byte_j / PJ == pytest.approx(46.75)
    assert round(K.overhead_per_byte_j / PJ) == 47


def test_q023_q025_memory_with_overhead() -> None:
    """Q023: Keckler's 253-389 pJ/B (DRAM, interface, wire); Q025: + 47 pJ/B overhead = 300-436 pJ/B (S0 adds the
    rounded 47; unrounded 299.75-435.75)."""
    assert kk.KECKLER_MEM_J_PER_BYTE == (253 * PJ, 389 * PJ)
    lo, hi = (v / PJ for v in K.mem_with_overhead_j_per_byte)
    assert (round(lo), round(hi)) == (300, 436)


def test_q026_q027_q028_sram_and_total() -> None:
    """Q026: 1.75 pJ/B per SRAM read or write; Q027: L1 and L2, each written and read: 4 x 1.75 = 7 pJ/B;
    Q028: total 307-443 pJ/B (below the fitted eps_mem of 513 pJ/B)."""
    assert kk.KECKLER_SRAM_J_PER_BYTE == 1.75 * PJ
    assert K.sram_j_per_byte / PJ == pytest.approx(7.0)
    lo, hi = (v / PJ for v in K.total_estimate_j_per_byte)
    assert (round(lo), round(hi)) == (307, 443)
    assert K.eps_mem_j_per_byte > K.total_estimate_j_per_byte[1]


def test_q019_to_q028_cli(run_cli) -> None:  # type: ignore[no-untyped-def]
    """`archline model keckler` prints the same comparison."""
    import json
    d = json.loads(run_cli("model", "keckler", "gtx580", "--format", "json").stdout)
    assert d["overhead_per_flop_j"] == pytest.approx(187e-12)
    assert [round(v * 1e12) for v in d["total_estimate_j_per_byte"]] == [307, 443]
    r = run_cli("model", "keckler", "titan")
    assert r.exit_code == 2 and "eps_flop_dp" in r.stderr
