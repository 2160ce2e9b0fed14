"""Rooflines, arch lines and power lines (S0 Fig. 2-5 style) for one or several platforms, with measured
points drawn over the model when given. matplotlib is imported lazily with the Agg back end."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from archline.formats.platforms.profiles import Platform
from archline.model.errors import ArchlineFitError
from archline.model.machine import Machine

KINDS = ("roofline", "archline", "powerline")


@dataclass
class Curve:
    label: str
    machine: Machine
    tdp_w: float | None = None
    emulated: bool = False
    time_only: bool = False   # no energy constants (time-only rows or table, localhost's peaks): roofline panel only
    observed: bool = False    # drawn from the rows themselves, no platform given


@dataclass
class Measured:
    """Measured points to draw over a curve: intensity and, where known, rate, efficiency and power."""

    label: str
    intensity_flop_per_byte: np.ndarray
    flop_per_s: np.ndarray | None = None
    flop_per_j: np.ndarray | None = None
    power_w: np.ndarray | None = None
    left_out: int = 0        # rows not drawn because their checksum failed (the label says so)
    roof: tuple[float, float, str] | None = None   # robust (peak flop/s, DRAM byte/s, how) of the rows' run


def curves_for(platforms: Sequence[Platform], precisions: Sequence[str]) -> list[Curve]:
    out = []
    for pl in platforms:
        for p in precisions:
            tag = " [emulated]" if pl.emulated else ""
            if not _has_energy(pl, p):      # a time cost table or localhost's peaks: the time roofline only
                m = Machine(pl.require(f"tau_flop_{p}", "the plot"), pl.require("tau_mem", "the plot"), 0.0, 0.0, 0.0)
                out.append(Curve(f"{pl.name} {p.upper()} (time only){tag}", m, pl.value("tdp_w"), pl.emulated,
                                 time_only=True))
                continue
            out.append(Curve(f"{pl.name} {p.upper()}{tag}", pl.machine(p, needed_for="the plot"),
                             pl.value("tdp_w"), pl.emulated))
    return out


def _has_energy(pl: Platform, precision: str) -> bool:
    return all(pl.value(k) is not None for k in (f"eps_flop_{precision}", "eps_mem", "pi0"))


def _intensity_range(curves: Sequence[Curve], measured: Sequence[Measured]) -> np.ndarray:
    pts = [c.machine.B_tau for c in curves]
    pts += [c.machine.energy_balance_point for c in curves if not c.time_only]
    for c in curves:
        if c.machine.capped:
            pts += [x for x in (c.machine.B_tau_minus, c.machine.B_tau_plus) if 0 < x < math.inf]
    for m in measured:
        pts += list(m.intensity_flop_per_byte)
    lo = 2.0 ** math.floor(math.log2(max(min(pts) / 8, 1 / 64)))
    hi = 2.0 ** math.ceil(math.log2(min(max(pts) * 8, 4096)))
    return np.geomspace(lo, hi, 512)


def figure_height_in(curves: Sequence[Curve], measured: Sequence[Measured], base_in: float = 4.3) -> float:
    """Room under the panels for a legend of one line per entry (lines, balance points, pi0, TDP, points)."""
    entries = 3 * len(curves) + len(measured) + len({c.label.split(" ")[0] for c in curves})
    return base_in + 0.17 * entries


def plot_model(curves: Sequence[Curve], out_path: Path, kinds: Sequence[str] = KINDS,
               measured: Sequence[Measured] = (), title: str | None = None, notes: Sequence[str] = ()) -> Path:
    """Draw the chosen panels side by side and save to ``out_path`` (png, pdf or svg).

    Balance points, pi0 and TDP are legend entries (legends sit under the panels), so no label covers a curve or
    a measured point. ``notes`` (e.g. a fallback) are printed under the title. A time-only curve (observed from
    rows without a model) has no arch or power line: those panels show the measured points alone."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from archline.fit.figure_layout import legend_outside, log2_axis, save_figure, title_with_notes

    if not curves:
        raise ArchlineFitError("nothing to plot: no platform with the constants the plot needs")
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise ArchlineFitError(f"unknown plot kind '{unknown[0]}' (known: {', '.join(KINDS)})")
    no_energy = all(m.flop_per_j is None for m in measured)
    if all(c.time_only for c in curves) and no_energy and any(k != "roofline" for k in kinds):
        raise ArchlineFitError("these results carry time only (no energy was measured): only --kind roofline "
                               "can be drawn; give a platform or cost table for the arch and power lines")
    x = _intensity_range(curves, measured)
    fig, axes = plt.subplots(1, len(kinds), figsize=(5.6 * len(kinds), figure_height_in(curves, measured)),
                             squeeze=False, layout="constrained")
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, kind in zip(axes[0], kinds, strict=True):
        shown: set[str] = set()
        for n, c in enumerate(curves):
            if not (c.time_only and kind != "roofline"):
                _draw(ax, kind, c, x, colors[n % len(colors)], shown)
        for n, m in enumerate(measured):
            y = {"roofline": m.flop_per_s, "archline": m.flop_per_j, "powerline": m.power_w}[kind]
            if y is None:
                continue
            scale = 1.0 if kind == "powerline" else 1e-9
            ax.scatter(m.intensity_flop_per_byte, np.asarray(y) * scale, s=18, zorder=5,
                       color=colors[n % len(colors)],
                       edgecolor="black", linewidth=0.4,
                       label=m.label if "[emulated]" in m.label else f"{m.label} (measured)")
        log2_axis(ax, "x")
        if kind != "powerline":
            log2_axis(ax, "y")
        else:
            ax.set_ylim(bottom=0)
        ax.set_xlabel("operational intensity I (flop/byte)")
        ax.set_ylabel(_YLABEL[kind])
        ax.set_title(_TITLE[kind])
        ax.grid(True, which="major", alpha=0.25)
        legend_outside(ax)
    if title is None:
        energy = any(not c.time_only for c in curves) or any(m.flop_per_j is not None for m in measured)
        what = "Energy roofline" if energy else "Roofline, time only"
        title = f"{what}: " + ", ".join(c.label for c in curves)
    title_with_notes(fig, title, notes)
    return save_figure(fig, Path(out_path))


