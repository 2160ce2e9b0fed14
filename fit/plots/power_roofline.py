"""The power roofline and the energy-efficiency roofline (S4) with their ceilings and kernels, one figure.

Top row: power against energy per flop (compute) and per byte (memory), linear axes as in S4; a ceiling is the
line P = F * E/unit, flat at its P_peak. Bottom row: power against energy efficiency (flop/J, byte/J), log axes;
the same ceiling reads P = F / EE. Ceilings and point groups are legend entries under each column, so no label
sits on a line or a point. Panels without content are left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from archline.fit.analyses.s4.power_roofline import (
    KINDS,
    Ceiling,
    KernelPoint,
    efficiency_ceiling_w,
    power_ceiling_w,
)
from archline.model.errors import ArchlineFitError

_UNIT = {"compute": ("flop", "pJ/flop", "GFLOP/J", "GFLOP/s"), "memory": ("byte", "pJ/B", "GB/J", "GB/s")}
NOMINAL_POWER_W = 100.0     # scale of the axes when no ceiling and no point carries a power
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h")


def _styles(n: int) -> list[tuple[Any, str]]:
    import matplotlib.pyplot as plt

    cmap = plt.get_cmap("tab10" if n <= 10 else "tab20")
    dashes = ("-", "--", "-.", ":")
    return [(cmap(i % cmap.N), dashes[(i // cmap.N) % len(dashes)]) for i in range(n)]


def _x_max(cs: Sequence[Ceiling], ps: Sequence[KernelPoint]) -> float:
    knees = [c.knee_j_per_unit for c in cs if c.knee_j_per_unit is not None]
    xs = [p.energy_per_unit_j for p in ps]
    if knees or xs:
        return max([2.2 * k for k in knees] + [1.12 * x for x in xs])
    return 2.0 * NOMINAL_POWER_W / min(c.rate_per_s for c in cs)


def _legend_label(c: Ceiling, kind: str) -> str:
    u = _UNIT[kind]
    text = f"{c.label}: {c.rate_per_s / 1e9:.4g} {u[3]}"
    if c.peak_power_w is not None and c.efficiency_per_j is not None:
        text += f", P_peak {c.peak_power_w:.4g} W, EE {c.efficiency_per_j / 1e9:.3g} {u[2]}"
    else:
        text += " (no power measured)"
    return text


def _draw_column(ax_p: Any, ax_e: Any, kind: str, cs: Sequence[Ceiling], ps: Sequence[KernelPoint]) -> None:
    """Both panels of one kind: ceilings as lines, each group of points with its own marker."""
    from archline.fit.figure_layout import log10_axis

    u = _UNIT[kind]
    x_max = _x_max(cs, ps)
    x = np.linspace(0.0, x_max, 600)[1:]
    groups = list(dict.fromkeys(p.group or p.label for p in ps))
    styles = _styles(len(cs) + len(groups))
    for (color, dash), c in zip(styles, cs, strict=False):
        lab = _legend_label(c, kind)
        ax_p.plot(np.r_[0.0, x] * 1e12, np.r_[0.0, power_ceiling_w(x, c.rate_per_s, c.peak_power_w)],
                  color=color, ls=dash, lw=1.8, label=lab)
        ax_e.plot(1e-9 / x[::-1], efficiency_ceiling_w(1.0 / x[::-1], c.rate_per_s, c.peak_power_w),
                  color=color, ls=dash, lw=1.8, label=lab)
    ceiling_color = {c.label: s[0] for s, c in zip(styles, cs, strict=False)}
    for n, grp in enumerate(groups):
        members = [p for p in ps if (p.group or p.label) == grp]
        base = grp.removesuffix(" (measured)")
        color = ceiling_color.get(base, styles[len(cs) + n][0])
        marker = _MARKERS[n % len(_MARKERS)]
        ex = np.array([p.energy_per_unit_j for p in members])
        pw = np.array([p.power_w for p in members])
        kw = {"color": color, "marker": marker, "ls": "none", "ms": 6, "markeredgecolor": "black",
              "markeredgewidth": 0.5, "zorder": 5, "label": grp}
        ax_p.plot(ex * 1e12, pw, **kw)
        ax_e.plot(1e-9 / ex, pw, **kw)
    all_p = [c.peak_power_w for c in cs if c.peak_power_w is not None] + [p.power_w for p in ps]
    top = 1.12 * max(all_p) if all_p else 2.0 * NOMINAL_POWER_W
    ax_p.set_xlim(0, x_max * 1e12)
    ax_p.set_ylim(0, top)
    ax_p.set_xlabel(f"energy per {u[0]} E/{'W' if kind == 'compute' else 'Q'} ({u[1]})")
    ax_p.set_ylabel("power (W)" if all_p else "power (W; nominal scale, no power measured)")
    ax_p.set_title(f"{kind} power roofline", fontsize=10)
    ee_lo, ee_hi = 1e-9 / x_max, 1e-9 / x[0]
    ee_pts = [1e-9 / p.energy_per_unit_j for p in ps]
    ee_hi = min(ee_hi, 8 * max([1e-9 * c.rate_per_s / (c.peak_power_w or NOMINAL_POWER_W) for c in cs] + ee_pts))
    log10_axis(ax_e, "x")
    log10_axis(ax_e, "y")
    ax_e.set_xlim(ee_lo, ee_hi)
    bottom = min([*all_p, top]) / 8 if all_p else NOMINAL_POWER_W / 50
    ax_e.set_ylim(bottom, top * 1.5)
    ax_e.set_xlabel(f"energy efficiency EE ({u[2]})")
    ax_e.set_ylabel("power (W)" if all_p else "power (W; nominal scale)")
    ax_e.set_title(f"{kind} energy-efficiency roofline", fontsize=10)
    for ax in (ax_p, ax_e):
        ax.grid(True, which="major", alpha=0.3)


def plot_power_roofline(ceilings: Sequence[Ceiling], out_path: Path, points: Sequence[KernelPoint] = (),
                        title: str = "", notes: Sequence[str] = ()) -> Path:
    """Draw the compute and memory columns that have ceilings or points, save atomically, return the path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from archline.fit.figure_layout import legend_outside, save_figure, title_with_notes

    kinds = [k for k in KINDS if any(c.kind == k for c in ceilings) or any(p.kind == k for p in points)]
    if not kinds:
        raise ArchlineFitError("no ceilings and no points to draw")
    entries = max(len({c.label for c in ceilings if c.kind == k}) + len({p.group for p in points if p.kind == k})
                  for k in kinds)
    fig, axes = plt.subplots(2, len(kinds), figsize=(6.4 * len(kinds), 8.2 + 0.19 * entries), squeeze=False,
                             layout="constrained")
    for col, kind in enumerate(kinds):
        cs = [c for c in ceilings if c.kind == kind]
        ps = [p for p in points if p.kind == kind]
        _draw_column(axes[0, col], axes[1, col], kind, cs, ps)
        legend_outside(axes[1, col], fontsize=7.5)
    title_with_notes(fig, title or "Power and energy-efficiency rooflines with optimisation ceilings (S4)", notes)
    return save_figure(fig, Path(out_path), dpi=120)
