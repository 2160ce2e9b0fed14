"""The capped model: S1 eq.32-38 by nonlinear least squares (scipy.optimize.least_squares), model.md §6.3.

Parameters (all > 0, fitted in log space): tau_flop_{sp,dp}, tau_mem, eps_flop_{sp,dp}, eps_mem, pi0, delta_pi.
The seeds do not give the thesis's loss, weights, starting values or constraints (model.md §13.11); ours:

* residuals are stacked log-ratios per configuration, weighted by sqrt(n) for its n rows:
  r_T = log(T_model) - mean(log T) with T_model from eq.34 (this is the rows' sum of squared log-ratios less a
  constant, so it equals the row-wise loss), and r_E = log(E_model(mean T)/mean E) with E_model from eq.32 at
  the measured time (as eq.9 uses it; on configuration means, which differs from the mean of the rows'
  log-ratios by O(noise^2), and is exactly the row-wise loss when each configuration has one row);
* starting values: eq.9's fit, the observed peak rates, and delta_pi = highest observed power - pi0;
* uncertainty: a bootstrap over configurations (all of a configuration's repeats move together, as they do
  in grouped cross-validation), warm-started at the estimate.

The "free" model is the same fit with delta_pi = inf. Per-configuration relative errors of performance, energy
and power (energy at the model's own time) of the two are compared with a two-sample Kolmogorov-Smirnov test
(S1 §4.4.1: per intensity point). Only intensity rows are used (flops and DRAM bytes).
"""

from __future__ import annotations

import math
import warnings as py_warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from archline.fit.io.configs import Columns, Grouped
from archline.fit.regress.basic import (
    basic_mask,
    basic_rows,
    derived_constants,
    fit_basic_params,
    observed_tau,
    precisions_present,
)
from archline.fit.regress.pointwise import error_summary, relative_error
from archline.fit.regress.requirements import require_points
from archline.fit.regress.result import UNITS, Coefficient, FitResult, as_grouped
from archline.formats.results_check import TooFewPointsError
from archline.model.machine import Machine

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


