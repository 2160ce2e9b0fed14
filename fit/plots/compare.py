"""The ``archline compare`` figure: per coefficient, each group's fitted value with its 95% CI as an error bar,
the groups that differ from the others (Holm-corrected) in red, the median of the groups as a dashed line. One
row of panels per block (a platform's hosts or runs; or the platforms)."""

from __future__ import annotations

from pathlib import Path

from archline.fit.analyses.compare import Comparison
from archline.fit.io.costs import HUMAN_UNITS
from archline.fit.plots.layout import pyplot, save_figure, title_with_notes

#: the coefficients drawn (delta_eps_dp is eps_flop_dp - eps_flop_sp: drawn through those two)
SKIP = ("delta_eps_dp",)


def compare_figure(cmp: Comparison, out_path: str | Path) -> Path:
    return save_figure(draw_compare(cmp), out_path)


def draw_compare(cmp: Comparison) -> object:
    plt = pyplot()
    blocks = [b for b in cmp.blocks if b.coefficients]
    ncols = max(len([c for c in b.coefficients if c.name not in SKIP]) for b in blocks)
    n_groups = max(len(b.groups) for b in blocks)
    rotate = n_groups > 4 or max(len(g) for b in blocks for g in b.groups) > 8
    width = max(3.0 * ncols, 8.0)
    height = 3.1 * len(blocks) + (0.8 if rotate else 0.3) * len(blocks) + 1.4
    fig, axes = plt.subplots(len(blocks), ncols, figsize=(width, height), squeeze=False, layout="constrained")
    for r, b in enumerate(blocks):
        coefs = [c for c in b.coefficients if c.name not in SKIP]
        for k in range(ncols):
            ax = axes[r][k]
            if k >= len(coefs):
                ax.set_visible(False)
                continue
            c = coefs[k]
            f, unit = HUMAN_UNITS.get(c.unit, (1.0, c.unit))
            xs = list(range(len(c.values)))
            for x, v in zip(xs, c.values, strict=True):
                lo, hi = (v.ci95[0] * f, v.ci95[1] * f) if v.ci95 else (v.value * f, v.value * f)
                color = "tab:red" if v.differs else "tab:blue"
                label = (f"differs from the others (Holm p < {cmp.alpha:g})" if v.differs else
                         "no significant difference" if v.differs is not None else "not tested")
                ax.errorbar([x], [v.value * f], yerr=[[v.value * f - lo], [hi - v.value * f]], fmt="o",
                            color=color, ecolor=color, capsize=4, markersize=5, label=label)
            med = c.spread.get("median")
            if med is not None and len(c.values) > 1:
                ax.axhline(med * f, color="0.5", linestyle="--", linewidth=0.8, label="median of the groups")
            ax.set_xticks(xs)
            ax.set_xticklabels([v.group for v in c.values], rotation=30 if rotate else 0,
                               ha="right" if rotate else "center", fontsize=8)
            ax.set_xlim(-0.6, len(xs) - 0.4)
            ax.margins(y=0.25)
            ax.set_title(f"{b.scope}: {c.name}" if k == 0 else c.name, fontsize=9)
            ax.set_ylabel(unit, fontsize=8)
            ax.tick_params(axis="y", labelsize=8)
            ax.ticklabel_format(axis="y", useOffset=False, style="plain")
            ax.grid(True, axis="y", alpha=0.3)
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
