"""Power and energy-efficiency rooflines with optimisation ceilings for GPUs (S4; docs/model.md).

S4's equations are not printed in the paper's text; they are rebuilt here from its prose and Table I.

Power roofline (compute): x = energy per flop E/W (J/flop), y = power P (W). Running at F flop/s, P = F * E/W is
a line through the origin of slope F; the ceiling is P <= min(P_peak, F * E/W) (S4 eq.4-6). Memory: x = energy
per byte, P <= min(P_peak, BW * E/Q) (eq.7-8). Energy-efficiency roofline: x = EE = F/P flop/J (eq.9) or BW/P
byte/J (eq.10), the reciprocal of the power roofline's x, and the same ceiling reads P <= min(P_peak, F/EE).
Each optimisation (threads x blocks, FMA, ILP, access pattern...) is one ceiling; a kernel sits at its measured
(energy per unit, power). Lines nearer the y-axis of the power roofline mean more performance.

Ceilings come from a platform or cost table (``ceilings_from_platform``: F = 1/tau_flop, BW = 1/tau_mem,
P_peak = pi0 + eps/tau, capped at pi0 + delta_pi when the cap is known, S1 §4.2), from measured rows of the
ceiling kernels, or from a user's table (``archline.fit.analyses.s4.inputs``). A ceiling measured
without a power meter has a rate but no P_peak.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from archline.fit.model.roofline import FloatArray
from archline.fit.platforms.profiles import Platform

KINDS = ("compute", "memory")
#: intensities (flop/B) at which a platform's or cost table's model places its kernels on the plot
MODEL_INTENSITIES = tuple(2.0 ** k for k in range(-2, 7))


@dataclass(frozen=True)
class Ceiling:
    label: str
    kind: str                          # "compute" (rate in flop/s) or "memory" (rate in byte/s)
    rate_per_s: float
    peak_power_w: float | None         # None: measured without power (the ceiling's cap is unknown)
    source: str = ""

    @property
    def knee_j_per_unit(self) -> float | None:
        """Energy per unit where the slope meets P_peak."""
        return None if self.peak_power_w is None else self.peak_power_w / self.rate_per_s

    @property
    def efficiency_per_j(self) -> float | None:
        """EE at the peak: rate / P_peak (flop/J or byte/J; S4 eq.9-10)."""
        return None if self.peak_power_w is None else self.rate_per_s / self.peak_power_w


@dataclass(frozen=True)
class KernelPoint:
    label: str
    kind: str                          # "compute" or "memory"
    energy_per_unit_j: float
    power_w: float
    group: str = ""                    # points of one group share a marker and one legend entry

    @property
    def efficiency_per_j(self) -> float:
        return 1.0 / self.energy_per_unit_j


def power_ceiling_w(energy_per_unit_j: ArrayLike, rate_per_s: float, peak_power_w: float | None) -> FloatArray:
    """P <= min(P_peak, rate * E/unit)   (S4 eq.6 and eq.8); no cap when P_peak is unknown."""
    p = rate_per_s * np.asarray(energy_per_unit_j, dtype=np.float64)
    return p if peak_power_w is None else np.minimum(peak_power_w, p)


def efficiency_ceiling_w(efficiency_per_j: ArrayLike, rate_per_s: float, peak_power_w: float | None) -> FloatArray:
    """The same ceiling over energy efficiency: P <= min(P_peak, rate / EE)   (S4 eq.9-10)."""
    return power_ceiling_w(1.0 / np.asarray(efficiency_per_j, dtype=np.float64), rate_per_s, peak_power_w)


def ceilings_from_platform(platform: Platform, precisions: tuple[str, ...] = ("sp", "dp")) -> list[Ceiling]:
    """One compute ceiling per precision the platform knows fully, one memory ceiling."""
    out: list[Ceiling] = []
    pi0 = platform.value("pi0") or 0.0
    cap = platform.value("delta_pi")
    src = f"{platform.name} ({'cost table' if platform.kind == 'costs' else 'profile'})"
    for prec in precisions:
        tau, eps = platform.value(f"tau_flop_{prec}"), platform.value(f"eps_flop_{prec}")
        if tau and eps:
            peak = pi0 + eps / tau
            out.append(Ceiling(f"{prec.upper()} flops", "compute", 1.0 / tau, min(peak, pi0 + cap) if cap else peak,
                               src))
    tau_m, eps_m = platform.value("tau_mem"), platform.value("eps_mem")
    if tau_m and eps_m:
        peak = pi0 + eps_m / tau_m
        out.append(Ceiling("DRAM", "memory", 1.0 / tau_m, min(peak, pi0 + cap) if cap else peak, src))
    return out


def model_points(platform: Platform, precisions: tuple[str, ...] = ("sp", "dp"),
                 intensities: tuple[float, ...] = MODEL_INTENSITIES) -> list[KernelPoint]:
    """Where the platform's (or cost table's) model puts the intensity kernel at each intensity: compute-bound
    ones (I >= B_tau) on the compute plot at (E/W, P), memory-bound ones (I <= B_tau) on the memory plot at
    (E/Q, P) = (I * E/W, P)   (S0 eq.1-8; capped, S1 eq.32-38)."""
    out: list[KernelPoint] = []
    for prec in precisions:
        if prec not in platform.precisions_available():
            continue
        m = platform.machine(prec)
        i = np.asarray(intensities, dtype=np.float64)
        e_per_flop = 1.0 / m.efficiency_flop_per_j(i)
        power = m.power_w(i)
        group = f"{platform.name} {prec.upper()} model at I = 1/4…64 flop/B"
        for x, e, p in zip(i, e_per_flop, power, strict=True):
            if x >= m.B_tau:
                out.append(KernelPoint(f"I = {x:g}", "compute", float(e), float(p), group))
            if x <= m.B_tau:
                out.append(KernelPoint(f"I = {x:g}", "memory", float(e * x), float(p), group))
    return out
