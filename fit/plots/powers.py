"""Figures of ``archline powers`` (S1 Ch. 4): Fig. 12's power per platform, Fig. 14's throttling spread and the
pi0-share scatter of S1 §4.4.3 (which the thesis describes but does not show)."""

from __future__ import annotations

import math
from pathlib import Path

from archline.fit.analyses.choi.powers import Comparison, Pi0Share, Spread


def _missing_notes(skipped: dict[str, tuple[str, ...]]) -> list[str]:
    if not skipped:
        return []
    return ["not drawn (constants missing; S1 Table 6 is absent): " +
            "; ".join(f"{n} ({', '.join(v)})" for n, v in skipped.items())]


def plot_compare(c: Comparison, out_path: Path, precision: str) -> Path:
    """S1 Fig. 12: one panel per platform, power against intensity, ordered by decreasing peak flop/J."""
    from archline.fit.figure_layout import log2_axis, pyplot, save_figure, title_with_notes

    plt = pyplot()
    drawn = [p for p in c.platforms if p.name in c.power_w]
    skipped = {p.name: p.missing for p in c.platforms if p.name not in c.power_w}
    n = max(1, len(drawn))
    cols = min(4, n)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.4 * cols + 0.6, 2.9 * rows + 1.3), squeeze=False,
                             layout="constrained")
    for ax in axes.flat[len(drawn):]:
        ax.set_axis_off()
    if not drawn:
        axes[0, 0].text(0.5, 0.5, "no platform has a complete model", ha="center", va="center")
    for ax, p in zip(axes.flat, drawn, strict=False):
        m = p.machine
        assert m is not None
        ax.plot(c.intensities, c.power_w[p.name], color="tab:blue", label="model power")
        ax.axhline(m.pi0_w, color="grey", linestyle=":", linewidth=1, label="pi0")
        if m.capped:
            ax.axhline(m.pi0_w + m.delta_pi_w, color="tab:red", linestyle="--", linewidth=1, label="pi0 + delta_pi")
        log2_axis(ax)
        ax.set_ylim(bottom=0, top=1.15 * max(float(c.power_w[p.name].max()), m.pi0_w))
        peak = p.peak_flop_per_j or math.nan
        ax.set_title(f"{p.name}{' [emulated]' if p.emulated else ''}: {peak / 1e9:.3g} Gflop/J", fontsize=9)
        ax.set_xlabel("intensity (flop:byte)", fontsize=8)
        ax.set_ylabel("power (W)", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(True, which="both", alpha=0.3)
    if drawn:
        seen: dict[str, object] = {}
        for ax in axes.flat[:len(drawn)]:
            for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
                seen.setdefault(lab, h)
        fig.legend(list(seen.values()), list(seen), loc="outside lower center", ncol=3, fontsize=8, frameon=False)
    title_with_notes(fig, f"Modelled power across platforms, {precision.upper()}, by decreasing peak energy "
                     "efficiency (cf. S1 Fig. 12; model only, no measured dots)", _missing_notes(skipped))
    return save_figure(fig, out_path, dpi=110)


def plot_spread(s: Spread, out_path: Path) -> Path:
    """S1 Fig. 14: (a) performance and (b) energy efficiency at delta_pi/k relative to delta_pi, per platform."""
    from archline.fit.figure_layout import log2_axis, pyplot, save_figure, title_with_notes

    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.8), layout="constrained")
    cmap = plt.get_cmap("tab10")
    for j, name in enumerate(s.rel_perf):
        axes[0].plot(s.intensities, s.rel_perf[name], marker="o", markersize=3, color=cmap(j % 10), label=name)
        axes[1].plot(s.intensities, s.rel_eff[name], marker="o", markersize=3, color=cmap(j % 10), label=name)
    for ax, yl, t in zip(axes, ("performance relative to delta_pi", "energy efficiency relative to delta_pi"),
                         ("(a) performance", "(b) energy efficiency"), strict=True):
        log2_axis(ax)
        ax.axhline(1 / s.divisor, color="grey", linestyle=":", linewidth=1, label=f"1/{s.divisor:g}")
        ax.set_ylim(0, 1.05)
        ax.set_xlabel("intensity (flop:byte)")
        ax.set_ylabel(yl)
        ax.set_title(t, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right upper", fontsize=8, frameon=False)
    title_with_notes(fig, f"Throttling spread across platforms, power cap delta_pi/{s.divisor:g} "
                     "(cf. S1 Fig. 14)", _missing_notes(s.skipped))
    return save_figure(fig, out_path, dpi=110)


def plot_pi0_share(r: Pi0Share, out_path: Path) -> Path:
    """S1 §4.4.3: pi0/(pi0 + delta_pi) against peak energy efficiency (described, "not shown", in the thesis)."""
    from archline.fit.figure_layout import pyplot, save_figure, title_with_notes

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 5.2), layout="constrained")
    xs = [p.pi0_share for p in r.platforms]
    ys = [(p.peak_flop_per_j or math.nan) / 1e9 for p in r.platforms]
    ax.scatter(xs, ys, color="tab:blue", zorder=3)
    for p, x, y in zip(r.platforms, xs, ys, strict=True):
        ax.annotate(p.name, (x, y), textcoords="offset points", xytext=(5, 4), fontsize=8)
    ax.axvline(0.5, color="grey", linestyle=":", linewidth=1)
    ax.set_xlim(-0.05, 1.05)
    ax.set_ylim(bottom=0, top=1.2 * max([y for y in ys if math.isfinite(y)] or [1.0]))
    ax.set_xlabel("pi0 / (pi0 + delta_pi)")
    ax.set_ylabel("peak energy efficiency (Gflop/J)")
    ax.grid(True, alpha=0.3)
    corr = "not computable (fewer than 3 platforms)" if r.correlation is None else f"{r.correlation:.2f}"
    title_with_notes(fig, f"pi0 share of maximum power against peak energy efficiency (S1 Sec. 4.4.3, not shown "
                     f"there): {r.above_half} of {len(r.platforms)} above 50%, correlation {corr} (thesis: 7 of "
                     "12, about -0.6)", _missing_notes(r.skipped))
    return save_figure(fig, out_path, dpi=110)

