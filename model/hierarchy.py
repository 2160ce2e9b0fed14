"""Memory-hierarchy energy: one term per level, inclusive-cost semantics (model.md §3; S1 eq.10-12).

Each byte is counted once, at the level that served it; each cost is the extra energy of one more such access.
Time (:func:`model_time`): every counted kind at its own tau, overlapped (the slowest one is the time).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from numpy.typing import ArrayLike

from archline.model.errors import MissingValueError
from archline.model.roofline import FloatArray

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


#: The model time's components besides flops and DRAM (model.md §3, time): count -> its tau. A count whose tau
#: the table lacks is left out of the time with a note (the table may hold only flops and DRAM).
TIME_EXTRA: dict[str, str] = {"int_ops": "tau_int", "bytes_l3": "tau_l3", "bytes_l2": "tau_l2",
                              "bytes_l1": "tau_l1", "bytes_shared": "tau_shared", "rand_accesses": "tau_rand"}
TIME_MODEL = ("max(W_sp*tau_flop_sp + W_dp*tau_flop_dp, W_int*tau_int, Q*tau_mem, Q_L3*tau_l3, Q_L2*tau_l2, "
              "Q_L1*tau_l1, Q_shared*tau_shared, N_rand*tau_rand)")


def model_time(counts: Mapping[str, float], costs: Mapping[str, float], platform_name: str, name: str,
               used: dict[str, float] | None = None) -> tuple[float, list[str]]:
    """The model time of counted work (model.md §3, time): every component runs at its peak rate, overlapped,

        T = max(W_sp*tau_flop_sp + W_dp*tau_flop_dp, W_int*tau_int, Q*tau_mem, Q_L3*tau_l3, Q_L2*tau_l2,
                Q_L1*tau_l1, Q_shared*tau_shared, N_rand*tau_rand)

    S0 eq.3 / S1 eq.1-3 (T = max(W*tau_flop, Q*tau_mem), perfect overlap) with one component per count of S1
    eq.10; SP and DP flops share the floating-point units, so their times add. Flops or DRAM bytes without their
    tau raise MissingValueError; another count without its tau is left out, said in the returned notes."""
    why = f"the model time of '{name}' (no time_s column)"

    def need(key: str) -> float:
        if key not in costs:
            raise MissingValueError(f"cost table '{platform_name}' has no value for {key}; {why} needs it")
        if used is not None:
            used[key] = costs[key]
        return costs[key]

    t_flop = sum(counts.get(c, 0.0) * need(k) for c, k in (("flops_sp", "tau_flop_sp"), ("flops_dp", "tau_flop_dp"))
                 if counts.get(c))
    q = counts.get("bytes_mem", 0.0)
    parts = [t_flop, q * need("tau_mem") if q else 0.0]
    left: list[str] = []
    for c, k in TIME_EXTRA.items():
        n = counts.get(c, 0.0)
        if not n:
            continue
        if k in costs:
            parts.append(n * need(k))
        else:
            left.append(f"{c} ({k})")
    notes = [f"model time leaves out {', '.join(left)}: '{platform_name}' has no such tau"] if left else []
    if max(parts) <= 0 and left:
        raise MissingValueError(f"cost table '{platform_name}' has no time per operation for any count of "
                                f"'{name}' ({', '.join(left)}); {why} needs one")
    return max(parts), notes
