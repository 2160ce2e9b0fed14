"""The figure of a program placed on its machine's roofline (fit/analyses/placement.py computes the placement):
three panels against intensity, the platform's time roofline (flop/s), arch line (flop/J) and power line (W),
each with the measured point and the model's prediction for the program's counts, and both numbers in the title."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from archline.fit.plots.layout import legend_outside, pyplot, save_figure, title_with_notes
from archline.model.machine import Machine

if TYPE_CHECKING:
    from archline.fit.analyses.placement import Placement


def _x_range(p: Placement, m: Machine) -> np.ndarray:
    i = p.intensity_flop_per_byte if math.isfinite(p.intensity_flop_per_byte) else 64.0 * m.B_tau
    lo = min(i, m.B_tau) / 16.0
    hi = max(i, m.B_tau) * 16.0
    return np.logspace(math.log2(lo), math.log2(hi), 256, base=2.0)


def plot_placement(p: Placement, machine: Machine, out_path: Path) -> Path:
    from archline.fit.analyses.placement import K_SIGMA

    plt = pyplot()
    x = _x_range(p, machine)
    i = p.intensity_flop_per_byte if math.isfinite(p.intensity_flop_per_byte) else float(x[-1])
    w = p.flops
    panels = [
        ("time roofline", "performance (Gflop/s)", machine.performance_flop_per_s(x) / 1e9,
         w / p.measured_time_s / 1e9, w / p.model_time_s / 1e9, "model time"),
        ("arch line", "energy efficiency (Gflop/J)", machine.efficiency_flop_per_j(x) / 1e9,
         w / p.measured_energy_j / 1e9, w / p.predicted_energy_j / 1e9, "predicted energy"),
        ("power line", "average power (W)", machine.power_w(x),
         p.measured_power_w, p.predicted_power_w, "predicted power"),
    ]
    fig, axes = plt.subplots(1, 3, figsize=(12.0, 4.6), layout="constrained")
    for ax, (title, ylabel, curve, meas, pred, pred_label) in zip(axes, panels, strict=True):
        ax.plot(x, curve, color="0.35", lw=1.6, label=f"{p.platform} ({p.precision})")
        ax.axvline(machine.B_tau, color="0.7", lw=0.8, ls=":", label=f"B_tau = {machine.B_tau:.3g}")
        ax.plot([i], [pred], marker="s", ms=8, mfc="none", mec="tab:blue", ls="none", label=pred_label)
        ax.plot([i], [meas], marker="o", ms=6, color="tab:red", ls="none", label="measured")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("intensity (flop per DRAM byte)")
        ax.set_ylabel(ylabel)
        ax.set_title(title, fontsize=9)
        legend_outside(ax, fontsize=7.5, ncol=2)
    ok = {True: "within", False: "outside", None: "not judged:"}[p.within]
    err = f" +- {p.predicted_energy_err_j:.3g}" if math.isfinite(p.predicted_energy_err_j) else ""
    tag = " (emulated)" if p.emulated else ""
    title = (f"{p.name} on {p.platform}{tag}: measured {p.measured_energy_j:.4g} J in {p.measured_time_s:.4g} s, "
             f"predicted {p.predicted_energy_j:.4g}{err} J (S1 Ch. 6); difference {p.energy_diff_j:+.3g} J "
             f"({100 * p.energy_diff_rel:+.2f}%), {ok} {K_SIGMA:g} standard errors + the meter's bound; model time "
             f"{p.model_time_s:.4g} s")
    title_with_notes(fig, title, fontsize=9)
    return save_figure(fig, out_path, dpi=120)
