"""The fit-report figure: measured points over the fitted roofline, arch line and power line, plus residuals
against intensity (basic, cache and capped models); measured vs predicted energy and per-setting pi0 (dvfs).

matplotlib is imported inside the function with the Agg backend, so the library stays importable without it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from archline.fit.model.machine import Machine
from archline.fit.plots.layout import legend_outside, save_figure, title_with_notes
from archline.fit.regress.result import FitResult

COLOURS = {"sp": "tab:blue", "dp": "tab:orange"}


def _machine(r: FitResult, prec: str) -> Machine | None:
    need = (f"tau_flop_{prec}", "tau_mem", f"eps_flop_{prec}", "eps_mem", "pi0")
    vals = {k: r.value(k) for k in need}
    if any(v is None for v in vals.values()):
        return None
    dpi = r.value("delta_pi")
    return Machine(vals[f"tau_flop_{prec}"], vals["tau_mem"], vals[f"eps_flop_{prec}"],  # type: ignore[arg-type]
                   vals["eps_mem"], vals["pi0"], math.inf if dpi is None else dpi)  # type: ignore[arg-type]


MAX_DOTS = 20_000


def _subsample(r: FitResult) -> tuple[Any, Any]:
    """At most MAX_DOTS rows (seeded) for the scatter: a million dots is unreadable and slow."""
    rows, pe = r.rows, r.point_errors
    assert rows is not None and pe is not None
    if len(rows) > MAX_DOTS:
        idx = np.sort(np.random.default_rng(0).choice(len(rows), MAX_DOTS, replace=False))
        return rows.iloc[idx], pe.iloc[idx]
    return rows, pe


def _intensity_panels(r: FitResult, fig: Any) -> None:
    rows, pe = _subsample(r)
    axes = fig.subplots(2, 2)
    ax_perf, ax_eff, ax_pow, ax_res = axes[0, 0], axes[0, 1], axes[1, 0], axes[1, 1]
    w = rows["work_flop"].to_numpy()
    q = rows["bytes_mem"].to_numpy()
    t = rows["time_s"].to_numpy()
    e = rows["energy_j"].to_numpy()
    intensity = np.divide(w, q, out=np.full(len(rows), np.nan), where=(q > 0) & (w > 0))
    ok = np.isfinite(intensity)
    lo = np.nanmin(intensity[ok]) / 1.5 if ok.any() else 0.1
    hi = np.nanmax(intensity[ok]) * 1.5 if ok.any() else 100.0
    grid = np.logspace(math.log10(lo), math.log10(hi), 400)
    for prec in ("sp", "dp"):
        sel = ok & (rows[f"flops_{prec}"].to_numpy() > 0)
        c = COLOURS[prec]
        if sel.any():
            label = f"measured {prec.upper()}"
            ax_perf.scatter(intensity[sel], w[sel] / t[sel] / 1e9, s=14, color=c, alpha=0.6, label=label, zorder=3)
            ax_eff.scatter(intensity[sel], w[sel] / e[sel] / 1e9, s=14, color=c, alpha=0.6, label=label, zorder=3)
            ax_pow.scatter(intensity[sel], e[sel] / t[sel], s=14, color=c, alpha=0.6, label=label, zorder=3)
            ax_res.scatter(intensity[sel], 100 * pe["energy_rel_err"].to_numpy()[sel], s=14, color=c,
                           alpha=0.7, label=f"energy {prec.upper()}", zorder=3)
            if "time_rel_err" in pe:
                ax_res.scatter(intensity[sel], 100 * pe["time_rel_err"].to_numpy()[sel], s=14,
                               marker="x", color=c, alpha=0.7, label=f"time {prec.upper()}", zorder=3)
        m = _machine(r, prec)
        if m is None:
            continue
        ax_perf.plot(grid, m.performance_flop_per_s(grid) / 1e9, color=c, lw=1.8,
                     label=f"fitted roofline {prec.upper()}")
        ax_eff.plot(grid, m.efficiency_flop_per_j(grid) / 1e9, color=c, lw=1.8,
                    label=f"fitted arch line {prec.upper()}")
        ax_pow.plot(grid, m.power_w(grid), color=c, lw=1.8, label=f"fitted power line {prec.upper()}")
        if m.capped:
            ax_pow.axhline(m.pi0_w + m.delta_pi_w, color="grey", ls=":", lw=1,
                           label=f"fitted cap π0+Δπ = {m.pi0_w + m.delta_pi_w:.4g} W")
    for ax, ylab, title in ((ax_perf, "performance [GFLOP/s]", "time roofline"),
                            (ax_eff, "energy efficiency [GFLOP/J]", "energy arch line"),
                            (ax_pow, "average power [W]", "power line"),
                            (ax_res, "relative error (model - measured)/measured [%]", "residuals")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("intensity I = W/Q [flop/byte]")
        ax.set_ylabel(ylab)
        ax.set_title(title, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        legend_outside(ax, ncol=2, fontsize=7)     # under the panel: never over the points
    ax_perf.set_yscale("log", base=2)
    ax_eff.set_yscale("log", base=2)
    ax_res.axhline(0, color="black", lw=0.8)


def _dvfs_panels(r: FitResult, fig: Any) -> None:
    rows, pe = _subsample(r)
    ax_pe, ax_res, ax_pi0 = fig.subplots(1, 3)
    e = rows["energy_j"].to_numpy()
    ep = pe["energy_pred_j"].to_numpy()
    for kernel in sorted(set(rows["kernel"].astype(str))):
        sel = (rows["kernel"].astype(str) == kernel).to_numpy()
        ax_pe.scatter(e[sel], ep[sel], s=8, alpha=0.5, label=kernel)
        ax_res.scatter(rows["core_v"].to_numpy()[sel], 100 * pe["energy_rel_err"].to_numpy()[sel],
                       s=8, alpha=0.5, label=kernel)
    lim = [float(min(e.min(), ep.min())), float(max(e.max(), ep.max()))]
    ax_pe.plot(lim, lim, color="black", lw=1, label="model = measured")
    ax_pe.set_xscale("log")
    ax_pe.set_yscale("log")
    ax_pe.set_xlabel("measured energy [J]")
    ax_pe.set_ylabel("eq.48 predicted energy [J]")
    ax_res.axhline(0, color="black", lw=0.8)
    ax_res.set_xlabel("core voltage [V]")
    ax_res.set_ylabel("energy relative error [%]")
    s = r.extra.get("settings", [])
    vc = [x["core_v"] for x in s]
    pi0 = [x["pi0"] for x in s]
    err = [x.get("pi0_stderr") or 0.0 for x in s]
    ax_pi0.errorbar(vc, pi0, yerr=[1.96 * x for x in err], fmt="o", color="tab:green", label="fitted pi0 (95%)")
    ax_pi0.set_xlabel("core voltage [V]")
    ax_pi0.set_ylabel("constant power pi0 [W]")
    for ax, title in ((ax_pe, "measured vs model"), (ax_res, "residuals"), (ax_pi0, "pi0 per setting (eq.46)")):
        ax.set_title(title, fontsize=10)
        ax.grid(True, alpha=0.3)
        legend_outside(ax, ncol=2, fontsize=7)


def fit_report_figure(results: FitResult | list[FitResult], path: str | Path) -> list[Path]:
    """Write one PNG per result (suffixed with the platform when there are several). Returns the paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rs = [results] if isinstance(results, FitResult) else list(results)
    path = Path(path)
    written: list[Path] = []
    for r in rs:
        target = path if len(rs) == 1 else path.with_name(
            f"{path.stem}-{r.platform}{'-emulated' if r.emulated else ''}{path.suffix or '.png'}")
        if r.model == "dvfs":
            fig = plt.figure(figsize=(15, 5.6), layout="constrained")
            _dvfs_panels(r, fig)
        else:
            fig = plt.figure(figsize=(12, 10.5), layout="constrained")
            _intensity_panels(r, fig)
        q = r.quality
        title = (f"archline fit: {r.platform}{' (EMULATED)' if r.emulated else ''}, model {r.model}, "
                 f"{r.n_points} points, energy MAPE {q.get('energy_mape_pct', float('nan')):.2f}%")
        if "cv_mape_pct" in q:
            title += f", {q.get('cv_folds')}-fold CV {q['cv_mape_pct']:.2f}%"
        title_with_notes(fig, title)
        written.append(save_figure(fig, target, dpi=110))
    return written
