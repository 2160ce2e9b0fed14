"""DVFS costs as functions of voltage (S1 eq.44-47) and the per-level cache term (S1 eq.10-12)."""

from __future__ import annotations

import numpy as np
import pytest

from archline.model import dvfs, hierarchy

COEFFS = {"c0_core_single": 40e-12, "delta_c0_core_double": 200e-12, "c0_mem": 300e-12, "c0_core_integer": 20e-12,
          "c0_core_sm": 30e-12, "c0_core_l2": 60e-12, "c1_core": 2.0, "c1_mem": 1.0, "pi_misc": 1.5}


def test_costs_scale_with_voltage_squared_and_leak_linearly() -> None:
    a = dvfs.costs_at(COEFFS, 1.0, 1.2)
    b = dvfs.costs_at(COEFFS, 0.8, 1.2)
    assert b.eps_flop_sp / a.eps_flop_sp == pytest.approx(0.64)
    assert b.eps_flop_dp == pytest.approx((40e-12 + 200e-12) * 0.64)
    assert b.eps_mem == a.eps_mem                        # memory follows V_mem only
    assert b.eps_shared / a.eps_shared == pytest.approx(0.64)  # shared/L2 follow V_core (S1 §5.3.1)
    assert a.pi0 == pytest.approx(2.0 * 1.0 + 1.0 * 1.2 + 1.5)


def test_eq47_energy_equals_sum_of_costs() -> None:
    c = dvfs.costs_at(COEFFS, 0.9, 1.1)
    e = dvfs.energy_j(COEFFS, 0.9, 1.1, 2.0, flops_sp=1e9, bytes_mem=1e8, int_ops=5e8, bytes_shared=1e7, bytes_l2=1e7)
    expect = 1e9 * c.eps_flop_sp + 1e8 * c.eps_mem + 5e8 * c.eps_int + 1e7 * c.eps_shared + 1e7 * c.eps_l2 + 2.0 * c.pi0
    assert float(e) == pytest.approx(expect)


def test_frequency_cancels_in_tau_flop() -> None:
    # eq.44: f_core * tau_flop = 1/(2*N_cores) whatever the clock
    for f in (180e6, 852e6):
        assert f * float(dvfs.tau_flop_s(192, f)) == pytest.approx(1 / 384)


def test_hierarchy_energy_and_residuals() -> None:
    costs = {"eps_flop_sp": 100e-12, "eps_mem": 500e-12, "eps_l2": 250e-12, "eps_l1": 150e-12}
    counts = {"flops_sp": np.array([1e9, 0.0]), "bytes_mem": np.array([1e8, 1e6]),
              "bytes_l2": np.array([0.0, 4e9]), "bytes_l1": np.array([0.0, 0.0])}
    t = np.array([0.1, 0.2])
    e = hierarchy.energy_j(counts, costs, t, pi0_w=100.0)
    assert e[0] == pytest.approx(1e9 * 100e-12 + 1e8 * 500e-12 + 10.0)
    # eq.11 recovers eps_L2 from the second (L2-only) run
    explained = 1e6 * 500e-12 + 100.0 * 0.2
    assert float(hierarchy.residual_cost_j_per_unit(e[1], explained, 4e9)) == pytest.approx(250e-12)
    with pytest.raises(KeyError, match="eps_rand"):
        hierarchy.energy_j({"rand_accesses": [5]}, costs, 1.0, 1.0)
