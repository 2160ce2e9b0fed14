"""Property-based tests of the capped model over random valid parameters (model.md §1, §4)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from archline.model import roofline as rl
from archline.model.machine import Machine
from archline.model.tradeoffs import greenup, greenup_bounds, greenup_max_extra_work, speedup, tradeoff_case

pos = st.floats(min_value=1e-3, max_value=1e3, allow_nan=False, allow_infinity=False)


@st.composite
def machines(draw: st.DrawFn, capped: bool = True) -> Machine:
    tau_flop = draw(pos) * 1e-12
    tau_mem = draw(pos) * 1e-12
    eps_flop = draw(pos) * 1e-12
    eps_mem = draw(pos) * 1e-12
    pi0 = draw(st.floats(min_value=0, max_value=500))
    m = Machine(tau_flop, tau_mem, eps_flop, eps_mem, pi0)
    if capped:
        # a cap anywhere from far below to above the uncapped peak
        m = Machine(tau_flop, tau_mem, eps_flop, eps_mem, pi0,
                    draw(st.floats(min_value=0.05, max_value=2.0)) * (m.pi_flop + m.pi_mem))
    return m


intensities = st.floats(min_value=1e-3, max_value=1e4)


@settings(max_examples=300, deadline=None)
@given(machines())
def test_power_never_exceeds_cap(m: Machine) -> None:
    i = np.geomspace(1e-3, 1e4, 400)
    p = m.power_w(i)
    assert np.all(p <= m.pi0_w + m.delta_pi_w + 1e-9 * (m.pi0_w + m.delta_pi_w))
    assert np.all(p <= m.peak_power_w * (1 + 1e-9))
    assert np.all(p >= m.pi0_w)


@settings(max_examples=300, deadline=None)
@given(machines(), intensities)
def test_closed_form_eq38_equals_energy_over_time(m: Machine, i: float) -> None:
    direct = float(m.power_w(i))
    closed = float(rl.power_line_w(i, m.B_tau, m.pi0_w, m.pi_flop, m.pi_mem, m.delta_pi_w))
    assert math.isclose(direct, closed, rel_tol=1e-9)


@settings(max_examples=200, deadline=None)
@given(machines())
def test_continuous_in_intensity(m: Machine) -> None:
    # A fine grid: neighbouring values differ by at most what the slope allows (no jumps at the balance points).
    i = np.geomspace(1e-2, 1e3, 20001)
    for f in (m.time_per_flop_s, m.energy_per_flop_j, m.power_w):
        y = f(i)
        jump = np.max(np.abs(np.diff(y)) / np.maximum(np.abs(y[:-1]), 1e-300))
        assert jump < 2e-3


@settings(max_examples=200, deadline=None)
@given(machines())
def test_monotone_in_intensity(m: Machine) -> None:
    i = np.geomspace(1e-3, 1e4, 500)
    perf = m.performance_flop_per_s(i)
    eff = m.efficiency_flop_per_j(i)
    assert np.all(np.diff(perf) >= -1e-9 * perf[:-1])
    assert np.all(np.diff(eff) >= -1e-9 * eff[:-1])
    assert np.all(perf <= 1 / m.tau_flop_s * (1 + 1e-12))


@settings(max_examples=200, deadline=None)
@given(machines(capped=False))
def test_limits_of_free_model(m: Machine) -> None:
    ratio = m.pi_mem / m.pi_flop if m.pi_flop > 0 else 1.0
    big = 1e9 * m.B_tau * max(1.0, ratio)
    small = 1e-9 * m.B_tau * min(1.0, ratio)
    assert math.isclose(float(m.performance_flop_per_s(big)), 1 / m.tau_flop_s, rel_tol=1e-9)
    assert math.isclose(float(m.performance_flop_per_s(small)), small / m.tau_mem_s_per_byte, rel_tol=1e-9)
    # power -> pi0 + pi_flop as I -> inf and -> pi0 + pi_mem as I -> 0 (S0 §II-E)
    assert math.isclose(float(m.power_w(big)), m.pi0_w + m.pi_flop, rel_tol=1e-6)
    assert math.isclose(float(m.power_w(small)), m.pi0_w + m.pi_mem, rel_tol=1e-6)
    assert math.isclose(float(m.power_w(m.B_tau)), m.peak_power_w, rel_tol=1e-9)


@settings(max_examples=200, deadline=None)
@given(machines(capped=False), intensities)
def test_uncapped_limit(m: Machine, i: float) -> None:
    # a cap far above pi_flop + pi_mem changes nothing, and delta_pi = inf is the free model
    loose = Machine(m.tau_flop_s, m.tau_mem_s_per_byte, m.eps_flop_j, m.eps_mem_j_per_byte, m.pi0_w,
                    1e6 * (m.pi_flop + m.pi_mem))
    assert math.isclose(float(loose.time_per_flop_s(i)), float(m.time_per_flop_s(i)), rel_tol=1e-12)
    assert m.B_tau_minus == m.B_tau == m.B_tau_plus
    assert math.isnan(m.headroom)


@settings(max_examples=200, deadline=None)
@given(machines(), st.floats(min_value=1.0, max_value=8.0))
def test_throttling_slows_and_lowers_power(m: Machine, k: float) -> None:
    t = m.throttled(k)
    i = np.geomspace(1e-2, 1e3, 200)
    assert np.all(t.time_per_flop_s(i) >= m.time_per_flop_s(i) * (1 - 1e-12))
    assert np.all(t.power_w(i) <= m.power_w(i) * (1 + 1e-12))
    assert t.pi0_w == m.pi0_w


@settings(max_examples=200, deadline=None)
@given(machines())
def test_cap_binds_exactly_between_capped_balance_points(m: Machine) -> None:
    i = np.geomspace(1e-3, 1e4, 300)
    binds = m.cap_binds(i)
    cap = m.pi0_w + m.delta_pi_w
    p = m.power_w(i)
    assert np.allclose(p[binds], cap, rtol=1e-9)
    assert 0 <= m.B_tau_minus <= m.B_tau <= m.B_tau_plus


def test_cap_edge_cases() -> None:
    m = Machine(1e-12, 1e-11, 1e-10, 1e-10, 10.0)  # pi_flop = 100 W, pi_mem = 10 W
    below_flop = Machine(m.tau_flop_s, m.tau_mem_s_per_byte, m.eps_flop_j, m.eps_mem_j_per_byte, 10.0, 50.0)
    assert math.isinf(below_flop.B_tau_plus)          # delta_pi <= pi_flop: binds for all I >= B_tau_minus
    below_mem = Machine(m.tau_flop_s, m.tau_mem_s_per_byte, m.eps_flop_j, m.eps_mem_j_per_byte, 10.0, 5.0)
    assert below_mem.B_tau_minus == 0.0               # delta_pi <= pi_mem
    assert np.all(below_mem.cap_binds(np.geomspace(1e-3, 1e3, 50)))
    assert below_mem.headroom == 10.0 / 15.0


@settings(max_examples=200, deadline=None)
@given(st.floats(0.01, 100), st.floats(1.0, 10.0), st.floats(1.0, 10.0), st.floats(0.5, 50), st.floats(0.5, 50))
def test_greenup_pi0_zero_is_eq16(i: float, f: float, m: float, b_tau: float, b_eps: float) -> None:
    eq16 = (1 + b_eps / i) / (f + b_eps / (m * i))
    assert math.isclose(float(greenup(i, f, m, b_tau, b_eps, 1.0)), eq16, rel_tol=1e-12)
    # eq.17: greenup > 1 iff f < 1 + ((m-1)/m)*B_eps/I
    bound = float(greenup_max_extra_work(i, f, m, b_tau, b_eps, 1.0))
    assert math.isclose(bound, 1 + (m - 1) / m * b_eps / i, rel_tol=1e-12)
    assert (float(greenup(i, f, m, b_tau, b_eps)) > 1) == (f < bound) or math.isclose(f, bound, rel_tol=1e-9)


@settings(max_examples=300, deadline=None)
@given(st.floats(0.01, 100), st.floats(1.0, 10.0), st.floats(1.0, 10.0), st.floats(0.5, 50), st.floats(0.5, 50),
       st.floats(0.05, 1.0))
def test_greenup_within_case_bounds(i: float, f: float, m: float, b_tau: float, b_eps: float, eta: float) -> None:
    # S1 eq.18-23 (eta = 1) and eq.30-31 with the §2.2 bounds (eta < 1)
    lo, hi = greenup_bounds(i, f, m, b_tau, b_eps, eta)
    d_e = float(greenup(i, f, m, b_tau, b_eps, eta))
    tol = 1e-9
    case = int(tradeoff_case(i, f, m, b_tau))
    if case == 1 and f >= b_tau / (m * i):
        return  # outside case 1's premise f < B_tau/(m*I)
    assert float(lo) <= d_e * (1 + tol)
    assert d_e <= float(hi) * (1 + tol)
    if case == 3:
        assert math.isclose(float(speedup(i, f, m, b_tau)), 1 / f, rel_tol=1e-12)
