"""Iso-power comparison: how many of a small system B match a big system A in power, and what each then
delivers in time and energy (S1 §4.1, §4.4.4, §5.2.3; model.md §4).

N = (power budget) / (peak power of one B), the budget being A's peak power unless given. N copies of B
have N times B's flop rate, bandwidth and power; their energy per flop is B's (network cost is ignored, as
in the thesis). A system's peak power is, in order: the model's P_max = pi0 + min(delta_pi, pi_flop + pi_mem)
when every constant is known (a fitted cost table), else its TDP (the thesis's §4.1 preview uses the Titan's
250 W TDP). The thesis's own N (47 Arndales, 22 Jetsons per Titan) divides *measured* maximum powers that it
does not print; give such an N with ``n`` to redo its comparison.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from archline.formats.costs_units import implausible
from archline.formats.platforms.profiles import CONSTANT_UNITS, Constant, Platform
from archline.model.errors import ArchlineFitError, MissingValueError
from archline.model.machine import Machine


class IsoPowerError(ArchlineFitError):
    pass


@dataclass(frozen=True)
class System:
    """One building block at one precision: what the comparison needs, each value None when unknown."""

    name: str
    peak_flop_per_s: float
    peak_byte_per_s: float | None
    peak_power_w: float | None
    power_source: str
    machine: Machine | None          # None: time only (no energy constants)
    emulated: bool = False

    def perf_flop_per_s(self, intensity: np.ndarray) -> np.ndarray:
        if self.machine is not None:
            return self.machine.performance_flop_per_s(intensity)
        if self.peak_byte_per_s is None:     # unknown bandwidth: no roofline at any finite intensity
            return np.full_like(intensity, np.nan)
        return np.minimum(self.peak_flop_per_s, intensity * self.peak_byte_per_s)


def system(platform: Platform, precision: str = "sp", power_w: float | None = None) -> System:
    """A platform or cost table as a building block; ``power_w`` overrides its peak power."""
    peak = platform.value(f"peak_flop_per_s_{precision}")
    tau = platform.value(f"tau_flop_{precision}")
    if peak is None and tau is None:
        raise MissingValueError(f"platform '{platform.name}' has no {precision.upper()} peak flop rate "
                                f"(peak_flop_per_s_{precision} or tau_flop_{precision}); iso-power needs it")
    flops = peak if peak is not None else 1.0 / tau  # type: ignore[operator]
    tau_mem = platform.value("tau_mem")
    machine = platform.machine(precision) if precision in platform.precisions_available() else None
    if power_w is not None:
        if not power_w > 0:
            raise IsoPowerError(f"power of '{platform.name}' must be positive, got {power_w:g} W")
        if why := implausible(power_w, "W"):
            raise IsoPowerError(f"power of '{platform.name}': {why}")
        p, src = power_w, "given"
    elif machine is not None:
        p, src = machine.peak_power_w, "model P_max = pi0 + min(delta_pi, pi_flop + pi_mem)"
    elif (tdp := platform.value("tdp_w")) is not None:
        p, src = tdp, f"TDP: {platform.source('tdp_w')}" if platform.source("tdp_w") else "TDP"
    else:
        p, src = None, "unknown: no model constants and no tdp_w"
    return System(platform.name, flops, None if tau_mem is None else 1.0 / tau_mem, p, src, machine,
                  platform.emulated)


@dataclass
class IsoPower:
    big: System
    small: System
    n_small: int
    n_exact: float | None             # budget / P_small before rounding down; None when N was given
    budget_w: float | None
    n_source: str
    intensities: list[float]
    work_flop: float
    rows: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def compute_ratio(self) -> float:
        """Aggregate peak flop rate of N x B over A's."""
        return self.n_small * self.small.peak_flop_per_s / self.big.peak_flop_per_s

    @property
    def bandwidth_ratio(self) -> float | None:
        if self.small.peak_byte_per_s is None or self.big.peak_byte_per_s is None:
            return None
        return self.n_small * self.small.peak_byte_per_s / self.big.peak_byte_per_s

    def as_dict(self) -> dict[str, Any]:
        def sysd(s: System) -> dict[str, Any]:
            return {"name": s.name, "peak_flop_per_s": s.peak_flop_per_s, "peak_byte_per_s": s.peak_byte_per_s,
                    "peak_power_w": s.peak_power_w, "power_source": s.power_source,
                    "energy_known": s.machine is not None, "emulated": s.emulated}
        return {"big": sysd(self.big), "small": sysd(self.small), "n_small": self.n_small, "n_exact": self.n_exact,
                "budget_w": self.budget_w, "n_source": self.n_source, "compute_ratio": self.compute_ratio,
                "bandwidth_ratio": self.bandwidth_ratio, "work_flop": self.work_flop, "points": self.rows,
                "notes": self.notes}


