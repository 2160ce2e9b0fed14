"""The design space as a figure (S2 §6): LLC size by active cores, coloured by the best flop/J (or flop/s)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from archline.fit.analyses.elango.design_space import DesignSpace
from archline.fit.analyses.elango.design_space import _fmt_bytes as fmt_bytes


def plot_efficiency_map(ds: DesignSpace, out_path: Path, objective: str = "energy") -> Path:
    """The design space as a map: LLC size (x) by active cores (y), colour = the best flop/J (or flop/s) over
    frequency; the optimum is marked, and extrapolated LLC sizes are hatched."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from archline.fit.figure_layout import legend_outside, save_figure

    sizes = ds.llc_sizes_bytes
    pmax = max(p.max_cores for p in ds.points)
    grid = np.full((pmax, len(sizes)), np.nan)
    for p in ds.points:
        j = sizes.index(p.llc_bytes)
        v = p.flop_per_j / 1e9 if objective == "energy" else p.perf_flop_per_s / 1e9
        if np.isnan(grid[p.cores - 1, j]) or v > grid[p.cores - 1, j]:
            grid[p.cores - 1, j] = v
    fig, ax = plt.subplots(figsize=(8.5, 5.4), layout="constrained")
    mesh = ax.imshow(grid, origin="lower", aspect="auto", cmap="viridis",
                     extent=(-0.5, len(sizes) - 0.5, 0.5, pmax + 0.5))
    cb = fig.colorbar(mesh, ax=ax)
    cb.set_label("best GFLOP/J over frequency" if objective == "energy" else "best GFLOP/s over frequency")
    best = ds.best(objective)
    ax.plot(sizes.index(best.llc_bytes), best.cores, marker="*", color="red", markersize=16,
            label=f"best: {fmt_bytes(best.llc_bytes)}, {best.cores} cores, {best.freq_hz / 1e9:.2f} GHz")
    ext = [j for j, s in enumerate(sizes) if ds.machine.llc_area_mm2(s)[1]]
    for j in ext:
        ax.axvspan(j - 0.5, j + 0.5, facecolor="none", edgecolor="white", hatch="//", linewidth=0)
    ax.set_xticks(range(len(sizes)))
    ax.set_xticklabels([fmt_bytes(s).replace(" ", "") for s in sizes], rotation=45, ha="right")
    ax.set_xlabel("LLC size (hatched: area extrapolated past CACTI table)" if ext else "LLC size")
    ax.set_ylabel("active cores")
    ax.set_title(f"{ds.algorithm} on {ds.machine.name}: design-space bound (Elango et al. S2 §6)")
    legend_outside(ax, fontsize=8)            # under the map: never over its cells
    return save_figure(fig, out_path, dpi=120)
