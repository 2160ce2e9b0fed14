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

from archline.fit.io.configs import Columns, Grouped
from archline.fit.regress.basic import (
    TIME_MODEL_NOTE,
    basic_mask,
    derived_constants,
    fit_basic_params,
    observed_tau,
    predict_linear,
)
from archline.fit.regress.requirements import require_points
from archline.fit.regress.result import (
    COUNT_COEFFICIENT,
    UNITS,
    Coefficient,
    FitResult,
    as_grouped,
    omission_reason,
    row_normaliser,
    t_interval,
)
from archline.fit.regress.sufficient import Pseudo, fit_relative, inference
from archline.formats.results_check import TooFewPointsError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

#: Levels of the residual method, in estimation order (outermost first: eq.11 before eq.12).
RESIDUAL_ORDER: tuple[str, ...] = ("bytes_l3", "bytes_l2", "bytes_l1", "bytes_shared", "rand_accesses", "int_ops")
CACHE_COUNTS: tuple[str, ...] = RESIDUAL_ORDER


def usable_mask(cfg: Columns) -> np.ndarray:
    """Entries with at least one count (idle rows are left out: pi0 is a regression coefficient, not idle
    power)."""
    n, _ = row_normaliser(cfg)
    return n > 0


def has_cache_rows(cfg: Columns) -> bool:
    return any(bool((cfg.num(c) > 0).any()) for c in CACHE_COUNTS)


def design(cfg: Columns) -> tuple[Pseudo, list[str]]:
    """Rows E/N on [N_i/N for every count present] + [T/N] (pi0)."""
    n, _ = row_normaliser(cfg)
    names: list[str] = []
    a: list[np.ndarray] = []
    for col, name in COUNT_COEFFICIENT.items():
        v = cfg.num(col)
        if (v > 0).any():
            names.append(name)
            a.append(v)
    names.append("pi0")
    zero = np.zeros(len(cfg))
    a.append(zero)
    b = [zero] * (len(a) - 1) + [np.ones(len(cfg))]
    return Pseudo.build(cfg, np.column_stack(a), np.column_stack(b), n), names


def fit_joint_params(cfg: Columns) -> dict[str, float]:
    sub = cfg.take(usable_mask(cfg))
    ps, names = design(sub)
    beta, _ = fit_relative(ps)
    out = dict(zip(names, (float(b) for b in beta), strict=True))
    out.update({k: c.value for k, c in observed_tau(sub.take(basic_mask(sub))).items()})
    return out


def _residual_params(cfg: Columns) -> tuple[dict[str, float], dict[str, Coefficient], list[str]]:
    """eq.9 on the intensity entries, then each level's residual cost per row, averaged over the rows that
    exercise only that level (exactly the row-wise mean and spread, from the configuration statistics)."""
    from archline.fit.regress.pointwise import affine

    sub = cfg.take(usable_mask(cfg))
    params = dict(fit_basic_params(sub))
    coeffs: dict[str, Coefficient] = {}
    notes: list[str] = []
    known = {"flops_sp", "flops_dp", "bytes_mem"}
    counts = {c: sub.num(c) for c in COUNT_COEFFICIENT}
    for col in RESIDUAL_ORDER:
        sel = counts[col] > 0
        for o in RESIDUAL_ORDER:
            if o != col and o not in known:
                sel &= counts[o] == 0
        if not sel.any():
            if (counts[col] > 0).any():
                notes.append(f"{COUNT_COEFFICIENT[col]}: no row exercises it alone; residual method skipped it")
            continue
        lvl = sub.take(sel)

        def pred(c: Columns, p: dict[str, float] = params) -> tuple[np.ndarray | None, np.ndarray]:
            return predict_linear(p, c)

        _, alpha, gamma = affine(pred, lvl)
        c = lvl.num(col)
        n = lvl["n"]
        # per row: (e_i - alpha - gamma*t_i)/c; its mean per configuration and spread about that mean
        mean_g = (lvl["energy_j"] - alpha - gamma * lvl["time_s"]) / c
        ss_g = (lvl["energy_ss"] - 2 * gamma * lvl["time_energy_sp"] + gamma**2 * lvl["time_ss"]) / c**2
        n_rows = int(n.sum())
        v = float(np.sum(n * mean_g) / n_rows)
        ss = float(np.sum(ss_g) + np.sum(n * (mean_g - v) ** 2))
        se = math.sqrt(ss / (n_rows - 1)) / math.sqrt(n_rows) if n_rows > 1 else math.nan
        name = COUNT_COEFFICIENT[col]
        eq = {"bytes_l2": "eq.11", "bytes_l1": "eq.12"}.get(col, "eq.11/12 form")
        coeffs[name] = Coefficient(name, v, se if n_rows > 1 else None,
                                   t_interval(v, se, n_rows - 1) if n_rows > 1 else None,
                                   UNITS[name], f"residual {eq}: mean over {n_rows} rows")
        params[name] = v
        known.add(col)
    return params, coeffs, notes


