"""Power-cap throttling (S1 Ch. 4, §4.4.4, Figs. 13-14) and the power-bounding scenario that follows it.

Throttling keeps every constant of a capped machine (pi0 included) and divides its usable power delta_pi by
k = 1..8 (S1 §4.4.4; model.md §4). ``throttle_sweep`` gives, for each k and intensity I, the performance,
energy efficiency and power of the throttled machine relative to k = 1 (the three panels of S1 Fig. 13).

The power-bounding scenario (S1 §4.4.4, last paragraph) halves the GTX Titan's node power to 140 W, calls that
delta_pi/8 and compares it with as many Arndale GPUs as fit in 140 W. S1 Table 6, which holds the Titan's
pi0, delta_pi, tau_flop and eps_flop, is absent from the thesis's text, so the machine is rebuilt from what the
text does print (``titan_power_bound``):

* full node power P_full = 2 x 140 W (the text: "reduce per-node power by half, to 140 Watts") and
  140 W = pi0 + delta_pi/8 (the text: "a power cap setting of delta_pi/8"), so
  delta_pi = (P_full - P_cap)/(1 - 1/k) = 160 W and pi0 = 120 W (``split_power``);
* tau_mem*pi0 = 515 pJ/B (S1 §4.4.3, Q080), so tau_mem = 515 pJ/B / pi0 (a fitted, sustained 233 GB/s);
* eps_mem = 267 pJ/B (S1 §4.4.3, Q079);
* the peak energy efficiency 16 GFLOP/J (S1 §4.4.3, Q071) fixes eps_flop + pi0*tau_flop = 62.5 pJ; how that
  splits between eps_flop and pi0*tau_flop is not printed, so the scenario is evaluated over the whole
  range eps_flop in (0, 62.5 pJ) and reports the spread.

A user's own platform gets delta_pi from its profile (``delta_pi = { value = ..., source = ... }`` in
[constants]; docs/analyses.md) or from a cost table fitted with ``archline fit --model capped``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from archline.formats.costs_units import implausible
from archline.model.errors import ArchlineFitError
from archline.model.machine import Machine

DEFAULT_DIVISORS = (1, 2, 3, 4, 5, 6, 7, 8)   # S1 §4.4.4: k in [1, 8]


class ThrottleError(ArchlineFitError):
    pass


def require_cap(m: Machine, name: str) -> Machine:
    if not math.isfinite(m.delta_pi_w):
        raise ThrottleError(f"'{name}' has no delta_pi (its usable power above pi0): throttling divides it. Give "
                            "it with --delta-pi-w W, a profile entry delta_pi = { value = W } under "
                            "[constants], or a cost table from 'archline fit --model capped'")
    return m


@dataclass(frozen=True)
class ThrottleSweep:
    machine: Machine
    divisors: tuple[float, ...]
    intensities: np.ndarray
    perf_flop_per_s: np.ndarray        # [k, I]
    eff_flop_per_j: np.ndarray         # [k, I]
    power_w: np.ndarray                # [k, I]

    @property
    def rel_perf(self) -> np.ndarray:
        return self.perf_flop_per_s / self.perf_flop_per_s[0]

    @property
    def rel_eff(self) -> np.ndarray:
        return self.eff_flop_per_j / self.eff_flop_per_j[0]

    def as_dict(self) -> dict[str, Any]:
        m = self.machine
        return {"source": "S1 Sec. 4.4.4, Fig. 13", "pi0_w": m.pi0_w, "delta_pi_w": m.delta_pi_w,
                "divisors": list(self.divisors), "intensities": self.intensities.tolist(),
                "perf_flop_per_s": self.perf_flop_per_s.tolist(), "eff_flop_per_j": self.eff_flop_per_j.tolist(),
                "power_w": self.power_w.tolist(), "rel_perf": self.rel_perf.tolist(),
                "rel_eff": self.rel_eff.tolist()}


def throttle_sweep(m: Machine, intensities: Sequence[float] | np.ndarray,
                   divisors: Sequence[float] = DEFAULT_DIVISORS) -> ThrottleSweep:
    """Performance, efficiency and power of ``m`` with delta_pi/k for each k (S1 Fig. 13a-c; model.md §4)."""
    if not divisors or any(not k > 0 for k in divisors):
        raise ThrottleError("every cap divisor k must be > 0")
    i = np.asarray(intensities, dtype=np.float64)
    ms = [m.throttled(k) for k in divisors]
    return ThrottleSweep(m, tuple(float(k) for k in divisors), i,
                         np.array([x.performance_flop_per_s(i) for x in ms]),
                         np.array([x.efficiency_flop_per_j(i) for x in ms]),
                         np.array([x.power_w(i) for x in ms]))


def split_power(full_power_w: float, capped_power_w: float, k: float) -> tuple[float, float]:
    """(pi0, delta_pi) from P_full = pi0 + delta_pi and P_cap = pi0 + delta_pi/k (S1 §4.4.4)."""
    if not (k > 1 and full_power_w > capped_power_w > 0):
        raise ThrottleError("need k > 1 and a full power above the capped power")
    for what, w in (("full power", full_power_w), ("capped power", capped_power_w)):
        if why := implausible(w, "W"):
            raise ThrottleError(f"{what}: {why}")
    delta = (full_power_w - capped_power_w) / (1 - 1 / k)
    pi0 = full_power_w - delta
    if not pi0 > 0:
        raise ThrottleError(f"a cap of {capped_power_w:g} W = pi0 + delta_pi/{k:.10g} with {full_power_w:g} W = pi0 + "
                            f"delta_pi gives pi0 = {pi0:.4g} W: a constant power must be positive, so the cap must be "
                            f"above full/k = {full_power_w / k:.4g} W")
    return pi0, delta


@dataclass(frozen=True)
class PowerBound:
    """S1 §4.4.4's power-bounding scenario, evaluated over the unknown split of eps_hat (see the module)."""

    full_power_w: float
    capped_power_w: float
    k: float
    pi0_w: float
    delta_pi_w: float
    tau_mem_s_per_byte: float
    intensity: float
    eps_flop_range_j: tuple[float, float]
    throttled_rate: tuple[float, float]       # (min, max) over eps_flop: perf(delta_pi/k) / perf(delta_pi)
    boards_full: int
    boards: int
    small_ratio_full: float                   # n_full small systems against the uncapped big one at I
    speedup: tuple[float, float]              # boards small systems against the throttled big one at I

    def as_dict(self) -> dict[str, Any]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()} | {
            "source": "S1 Sec. 4.4.4 (140 W, delta_pi/8, 0.31x, 23 boards, 2.8x)"}


