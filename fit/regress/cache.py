"""The cache model: flops, DRAM, L1/L2/L3/shared-memory bytes, random accesses and integer ops
(model.md §3; S1 eq.10-12), with inclusive-cost semantics (each byte counted once, at the level that served it).

Two methods, and the result says which was used:

* ``joint``: one linear least-squares fit of E = sum_i N_i*eps_i + pi0*T over every row. A row is divided by
  its own operation count (:func:`~archline.fit.regress.result.row_normaliser`), so rows with W = 0 take part.
* ``residual``: S1 §3.3.3. Fit eq.9 on the intensity rows first, then for each level (L3, L2, L1, shared,
  random, integer, in that order) average eq.11/12's per-row residual cost over the rows that exercise that
  level, subtracting the levels already estimated.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from archline.fit.io.results import TooFewPointsError, require_points
from archline.fit.regress.basic import (
    basic_rows,
    derived_constants,
    fit_basic_params,
    observed_tau,
    point_errors,
    predict_linear,
)
from archline.fit.regress.result import (
    COUNT_COEFFICIENT,
    UNITS,
    Coefficient,
    FitResult,
    error_summary,
    fast_relative_lstsq,
    row_normaliser,
    t_interval,
)

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

#: Levels of the residual method, in estimation order (outermost first: eq.11 before eq.12).
RESIDUAL_ORDER: tuple[str, ...] = ("bytes_l3", "bytes_l2", "bytes_l1", "bytes_shared", "rand_accesses", "int_ops")
CACHE_COUNTS: tuple[str, ...] = RESIDUAL_ORDER


def usable_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows with at least one count (idle rows are left out: pi0 is a regression coefficient, not idle power)."""
    n, _ = row_normaliser(frame)
    return frame.loc[n > 0]


def has_cache_rows(frame: pd.DataFrame) -> bool:
    return bool((frame[list(CACHE_COUNTS)].to_numpy(dtype=np.float64) > 0).any())


def _design(rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, list[str]]:
    n, _ = row_normaliser(rows)
    names: list[str] = []
    cols: list[np.ndarray] = []
    for col, name in COUNT_COEFFICIENT.items():
        v = rows[col].to_numpy(dtype=np.float64)
        if (v > 0).any():
            names.append(name)
            cols.append(v / n)
    names.append("pi0")
    cols.append(rows["time_s"].to_numpy() / n)
    return np.column_stack(cols), rows["energy_j"].to_numpy() / n, names


def fit_joint_params(frame: pd.DataFrame) -> dict[str, float]:
    rows = usable_rows(frame)
    x, y, names = _design(rows)
    beta = fast_relative_lstsq(x, y)
    out = dict(zip(names, (float(b) for b in beta), strict=True))
    out.update({k: c.value for k, c in observed_tau(basic_rows(rows)).items()})
    return out


def _wls(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, object]:
    """No-intercept least squares on relative residuals (two-step: OLS, then weights 1/yhat^2)."""
    from statsmodels.regression.linear_model import OLS, WLS

    res = OLS(y, x).fit(method="qr")
    yhat = np.asarray(res.fittedvalues)
    yhat = np.where(yhat > 0, yhat, y)
    res = WLS(y, x, weights=1.0 / yhat**2).fit(method="qr")
    return np.asarray(res.params), np.asarray(res.cov_params()), res


def _residual_params(frame: pd.DataFrame) -> tuple[dict[str, float], dict[str, Coefficient], list[str]]:
    rows = usable_rows(frame)
    base = fit_basic_params(rows)
    params = dict(base)
    coeffs: dict[str, Coefficient] = {}
    notes: list[str] = []
    known = {"flops_sp", "flops_dp", "bytes_mem"}
    counts = {c: rows[c].to_numpy(dtype=np.float64) for c in COUNT_COEFFICIENT}
    for col in RESIDUAL_ORDER:
        others = [c for c in RESIDUAL_ORDER if c != col and c not in known]
        sel = (counts[col] > 0)
        for o in others:
            sel &= counts[o] == 0
        if not sel.any():
            if (counts[col] > 0).any():
                notes.append(f"{COUNT_COEFFICIENT[col]}: no row exercises it alone; residual method skipped it")
            continue
        sub = rows.loc[sel]
        _, explained = predict_linear(params, sub)
        per_row = (sub["energy_j"].to_numpy() - explained) / sub[col].to_numpy()
        name = COUNT_COEFFICIENT[col]
        v = float(np.mean(per_row))
        n = int(per_row.size)
        se = float(np.std(per_row, ddof=1) / math.sqrt(n)) if n > 1 else math.nan
        eq = {"bytes_l2": "eq.11", "bytes_l1": "eq.12"}.get(col, "eq.11/12 form")
        coeffs[name] = Coefficient(name, v, se if n > 1 else None, t_interval(v, se, n - 1) if n > 1 else None,
                                   UNITS[name], f"residual {eq}: mean over {n} rows")
        params[name] = v
        known.add(col)
    return params, coeffs, notes


