"""The capped model: S1 eq.32-38 by nonlinear least squares (scipy.optimize.least_squares), model.md §6.3.

Parameters (all > 0, fitted in log space): tau_flop_{sp,dp}, tau_mem, eps_flop_{sp,dp}, eps_mem, pi0, delta_pi.
The seeds do not give the thesis's loss, weights, starting values or constraints (model.md §13.11); ours:

* residuals are stacked log-ratios, r_T = log(T_model/T) with T_model from eq.34, and
  r_E = log(E_model/E) with E_model from eq.32 at the measured T (as eq.9 uses it);
* starting values: eq.9's OLS, the observed peak rates, and delta_pi = highest observed power - pi0;
* uncertainty: a row bootstrap, warm-started at the estimate (m-out-of-n with m <= 20,000 rows for huge sets,
  the spread rescaled by sqrt(m/n)).

The "free" model is the same fit with delta_pi = inf. Per-point relative errors of performance, energy and power
(energy at the model's own time) of the two are compared with a two-sample Kolmogorov-Smirnov test (S1 §4.4.1).
Only intensity rows are used (flops and DRAM bytes).
"""

from __future__ import annotations

import math
import warnings as py_warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from archline.fit.io.results import TooFewPointsError, require_points
from archline.fit.model.machine import Machine
from archline.fit.regress.basic import (
    basic_rows,
    derived_constants,
    fit_basic_params,
    observed_tau,
    point_errors,
    precisions_present,
)
from archline.fit.regress.result import UNITS, Coefficient, FitResult, error_summary, relative_error

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

BOOT_MAX_ROWS = 20_000


class _Problem:
    def __init__(self, rows: pd.DataFrame, precs: list[str], capped: bool) -> None:
        self.w_sp = rows["flops_sp"].to_numpy(dtype=np.float64)
        self.w_dp = rows["flops_dp"].to_numpy(dtype=np.float64)
        self.q = rows["bytes_mem"].to_numpy(dtype=np.float64)
        self.t = rows["time_s"].to_numpy()
        self.e = rows["energy_j"].to_numpy()
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
        return np.concatenate([np.log(t / self.t), np.log(np.maximum(e, 1e-300) / self.e)])

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
        return jac

    def subset(self, idx: np.ndarray) -> _Problem:
        new = object.__new__(_Problem)
        new.__dict__.update(self.__dict__)
        for k in ("w_sp", "w_dp", "q", "t", "e"):
            setattr(new, k, getattr(self, k)[idx])
        return new


def _solve(prob: _Problem, theta0: np.ndarray) -> np.ndarray:
    from scipy.optimize import least_squares

    res = least_squares(prob.residuals, theta0, jac=prob.jacobian, method="lm", x_scale=1.0,
                        max_nfev=200 * theta0.size)
    return np.asarray(res.x)


def _start(rows: pd.DataFrame, prob: _Problem) -> np.ndarray:
    base = fit_basic_params(rows)
    tau = {k: c.value for k, c in observed_tau(rows).items()}
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


def fit_capped_params(frame: pd.DataFrame, capped: bool = True) -> dict[str, float]:
    rows = basic_rows(frame)
    prob = _Problem(rows, precisions_present(rows), capped)
    return prob.unpack(_solve(prob, _start(rows, prob)))


def predict_capped(params: dict[str, float], frame: pd.DataFrame) -> tuple[np.ndarray | None, np.ndarray]:
    prob = _Problem(frame, [p for p in ("sp", "dp") if f"tau_flop_{p}" in params], "delta_pi" in params)
    t, _ = prob.model(params)
    _, e = prob.model(params, frame["time_s"].to_numpy())
    return t, e


def _model_errors(prob: _Problem, p: dict[str, float]) -> dict[str, np.ndarray]:
    """Per-point signed relative errors of the model's own predictions (time from eq.34, energy at that time)."""
    t, e = prob.model(p)
    return {"time": relative_error(t, prob.t), "performance": relative_error(prob.t, t),
            "energy": relative_error(e, prob.e), "power": relative_error(e / t, prob.e / prob.t)}


