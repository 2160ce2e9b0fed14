"""The basic model: least squares of S0/S1 eq.9, single and double precision jointly (model.md §6.1).

    E/W = eps_s + eps_mem*(Q/W) + pi0*(T/W) + delta_eps_d*R        R = 1 for double precision

Fitted from configuration statistics (:mod:`archline.fit.regress.sufficient`): the estimate, standard errors,
R^2 and p-values equal those of the row-wise regression (statsmodels OLS/WLS on every row) to rounding.

tau_flop and tau_mem are not fitted by eq.9 (model.md §1.1): the cost table carries the observed peaks
(median of the three fastest rows), labelled as such, so the table can drive the time model. That time model
is the roofline, a best case (model.md §1.1: latency ignored, full overlap); its time errors measure how far
each row runs below the peak rates, not how well eq.9 fits.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from archline.fit.io.configs import Columns, Grouped
from archline.fit.regress.requirements import require_points
from archline.fit.regress.result import (
    NON_BASIC_COUNTS,
    UNITS,
    Coefficient,
    FitResult,
    as_grouped,
    omission_reason,
    t_interval,
)
from archline.fit.regress.sufficient import Inference, Pseudo, fit_relative, inference
from archline.formats.results_check import PrecisionError, TooFewPointsError
from archline.model.machine import Machine

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

#: What the time errors of the linear models measure (reported beside them in "quality").
TIME_MODEL_NOTE = ("roofline through the observed peak rates (a best case, model.md §1.1): time errors are each "
                   "row's distance below it")


def _other_counts(cfg: Columns) -> np.ndarray:
    """Sum of the cache, random, integer and shared-memory counts of each entry."""
    other = np.zeros(len(cfg))
    for c in NON_BASIC_COUNTS:
        other = other + cfg.num(c)
    return other


def basic_mask(cfg: Columns) -> np.ndarray:
    """Intensity configurations: flops > 0 and no cache, random, integer or shared-memory counts."""
    return (cfg.num("work_flop") > 0) & (_other_counts(cfg) == 0)


def basic_rows(data: Grouped) -> Grouped:
    return data.select(basic_mask(data.cfg))


def _fastest(per_unit_s: np.ndarray) -> float:
    v = per_unit_s[np.isfinite(per_unit_s) & (per_unit_s > 0)]
    if not v.size:
        return math.nan
    return float(np.median(np.sort(v)[:3]))


def observed_tau(cfg: Columns) -> dict[str, Coefficient]:
    """tau_flop_sp, tau_flop_dp, tau_mem as the inverse of the best observed throughput (not fitted): the
    median of the three fastest rows, found among each configuration's three fastest."""
    out: dict[str, Coefficient] = {}
    fastest = [cfg.num(f"time_min{k}") for k in (1, 2, 3)]
    note = "observed: median of the 3 fastest rows, not fitted"
    with np.errstate(divide="ignore", invalid="ignore"):
        for name, count in (("tau_flop_sp", "flops_sp"), ("tau_flop_dp", "flops_dp"), ("tau_mem", "bytes_mem")):
            w = cfg.num(count)
            v = _fastest(np.concatenate([np.where(w > 0, t / w, np.nan) for t in fastest]))
            if math.isfinite(v):
                out[name] = Coefficient(name, v, None, None, UNITS[name], note)
    return out


def precisions_present(cfg: Columns) -> list[str]:
    return [p for p in ("sp", "dp") if bool((cfg.num(f"flops_{p}") > 0).any())]


def design_basic(cfg: Columns, both: bool) -> Pseudo:
    """eq.9 rows x = [1, Q/W, T/W, R] = (a + T*b)/W with R = W_dp/W (1 on a double-precision row)."""
    w = cfg.num("work_flop")
    zero = np.zeros_like(w)
    a = [w, cfg.num("bytes_mem"), zero] + ([cfg.num("flops_dp")] if both else [])
    b = [zero, zero, np.ones_like(w)] + ([zero] if both else [])
    return Pseudo.build(cfg, np.column_stack(a), np.column_stack(b), w)


def fit_basic_params(cfg: Columns) -> dict[str, float]:
    """Point estimates only (for cross-validation): eps_flop_sp/dp, eps_mem, pi0 plus observed taus."""
    sub = cfg.take(basic_mask(cfg))
    prec = precisions_present(sub)
    beta, _ = fit_relative(design_basic(sub, len(prec) == 2))
    out = _named(beta, prec)
    out.update({k: c.value for k, c in observed_tau(sub).items()})
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