def _opt(v: float) -> float | None:
    return v if math.isfinite(v) else None


def iso_power(big: System, small: System, *, budget_w: float | None = None, n: int | None = None,
              intensities: Sequence[float] = (0.25, 1.0, 4.0, 16.0, 64.0), work_flop: float = 1e12) -> IsoPower:
    """N copies of ``small`` against one ``big`` at equal power (or within ``budget_w``); ``n`` fixes N."""
    if not work_flop > 0:
        raise IsoPowerError(f"work must be positive, got {work_flop:g} flop")
    if n is not None:
        if n < 1:
            raise IsoPowerError(f"N must be at least 1, got {n}")
        n_small, n_exact, source = n, None, f"N = {n} given"
        budget = budget_w
    else:
        budget = budget_w if budget_w is not None else big.peak_power_w
        if budget is None:
            raise IsoPowerError(f"'{big.name}' has no peak power ({big.power_source}); give --budget-w, "
                                f"--power-a or --n")
        if small.peak_power_w is None:
            raise IsoPowerError(f"'{small.name}' has no peak power ({small.power_source}); give --power-b or --n")
        if not budget > 0:
            raise IsoPowerError(f"power budget must be positive, got {budget:g} W")
        if why := implausible(budget, "W"):
            raise IsoPowerError(f"power budget: {why}")
        n_exact = budget / small.peak_power_w
        if not math.isfinite(n_exact):
            raise IsoPowerError(f"{budget:g} W / {small.peak_power_w:g} W per '{small.name}' is not a finite number "
                                "of systems: not a real machine's power")
        n_small = math.floor(n_exact + 1e-9)
        if n_small < 1:
            raise IsoPowerError(f"one '{small.name}' ({small.peak_power_w:g} W) exceeds the {budget:g} W budget")
        source = (f"floor({budget:g} W / {small.peak_power_w:g} W)")
    out = IsoPower(big, small, n_small, n_exact, budget, source, [float(i) for i in intensities], work_flop)
    i = np.asarray(out.intensities, dtype=np.float64)
    if np.any(~(i > 0)):
        raise IsoPowerError("intensities must be positive flop/byte")
    try:
        perf_a, perf_b = big.perf_flop_per_s(i), n_small * small.perf_flop_per_s(i)
        finite_n = math.isfinite(out.compute_ratio)
    except OverflowError:
        finite_n = False
    if not finite_n:
        raise IsoPowerError(f"{n_small} x '{small.name}' overflows a float: not a real number of systems")
    eff_a = big.machine.efficiency_flop_per_j(i) if big.machine else None
    eff_b = small.machine.efficiency_flop_per_j(i) if small.machine else None
    pow_a = big.machine.power_w(i) if big.machine else None
    pow_b = n_small * small.machine.power_w(i) if small.machine else None
    for k, x in enumerate(i):
        pa, pb = float(perf_a[k]), float(perf_b[k])
        row: dict[str, Any] = {"intensity": float(x), "a_flop_per_s": _opt(pa), "b_flop_per_s": _opt(pb),
                               "speedup_b_over_a": _opt(pb / pa), "a_time_s": _opt(work_flop / pa),
                               "b_time_s": _opt(work_flop / pb)}
        for side, eff, pw in (("a", eff_a, pow_a), ("b", eff_b, pow_b)):
            row[f"{side}_flop_per_j"] = None if eff is None else float(eff[k])
            row[f"{side}_energy_j"] = None if eff is None else work_flop / float(eff[k])
            row[f"{side}_power_w"] = None if pw is None else float(pw[k])
        if bad := sorted(k for k, v in row.items() if isinstance(v, float) and math.isinf(v)):
            raise IsoPowerError(f"at I = {x:g} the model gives an infinite {', '.join(bad)}: the inputs are not a "
                                "real machine's")
        out.rows.append(row)
    for s in (big, small):
        if s.machine is None and s.peak_byte_per_s is None:
            out.notes.append(f"'{s.name}': no bandwidth, so no performance at any intensity (only its peak)")
        if s.machine is None:
            out.notes.append(f"'{s.name}': no energy constants (eps_flop, eps_mem, pi0): time only, its roofline "
                             "from peak flop rate and bandwidth")
    return out


#: constants --set-a/--set-b may give a side (SI units: J, J/B, W, flop/s, B/s)
SETTABLE = ("eps_flop_sp", "eps_flop_dp", "eps_mem", "pi0", "delta_pi", "peak_flop_per_s_sp", "peak_flop_per_s_dp",
            "peak_byte_per_s")