def fit_residual_params(frame: pd.DataFrame) -> dict[str, float]:
    return _residual_params(frame)[0]


def fit_cache(frame: pd.DataFrame, *, platform: str = "", emulated: bool = False,
              method: str = "joint") -> FitResult:
    """Fit the cache model by ``method`` = ``joint`` or ``residual`` (module docstring)."""
    if method not in ("joint", "residual"):
        raise ValueError(f"cache method must be 'joint' or 'residual', got {method!r}")
    rows = usable_rows(frame)
    if not has_cache_rows(rows):
        raise TooFewPointsError("the cache model needs cache, random-access, shared-memory or integer rows "
                                "(bytes_l1/l2/l3/shared, rand_accesses or int_ops > 0); none found")
    warnings: list[str] = []
    omitted: dict[str, str] = {}
    coeffs: dict[str, Coefficient] = {}
    quality: dict[str, float | int | str] = {"n_points": len(rows)}
    if method == "joint":
        x, y, names = _design(rows)
        require_points(len(rows), len(names), "cache (joint)")
        beta, cov, res = _wls(x, y)
        ci = np.asarray(res.conf_int(0.05))  # type: ignore[attr-defined]
        se = np.sqrt(np.maximum(np.diag(cov), 0.0))
        xn = x / np.linalg.norm(x, axis=0)
        rank = int(np.linalg.matrix_rank(xn.T @ xn, tol=1e-12))  # Gram matrix: p x p, cheap for 10^6 rows
        if rank < len(names):
            warnings.append(f"design matrix has rank {rank} < {len(names)} coefficients: some costs are aliased")
        for j, name in enumerate(names):
            coeffs[name] = Coefficient(name, float(beta[j]), float(se[j]), (float(ci[j, 0]), float(ci[j, 1])),
                                       UNITS[name], "joint WLS (relative residuals)")
        quality["r2"] = float(res.rsquared)  # type: ignore[attr-defined]
        quality["r2_of"] = "E/N, no intercept (uncentred)"
        params = {k: c.value for k, c in coeffs.items()}
        params.update({k: c.value for k, c in observed_tau(basic_rows(rows)).items()})
    else:
        base_res = _basic_with_errors(rows)
        coeffs.update(base_res)
        params, extra_coeffs, notes = _residual_params(rows)
        coeffs.update(extra_coeffs)
        warnings.extend(notes)
    for name, c in list(coeffs.items()):
        lo_ok = c.ci95 is None or not (c.ci95[0] <= 0 <= c.ci95[1])
        if c.value <= 0 or not lo_ok:
            why = (f"not identified by the data: estimate {c.value:.3g} {c.unit}"
                   + (f", 95% CI [{c.ci95[0]:.3g}, {c.ci95[1]:.3g}] includes 0" if c.ci95 else ""))
            omitted[name] = why
            warnings.append(f"{name} omitted: {why}")
            del coeffs[name]
            params.pop(name, None)
    tau = observed_tau(basic_rows(rows))
    t_pred, e_pred = predict_linear(params, rows)
    errs = point_errors(rows, None, e_pred)
    if t_pred is not None:
        b = basic_rows(rows).index
        errs_b = point_errors(rows.loc[b], t_pred[rows.index.get_indexer(b)], e_pred[rows.index.get_indexer(b)])
        quality.update(error_summary(errs_b["time_rel_err"].to_numpy(), "time"))
        quality.update(error_summary(errs_b["power_rel_err"].to_numpy(), "power"))
    quality.update(error_summary(errs["energy_rel_err"].to_numpy(), "energy"))
    quality["mape_pct"] = quality.get("energy_mape_pct", math.nan)
    l1, l2 = params.get("eps_l1"), params.get("eps_l2")
    if l1 is not None and l2 is not None and l1 > l2:
        warnings.append(f"eps_l1 ({l1:.3g}) > eps_l2 ({l2:.3g}): fails the sanity check eps_L1 <= eps_L2 "
                        f"(S1 §4.4.2)")
    rand, mem = params.get("eps_rand"), params.get("eps_mem")
    if rand is not None and mem is not None and rand < 10 * mem:
        warnings.append(f"eps_rand ({rand:.3g} J) < 10x eps_mem: S1 §4.4.2 expects at least 10x")
    return FitResult(platform=platform, model="cache", emulated=emulated, n_points=len(rows), coefficients=coeffs,
                     tau=tau, derived=derived_constants(params), quality=quality, warnings=warnings,
                     omitted=omitted, extra={"method": method, "method_detail": (
                         "joint WLS on rows normalised by their own operation count" if method == "joint"
                         else "eq.9 on intensity rows, then residual eq.11/12 per level")},
                     point_errors=errs, predictor=lambda f: predict_linear(params, f), rows=rows)


def _basic_with_errors(rows: pd.DataFrame) -> dict[str, Coefficient]:
    from archline.fit.regress.basic import fit_basic

    r = fit_basic(rows, require_both_precisions=False)
    return {k: c for k, c in r.coefficients.items() if k != "delta_eps_dp"}
