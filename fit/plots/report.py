"""The fit-report figure: measured points over the fitted roofline, arch line and power line, plus residuals
against intensity (basic, cache and capped models); measured vs predicted energy and per-setting pi0 (dvfs).

One marker per configuration: the mean of its rows, with a bar of +-1 standard deviation of the rows (a sweep
repeats each configuration; a million dots would hide the spread and take minutes to draw).

matplotlib is imported inside the function with the Agg backend, so the library stays importable without it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from archline.common.outputs import inside, safe_component
from archline.fit.figure_layout import check_figure_format, draw_to, legend_outside, title_with_notes
from archline.fit.regress.result import FitResult
from archline.formats.costs_files import Job
from archline.model.machine import Machine

COLOURS = {"sp": "tab:blue", "dp": "tab:orange"}


def _machine(r: FitResult, prec: str) -> Machine | None:
    need = (f"tau_flop_{prec}", "tau_mem", f"eps_flop_{prec}", "eps_mem", "pi0")
    vals = {k: r.value(k) for k in need}
    if any(v is None for v in vals.values()):
        return None
    dpi = r.value("delta_pi")
    return Machine(vals[f"tau_flop_{prec}"], vals["tau_mem"], vals[f"eps_flop_{prec}"],  # type: ignore[arg-type]
                   vals["eps_mem"], vals["pi0"], math.inf if dpi is None else dpi)  # type: ignore[arg-type]


def _mean_sd(g: np.ndarray, values: np.ndarray, n_cfg: int) -> tuple[np.ndarray, np.ndarray]:
    """Per configuration: mean and standard deviation (ddof=1; 0 for a single row) of finite row values."""
    ok = np.isfinite(values)
    n = np.bincount(g[ok], minlength=n_cfg).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.bincount(g[ok], values[ok], minlength=n_cfg) / n
        d = values[ok] - mean[g[ok]]
        sd = np.sqrt(np.bincount(g[ok], d * d, minlength=n_cfg) / np.maximum(n - 1, 1))
    return mean, sd


def _bars(ax: Any, x: np.ndarray, mean: np.ndarray, sd: np.ndarray, **kw: Any) -> None:
    ax.errorbar(x, mean, yerr=sd, fmt=kw.pop("fmt", "o"), ms=4, capsize=2, elinewidth=1, alpha=0.8, zorder=3, **kw)


def _intensity_panels(r: FitResult, fig: Any) -> None:
    data, errs = r.rows, r.errors
    assert data is not None and errs is not None
    cfg, g, n_cfg = data.cfg, data.g, data.n_configs
    axes = fig.subplots(2, 2)
    ax_perf, ax_eff, ax_pow, ax_res = axes[0, 0], axes[0, 1], axes[1, 0], axes[1, 1]
    w, q = cfg.num("work_flop"), cfg.num("bytes_mem")
    intensity = np.divide(w, q, out=np.full(n_cfg, np.nan), where=(q > 0) & (w > 0))
    ok = np.isfinite(intensity)
    lo = np.nanmin(intensity[ok]) / 1.5 if ok.any() else 0.1
    hi = np.nanmax(intensity[ok]) * 1.5 if ok.any() else 100.0
    grid = np.logspace(math.log10(lo), math.log10(hi), 400)
    wr = w[g]
    signed = errs.signed(data)
    quantities = {"perf": _mean_sd(g, wr / data.t / 1e9, n_cfg), "eff": _mean_sd(g, wr / data.e / 1e9, n_cfg),
                  "pow": _mean_sd(g, data.e / data.t, n_cfg),
                  "e_err": _mean_sd(g, 100 * signed["energy_rel_err"], n_cfg)}
    if "time_rel_err" in signed:
        quantities["t_err"] = _mean_sd(g, 100 * signed["time_rel_err"], n_cfg)
    for prec in ("sp", "dp"):
        sel = ok & (cfg.num(f"flops_{prec}") > 0)
        c = COLOURS[prec]
        if sel.any():
            label = f"measured {prec.upper()} (mean ± sd)"
            for ax, key in ((ax_perf, "perf"), (ax_eff, "eff"), (ax_pow, "pow")):
                mean, sd = quantities[key]
                _bars(ax, intensity[sel], mean[sel], sd[sel], color=c, label=label)
            mean, sd = quantities["e_err"]
            _bars(ax_res, intensity[sel], mean[sel], sd[sel], color=c, label=f"energy {prec.upper()}")
            if "t_err" in quantities:
                mean, sd = quantities["t_err"]
                # a little to the right, so the time bars do not hide the energy bars at the same intensity
                _bars(ax_res, intensity[sel] * 1.12, mean[sel], sd[sel], color=c, fmt="x",
                      label=f"time {prec.upper()} (vs roofline)")
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
    data, errs = r.rows, r.errors
    assert data is not None and errs is not None
    cfg, g, n_cfg = data.cfg, data.g, data.n_configs
    ax_pe, ax_res, ax_pi0 = fig.subplots(1, 3)
    signed = errs.signed(data)
    e_m, e_sd = _mean_sd(g, data.e, n_cfg)
    ep_m, ep_sd = _mean_sd(g, signed["energy_pred_j"], n_cfg)
    err_m, err_sd = _mean_sd(g, 100 * signed["energy_rel_err"], n_cfg)
    kernels = np.asarray(cfg["kernel"]).astype(str)
    for kernel in sorted(set(kernels)):
        sel = kernels == kernel
        ax_pe.errorbar(e_m[sel], ep_m[sel], xerr=e_sd[sel], yerr=ep_sd[sel], fmt="o", ms=3, alpha=0.6,
                       label=kernel)
        _bars(ax_res, cfg.num("core_v")[sel], err_m[sel], err_sd[sel], label=kernel)
    lim = [float(min(e_m.min(), ep_m.min())), float(max(e_m.max(), ep_m.max()))]
    ax_pe.plot(lim, lim, color="black", lw=1, label="model = measured")
    ax_pe.set_xscale("log")
    ax_pe.set_yscale("log")
    ax_pe.set_xlabel("measured energy [J] (configuration mean)")
    ax_pe.set_ylabel("eq.48 predicted energy [J]")
    ax_res.axhline(0, color="black", lw=0.8)
    ax_res.set_xlabel("core voltage [V]")
    ax_res.set_ylabel("energy relative error [%] (mean ± sd)")
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


def _draw(r: FitResult) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if r.model == "dvfs":
        fig = plt.figure(figsize=(15, 5.6), layout="constrained")
        _dvfs_panels(r, fig)
    else:
        fig = plt.figure(figsize=(12, 10.5), layout="constrained")
        _intensity_panels(r, fig)
    q = r.quality
    n_cfg = q.get("n_configurations")
    title = (f"archline fit: {r.platform}{' (EMULATED)' if r.emulated else ''}, model {r.model}, "
             f"{r.n_points} rows" + (f" in {n_cfg} configurations" if n_cfg is not None else "")
             + f", energy MAPE {q.get('energy_mape_pct', float('nan')):.2f}%")
    if "cv_mape_pct" in q:
        title += f", {q.get('cv_folds')}-fold CV by {q.get('cv_split', '?')} {q['cv_mape_pct']:.2f}%"
    title_with_notes(fig, title)
    return fig


def fit_report_jobs(results: FitResult | list[FitResult], path: str | Path) -> list[Job]:
    """The report figures as outputs (:func:`archline.formats.costs_files.write_all`): one per result, suffixed
    with the platform (made a safe file name) when there are several. The format is checked here (a .pgf without
    TeX is an ArchlineFitError before anything is drawn); each figure is drawn when it is written."""
    rs = [results] if isinstance(results, FitResult) else list(results)
    path = Path(path)
    fmt = check_figure_format(path)
    jobs: list[Job] = []
    for r in rs:
        target = path if len(rs) == 1 else inside(path.parent, path.with_name(
            f"{path.stem}-{safe_component(r.platform)}{'-emulated' if r.emulated else ''}{path.suffix or '.png'}"))
        jobs.append((target, lambda tmp, r=r: draw_to(_draw(r), tmp, fmt, dpi=110)))
    return jobs
