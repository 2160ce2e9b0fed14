"""Memory-hierarchy energy: one term per level, inclusive-cost semantics (model.md §3; S1 eq.10-12).

Each byte is counted once, at the level that served it; each cost is the extra energy of one more such access.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from numpy.typing import ArrayLike

from archline.fit.model.roofline import FloatArray

#: Count column (archline.results/1) -> coefficient name (archline.costs/1) for every linear energy term.
COUNT_TO_COST: dict[str, str] = {
    "flops_sp": "eps_flop_sp",
    "flops_dp": "eps_flop_dp",
    "int_ops": "eps_int",
    "bytes_mem": "eps_mem",
    "bytes_l3": "eps_l3",
    "bytes_l2": "eps_l2",
    "bytes_l1": "eps_l1",
    "bytes_shared": "eps_shared",
    "rand_accesses": "eps_rand",
}


def energy_j(counts: Mapping[str, ArrayLike], costs: Mapping[str, float], time_s: ArrayLike,
             pi0_w: float) -> FloatArray:
    """E = sum_i N_i*eps_i + pi0*T (S1 eq.10 and its per-level generalisation, §3.1).

    ``counts`` is keyed by result columns (``flops_sp``, ``bytes_l2``…). A count with a non-zero value whose cost is
    missing raises KeyError naming the coefficient: a silent zero would under-predict.
    """
    total = np.asarray(pi0_w, dtype=np.float64) * np.asarray(time_s, dtype=np.float64)
    for column, n in counts.items():
        n_arr = np.asarray(n, dtype=np.float64)
        if not np.any(n_arr):
            continue
        cost_name = COUNT_TO_COST[column]
        if cost_name not in costs:
            raise KeyError(cost_name)
        total = total + n_arr * costs[cost_name]
    return total


def residual_cost_j_per_unit(
    energy_measured_j: ArrayLike, energy_explained_j: ArrayLike, units: ArrayLike
) -> FloatArray:
    """(E - explained) / count: eq.11 for L2 (explained = W*eps_flop + Q*eps_mem + pi0*T), and eq.12 for L1
    (explained additionally includes Q_L2*eps_L2)."""
    return (np.asarray(energy_measured_j, dtype=np.float64) - np.asarray(energy_explained_j, dtype=np.float64)) / \
        np.asarray(units, dtype=np.float64)


def time_s(counts: Mapping[str, ArrayLike], rate_per_s: Mapping[str, float], costs: Mapping[str, float] | None = None,
           delta_pi_w: float = np.inf) -> FloatArray:
    """T = max( max_i N_i / rate_i , sum_i N_i*eps_i / delta_pi )   (eq.34 with one term per count, perfect
    overlap; eq.3 when delta_pi = inf). ``rate_per_s`` is operations per second (1/tau) per count column; a
    non-zero count without a rate raises KeyError naming the column."""
    t = np.zeros(())
    for column, n in counts.items():
        n_arr = np.asarray(n, dtype=np.float64)
        if not np.any(n_arr):
            continue
        t = np.maximum(t, n_arr / rate_per_s[column])
    if costs is not None and not np.isinf(delta_pi_w):
        dynamic = energy_j(counts, costs, 0.0, 0.0)
        t = np.maximum(t, dynamic / delta_pi_w)
    return np.asarray(t, dtype=np.float64)