def predict_linear(params: dict[str, float], cfg: Columns) -> tuple[np.ndarray | None, np.ndarray]:
    """E = sum N_i*eps_i + pi0*T (T = the entries' time_s), and T = max(W_sp*tau_sp + W_dp*tau_dp, Q*tau_mem)
    when the taus are known (eq.3 / eq.10). A count whose cost is unknown contributes nothing (callers only
    predict rows of the kinds they fitted)."""
    from archline.fit.regress.result import COUNT_COEFFICIENT

    e = params.get("pi0", 0.0) * cfg.num("time_s")
    for col, name in COUNT_COEFFICIENT.items():
        if name in params:
            e = e + params[name] * cfg.num(col)
    t: np.ndarray | None = None
    if "tau_mem" in params and any(f"tau_flop_{p}" in params for p in ("sp", "dp")):
        tf = cfg.num("flops_sp") * params.get("tau_flop_sp", 0.0) + cfg.num("flops_dp") * params.get("tau_flop_dp",
                                                                                                     0.0)
        t = np.maximum(tf, cfg.num("bytes_mem") * params["tau_mem"])
        # the time model covers flop + DRAM rows only; cache, random and integer rows get no time prediction
        t = np.where((_other_counts(cfg) > 0) | (t <= 0), np.nan, t)
    return t, e


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


def basic_coefficients(cfg: Columns, prec: list[str], weighting: str = "relative"
                       ) -> tuple[dict[str, Coefficient], Inference]:
    """eq.9's coefficients with standard errors and 95% intervals, from intensity configurations."""
    both = len(prec) == 2
    ps = design_basic(cfg, both)
    beta, w = fit_relative(ps, weighting)
    inf = inference(ps, beta, w)
    coeffs: dict[str, Coefficient] = {}
    eps_name = "eps_flop_sp" if both else f"eps_flop_{prec[0]}"
    for j, name in enumerate([eps_name, "eps_mem", "pi0"] + (["delta_eps_dp"] if both else [])):
        coeffs[name] = Coefficient(name, float(beta[j]), float(inf.se[j]),
                                   (float(inf.ci95[j, 0]), float(inf.ci95[j, 1])), UNITS[name], "OLS eq.9")
    if both:
        v = float(beta[0] + beta[3])
        cov = inf.cov
        s = math.sqrt(max(cov[0, 0] + cov[3, 3] + 2 * cov[0, 3], 0.0))
        coeffs["eps_flop_dp"] = Coefficient("eps_flop_dp", v, s, t_interval(v, s, inf.dof), UNITS["eps_flop_dp"],
                                            "OLS eq.9: eps_s + delta_eps_d")
    return coeffs, inf


def fit_basic(frame: Grouped | pd.DataFrame, *, platform: str = "", emulated: bool = False,
              require_both_precisions: bool = True, weighting: str = "relative") -> FitResult:
    """eq.9 by least squares on relative residuals (``weighting="none"``: plain OLS, R's lm as S0 used).
    Needs both precisions unless ``require_both_precisions`` is False."""
    from archline.fit.regress.pointwise import row_errors

    data = as_grouped(frame)
    rows = basic_rows(data)
    if rows.n_rows == 0:
        raise TooFewPointsError("the basic model needs intensity rows (flops > 0 and no cache/random/integer "
                                "counts); none found")
    prec = precisions_present(rows.cfg)
    both = len(prec) == 2
    if not both and require_both_precisions:
        raise PrecisionError(f"the basic model fits single and double precision jointly (S0 eq.9) but the "
                             f"data have only {prec[0]} intensity rows; add the other precision or pass "
                             f"--one-precision")
    n_par = 4 if both else 3
    # repeats of one point measure it better but identify nothing more: count distinct configurations
    require_points(rows.n_configs, n_par, "basic", "distinct intensity configurations")
    coeffs, inf = basic_coefficients(rows.cfg, prec, weighting)
    tau = observed_tau(rows.cfg)
    params = {k: c.value for k, c in {**coeffs, **tau}.items()}

    def predictor(c: Columns) -> tuple[np.ndarray | None, np.ndarray]:
        return predict_linear(params, c)

    errs = row_errors(predictor, rows)
    quality: dict[str, float | int | str] = {"r2": inf.r2, "r2_of": "E/W (eq.9)", "n_points": rows.n_rows,
                                             "n_configurations": rows.n_configs,
                                             "pvalue_max": float(np.nanmax(inf.pvalues))}
    quality.update(errs.quality())
    quality["mape_pct"] = quality.get("energy_mape_pct", math.nan)
    if "time_mape_pct" in quality:
        quality["time_model"] = TIME_MODEL_NOTE
    warnings: list[str] = []
    omitted: dict[str, str] = {}
    for name, c in list(coeffs.items()):
        if c.stderr is not None and c.ci95 is not None and (c.value <= 0 or (c.ci95[0] <= 0 < c.ci95[1]
                                                            and name != "delta_eps_dp")):
            omitted[name] = omission_reason(c)
            warnings.append(f"{name} omitted: {omitted[name]}")
            del coeffs[name]
    n_other = data.n_rows - rows.n_rows
    if n_other:
        warnings.append(f"basic model: {n_other} non-intensity row(s) (cache, random, integer, idle) not used; "
                        f"--model cache fits them")
    method = "least squares of S0 eq.9 (E/W on 1, Q/W, T/W, R) from configuration statistics" + (
        ", relative weights 1/yhat^2 per configuration" if weighting == "relative" else "")
    return FitResult(platform=platform, model="basic", emulated=emulated, n_points=rows.n_rows, coefficients=coeffs,
                     tau=tau, derived=derived_constants(params), quality=quality, warnings=warnings,
                     omitted=omitted, extra={"method": method}, errors=errs, predictor=predictor, rows=rows)