def fit_residual_params(cfg: Columns) -> dict[str, float]:
    return _residual_params(cfg)[0]


def fit_cache(frame: Grouped | pd.DataFrame, *, platform: str = "", emulated: bool = False,
              method: str = "joint") -> FitResult:
    """Fit the cache model by ``method`` = ``joint`` or ``residual`` (module docstring)."""
    from archline.fit.regress.pointwise import row_errors

    if method not in ("joint", "residual"):
        raise ValueError(f"cache method must be 'joint' or 'residual', got {method!r}")
    data = as_grouped(frame)
    rows = data.select(usable_mask(data.cfg))
    if not has_cache_rows(rows.cfg):
        raise TooFewPointsError("the cache model needs cache, random-access, shared-memory or integer rows "
                                "(bytes_l1/l2/l3/shared, rand_accesses or int_ops > 0); none found")
    warnings: list[str] = []
    omitted: dict[str, str] = {}
    coeffs: dict[str, Coefficient] = {}
    quality: dict[str, float | int | str] = {"n_points": rows.n_rows, "n_configurations": rows.n_configs}
    if method == "joint":
        ps, names = design(rows.cfg)
        require_points(rows.n_configs, len(names), "cache (joint)", "distinct configurations")
        beta, w = fit_relative(ps)
        inf = inference(ps, beta, w)
        x, _ = ps.rows()
        xn = x / np.where(np.linalg.norm(x, axis=0) > 0, np.linalg.norm(x, axis=0), 1.0)
        rank = int(np.linalg.matrix_rank(xn.T @ xn, tol=1e-12))
        if rank < len(names):
            warnings.append(f"design matrix has rank {rank} < {len(names)} coefficients: some costs are aliased")
        for j, name in enumerate(names):
            coeffs[name] = Coefficient(name, float(beta[j]), float(inf.se[j]),
                                       (float(inf.ci95[j, 0]), float(inf.ci95[j, 1])), UNITS[name],
                                       "joint WLS (relative residuals)")
        quality["r2"] = inf.r2
        quality["r2_of"] = "E/N" + (" (centred: the counts span a constant)" if inf.centred
                                    else ", no intercept (uncentred)")
        params = {k: c.value for k, c in coeffs.items()}
        params.update({k: c.value for k, c in observed_tau(rows.cfg.take(basic_mask(rows.cfg))).items()})
    else:
        coeffs.update(_basic_with_errors(rows))
        params, extra_coeffs, notes = _residual_params(rows.cfg)
        coeffs.update(extra_coeffs)
        warnings.extend(notes)
    for name, c in list(coeffs.items()):
        lo_ok = c.ci95 is None or not (c.ci95[0] <= 0 <= c.ci95[1])
        if c.value <= 0 or not lo_ok:
            why = omission_reason(c)
            omitted[name] = why
            warnings.append(f"{name} omitted: {why}")
            del coeffs[name]
            params.pop(name, None)
    tau = observed_tau(rows.cfg.take(basic_mask(rows.cfg)))

    def predictor(c: Columns) -> tuple[np.ndarray | None, np.ndarray]:
        return predict_linear(params, c)

    errs = row_errors(predictor, rows)
    quality.update(errs.quality())
    quality["mape_pct"] = quality.get("energy_mape_pct", math.nan)
    if "time_mape_pct" in quality:
        quality["time_model"] = TIME_MODEL_NOTE + " (intensity rows only)"
    l1, l2 = params.get("eps_l1"), params.get("eps_l2")
    if l1 is not None and l2 is not None and l1 > l2:
        warnings.append(f"eps_l1 ({l1:.3g}) > eps_l2 ({l2:.3g}): fails the sanity check eps_L1 <= eps_L2 "
                        f"(S1 §4.4.2)")
    rand, mem = params.get("eps_rand"), params.get("eps_mem")
    if rand is not None and mem is not None and rand < 10 * mem:
        warnings.append(f"eps_rand ({rand:.3g} J) < 10x eps_mem: S1 §4.4.2 expects at least 10x")
    return FitResult(platform=platform, model="cache", emulated=emulated, n_points=rows.n_rows, coefficients=coeffs,
                     tau=tau, derived=derived_constants(params), quality=quality, warnings=warnings,
                     omitted=omitted, extra={"method": method, "method_detail": (
                         "joint WLS on rows normalised by their own operation count" if method == "joint"
                         else "eq.9 on intensity rows, then residual eq.11/12 per level")},
                     errors=errs, predictor=predictor, rows=rows)


def _basic_with_errors(rows: Grouped) -> dict[str, Coefficient]:
    from archline.fit.regress.basic import basic_coefficients, precisions_present

    cfg = rows.cfg.take(basic_mask(rows.cfg))
    coeffs, _ = basic_coefficients(cfg, precisions_present(cfg))
    return {k: c for k, c in coeffs.items() if k != "delta_eps_dp"}