def titan_power_bound(*, full_power_w: float = 280.0, capped_power_w: float = 140.0, k: float = 8.0,
                      const_energy_per_byte_j: float = 515e-12, eps_mem_j_per_byte: float = 267e-12,
                      peak_flop_per_j: float = 16e9, intensity: float = 0.25, boards_full: int = 47,
                      small_ratio_full: float = 1.6, samples: int = 201) -> PowerBound:
    """S1 §4.4.4's scenario from the printed inputs (defaults: the GTX Titan, 47 Arndale GPUs at 1.6x; see the
    module docstring for where each comes from)."""
    pi0, delta = split_power(full_power_w, capped_power_w, k)
    tau_mem = const_energy_per_byte_j / pi0
    if why := implausible(tau_mem, "s/byte"):
        raise ThrottleError(f"tau_mem = {const_energy_per_byte_j:g} J/B / pi0 ({pi0:.4g} W): {why}")
    eps_hat = 1.0 / peak_flop_per_j
    eps_f = np.linspace(0.005, 0.995, samples) * eps_hat
    rates = []
    for e in eps_f:
        tau_flop = (eps_hat - e) / pi0
        m = Machine(tau_flop, tau_mem, float(e), eps_mem_j_per_byte, pi0, delta)
        rates.append(float(m.throttled(k).performance_flop_per_s(intensity) / m.performance_flop_per_s(intensity)))
    lo, hi = min(rates), max(rates)
    try:
        exact = boards_full * capped_power_w / full_power_w
        scaled = small_ratio_full * math.floor(exact + 1e-9) / boards_full
    except OverflowError:
        exact = scaled = math.inf
    if not (math.isfinite(exact) and math.isfinite(scaled / lo) and lo > 0):
        raise ThrottleError(f"{boards_full} boards at {small_ratio_full:g}x do not give a finite speedup: not a real "
                            "machine's numbers")
    boards = math.floor(exact + 1e-9)
    return PowerBound(full_power_w, capped_power_w, k, pi0, delta, tau_mem, intensity,
                      (float(eps_f[0]), float(eps_f[-1])), (lo, hi), boards_full, boards, small_ratio_full,
                      (scaled / hi, scaled / lo))


def with_power(m: Machine, pi0_w: float | None = None, delta_pi_w: float | None = None) -> Machine:
    """``m`` with pi0 and/or delta_pi replaced (the command's --pi0-w and --delta-pi-w)."""
    return replace(m, **({} if pi0_w is None else {"pi0_w": pi0_w}),
                   **({} if delta_pi_w is None else {"delta_pi_w": delta_pi_w}))


def plot_throttle(sw: ThrottleSweep, out_path: Any, name: str) -> Any:
    """S1 Fig. 13: (a) power, (b) performance and (c) energy efficiency against intensity for delta_pi/k,
    performance and efficiency relative to k = 1."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from archline.fit.figure_layout import legend_outside, log2_axis, save_figure

    fig, axes = plt.subplots(1, 3, figsize=(13, 4.6), layout="constrained")
    cmap = plt.get_cmap("viridis")
    n = len(sw.divisors)
    for j, k in enumerate(sw.divisors):
        c = cmap(j / max(1, n - 1))
        lab = "delta_pi" if k == 1 else f"delta_pi/{k:g}"
        axes[0].plot(sw.intensities, sw.power_w[j], color=c, label=lab)
        axes[1].plot(sw.intensities, sw.rel_perf[j], color=c)
        axes[2].plot(sw.intensities, sw.rel_eff[j], color=c)
    for ax, yl, t in zip(axes, ("power (W)", "relative performance", "relative energy efficiency"),
                         ("(a) power", "(b) performance", "(c) energy efficiency"), strict=True):
        log2_axis(ax)
        ax.set_xlabel("intensity (flop:byte)")
        ax.set_ylabel(yl)
        ax.set_title(t, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].axhline(sw.machine.pi0_w, color="grey", linestyle=":", linewidth=1, label="pi0")
    fig.suptitle(f"{name}: power-cap throttling, delta_pi/k for k = 1..{max(sw.divisors):g} (cf. S1 Fig. 13)")
    legend_outside(axes[0], fontsize=8)
    return save_figure(fig, out_path, dpi=110)
