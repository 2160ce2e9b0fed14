"""Power and energy-efficiency rooflines with optimisation ceilings for GPUs (S4; docs/model.md).

S4's equations are not printed in the paper's text; they are rebuilt here from its prose and Table I.

Power roofline (compute): x = energy per flop E/W (J/flop), y = power P (W). Running at F flop/s, P = F * E/W is
a line through the origin of slope F; the ceiling is P <= min(P_peak, F * E/W) (S4 eq.4-6). Memory: x = energy
per byte, P <= min(P_peak, BW * E/Q) (eq.7-8). Energy-efficiency roofline: x = EE = F/P flop/J (eq.9) or BW/P
byte/J (eq.10), the reciprocal of the power roofline's x, and the same ceiling reads P <= min(P_peak, F/EE).
Each optimisation (threads x blocks, FMA, ILP, access pattern...) is one ceiling; a kernel sits at its measured
(energy per unit, power). Lines nearer the y-axis of the power roofline mean more performance.

Ceilings come from a platform or cost table (``ceilings_from_platform``), from measured rows of the ceiling
kernels, or from a user's table (``archline.fit.analyses.s4.inputs``). A ceiling measured without a power meter
has a rate but no P_peak.

A platform's roofs are true upper bounds: S4 measures a roof's P_peak as the *board's* power while the ceiling
kernel runs, so it includes pi0 and what the other subsystem draws at the same time. In the energy-roofline
model (S0 eq.8, S1 eq.38) the most power any kernel draws is at I = B_tau, where flops run at F and bytes at
BW together: P_peak = pi0 + min(delta_pi, pi_flop + pi_mem) (``Machine.peak_power_w``), for the compute roof
(slope F) and for the memory roof (slope BW) alike. Every kernel the model places is then on its roof's slope
(P = F*E/W compute-bound, P = BW*E/Q memory-bound) and at or below its cap. pi0 + pi_flop alone (what an
earlier version drew) leaves out the memory's pi_mem*B_tau/I, so the GTX 580's compute-bound kernels drew
330 W against a 280 W roof, and its memory-bound ones 375 W against 221 W. A memory roof is drawn per precision
("DRAM with SP flops"), since pi_flop differs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from archline.formats.platforms.profiles import Platform
from archline.model.roofline import FloatArray

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
    precision: str = ""                # the flops' precision that sets the cap ("" when not a model's roof)

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
    precision: str = ""

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
    """One compute roof per precision the platform knows fully, and one memory roof with each precision's flops;
    each cap is the model's highest board power, pi0 + min(delta_pi, pi_flop + pi_mem) (see the module)."""
    out: list[Ceiling] = []
    src = f"{platform.name} ({'cost table' if platform.kind == 'costs' else 'profile'})"
    known = [p for p in precisions if p in platform.precisions_available()]
    mem: list[Ceiling] = []
    for prec in known:
        m = platform.machine(prec)
        out.append(Ceiling(f"{prec.upper()} flops", "compute", 1.0 / m.tau_flop_s, m.peak_power_w, src, prec))
        label = "DRAM" if len(known) == 1 else f"DRAM with {prec.upper()} flops"
        mem.append(Ceiling(label, "memory", 1.0 / m.tau_mem_s_per_byte, m.peak_power_w, src, prec))
    if not known:
        tau_m, eps_m = platform.value("tau_mem"), platform.value("eps_mem")
        if tau_m and eps_m:        # no flop constants: no kernel of the model to bound; the memory's own power
            pi0 = platform.value("pi0")
            label = "DRAM" if pi0 is not None else "DRAM, without pi0 (not in the profile): a lower bound"
            mem.append(Ceiling(label, "memory", 1.0 / tau_m, (pi0 or 0.0) + eps_m / tau_m, src))
    return out + mem


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
                out.append(KernelPoint(f"I = {x:g}", "compute", float(e), float(p), group, prec))
            if x <= m.B_tau:
                out.append(KernelPoint(f"I = {x:g}", "memory", float(e * x), float(p), group, prec))
    return out


def roof_for(point: KernelPoint, ceilings: list[Ceiling]) -> Ceiling | None:
    """The model roof a model point belongs under: same kind and precision."""
    return next((c for c in ceilings if c.kind == point.kind and c.precision == point.precision), None)
