"""Every Q id of S2 (Elango et al.) and S3 (Hong & Kim) that follows from the papers' inputs, named in the test.
The IPP optimal-SM and Table 4 ids (Q138-Q146) are in tests/use/test_use_ipp_readings.py. The table of all Q
ids is tests/qids/qid_coverage.csv."""

from __future__ import annotations

import math

import pytest

from archline.fit.analyses.elango.design_space import area_share_leakage_w, nehalem_ex
from archline.fit.analyses.hongkim import ipp
from archline.fit.analyses.hongkim.files import load_gpu
from archline.model import dvfs

GPU = load_gpu("gtx280")


def test_q111_per_core_leakage() -> None:
    """Q111: S2 §4.2 prints 0.819 W of static leakage per core, "area-proportional": the core's 3.9% of the die (S2
    Table IV) times the 21 W of leakage (Table III) is 0.819 W, as printed. (The §4.2 areas, 26.738/684 mm^2 =
    3.91%, would give 0.821 W; the paper uses the table's rounded share.)"""
    m = nehalem_ex()
    assert m.pi_cpu_w == pytest.approx(0.819, abs=1e-12)
    assert area_share_leakage_w(21.0, 3.9) == pytest.approx(0.819)


def test_q112_dynamic_power_cubic_in_frequency() -> None:
    """Q112: P_dyn = C*V^2*f (S1 eq.41), and with V proportional to f, power grows as f^3 (S2 §6 says
    "energy ... proportional to f^3"; per operation, energy = P/f grows as f^2). Computed by the DVFS model's
    own per-setting costs (``dvfs.costs_at``, eq.44: eps_flop = C0*V^2, what ``fit --model dvfs`` reports per
    setting) times the flop rate, which is proportional to f."""
    coeffs = {**dict.fromkeys(dvfs.DVFS_COEFFICIENTS, 0.0), "c0_core_single": 1e-9}

    def p(f: float) -> float:
        return dvfs.costs_at(coeffs, core_v=0.5e-9 * f, mem_v=1.0).eps_flop_sp * f
    assert p(2e9) / p(1e9) == pytest.approx(8.0)
    assert (p(2e9) / 2e9) / (p(1e9) / 1e9) == pytest.approx(4.0)


def test_q113_q114_q124_q128_q134_gtx280_inputs() -> None:
    """Q113: 30 SMs (240 cores); Q114: 65 nm; Q124: Mem_L = 430 cycles; Q128: IdlePower 83 W; Q134: 57 °C cold."""
    assert GPU.num_sms == 30 and "240 CUDA cores" in GPU.title and "65 nm" in GPU.title
    assert (GPU.mem_latency_cycles, GPU.idle_power_w, GPU.idle_temp_degc) == (430, 83, 57)


def test_q115_q116_q117_access_rate_and_log_model() -> None:
    """Q115: 0.1365*ln(AR) + 1.001375; Q116: beta = 1.1; Q117: alpha = (10 - beta)/Num_SMs, which makes the log
    factor of eq.16 exactly 1 with every SM active."""
    assert ipp.spec_linear_rate(0.25) == pytest.approx(0.1365 * math.log(0.25) + 1.001375)
    assert GPU.beta == 1.1 and GPU.alpha == pytest.approx((10 - 1.1) / 30)
    assert math.log10(GPU.alpha * 30 + GPU.beta) == pytest.approx(1.0)


def test_q122_q123_static_power_per_degree() -> None:
    """Inputs. Q122: of the 14 W rise (Q119, measured), 4 W is the fan (Q121), so 10 W is static power; Q123: over
    the 22 °C rise (Q120) that is sigma = 10/22 W/°C (S3 §3.6). archline carries sigma in the GTX 280's GPU file
    (the subtraction and division are S3's, done once by hand); the product's eq.22 gives the 10 W back from it."""
    assert GPU.sigma_w_per_degc == pytest.approx(10 / 22)
    assert ipp.static_power_increase_w(22.0, GPU) == pytest.approx(10.0)


def test_q135_temperature_saturation() -> None:
    """Q135: S3 §6.2 / Fig. 11 (the model's *predicted* temperature) saturates "after around 600 s". With RC_Rise =
    35 s (Table 3), eq.17 reaches 99% of its rise at 35 x ln(100) = 161 s and is within 1e-7 of it at 600 s:
    saturated by 600 s, as printed."""
    assert ipp.temperature_rise_degc(161.1, 1.0, GPU) < 0.99 < ipp.temperature_rise_degc(161.3, 1.0, GPU)
    assert ipp.temperature_rise_degc(600, 1.0, GPU) == pytest.approx(1.0, abs=1e-7)


def test_q137_static_power_after_600_s() -> None:
    """Q137: SVM peaks at 78 °C and INT at 68 °C (Q136) from 57 °C: with sigma = 10/22 W/°C (eq.22) their runtime
    power grows by 21 x 10/22 = 9.5 ~ 10 W and 11 x 10/22 = 5 W after 600 s."""
    assert round(ipp.static_power_increase_w(78.0 - GPU.idle_temp_degc, GPU)) == 10
    assert round(ipp.static_power_increase_w(68.0 - GPU.idle_temp_degc, GPU)) == 5