_YLABEL = {"roofline": "performance (GFLOP/s)", "archline": "energy efficiency (GFLOP/J)",
           "powerline": "average power (W)"}
_TITLE = {"roofline": "Time: roofline", "archline": "Energy: arch line", "powerline": "Power line"}


def _draw(ax: Any, kind: str, c: Curve, x: np.ndarray, color: str, shown: set[str]) -> None:
    """One curve and its marks; every mark is a legend entry, none is written on the axes."""
    m = c.machine
    if kind == "roofline":
        ax.plot(x, m.performance_flop_per_s(x) / 1e9, color=color, lw=2, label=f"{c.label}: roofline")
        _mark(ax, m.B_tau, float(m.performance_flop_per_s(m.B_tau)) / 1e9,
              f"{c.label}: B_τ = {m.B_tau:.3g} flop/B", color)
    elif kind == "archline":
        ax.plot(x, m.efficiency_flop_per_j(x) / 1e9, color=color, lw=2, label=f"{c.label}: arch line")
        b = m.energy_balance_point
        _mark(ax, b, float(m.efficiency_flop_per_j(b)) / 1e9, f"{c.label}: B̂_ε = {b:.3g} flop/B (half of peak)",
              color)
        if m.pi0_w > 0:
            ax.axvline(m.B_eps, color=color, ls=":", lw=0.9, alpha=0.7,
                       label=f"{c.label}: B_ε if π0 were 0 = {m.B_eps:.3g} flop/B")
    else:
        ax.plot(x, m.power_w(x), color=color, lw=2, label=f"{c.label}: power line")
        owner = c.label.split(" ")[0]
        pi0_label = f"{owner}: π0 = {m.pi0_w:.4g} W"
        if pi0_label not in shown:   # SP and DP of one platform share pi0: one line, one entry
            shown.add(pi0_label)
            ax.axhline(m.pi0_w, color=color, ls=":", lw=0.9, alpha=0.7, label=pi0_label)
        if m.capped:
            cap = m.pi0_w + m.delta_pi_w
            ax.axhline(cap, color="crimson", ls="--", lw=1.2, label=f"{c.label}: cap π0+Δπ = {cap:.4g} W")
        if c.tdp_w and f"tdp {owner}" not in shown:
            shown.add(f"tdp {owner}")
            ax.axhline(c.tdp_w, color=color, ls="-.", lw=1.0, alpha=0.7, label=f"{owner}: vendor TDP {c.tdp_w:.4g} W")
        _mark(ax, m.B_tau, float(m.power_w(m.B_tau)), f"{c.label}: B_τ = {m.B_tau:.3g} flop/B", color)


def _mark(ax: Any, x0: float, y0: float, text: str, color: str) -> None:
    ax.axvline(x0, color=color, ls="--", lw=0.8, alpha=0.6)
    ax.plot([x0], [y0], marker="o", ls="none", color=color, ms=6, markeredgecolor="black", markeredgewidth=0.5,
            label=text, zorder=6)
