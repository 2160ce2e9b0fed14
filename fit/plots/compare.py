"""The ``archline compare`` figure, a forest plot: per coefficient (a column of panels), each group's fitted
value with its 95% CI as an error bar on its own row, the groups that differ from the others (Holm-corrected) in
red, the median of the groups as a dashed line. One row of panels per block (a platform's hosts or runs; or the
platforms)."""

from __future__ import annotations

from pathlib import Path

from archline.fit.analyses.choi.compare import Comparison
from archline.fit.figure_layout import pyplot, save_figure, title_with_notes
from archline.formats.costs import HUMAN_UNITS

#: the coefficients drawn (delta_eps_dp is eps_flop_dp - eps_flop_sp: drawn through those two)
SKIP = ("delta_eps_dp",)


def compare_figure(cmp: Comparison, out_path: str | Path) -> Path:
    return save_figure(draw_compare(cmp), out_path)


def draw_compare(cmp: Comparison) -> object:
    """A forest plot: a row per group (so a hundred nodes still have room for their names), a column per
    coefficient, the value with its 95% CI as a horizontal error bar."""
    plt = pyplot()
    blocks = [b for b in cmp.blocks if b.coefficients]
    ncols = max(len([c for c in b.coefficients if c.name not in SKIP]) for b in blocks)
    heights = [max(len(b.groups), 2) * 0.32 + 1.0 for b in blocks]
    width = max(2.9 * ncols + 1.2, 8.0)
    fig, axes = plt.subplots(len(blocks), ncols, figsize=(width, sum(heights) + 1.4), squeeze=False,
                             layout="constrained", gridspec_kw={"height_ratios": heights})
    for r, b in enumerate(blocks):
        coefs = [c for c in b.coefficients if c.name not in SKIP]
        for k in range(ncols):
            ax = axes[r][k]
            if k >= len(coefs):
                ax.set_visible(False)
                continue
            c = coefs[k]
            f, unit = HUMAN_UNITS.get(c.unit, (1.0, c.unit))
            row = {g: i for i, g in enumerate(b.groups)}
            for v in c.values:
                lo, hi = (v.ci95[0] * f, v.ci95[1] * f) if v.ci95 else (v.value * f, v.value * f)
                color = "tab:red" if v.differs else "tab:blue" if v.differs is not None else "0.4"
                label = (f"differs from the others (Holm p < {cmp.alpha:g})" if v.differs else
                         "no significant difference" if v.differs is not None else "not tested")
                ax.errorbar([v.value * f], [row[v.group]], xerr=[[v.value * f - lo], [hi - v.value * f]],
                            fmt="o", color=color, ecolor=color, capsize=3, markersize=4, label=label)
            med = c.spread.get("median")
            if med is not None and len(c.values) > 1:
                ax.axvline(med * f, color="0.5", linestyle="--", linewidth=0.8, label="median of the groups")
            ax.set_yticks(range(len(b.groups)))
            ax.set_yticklabels(b.groups if k == 0 else [""] * len(b.groups), fontsize=8)
            ax.set_ylim(len(b.groups) - 0.5, -0.5)
            ax.margins(x=0.15)
            ax.set_title(f"{b.scope}: {c.name}" if k == 0 else c.name, fontsize=9)
            ax.set_xlabel(unit, fontsize=8)
            ax.tick_params(axis="x", labelsize=7)
            ax.xaxis.set_major_locator(__import__("matplotlib.ticker", fromlist=["MaxNLocator"]).MaxNLocator(4))
            ax.ticklabel_format(axis="x", useOffset=False, style="plain")
            ax.grid(True, axis="x", alpha=0.3)
    handles: dict[str, object] = {}
    for ax in fig.axes:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(lab, h)
    fig.legend(list(handles.values()), list(handles), loc="outside lower center", ncol=min(len(handles), 3),
               fontsize=8, frameon=False)
    emu = " [emulated]" if any(b.emulated for b in blocks) else ""
    title_with_notes(fig, f"archline compare --by {cmp.by}{emu}: fitted coefficients ({cmp.model} model) with 95% "
                          f"CIs; red: differs from the median of the other groups (Welch t-test, Holm-corrected, "
                          f"p < {cmp.alpha:g})")
    return fig
