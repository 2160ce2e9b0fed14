"""DVFS: the model's costs as functions of core and memory voltage (model.md §5; S1 eq.41-48)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from archline.model.roofline import FloatArray

#: eq.48 coefficient names (archline.costs/1, snake case) in design-matrix order.
DVFS_COEFFICIENTS: tuple[str, ...] = (
    "c0_core_single", "c0_mem", "c1_core", "c1_mem", "c0_core_integer", "c0_core_sm", "c0_core_l2", "pi_misc",
    "delta_c0_core_double",
)


def tau_flop_s(n_cores: ArrayLike, core_hz: ArrayLike) -> FloatArray:
    """tau_flop = 1/(2*N_cores*f_core): one FMA per core per cycle (S1 §5, below eq.47)."""
    return 1.0 / (2.0 * np.asarray(n_cores, dtype=np.float64) * np.asarray(core_hz, dtype=np.float64))


@dataclass(frozen=True)
class DvfsCosts:
    """Per-operation costs at one (V_core, V_mem) setting (eq.44-46)."""

    eps_flop_sp: float
    eps_flop_dp: float
    eps_mem: float
    eps_int: float
    eps_shared: float
    eps_l2: float
    pi0: float

    def as_dict(self) -> dict[str, float]:
        return dict(self.__dict__)


def costs_at(coeffs: Mapping[str, float], core_v: float, mem_v: float) -> DvfsCosts:
    """eps'_flop = C''0,core*Vcore^2 (eq.44), eps'_mem = C''0,mem*Vmem^2 (eq.45),
    pi'0 = C1,core*Vcore + C1,mem*Vmem + pi_misc (eq.46). Shared memory and L2 scale with Vcore (S1 §5.3.1)."""
    vc2, vm2 = core_v**2, mem_v**2
    return DvfsCosts(
        eps_flop_sp=coeffs["c0_core_single"] * vc2,
        eps_flop_dp=(coeffs["c0_core_single"] + coeffs["delta_c0_core_double"]) * vc2,
        eps_mem=coeffs["c0_mem"] * vm2,
        eps_int=coeffs["c0_core_integer"] * vc2,
        eps_shared=coeffs["c0_core_sm"] * vc2,
        eps_l2=coeffs["c0_core_l2"] * vc2,
        pi0=coeffs["c1_core"] * core_v + coeffs["c1_mem"] * mem_v + coeffs["pi_misc"],
    )


def energy_j(
    coeffs: Mapping[str, float], core_v: ArrayLike, mem_v: ArrayLike, time_s: ArrayLike, *,
    flops_sp: ArrayLike = 0.0, flops_dp: ArrayLike = 0.0, bytes_mem: ArrayLike = 0.0, int_ops: ArrayLike = 0.0,
    bytes_shared: ArrayLike = 0.0, bytes_l2: ArrayLike = 0.0,
) -> FloatArray:
    """E of eq.47 extended with the integer, shared-memory and L2 terms of eq.48 (not normalised by W)."""
    vc, vm, t = (np.asarray(x, dtype=np.float64) for x in (core_v, mem_v, time_s))
    c = coeffs
    return (
        (np.asarray(flops_sp) + np.asarray(flops_dp)) * c["c0_core_single"] * vc**2
        + np.asarray(flops_dp) * c["delta_c0_core_double"] * vc**2
        + np.asarray(bytes_mem) * c["c0_mem"] * vm**2
        + np.asarray(int_ops) * c["c0_core_integer"] * vc**2
        + np.asarray(bytes_shared) * c["c0_core_sm"] * vc**2
        + np.asarray(bytes_l2) * c["c0_core_l2"] * vc**2
        + (c["c1_core"] * vc + c["c1_mem"] * vm + c["pi_misc"]) * t
    )
