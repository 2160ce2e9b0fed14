"""S2's Figs. 4-8 (Elango et al., TACO 2015, §5-6) as data and figures, on S2's Nehalem-EX or a machine file.

* Fig. 4: the OI upper bound of each algorithm against alpha, the chip-area fraction given to the LLC.
* Fig. 5: the roofline at alpha = 0.01, 0.25, 0.5, 0.95 (P_max cores at f_max), each algorithm's OI a vertical line.
* Fig. 6: the performance multiroofline: the 40 GB/s bandwidth roof, the horizontal roofs of four alpha, and each
  algorithm's bound (OI(alpha), min(P F, B OI)) over alpha.
* Fig. 7: the energy-efficiency bound (eq.3) against active cores (1, 2, 4, 8, 16) at 2.26, 1.86 and 1.46 GHz,
  one curve per LLC size.
* Fig. 8: the energy multiroofline: per LLC size, the best flop/J over cores and frequency, against OI(S).

Every point comes from design_space (``at_alpha`` for P_max at f_max, ``sweep`` for eq.3), so the figures and
``archline design-space`` agree by construction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from archline.fit.analyses.elango.design_space import (
    DesignMachine,
    DesignSpaceError,
    _fmt_bytes,
    at_alpha,
    default_llc_sizes,
    sweep,
)


def fmt_bytes(b: float) -> str:
    """4 KB, 8 MB for powers of two; 479 KB, 15.9 MB for the sizes an alpha gives."""
    if b >= 1024 and float(b).is_integer() and (int(b) & (int(b) - 1)) == 0:
        return _fmt_bytes(b)
    if b >= 2**20:
        return f"{b / 2**20:.3g} MB"
    return f"{b / 1024:.3g} KB" if b >= 1024 else f"{b:.0f} B"

ALGORITHMS = ("cg", "fft", "matmul", "jacobi2d")
LABEL = {"cg": "CG", "fft": "FFT", "matmul": "MM", "jacobi2d": "J2D"}
FIG5_ALPHAS = (0.01, 0.25, 0.5, 0.95)
FIG7_FREQS_HZ = (2.26e9, 1.86e9, 1.46e9)
FIG7_CORES = (1, 2, 4, 8, 16)
FIG7_LLC_BYTES = (4096.0, 32768.0, 262144.0, 2097152.0)
KINDS = {"oi-alpha": "S2 Fig. 4", "rooflines": "S2 Fig. 5", "perf-multiroofline": "S2 Fig. 6",
         "energy-cores-freq": "S2 Fig. 7", "energy-multiroofline": "S2 Fig. 8"}


@dataclass
class Figure:
    """What one kind draws: ``rows`` (one dict per drawn point) and the notes to print."""

    kind: str
    machine: str
    reading: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def source(self) -> str:
        return KINDS[self.kind]


def _reading(alg: str, fft_bound: str) -> str | None:
    return fft_bound if alg == "fft" else None


def alpha_grid(m: DesignMachine, n: int = 48) -> list[float]:
    """alpha from 0.01 to the largest value that leaves room for one core (0.95 on S2's chip)."""
    top = min(0.95, 1.0 - m.core_area_mm2 / m.die_area_mm2)
    return [float(a) for a in np.geomspace(0.01, top, n)]


def compute(kind: str, m: DesignMachine, algorithms: Sequence[str] = ALGORITHMS, fft_bound: str = "full",
            llc_bytes: Sequence[float] | None = None) -> Figure:
    """The numbers behind one of S2's Figs. 4-8 (``kind``, a key of KINDS)."""
    if kind not in KINDS:
        raise DesignSpaceError(f"unknown figure kind '{kind}' (one of {', '.join(KINDS)})")
    fig = Figure(kind, m.name, fft_bound)
    if kind in ("oi-alpha", "perf-multiroofline"):
        alphas = alpha_grid(m)
        if kind == "perf-multiroofline":
            alphas = sorted({*alphas, *(a for a in FIG5_ALPHAS if a <= alphas[-1] + 1e-12)})
        for alg in algorithms:
            for a in alphas:
                p = at_alpha(alg, a, m, reading=_reading(alg, fft_bound))
                fig.rows.append({"algorithm": alg, "alpha": a, "llc_bytes": p.llc_bytes, "cores": p.cores,
                                 "oi_flop_per_byte": p.oi_flop_per_byte, "perf_flop_per_s": p.perf_flop_per_s,
                                 "bandwidth_bound": p.bandwidth_bound})
    elif kind == "rooflines":
        for a in FIG5_ALPHAS:
            for alg in algorithms:
                p = at_alpha(alg, a, m, reading=_reading(alg, fft_bound))
                fig.rows.append({"alpha": a, "algorithm": alg, "cores": p.cores, "llc_bytes": p.llc_bytes,
                                 "peak_flop_per_s": p.cores * m.flops_per_core(m.f_max_hz),
                                 "oi_flop_per_byte": p.oi_flop_per_byte, "perf_flop_per_s": p.perf_flop_per_s,
                                 "bandwidth_bound": p.bandwidth_bound})
    elif kind == "energy-cores-freq":
        freqs = [f for f in FIG7_FREQS_HZ if m.f_min_hz * (1 - 1e-9) <= f <= m.f_max_hz * (1 + 1e-9)]
        if not freqs:
            freqs = [m.f_max_hz, m.f_min_hz]
            fig.notes.append("S2 Fig. 7's 2.26/1.86/1.46 GHz lie outside this machine's V/f table: its ends used")
        for alg in algorithms:
            for s in llc_bytes or FIG7_LLC_BYTES:
                for f in freqs:
                    ds = sweep(alg, m, llc_sizes_bytes=[s], freqs_hz=[f], reading=_reading(alg, fft_bound))
                    by_p = {p.cores: p for p in ds.points}
                    for c in FIG7_CORES:
                        if c in by_p:
                            p = by_p[c]
                            fig.rows.append({"algorithm": alg, "llc_bytes": s, "freq_hz": f, "cores": c,
                                             "oi_flop_per_byte": p.oi_flop_per_byte, "flop_per_j": p.flop_per_j,
                                             "bandwidth_bound": p.bandwidth_bound})
    else:                                           # energy-multiroofline
        for alg in algorithms:
            ds = sweep(alg, m, llc_sizes_bytes=list(llc_bytes or default_llc_sizes()),
                       reading=_reading(alg, fft_bound))
            best = ds.best("energy")
            for p in ds.best_per_llc("energy"):
                fig.rows.append({"algorithm": alg, "llc_bytes": p.llc_bytes, "cores": p.cores, "freq_hz": p.freq_hz,
                                 "oi_flop_per_byte": p.oi_flop_per_byte, "flop_per_j": p.flop_per_j,
                                 "bandwidth_bound": p.bandwidth_bound, "best": p is best})
    if "fft" in algorithms:
        fig.notes.append(f"FFT bound read '{fft_bound}' (--fft-bound; docs/analyses.md)")
    return fig


def plot(fig_data: Figure, m: DesignMachine, out_path: Path) -> Path:
    """Draw one of S2's Figs. 4-8 from ``compute``'s rows; the title names the figure."""
    from archline.fit.figure_layout import pyplot, save_figure

    plt = pyplot()
    kind, rows = fig_data.kind, fig_data.rows
    algs = list(dict.fromkeys(r["algorithm"] for r in rows))
    color = {a: f"C{k}" for k, a in enumerate(ALGORITHMS)}
    marker = {"cg": "o", "fft": "s", "matmul": "^", "jacobi2d": "D"}
    ncols = 2 if kind in ("rooflines", "energy-cores-freq") else 1
    nrows = 2 if ncols == 2 else 1
    fig, axes = plt.subplots(nrows, ncols, figsize=(11.5, 8.6) if ncols == 2 else (8.2, 5.6), squeeze=False)
    flat = list(axes.ravel())
    bw = m.b_mem_byte_per_s
    if kind == "oi-alpha":
        ax = flat[0]
        for a in algs:
            rs = [r for r in rows if r["algorithm"] == a]
            ax.plot([r["alpha"] for r in rs], [r["oi_flop_per_byte"] for r in rs], color=color[a], label=LABEL[a])
        ax.set_yscale("log")
        ax.set_xlabel("alpha (fraction of the die given to the LLC)")
        ax.set_ylabel("upper bound on OI (flop/byte)")
    elif kind == "rooflines":
        for ax, alpha in zip(flat, FIG5_ALPHAS, strict=True):
            rs = [r for r in rows if r["alpha"] == alpha]
            if not rs:
                ax.set_axis_off()
                continue
            x = np.geomspace(0.1, 1e4, 200)
            peak = rs[0]["peak_flop_per_s"]
            ax.plot(x, np.minimum(peak, bw * x) / 1e9, color="0.2", label="roofline")
            for r in rs:
                a = r["algorithm"]
                ax.axvline(r["oi_flop_per_byte"], color=color[a], linestyle="--", label=LABEL[a])
                ax.plot([r["oi_flop_per_byte"]], [r["perf_flop_per_s"] / 1e9], marker[a], color=color[a])
            ax.set_xscale("log")
            ax.set_yscale("log")
            cores = rs[0]["cores"]
            ax.set_title(f"alpha = {alpha:g}: {cores} core{'s' if cores > 1 else ''}, "
                         f"LLC {fmt_bytes(rs[0]['llc_bytes'])}", fontsize=10)
            ax.set_ylim(1, 2 * max(r["peak_flop_per_s"] for r in rows) / 1e9)
            ax.set_xlabel("operational intensity (flop/byte)")
            ax.set_ylabel("GFLOP/s")
    elif kind == "perf-multiroofline":
        ax = flat[0]
        x = np.geomspace(0.1, 1e4, 200)
        top = 2 * max(r["cores"] for r in rows) * m.flops_per_core(m.f_max_hz)
        xb = x[bw * x <= top]
        ax.plot(xb, bw * xb / 1e9, color="0.2", label=f"bandwidth roof ({bw / 1e9:g} GB/s)")
        styles = iter(["-", "--", "-.", ":"])
        for alpha in FIG5_ALPHAS:
            hit: dict[str, Any] | None = next((r for r in rows if abs(r["alpha"] - alpha) < 1e-12), None)
            if hit is None:
                continue
            peak = hit["cores"] * m.flops_per_core(m.f_max_hz)
            xr = x[x >= peak / bw]
            ax.plot(xr, np.full_like(xr, peak / 1e9), color="0.5", linestyle=next(styles),
                    label=f"alpha = {alpha:g}, {hit['cores']} core{'s' if hit['cores'] > 1 else ''}")
        for a in algs:
            rs = [r for r in rows if r["algorithm"] == a]
            ax.plot([r["oi_flop_per_byte"] for r in rs], [r["perf_flop_per_s"] / 1e9 for r in rs], marker[a],
                    color=color[a], markersize=4, label=f"{LABEL[a]} over alpha")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("operational intensity (flop/byte)")
        ax.set_ylabel("upper bound on performance (GFLOP/s)")
    elif kind == "energy-cores-freq":
        freqs = list(dict.fromkeys(r["freq_hz"] for r in rows))
        sizes = list(dict.fromkeys(r["llc_bytes"] for r in rows))
        width = len(FIG7_CORES) + 1
        for ax, a in zip(flat, algs, strict=False):
            for j, s in enumerate(sizes):
                xs: list[float] = []
                ys: list[float] = []
                for g, f in enumerate(freqs):
                    for k, c in enumerate(FIG7_CORES):
                        pt: dict[str, Any] | None = next(
                            (r for r in rows if r["algorithm"] == a and r["llc_bytes"] == s
                             and r["freq_hz"] == f and r["cores"] == c), None)
                        if pt is not None:
                            xs.append(g * width + k)
                            ys.append(pt["flop_per_j"] / 1e9)
                    xs.append(np.nan)
                    ys.append(np.nan)
                ax.plot(xs, ys, "-o", color=f"C{j}", markersize=3, label=f"LLC {fmt_bytes(s)}")
            ticks = [g * width + k for g in range(len(freqs)) for k in range(len(FIG7_CORES))]
            ax.set_xticks(ticks, [str(c) for _ in freqs for c in FIG7_CORES], fontsize=8)
            top = ax.secondary_xaxis("top")
            top.set_xticks([g * width + (len(FIG7_CORES) - 1) / 2 for g in range(len(freqs))],
                           [f"{f / 1e9:g} GHz" for f in freqs], fontsize=8)
            for g in range(1, len(freqs)):
                ax.axvline(g * width - 1, color="0.8", linewidth=0.8)
            ax.set_title(LABEL[a], fontsize=10, pad=18)
            ax.set_xlabel("active cores")
            ax.set_ylabel("upper bound on GFLOP/J")
        for ax in flat[len(algs):]:
            ax.set_axis_off()
    else:
        ax = flat[0]
        for a in algs:
            rs = [r for r in rows if r["algorithm"] == a]
            ax.plot([r["oi_flop_per_byte"] for r in rs], [r["flop_per_j"] / 1e9 for r in rs], "-" + marker[a],
                    color=color[a], markersize=4, label=LABEL[a])
            b = next(r for r in rs if r["best"])
            ax.plot([b["oi_flop_per_byte"]], [b["flop_per_j"] / 1e9], "*", color=color[a], markersize=13,
                    markeredgecolor="k", label=f"{LABEL[a]} best: {fmt_bytes(b['llc_bytes'])}, P = {b['cores']}, "
                    f"{b['freq_hz'] / 1e9:.2f} GHz")
        ax.set_xscale("log")
        ax.set_ylim(0, ax.get_ylim()[1] * 1.05)
        ax.set_xlabel("operational intensity OI(S) (flop/byte)")
        ax.set_ylabel("upper bound on energy efficiency (GFLOP/J)")
    for ax in flat:
        if ax.axison:
            ax.grid(True, which="both", alpha=0.25)
    handles: dict[str, Any] = {}
    for ax in flat:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(lab, h)
    ncol = min(2 if kind == "energy-multiroofline" else 5, len(handles))
    fig.legend(list(handles.values()), list(handles), loc="lower center", ncol=ncol, fontsize=8, frameon=False)
    lines = -(-len(handles) // ncol)
    what = {"oi-alpha": "operational intensity upper bounds against alpha",
            "rooflines": "upper bounds on performance at four alpha",
            "perf-multiroofline": "upper bounds on performance (multiroofline)",
            "energy-cores-freq": "upper bounds on energy efficiency against cores and frequency",
            "energy-multiroofline": "upper bounds on energy efficiency (energy multiroofline)"}[kind]
    fig.suptitle(f"{fig_data.source}: {what}\n{m.name}, FFT bound '{fig_data.reading}'", fontsize=10)
    fig.tight_layout(rect=(0, (0.042 if nrows == 1 else 0.03) * lines + 0.015, 1, 1))
    return save_figure(fig, out_path, dpi=120)