class _Problem:
    def __init__(self, cfg: Columns, precs: list[str], capped: bool) -> None:
        self.w_sp = cfg.num("flops_sp")
        self.w_dp = cfg.num("flops_dp")
        self.q = cfg.num("bytes_mem")
        self.t = cfg.num("time_s")
        self.e = cfg.num("energy_j")
        self.lt = cfg.num("log_time_mean") if "log_time_mean" in cfg else np.log(self.t)
        self.sw = np.sqrt(cfg.num("n")) if "n" in cfg else np.ones_like(self.t)
        self.precs = precs
        self.capped = capped
        self.names = [f"tau_flop_{p}" for p in precs] + ["tau_mem"] + [f"eps_flop_{p}" for p in precs] + \
            ["eps_mem", "pi0"] + (["delta_pi"] if capped else [])

    def unpack(self, theta: np.ndarray) -> dict[str, float]:
        return dict(zip(self.names, np.exp(theta), strict=True))

    def model(self, p: dict[str, float], t_meas: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        t_flop = self.w_sp * p.get("tau_flop_sp", 0.0) + self.w_dp * p.get("tau_flop_dp", 0.0)
        dyn = self.w_sp * p.get("eps_flop_sp", 0.0) + self.w_dp * p.get("eps_flop_dp", 0.0) + self.q * p["eps_mem"]
        t = np.maximum(t_flop, self.q * p["tau_mem"])
        if self.capped:
            t = np.maximum(t, dyn / p["delta_pi"])
        e = dyn + p["pi0"] * (t if t_meas is None else t_meas)
        return t, e

    def residuals(self, theta: np.ndarray) -> np.ndarray:
        p = self.unpack(theta)
        t, e = self.model(p, self.t)
        return np.concatenate([self.sw * (np.log(t) - self.lt), self.sw * np.log(np.maximum(e, 1e-300) / self.e)])

    def jacobian(self, theta: np.ndarray) -> np.ndarray:
        """Analytic d residual / d log(parameter): the max of eq.34 is differentiated on its active branch."""
        p = self.unpack(theta)
        n = self.t.size
        col = {name: j for j, name in enumerate(self.names)}
        t_flop = self.w_sp * p.get("tau_flop_sp", 0.0) + self.w_dp * p.get("tau_flop_dp", 0.0)
        t_mem = self.q * p["tau_mem"]
        parts = {"sp": self.w_sp * p.get("eps_flop_sp", 0.0), "dp": self.w_dp * p.get("eps_flop_dp", 0.0),
                 "mem": self.q * p["eps_mem"]}
        dyn = parts["sp"] + parts["dp"] + parts["mem"]
        t_cap = dyn / p["delta_pi"] if self.capped else np.zeros(n)
        t_model = np.maximum(np.maximum(t_flop, t_mem), t_cap)
        on_cap = self.capped & (t_cap >= np.maximum(t_flop, t_mem))
        on_mem = ~on_cap & (t_mem > t_flop)
        on_flop = ~on_cap & ~on_mem
        jac = np.zeros((2 * n, theta.size))
        for prec, w in (("sp", self.w_sp), ("dp", self.w_dp)):
            if f"tau_flop_{prec}" in col:
                jac[:n, col[f"tau_flop_{prec}"]] = np.where(on_flop, w * p[f"tau_flop_{prec}"] / t_model, 0.0)
        jac[:n, col["tau_mem"]] = np.where(on_mem, 1.0, 0.0)
        e_model = np.maximum(dyn + p["pi0"] * self.t, 1e-300)
        for key, name in (("sp", "eps_flop_sp"), ("dp", "eps_flop_dp"), ("mem", "eps_mem")):
            if name in col:
                if self.capped:
                    jac[:n, col[name]] = np.where(on_cap, parts[key] / dyn, 0.0)
                jac[n:, col[name]] = parts[key] / e_model
        jac[n:, col["pi0"]] = p["pi0"] * self.t / e_model
        if self.capped:
            jac[:n, col["delta_pi"]] = np.where(on_cap, -1.0, 0.0)
        return jac * np.concatenate([self.sw, self.sw])[:, None]

    def subset(self, idx: np.ndarray) -> _Problem:
        new = object.__new__(_Problem)
        new.__dict__.update(self.__dict__)
        for k in ("w_sp", "w_dp", "q", "t", "e", "lt", "sw"):
            setattr(new, k, getattr(self, k)[idx])
        return new


def _solve(prob: _Problem, theta0: np.ndarray) -> np.ndarray:
    from scipy.optimize import least_squares

    res = least_squares(prob.residuals, theta0, jac=prob.jacobian, method="lm", x_scale=1.0,
                        max_nfev=200 * theta0.size)
    return np.asarray(res.x)


def _start(cfg: Columns, prob: _Problem) -> np.ndarray:
    base = fit_basic_params(cfg)
    tau = {k: c.value for k, c in observed_tau(cfg).items()}
    p0: dict[str, float] = {}
    for name in prob.names:
        if name == "delta_pi":
            p_obs = float(np.max(prob.e / prob.t))
            p0[name] = max(p_obs - max(base.get("pi0", 0.0), 0.0), 0.05 * p_obs)
        elif name in tau:
            p0[name] = tau[name]
        else:
            v = base.get(name, math.nan)
            p0[name] = v if math.isfinite(v) and v > 0 else 1e-12
    return np.log(np.array([p0[n] for n in prob.names]))


def fit_capped_params(cfg: Columns, capped: bool = True) -> dict[str, float]:
    sub = cfg.take(basic_mask(cfg))
    prob = _Problem(sub, precisions_present(sub), capped)
    return prob.unpack(_solve(prob, _start(sub, prob)))


def predict_capped(params: dict[str, float], cfg: Columns) -> tuple[np.ndarray | None, np.ndarray]:
    prob = _Problem(cfg, [p for p in ("sp", "dp") if f"tau_flop_{p}" in params], "delta_pi" in params)
    t, _ = prob.model(params)
    _, e = prob.model(params, cfg.num("time_s"))
    return t, e


def _model_errors(prob: _Problem, p: dict[str, float]) -> dict[str, np.ndarray]:
    """Per-point signed relative errors of the model's own predictions (time from eq.34, energy at that time)."""
    t, e = prob.model(p)
    return {"time": relative_error(t, prob.t), "performance": relative_error(prob.t, t),
            "energy": relative_error(e, prob.e), "power": relative_error(e / t, prob.e / prob.t)}


def fit_capped(frame: Grouped | pd.DataFrame, *, platform: str = "", emulated: bool = False, n_boot: int = 100,
               seed: int = 0) -> FitResult:
    from scipy.stats import ks_2samp

    from archline.fit.regress.pointwise import row_errors

    rows = basic_rows(as_grouped(frame))
    if rows.n_rows == 0:
        raise TooFewPointsError("the capped model needs intensity rows (flops > 0, DRAM bytes); none found")
    cfg = rows.cfg
    precs = precisions_present(cfg)
    prob = _Problem(cfg, precs, capped=True)
    # one residual pair per configuration: repeated rows of one point do not identify more parameters
    require_points(rows.n_configs, len(prob.names), "capped", "distinct intensity configurations")
    theta = _solve(prob, _start(cfg, prob))
    est = prob.unpack(theta)
    free = _Problem(cfg, precs, capped=False)
    theta_free = _solve(free, np.delete(theta, prob.names.index("delta_pi")))
    est_free = free.unpack(theta_free)

    rng = np.random.default_rng(seed)
    n = rows.n_rows
    g = rows.n_configs
    boots = np.empty((n_boot, theta.size))
    for b in range(n_boot):
        boots[b] = _solve(prob.subset(rng.integers(0, g, g)), theta)
    vals = np.exp(boots)
    centre = np.exp(theta)
    se = vals.std(axis=0, ddof=1) if n_boot > 1 else np.full(theta.size, math.nan)
    lo, hi = (np.percentile(vals, [2.5, 97.5], axis=0) if n_boot > 1
              else (np.full(theta.size, math.nan), np.full(theta.size, math.nan)))

    warnings: list[str] = []
    omitted: dict[str, str] = {}
    coeffs: dict[str, Coefficient] = {}
    tau: dict[str, Coefficient] = {}
    machines = {p: Machine(est[f"tau_flop_{p}"], est["tau_mem"], est[f"eps_flop_{p}"], est["eps_mem"], est["pi0"],
                           est["delta_pi"]) for p in precs}
    binds = prob.model(est)[0] > np.maximum(prob.w_sp * est.get("tau_flop_sp", 0) + prob.w_dp *
                                            est.get("tau_flop_dp", 0), prob.q * est["tau_mem"]) * (1 + 1e-9)
    n_bind = int(binds.sum())
    # does the cap explain the data better than the free model? F-test for the one extra parameter
    from scipy.stats import f as f_dist

    rss_c = float(np.sum(prob.residuals(theta) ** 2))
    rss_f = float(np.sum(free.residuals(theta_free) ** 2))
    dof = 2 * g - theta.size  # on configuration means
    f_stat = (rss_f - rss_c) / max(rss_c / max(dof, 1), 1e-300)
    f_p = float(f_dist.sf(f_stat, 1, max(dof, 1))) if f_stat > 0 else 1.0
    for j, name in enumerate(prob.names):
        c = Coefficient(name, float(centre[j]), float(se[j]), (float(lo[j]), float(hi[j])), UNITS[name],
                        "NLS eq.32-38, bootstrap CI")
        rel_half = (c.ci95[1] - c.ci95[0]) / 2 / c.value if c.ci95 else 0.0
        if name == "delta_pi" and (n_bind == 0 or f_p > 0.01):
            omitted[name] = (f"the power cap does not bind in the data (capped vs free fit: F-test p = {f_p:.3g}, "
                             f"{n_bind} point(s) at the cap; highest measured power "
                             f"{float(np.max(rows.e / rows.t)):.4g} W): delta_pi is not identified and the "
                             f"data follow the free model")
        elif not math.isfinite(rel_half) or rel_half > 0.5:
            omitted[name] = f"not identified by the data: bootstrap 95% interval [{lo[j]:.3g}, {hi[j]:.3g}]"
        if name in omitted:
            warnings.append(f"{name} omitted: {omitted[name]}")
            continue
        (tau if name.startswith("tau") else coeffs)[name] = c

    err_c = _model_errors(prob, est)
    err_f = _model_errors(free, est_free)
    ks: dict[str, Any] = {}
    for q in ("performance", "energy", "power"):
        a, b = err_f[q][np.isfinite(err_f[q])], err_c[q][np.isfinite(err_c[q])]
        with py_warnings.catch_warnings():  # exact p-value falls back to asymptotic for big samples
            py_warnings.simplefilter("ignore", RuntimeWarning)
            stat = ks_2samp(a, b)
        ks[q] = {"statistic": float(stat.statistic), "pvalue": float(stat.pvalue),
                 "differ": bool(stat.pvalue < 0.05),
                 "free_median_pct": float(np.median(a) * 100), "capped_median_pct": float(np.median(b) * 100),
                 "free_q25_q75_pct": [float(np.percentile(a, 25) * 100), float(np.percentile(a, 75) * 100)],
                 "capped_q25_q75_pct": [float(np.percentile(b, 25) * 100), float(np.percentile(b, 75) * 100)]}
    cap_info: dict[str, Any] = {"points_where_cap_binds": n_bind, "of_points": g, "f_test_pvalue": f_p,
                                "points_are": "configurations"}
    for p, mach in machines.items():
        cap_info[f"B_tau_minus_{p}"] = mach.B_tau_minus
        cap_info[f"B_tau_plus_{p}"] = mach.B_tau_plus
        cap_info[f"cap_binds_{p}"] = bool(mach.B_tau_minus < mach.B_tau_plus)
    params = dict(est)

    def predictor(c: Columns) -> tuple[np.ndarray | None, np.ndarray]:
        return predict_capped(params, c)

    errs = row_errors(predictor, rows)
    errs.extra["cap_binds"] = binds
    quality: dict[str, Any] = {"n_points": n, "n_configurations": g}
    quality.update(errs.quality())
    quality["mape_pct"] = quality.get("energy_mape_pct", math.nan)
    quality.update(error_summary(err_f["performance"], "free_performance"))
    quality.update(error_summary(err_c["performance"], "capped_performance"))
    if "delta_pi" in omitted:
        params_out = {k: v for k, v in params.items() if k != "delta_pi"}
    else:
        params_out = params
    return FitResult(platform=platform, model="capped", emulated=emulated, n_points=n, coefficients=coeffs,
                     tau=tau, derived=derived_constants(params_out), quality=quality, warnings=warnings,
                     omitted=omitted,
                     extra={"method": "scipy least_squares on log-ratio residuals of T (eq.34) and E (eq.32) per "
                                      "configuration; bootstrap over configurations", "n_boot": n_boot,
                            "cap": cap_info, "ks_free_vs_capped": ks, "free_estimates": est_free},
                     errors=errs, predictor=predictor, rows=rows)