def settings_dict(pairs: Sequence[tuple[str, float]], option: str) -> dict[str, float]:
    """KEY=VALUE pairs as a mapping; a key given twice is refused (the later one would silently win)."""
    out: dict[str, float] = {}
    for key, v in pairs:
        if key in out:
            raise IsoPowerError(f"{option} gives '{key}' twice ({out[key]:g} and {v:g}); give it once")
        out[key] = v
    return out


def with_constants(platform: Platform, values: Mapping[str, float]) -> Platform:
    """``platform`` with some constants given (the command's --set-a/--set-b), each marked as given, so that a
    profile without S1 Table 6's energy constants (the Titan, the Jetson TK1) can draw S1 Fig. 16's energy and
    power panels from values the user states."""
    if not values:
        return platform
    consts = dict(platform.constants)
    for key, v in values.items():
        if key not in SETTABLE:
            raise IsoPowerError(f"cannot set '{key}' (one of {', '.join(SETTABLE)})")
        if not (math.isfinite(v) and v > 0):
            raise IsoPowerError(f"{key} must be a positive number, got {v:g}")
        if why := implausible(v, CONSTANT_UNITS.get(key, "")):
            raise IsoPowerError(f"{platform.name}: {key} = {why} (on the command line: SI, e.g. 30e-12 for 30 pJ)")
        consts[key] = Constant(float(v), "given on the command line")
    return replace(platform, constants=consts)


def missing_energy(platform: Platform, precision: str) -> list[str]:
    """The energy constants a platform lacks at ``precision`` (empty when its model is complete)."""
    return [k for k in (f"eps_flop_{precision}", "eps_mem", "pi0") if platform.value(k) is None]


def plot_iso_power(r: IsoPower, out_path: Any, precision: str = "sp", missing: Sequence[str] = ()) -> Any:
    """S1 Fig. 16's three panels: time roofline (performance), energy arch line (efficiency) and power line
    against intensity, for A, N x B and one B.

    Energy efficiency is the same for N x B as for one B (network ignored; S1 §5.2.3.1 draws no N x B curve
    there either), so only one B curve is drawn in the middle panel. A side without energy constants has no
    curve in the energy and power panels; ``missing`` (one line per side, e.g. "titan: no eps_flop_sp") is
    said under the title, and a panel with no curve at all says so in its middle."""
    from archline.fit.figure_layout import pyplot, save_figure

    plt = pyplot()
    grid = np.geomspace(min([*r.intensities, 1 / 16]), max([*r.intensities, 256.0]), 300)
    panels: list[tuple[str, str, Any]] = [
        ("time roofline", "performance (GFLOP/s)", lambda s: s.perf_flop_per_s(grid)),
        ("energy arch line", "energy efficiency (GFLOP/J)",
         lambda s: s.machine.efficiency_flop_per_j(grid) if s.machine else None),
        ("power line", "power (W)", lambda s: s.machine.power_w(grid) * 1e9 if s.machine else None)]
    fig, axes = plt.subplots(1, 3, figsize=(14.4, 4.6), squeeze=False)
    n = r.n_small
    for ax, (title, label, f) in zip(axes[0], panels, strict=True):
        ya, yb = f(r.big), f(r.small)
        scale = 1e9
        ax.set_title(title, fontsize=10)
        if ya is None and yb is None:
            ax.set_xticks([])
            ax.set_yticks([])
            ax.text(0.5, 0.5, "no energy constants\non either side", ha="center", va="center",
                    transform=ax.transAxes, fontsize=9, color="0.4")
            continue
        if ya is not None:
            ax.plot(grid, ya / scale, "-", color="C0", label=r.big.name)
        if yb is not None:
            if label.startswith("energy"):
                ax.plot(grid, yb / scale, "-.", color="C1", label=f"{r.small.name} (any N)")
            else:
                ax.plot(grid, n * yb / scale, "--", color="C1", label=f"{n} x {r.small.name}")
                ax.plot(grid, yb / scale, ":", color="C1", alpha=0.7, label=f"1 x {r.small.name}")
        ax.set_xscale("log", base=2)
        if label.startswith("power"):
            ax.set_ylim(0, ax.get_ylim()[1] * 1.05)
        else:
            ax.set_yscale("log", base=10)
        ax.set_xlabel("intensity (flop/byte)")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.25)
    handles: dict[str, Any] = {}
    for ax in axes[0]:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(lab, h)
    fig.legend(list(handles.values()), list(handles), loc="lower center", ncol=len(handles), fontsize=9,
               frameon=False)
    tag = " [emulated]" if r.big.emulated or r.small.emulated else ""
    title = (f"S1 Fig. 16 (iso-power, {precision.upper()}): {n} x {r.small.name} against one {r.big.name} "
             f"({r.n_source}){tag}")
    if missing:
        title += "\nno energy or power curve for " + "; ".join(missing) + " (give them with --set-a/--set-b)"
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return save_figure(fig, out_path)