def fit_capped(frame: pd.DataFrame, *, platform: str = "", emulated: bool = False, n_boot: int = 100,
               seed: int = 0) -> FitResult:
    from scipy.stats import ks_2samp

    rows = basic_rows(frame)
    if len(rows) == 0:
        raise TooFewPointsError("the capped model needs intensity rows (flops > 0, DRAM bytes); none found")
    precs = precisions_present(rows)
    prob = _Problem(rows, precs, capped=True)
    require_points(len(rows), len(prob.names), "capped", "intensity rows")
    theta = _solve(prob, _start(rows, prob))
    est = prob.unpack(theta)
    free = _Problem(rows, precs, capped=False)
    theta_free = _solve(free, np.delete(theta, prob.names.index("delta_pi")))
    est_free = free.unpack(theta_free)

    rng = np.random.default_rng(seed)
    n = len(rows)
    m = min(n, BOOT_MAX_ROWS)
    boots = np.empty((n_boot, theta.size))
    for b in range(n_boot):
        idx = rng.integers(0, n, m)
        boots[b] = _solve(prob.subset(idx), theta)
    vals = np.exp(boots)
    shrink = math.sqrt(m / n)
    centre = np.exp(theta)
    se = vals.std(axis=0, ddof=1) * shrink if n_boot > 1 else np.full(theta.size, math.nan)
    lo_b, hi_b = (np.percentile(vals, [2.5, 97.5], axis=0) if n_boot > 1
                  else (np.full(theta.size, math.nan), np.full(theta.size, math.nan)))
    lo = centre - (centre - lo_b) * shrink
    hi = centre + (hi_b - centre) * shrink

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
    dof = 2 * n - theta.size
    f_stat = (rss_f - rss_c) / max(rss_c / max(dof, 1), 1e-300)
    f_p = float(f_dist.sf(f_stat, 1, max(dof, 1))) if f_stat > 0 else 1.0
    for j, name in enumerate(prob.names):
        c = Coefficient(name, float(centre[j]), float(se[j]), (float(lo[j]), float(hi[j])), UNITS[name],
                        "NLS eq.32-38, bootstrap CI")
        rel_half = (c.ci95[1] - c.ci95[0]) / 2 / c.value if c.ci95 else 0.0
        if name == "delta_pi" and (n_bind == 0 or f_p > 0.01):
            omitted[name] = (f"the power cap does not bind in the data (capped vs free fit: F-test p = {f_p:.3g}, "
                             f"{n_bind} point(s) at the cap; highest measured power "
                             f"{float(np.max(prob.e / prob.t)):.4g} W): delta_pi is not identified and the "
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
    cap_info: dict[str, Any] = {"points_where_cap_binds": n_bind, "of_points": n, "f_test_pvalue": f_p}
    for p, mach in machines.items():
        cap_info[f"B_tau_minus_{p}"] = mach.B_tau_minus
        cap_info[f"B_tau_plus_{p}"] = mach.B_tau_plus
        cap_info[f"cap_binds_{p}"] = bool(mach.B_tau_minus < mach.B_tau_plus)
    params = dict(est)
    t_pred, e_pred = predict_capped(params, rows)
    errs = point_errors(rows, t_pred, e_pred)
    errs["cap_binds"] = binds
    quality: dict[str, Any] = {"n_points": n}
    quality.update(error_summary(errs["energy_rel_err"].to_numpy(), "energy"))
    quality.update(error_summary(errs["time_rel_err"].to_numpy(), "time"))
    quality.update(error_summary(errs["power_rel_err"].to_numpy(), "power"))
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
                     extra={"method": "scipy least_squares on log-ratio residuals of T (eq.34) and E (eq.32); "
                                      "row bootstrap", "n_boot": n_boot, "bootstrap_rows": m, "cap": cap_info,
                            "ks_free_vs_capped": ks, "free_estimates": est_free},
                     point_errors=errs, predictor=lambda f: predict_capped(params, f), rows=rows)
