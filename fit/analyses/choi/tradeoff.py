"""Work-communication trade-offs (S1 §3.5, Fig. 8; model.md §2): an algorithm that does f times the work and
moves 1/m of the traffic of a baseline at intensity I. Speedup dT (S1 eq.15) and greenup dE (eq.16; eq.26 with
pi0 > 0) for every (I, f, m) of a grid, with the per-case bounds of §3.5.4 (eq.18-23; eq.30-31). Fig. 8 plots the
points and, per case, the smallest lower and the largest upper bound over the grid as lines. The formulas are
``archline.model.tradeoffs``; this module sweeps and draws them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from archline.model import tradeoffs as tr
from archline.model.errors import ArchlineFitError
from archline.model.machine import Machine

CASES = {1: "case 1: both memory-bound", 2: "case 2: baseline memory-, new compute-bound",
         3: "case 3: both compute-bound"}


class TradeoffError(ArchlineFitError):
    pass


@dataclass(frozen=True)
class TradeoffGrid:
    B_tau: float
    B_eps: float
    eta: float
    intensity: np.ndarray      # flattened grid
    f: np.ndarray
    m: np.ndarray
    speedup: np.ndarray
    greenup: np.ndarray
    case: np.ndarray
    greenup_lo: np.ndarray
    greenup_hi: np.ndarray

    def case_bounds(self) -> dict[int, dict[str, float]]:
        """Per case: min lower and max upper greenup bound, min and max speedup (Fig. 8's lines)."""
        out: dict[int, dict[str, float]] = {}
        for c in CASES:
            sel = self.case == c
            if sel.any():
                out[c] = {"greenup_lo": float(self.greenup_lo[sel].min()),
                          "greenup_hi": float(self.greenup_hi[sel].max()),
                          "speedup_lo": float(self.speedup[sel].min()), "speedup_hi": float(self.speedup[sel].max()),
                          "points": int(sel.sum())}
        return out

    def as_dict(self) -> dict[str, Any]:
        return {"source": "S1 Sec. 3.5.4, Fig. 8", "B_tau": self.B_tau, "B_eps": self.B_eps, "eta": self.eta,
                "cases": {str(k): v for k, v in self.case_bounds().items()},
                "faster_but_less_efficient": int(((self.speedup > 1 + 1e-12) & (self.greenup < 1 - 1e-12)).sum()),
                "points": len(self.speedup)}


def tradeoff_grid(m: Machine, *, fs: Sequence[float] = (1.0, 1.25, 1.5, 2.0, 3.0, 4.0),
                  ms: Sequence[float] = (1.0, 1.5, 2.0, 4.0, 8.0, 16.0), n_intensities: int = 9,
                  use_pi0: bool = False) -> TradeoffGrid:
    """Fig. 8's grid: I in [B_tau/4, B_eps] (log-spaced), f >= 1 and m >= 1. With ``use_pi0`` the greenups
    use eta_flop (S1 §3.5.5, eq.26); otherwise pi0 = 0 (eta = 1) as in §3.5.4."""
    if any(f < 1 for f in fs) or any(x < 1 for x in ms):
        raise TradeoffError("f (extra work) and m (traffic reduction) must be >= 1 (S1 §3.5)")
    b_tau, b_eps = m.B_tau, m.B_eps
    eta = m.eta_flop if use_pi0 else 1.0
    hi = max(b_eps, b_tau / 4 * 1.0001)
    i, f, mm = np.meshgrid(np.geomspace(b_tau / 4, hi, n_intensities), np.asarray(fs, float),
                           np.asarray(ms, float), indexing="ij")
    i, f, mm = i.ravel(), f.ravel(), mm.ravel()
    lo, up = tr.greenup_bounds(i, f, mm, b_tau, b_eps, eta)
    return TradeoffGrid(b_tau, b_eps, eta, i, f, mm, tr.speedup(i, f, mm, b_tau),
                        tr.greenup(i, f, mm, b_tau, b_eps, eta), tr.tradeoff_case(i, f, mm, b_tau), lo, up)


def plot_tradeoffs(g: TradeoffGrid, out_path: Any, name: str) -> Any:
    """S1 Fig. 8: (speedup, greenup) points per case, with each case's min lower and max upper greenup bounds
    (horizontal) and its speedup range (vertical)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from archline.fit.figure_layout import legend_outside, log2_axis, save_figure

    fig, ax = plt.subplots(figsize=(7.5, 6.4), layout="constrained")
    colours = {1: "tab:blue", 2: "tab:orange", 3: "tab:green"}
    for c, b in g.case_bounds().items():
        sel = g.case == c
        ax.scatter(g.speedup[sel], g.greenup[sel], s=14, color=colours[c], alpha=0.7, label=CASES[c])
        for y in (b["greenup_lo"], b["greenup_hi"]):
            ax.axhline(y, color=colours[c], linestyle="--", linewidth=0.9)
        for x in (b["speedup_lo"], b["speedup_hi"]):
            ax.axvline(x, color=colours[c], linestyle=":", linewidth=0.9)
    ax.axhline(1, color="black", linewidth=0.6, label="dT = 1, dE = 1")
    ax.axvline(1, color="black", linewidth=0.6)
    log2_axis(ax, "x")
    log2_axis(ax, "y")
    ax.set_xlabel("speedup dT (eq.15)")
    ax.set_ylabel("greenup dE (eq.16)")
    ax.grid(True, which="major", alpha=0.3)
    fig.suptitle(f"{name}: speedups and greenups, I in [B_tau/4, B_eps] (cf. S1 Fig. 8)\n"
                 "dashed: each case's min lower / max greenup bound; dotted: its speedup range", fontsize=10)
    legend_outside(ax, fontsize=8)
    return save_figure(fig, out_path, dpi=110)
