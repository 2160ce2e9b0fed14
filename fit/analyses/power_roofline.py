"""Power and energy-efficiency roofline ceilings for GPUs (S4; model.md §11, RECONSTRUCTED).

Compute plot: x = energy per flop E/W (J/flop), y = power P (W). Running at F flop/s, P = F * E/W is a line
through the origin of slope F; the ceiling is P <= min(P_peak, F * E/W) (S4 eq.4-6). Memory plot: x = energy
per byte, P <= min(P_peak, BW * E/Q) (eq.7-8). Energy efficiency is EE = F/P flop/J (eq.9) or BW/P byte/J
(eq.10). Each optimisation (precision, FMA/ILP, access pattern...) is one ceiling; kernels sit at their
measured (energy per unit, power). Lines nearer the y-axis mean more performance.

``plot_power_roofline`` is the entry point for ``archline plot``; ``ceilings_from_platform`` derives one
ceiling per precision and one for memory from a profile or cost table: F = 1/tau_flop, BW = 1/tau_mem, and
P_peak = pi0 + eps_flop/tau_flop (or pi0 + eps_mem/tau_mem), capped at pi0 + delta_pi when the cap is known
(S1 §4.2).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike

from archline.fit.model.roofline import FloatArray
from archline.fit.platforms.profiles import Platform


@dataclass(frozen=True)
class Ceiling:
    label: str
    kind: str                  # "compute" (rate in flop/s) or "memory" (rate in byte/s)
    rate_per_s: float
    peak_power_w: float

    @property
    def knee_j_per_unit(self) -> float:
        """Energy per unit where the slope meets P_peak."""
        return self.peak_power_w / self.rate_per_s

    @property
    def efficiency_per_j(self) -> float:
        """EE at the peak: rate / P_peak (flop/J or byte/J; S4 eq.9-10)."""
        return self.rate_per_s / self.peak_power_w


@dataclass(frozen=True)
class KernelPoint:
    label: str
    kind: str                  # "compute" or "memory"
    energy_per_unit_j: float
    power_w: float


def power_ceiling_w(energy_per_unit_j: ArrayLike, rate_per_s: float, peak_power_w: float) -> FloatArray:
    """P <= min(P_peak, rate * E/unit)   (S4 eq.6 and eq.8)."""
    return np.minimum(peak_power_w, rate_per_s * np.asarray(energy_per_unit_j, dtype=np.float64))


def ceilings_from_platform(platform: Platform) -> list[Ceiling]:
    """One compute ceiling per precision the platform knows fully, one memory ceiling."""
    out: list[Ceiling] = []
    pi0 = platform.value("pi0") or 0.0
    cap = platform.value("delta_pi")
    for prec in ("sp", "dp"):
        tau, eps = platform.value(f"tau_flop_{prec}"), platform.value(f"eps_flop_{prec}")
        if tau and eps:
            peak = pi0 + eps / tau
            out.append(Ceiling(f"{prec.upper()} flops", "compute", 1.0 / tau,
                               min(peak, pi0 + cap) if cap else peak))
    tau_m, eps_m = platform.value("tau_mem"), platform.value("eps_mem")
    if tau_m and eps_m:
        peak = pi0 + eps_m / tau_m
        out.append(Ceiling("DRAM", "memory", 1.0 / tau_m, min(peak, pi0 + cap) if cap else peak))
    return out


def plot_power_roofline(ceilings: Sequence[Ceiling], out_path: Path, points: Sequence[KernelPoint] = (),
                        title: str = "") -> Path:
    """Draw the compute and memory power rooflines side by side (panels without ceilings are left out)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kinds = [k for k in ("compute", "memory") if any(c.kind == k for c in ceilings)]
    if not kinds:
        raise ValueError("no ceilings to draw")
    fig, axes = plt.subplots(1, len(kinds), figsize=(6.0 * len(kinds), 4.6), squeeze=False)
    unit = {"compute": ("flop", "pJ/flop", "GFLOP/J"), "memory": ("byte", "pJ/B", "GB/J")}
    for ax, kind in zip(axes[0], kinds, strict=True):
        cs = [c for c in ceilings if c.kind == kind]
        ps = [p for p in points if p.kind == kind]
        x_max = 2.5 * max([c.knee_j_per_unit for c in cs] + [p.energy_per_unit_j for p in ps])
        x = np.linspace(0.0, x_max, 400)
        for c in cs:
            ax.plot(x * 1e12, power_ceiling_w(x, c.rate_per_s, c.peak_power_w),
                    label=f"{c.label}: {c.rate_per_s / 1e9:.4g} G{unit[kind][0]}/s, "
                          f"P_peak {c.peak_power_w:.4g} W, EE {c.efficiency_per_j / 1e9:.3g} {unit[kind][2]}")
        for p in ps:
            ax.plot(p.energy_per_unit_j * 1e12, p.power_w, "o", markersize=6)
            ax.annotate(p.label, (p.energy_per_unit_j * 1e12, p.power_w), textcoords="offset points",
                        xytext=(4, 4), fontsize=8)
        ax.set_xlim(0, x_max * 1e12)
        ax.set_ylim(0, 1.15 * max([c.peak_power_w for c in cs] + [p.power_w for p in ps]))
        ax.set_xlabel(f"energy per {unit[kind][0]} ({unit[kind][1]})")
        ax.set_ylabel("power (W)")
        ax.set_title(f"{kind} power roofline")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    out_path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out_path, dpi=120)
    plt.close(fig)
    return out_path
