"""Rooflines, arch lines and power lines (S0 Fig. 2-5 style) for one or several platforms, with measured
points drawn over the model when given. matplotlib is imported lazily with the Agg back end."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from archline.fit.errors import ArchlineFitError
from archline.fit.model.machine import Machine
from archline.fit.platforms.profiles import Platform

KINDS = ("roofline", "archline", "powerline")


@dataclass
class Curve:
    label: str
    machine: Machine
    tdp_w: float | None = None
    emulated: bool = False
    time_only: bool = False   # observed from time-only rows: no energy constants, roofline panel only


@dataclass
class Measured:
    """Measured points to draw over a curve: intensity and, where known, rate, efficiency and power."""

    label: str
    intensity_flop_per_byte: np.ndarray
    flop_per_s: np.ndarray | None = None
    flop_per_j: np.ndarray | None = None
    power_w: np.ndarray | None = None
    left_out: int = 0        # rows not drawn because their checksum failed (the label says so)


def curves_for(platforms: Sequence[Platform], precisions: Sequence[str]) -> list[Curve]:
    out = []
    for pl in platforms:
        for p in precisions:
            tag = " [emulated]" if pl.emulated else ""
            out.append(Curve(f"{pl.name} {p.upper()}{tag}", pl.machine(p, needed_for="the plot"),
                             pl.value("tdp_w"), pl.emulated))
    return out


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


def plot_model(curves: Sequence[Curve], out_path: Path, kinds: Sequence[str] = KINDS,
               measured: Sequence[Measured] = (), title: str | None = None) -> Path:
    """Draw the chosen panels side by side and save to ``out_path`` (png, pdf or svg)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not curves:
        raise ArchlineFitError("nothing to plot: no platform with the constants the plot needs")
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise ArchlineFitError(f"unknown plot kind '{unknown[0]}' (known: {', '.join(KINDS)})")
    if any(c.time_only for c in curves) and any(k != "roofline" for k in kinds):
        raise ArchlineFitError("these results carry time only (no energy was measured): only --kind roofline "
                               "can be drawn; give a platform or cost table for the arch and power lines")
    x = _intensity_range(curves, measured)
    fig, axes = plt.subplots(1, len(kinds), figsize=(5.6 * len(kinds), 4.6), squeeze=False)
    from matplotlib.ticker import FuncFormatter

    plain = FuncFormatter(lambda v, _pos: f"{v:g}")
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, kind in zip(axes[0], kinds, strict=True):
        tdp_drawn: set[str] = set()
        for n, c in enumerate(curves):
            _draw(ax, kind, c, x, colors[n % len(colors)], annotate=len(curves) <= 3, tdp_drawn=tdp_drawn)
        for n, m in enumerate(measured):
            y = {"roofline": m.flop_per_s, "archline": m.flop_per_j, "powerline": m.power_w}[kind]
            if y is None:
                continue
            scale = 1.0 if kind == "powerline" else 1e-9
            ax.scatter(m.intensity_flop_per_byte, np.asarray(y) * scale, s=18, zorder=5,
                       color=colors[n % len(colors)], edgecolor="black", linewidth=0.4,
                       label=f"{m.label} (measured)")
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(plain)
        if kind != "powerline":
            ax.yaxis.set_major_formatter(plain)
        ax.set_xlabel("operational intensity I (flop/byte)")
        ax.grid(True, which="both", alpha=0.25)
        ax.legend(fontsize=7, loc="best")
    if title is None:
        what = "Roofline, time only" if all(c.time_only for c in curves) else "Energy roofline"
        title = f"{what}: " + ", ".join(c.label for c in curves)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_name(f".{out_path.name}.tmp{out_path.suffix}")
    fig.savefig(tmp, dpi=130)
    plt.close(fig)
    tmp.replace(out_path)
    return out_path


def _draw(ax: Any, kind: str, c: Curve, x: np.ndarray, color: str, annotate: bool, tdp_drawn: set[str]) -> None:
    m = c.machine
    if kind == "roofline":
        y = m.performance_flop_per_s(x) / 1e9
        ax.plot(x, y, color=color, lw=2, label=f"{c.label}: roofline")
        ax.set_yscale("log", base=2)
        ax.set_ylabel("performance (GFLOP/s)")
        ax.set_title("Time: roofline")
        _mark(ax, m.B_tau, float(m.performance_flop_per_s(m.B_tau)) / 1e9, f"B_τ = {m.B_tau:.3g}", color, annotate)
    elif kind == "archline":
        y = m.efficiency_flop_per_j(x) / 1e9
        ax.plot(x, y, color=color, lw=2, label=f"{c.label}: arch line")
        ax.set_yscale("log", base=2)
        ax.set_ylabel("energy efficiency (GFLOP/J)")
        ax.set_title("Energy: arch line")
        b = m.energy_balance_point
        _mark(ax, b, float(m.efficiency_flop_per_j(b)) / 1e9, f"B̂_ε = {b:.3g} (half of peak)", color, annotate)
        if annotate and m.pi0_w > 0:
            ax.axvline(m.B_eps, color=color, ls=":", lw=0.8, alpha=0.6)
            ax.annotate(f"B_ε (π0=0) = {m.B_eps:.3g}", (m.B_eps, float(np.min(y))), fontsize=7, color=color,
                        rotation=90, va="bottom", ha="right")
    else:
        y = m.power_w(x)
        ax.plot(x, y, color=color, lw=2, label=f"{c.label}: power line")
        ax.set_ylabel("average power (W)")
        ax.set_title("Power line")
        ax.axhline(m.pi0_w, color=color, ls=":", lw=0.9, alpha=0.7)
        if annotate:
            ax.annotate(f"π0 = {m.pi0_w:.4g} W", (x[0], m.pi0_w), fontsize=7, color=color, va="bottom")
        if m.capped:
            cap = m.pi0_w + m.delta_pi_w
            ax.axhline(cap, color="crimson", ls="--", lw=1.2, label=f"{c.label}: cap π0+Δπ = {cap:.4g} W")
        owner = c.label.split(" ")[0]
        if c.tdp_w and owner not in tdp_drawn:
            tdp_drawn.add(owner)
            ax.axhline(c.tdp_w, color=color, ls="-.", lw=1.0, alpha=0.7, label=f"{owner}: vendor TDP {c.tdp_w:.4g} W")
        _mark(ax, m.B_tau, float(m.power_w(m.B_tau)), f"B_τ = {m.B_tau:.3g}", color, annotate)
        ax.set_ylim(bottom=0)


def _mark(ax: Any, x0: float, y0: float, text: str, color: str, annotate: bool) -> None:
    ax.axvline(x0, color=color, ls="--", lw=0.8, alpha=0.6)
    ax.plot([x0], [y0], marker="o", color=color, ms=5)
    if annotate:
        ax.annotate(text, (x0, y0), textcoords="offset points", xytext=(6, -12), fontsize=8, color=color)
