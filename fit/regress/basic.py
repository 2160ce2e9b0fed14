"""The basic model: OLS of S0/S1 eq.9, single and double precision jointly (model.md §6.1).

    E/W = eps_s + eps_mem*(Q/W) + pi0*(T/W) + delta_eps_d*R        R = 1 for double precision

tau_flop and tau_mem are not fitted by eq.9 (model.md §1.1): the cost table carries the observed peaks
(median of the three fastest rows), labelled as such, so the table can drive the time model.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from archline.fit.io.results import PrecisionError, TooFewPointsError, require_points
from archline.fit.model.machine import Machine
from archline.fit.regress.result import (
    NON_BASIC_COUNTS,
    UNITS,
    Coefficient,
    FitResult,
    error_summary,
    relative_error,
)

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


def basic_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """Intensity points: flops > 0 and no cache, random, integer or shared-memory counts."""
    other = frame[list(NON_BASIC_COUNTS)].to_numpy(dtype=np.float64).sum(axis=1)
    keep = (frame["work_flop"].to_numpy() > 0) & (other == 0)
    return frame.loc[keep]


def _fastest(per_unit_s: np.ndarray) -> float:
    v = np.sort(per_unit_s[np.isfinite(per_unit_s) & (per_unit_s > 0)])
    return float(np.median(v[:3])) if v.size else math.nan


def observed_tau(frame: pd.DataFrame) -> dict[str, Coefficient]:
    """tau_flop_sp, tau_flop_dp, tau_mem as the inverse of the best observed throughput (not fitted)."""
    out: dict[str, Coefficient] = {}
    t = frame["time_s"].to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        for p in ("sp", "dp"):
            w = frame[f"flops_{p}"].to_numpy()
            v = _fastest(np.where(w > 0, t / w, np.nan))
            if math.isfinite(v):
                out[f"tau_flop_{p}"] = Coefficient(f"tau_flop_{p}", v, None, None, UNITS[f"tau_flop_{p}"],
                                                   "observed: median of the 3 fastest rows, not fitted")
        q = frame["bytes_mem"].to_numpy()
        v = _fastest(np.where(q > 0, t / q, np.nan))
        if math.isfinite(v):
            out["tau_mem"] = Coefficient("tau_mem", v, None, None, UNITS["tau_mem"],
                                         "observed: median of the 3 fastest rows, not fitted")
    return out


def precisions_present(frame: pd.DataFrame) -> list[str]:
    return [p for p in ("sp", "dp") if bool((frame[f"flops_{p}"].to_numpy() > 0).any())]


def _ols_basic(rows: pd.DataFrame, both: bool, weighting: str = "relative") -> tuple[np.ndarray, np.ndarray, object]:
    """statsmodels OLS of eq.9. ``weighting="relative"`` (default) is two-step feasible WLS with weights
    1/yhat^2, i.e. least squares on relative residuals: E/W spans orders of magnitude across intensity and
    plain OLS lets the low-intensity points' absolute noise swamp eps_s. ``"none"`` is R's lm, as S0 used."""
    from statsmodels.regression.linear_model import OLS, WLS

    x, y = _design_basic(rows, both)
    res = OLS(y, x).fit(method="qr")
    if weighting == "relative":
        yhat = np.asarray(res.fittedvalues)
        yhat = np.where(yhat > 0, yhat, y)
        res = WLS(y, x, weights=1.0 / yhat**2).fit(method="qr")
    elif weighting != "none":
        raise ValueError(f"weighting must be 'relative' or 'none', got {weighting!r}")
    return np.asarray(res.params), np.asarray(res.cov_params()), res


def _design_basic(rows: pd.DataFrame, both: bool) -> tuple[np.ndarray, np.ndarray]:
    w = rows["work_flop"].to_numpy(dtype=np.float64)
    cols = [np.ones_like(w), rows["bytes_mem"].to_numpy() / w, rows["time_s"].to_numpy() / w]
    if both:
        cols.append(rows["flops_dp"].to_numpy() / w)  # R: 1 on a double-precision row
    return np.column_stack(cols), rows["energy_j"].to_numpy() / w


def fit_basic_params(frame: pd.DataFrame) -> dict[str, float]:
    """Point estimates only (for cross-validation): eps_flop_sp/dp, eps_mem, pi0 plus observed taus."""
    from archline.fit.regress.result import fast_relative_lstsq

    rows = basic_rows(frame)
    prec = precisions_present(rows)
    both = len(prec) == 2
    x, y = _design_basic(rows, both)
    beta = fast_relative_lstsq(x, y)
    out = _named(beta, prec)
    out.update({k: c.value for k, c in observed_tau(rows).items()})
    return out


def _named(beta: np.ndarray, prec: list[str]) -> dict[str, float]:
    eps_s, eps_mem, pi0 = (float(b) for b in beta[:3])
    out = {"eps_mem": eps_mem, "pi0": pi0}
    if len(prec) == 2:
        out["eps_flop_sp"] = eps_s
        out["eps_flop_dp"] = eps_s + float(beta[3])
    else:
        out[f"eps_flop_{prec[0]}"] = eps_s
    return out


def predict_linear(params: dict[str, float], frame: pd.DataFrame) -> tuple[np.ndarray | None, np.ndarray]:
    """E = sum N_i*eps_i + pi0*T (measured T), and T = max(W_sp*tau_sp + W_dp*tau_dp, Q*tau_mem) when the
    taus are known (eq.3 / eq.10). A count whose cost is unknown contributes nothing (callers only predict
    rows of the kinds they fitted)."""
    from archline.fit.regress.result import COUNT_COEFFICIENT

    e = params.get("pi0", 0.0) * frame["time_s"].to_numpy()
    for col, name in COUNT_COEFFICIENT.items():
        if name in params:
            e = e + params[name] * frame[col].to_numpy()
    t: np.ndarray | None = None
    if all(k in params for k in ("tau_mem",)) and any(f"tau_flop_{p}" in params for p in ("sp", "dp")):
        tf = (frame["flops_sp"].to_numpy() * params.get("tau_flop_sp", 0.0)
              + frame["flops_dp"].to_numpy() * params.get("tau_flop_dp", 0.0))
        t = np.maximum(tf, frame["bytes_mem"].to_numpy() * params["tau_mem"])
        # the time model covers flop + DRAM rows only; cache, random and integer rows get no time prediction
        other = frame[list(NON_BASIC_COUNTS)].to_numpy(dtype=np.float64).sum(axis=1) > 0
        t = np.where(other | (t <= 0), np.nan, t)
    return t, e


def point_errors(frame: pd.DataFrame, t_pred: np.ndarray | None, e_pred: np.ndarray) -> pd.DataFrame:
    """Per-point signed relative errors of time, energy and power (model - measured)/measured.

    Energy is predicted with the measured time (as the regression uses it); power is predicted energy over
    predicted time, where the model predicts time."""
    import pandas as pd

    t = frame["time_s"].to_numpy()
    e = frame["energy_j"].to_numpy()
    out = pd.DataFrame({
        "file": frame["_file"].to_numpy() if "_file" in frame else "",
        "line": frame["_line"].to_numpy() if "_line" in frame else 0,
        "kernel": frame["kernel"].to_numpy(), "precision": frame["precision"].to_numpy(),
        "intensity_flop_per_byte": np.divide(frame["work_flop"].to_numpy(), frame["bytes_mem"].to_numpy(),
                                             out=np.full(len(frame), np.nan),
                                             where=frame["bytes_mem"].to_numpy() > 0),
        "time_s": t, "energy_j": e, "power_w": e / t,
        "energy_pred_j": e_pred, "energy_rel_err": relative_error(e_pred, e),
    })
    if t_pred is not None:
        # energy with the model's own time (pi0 charged over predicted T) gives the power prediction
        out["time_pred_s"] = t_pred
        out["time_rel_err"] = relative_error(t_pred, t)
        with np.errstate(divide="ignore", invalid="ignore"):
            p_pred = e_pred / t_pred
        out["power_pred_w"] = p_pred
        out["power_rel_err"] = relative_error(p_pred, e / t)
    return out


def derived_constants(params: dict[str, float]) -> dict[str, float]:
    """B_tau, B_eps, eps_hat, eta, pi_flop, pi_mem per precision (suffix _sp/_dp; unsuffixed = sp if present)."""
    out: dict[str, float] = {}
    for p in ("sp", "dp"):
        need = (f"tau_flop_{p}", "tau_mem", f"eps_flop_{p}", "eps_mem", "pi0")
        if not all(k in params and math.isfinite(params[k]) for k in need):
            continue
        m = Machine(params[f"tau_flop_{p}"], params["tau_mem"], params[f"eps_flop_{p}"], params["eps_mem"],
                    params["pi0"], params.get("delta_pi", math.inf))
        vals = {"B_tau": m.B_tau, "B_eps": m.B_eps, "eps_hat": m.eps_hat, "eta_flop": m.eta_flop,
                "pi_flop": m.pi_flop, "pi_mem": m.pi_mem}
        if m.capped:
            vals.update({"B_tau_minus": m.B_tau_minus, "B_tau_plus": m.B_tau_plus, "headroom": m.headroom})
        for k, v in vals.items():
            out[f"{k}_{p}"] = float(v)
            if p == "sp" or f"{k}_sp" not in out:
                out[k] = float(v)
    return out


def fit_basic(frame: pd.DataFrame, *, platform: str = "", emulated: bool = False,
              require_both_precisions: bool = True, weighting: str = "relative") -> FitResult:
    """OLS of eq.9 with statsmodels. Needs both precisions unless ``require_both_precisions`` is False."""
    rows = basic_rows(frame)
    if len(rows) == 0:
        raise TooFewPointsError("the basic model needs intensity rows (flops > 0 and no cache/random/integer "
                                "counts); none found")
    prec = precisions_present(rows)
    both = len(prec) == 2
    if not both and require_both_precisions:
        raise PrecisionError(f"the basic model fits single and double precision jointly (S0 eq.9) but the "
                             f"data have only {prec[0]} intensity rows; add the other precision or pass "
                             f"--one-precision")
    n_par = 4 if both else 3
    require_points(len(rows), n_par, "basic", "intensity rows")
    beta, cov, res = _ols_basic(rows, both, weighting)
    dof = int(len(rows) - n_par)
    ci = np.asarray(res.conf_int(0.05))  # type: ignore[attr-defined]
    se = np.sqrt(np.maximum(np.diag(cov), 0.0))
    coeffs: dict[str, Coefficient] = {}
    eps_name = "eps_flop_sp" if both else f"eps_flop_{prec[0]}"
    coeffs[eps_name] = Coefficient(eps_name, float(beta[0]), float(se[0]), (float(ci[0, 0]), float(ci[0, 1])),
                                   UNITS[eps_name], "OLS eq.9")
    coeffs["eps_mem"] = Coefficient("eps_mem", float(beta[1]), float(se[1]), (float(ci[1, 0]), float(ci[1, 1])),
                                    UNITS["eps_mem"], "OLS eq.9")
    coeffs["pi0"] = Coefficient("pi0", float(beta[2]), float(se[2]), (float(ci[2, 0]), float(ci[2, 1])),
                                UNITS["pi0"], "OLS eq.9")
    if both:
        from archline.fit.regress.result import t_interval

        v = float(beta[0] + beta[3])
        s = math.sqrt(max(cov[0, 0] + cov[3, 3] + 2 * cov[0, 3], 0.0))
        coeffs["eps_flop_dp"] = Coefficient("eps_flop_dp", v, s, t_interval(v, s, dof), UNITS["eps_flop_dp"],
                                            "OLS eq.9: eps_s + delta_eps_d")
        coeffs["delta_eps_dp"] = Coefficient("delta_eps_dp", float(beta[3]), float(se[3]),
                                             (float(ci[3, 0]), float(ci[3, 1])), UNITS["delta_eps_dp"], "OLS eq.9")
    tau = observed_tau(rows)
    params = {k: c.value for k, c in {**coeffs, **tau}.items()}
    t_pred, e_pred = predict_linear(params, rows)
    errs = point_errors(rows, t_pred, e_pred)
    quality: dict[str, float | int | str] = {"r2": float(res.rsquared), "r2_of": "E/W (eq.9)",  # type: ignore
                                             "n_points": len(rows),
                                             "pvalue_max": float(np.max(res.pvalues))}  # type: ignore
    quality.update(error_summary(errs["energy_rel_err"].to_numpy(), "energy"))
    quality["mape_pct"] = quality.get("energy_mape_pct", math.nan)
    if "time_rel_err" in errs:
        quality.update(error_summary(errs["time_rel_err"].to_numpy(), "time"))
        quality.update(error_summary(errs["power_rel_err"].to_numpy(), "power"))
    warnings: list[str] = []
    omitted: dict[str, str] = {}
    for name, c in list(coeffs.items()):
        if c.stderr is not None and c.ci95 is not None and (c.value <= 0 or (c.ci95[0] <= 0 < c.ci95[1]
                                                            and name != "delta_eps_dp")):
            omitted[name] = (f"not identified by the data: estimate {c.value:.3g} {c.unit}, 95% CI "
                             f"[{c.ci95[0]:.3g}, {c.ci95[1]:.3g}] includes 0")
            warnings.append(f"{name} omitted: {omitted[name]}")
            del coeffs[name]
    n_other = len(frame) - len(rows)
    if n_other:
        warnings.append(f"basic model: {n_other} non-intensity row(s) (cache, random, integer, idle) not used; "
                        f"--model cache fits them")
    return FitResult(platform=platform, model="basic", emulated=emulated, n_points=len(rows), coefficients=coeffs,
                     tau=tau, derived=derived_constants(params), quality=quality, warnings=warnings,
                     omitted=omitted, extra={"method": "statsmodels OLS of S0 eq.9 (E/W on 1, Q/W, T/W, R)"
                     + (", relative weights 1/yhat^2" if weighting == "relative" else "")},
                     point_errors=errs, predictor=lambda f: predict_linear(params, f), rows=rows)
