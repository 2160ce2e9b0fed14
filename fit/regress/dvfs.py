"""The DVFS model: S1 eq.48 by non-negative least squares (scipy nnls) over every setting (model.md §6.4).

Design matrix (nine columns, all coefficients >= 0), each row divided by its own operation count N:

    [W*Vc^2, Q*Vm^2, Vc*T, Vm*T, W_int*Vc^2, Q_SM*Vc^2, Q_L2*Vc^2, T, W_dp*Vc^2] / N

W = 0 rows (integer, shared-memory, L2): DECISION for the open point of model.md §6.4. N is W when the row has
flops (exactly eq.48, where the DP indicator R equals W_dp/W), and otherwise the row's own count (int_ops,
bytes_shared, bytes_l2, ...; :func:`~archline.fit.regress.result.row_normaliser`). The response E/N is then energy per
operation of the row's kind, so every row kind enters the loss on the same footing.
The solve is two-step: nnls, then nnls again with rows weighted by 1/yhat (relative residuals), because E/N
spans orders of magnitude across intensities. Uncertainty is a row bootstrap (not OLS).

A coefficient the data cannot identify -- its bootstrap 95% interval is wider than +-50% of its value, or it
sits at the bound 0 -- is left out with a warning; a pair that moves together (bootstrap correlation beyond
+-0.95), typically C1,mem and pi_misc when the memory voltage barely varies, is named as such. Per-setting pi0
stays well determined in that case and is reported.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from archline.fit.io.results import TooFewPointsError, require_columns, require_points
from archline.fit.model.dvfs import DVFS_COEFFICIENTS, costs_at, energy_j
from archline.fit.regress.basic import point_errors
from archline.fit.regress.result import UNITS, Coefficient, FitResult, error_summary, row_normaliser

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

IGNORED_COUNTS = ("bytes_l1", "bytes_l3", "rand_accesses")
SETTING_KEYS = ("core_mhz", "mem_mhz", "core_v", "mem_v")


def dvfs_rows(frame: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    n, _ = row_normaliser(frame)
    other = frame[list(IGNORED_COUNTS)].to_numpy(dtype=np.float64).sum(axis=1) > 0
    keep = (n > 0) & ~other
    return frame.loc[keep], int(other.sum())


def design(rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The eq.48 design matrix (columns in DVFS_COEFFICIENTS order) and response, rows divided by N."""
    n, _ = row_normaliser(rows)
    vc = rows["core_v"].to_numpy(dtype=np.float64)
    vm = rows["mem_v"].to_numpy(dtype=np.float64)
    t = rows["time_s"].to_numpy()
    w = rows["work_flop"].to_numpy()
    vc2, vm2 = vc**2, vm**2
    cols = {
        "c0_core_single": w * vc2, "c0_mem": rows["bytes_mem"].to_numpy() * vm2, "c1_core": vc * t,
        "c1_mem": vm * t, "c0_core_integer": rows["int_ops"].to_numpy() * vc2,
        "c0_core_sm": rows["bytes_shared"].to_numpy() * vc2, "c0_core_l2": rows["bytes_l2"].to_numpy() * vc2,
        "pi_misc": t, "delta_c0_core_double": rows["flops_dp"].to_numpy() * vc2,
    }
    x = np.column_stack([cols[name] / n for name in DVFS_COEFFICIENTS])
    return x, rows["energy_j"].to_numpy() / n


def _nnls(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    from scipy.optimize import nnls

    scale = np.linalg.norm(x, axis=0)
    scale[scale == 0] = 1.0
    beta, _ = nnls(x / scale, y, maxiter=50 * x.shape[1])
    return beta / scale


def solve(x: np.ndarray, y: np.ndarray, active: np.ndarray) -> np.ndarray:
    """Two-step relative-residual nnls over the active columns; inactive coefficients are 0 (not reported)."""
    beta = np.zeros(x.shape[1])
    xa = x[:, active]
    b = _nnls(xa, y)
    yhat = xa @ b
    wgt = 1.0 / np.where(yhat > 0, yhat, y)
    beta[active] = _nnls(xa * wgt[:, None], y * wgt)
    return beta


def fit_dvfs_params(frame: pd.DataFrame) -> dict[str, float]:
    rows, _ = dvfs_rows(frame)
    x, y = design(rows)
    active = np.abs(x).sum(axis=0) > 0
    return dict(zip(DVFS_COEFFICIENTS, (float(b) for b in solve(x, y, active)), strict=True))


def predict_dvfs(params: dict[str, float], frame: pd.DataFrame) -> tuple[np.ndarray | None, np.ndarray]:
    c = {k: params.get(k, 0.0) for k in DVFS_COEFFICIENTS}
    e = energy_j(c, frame["core_v"].to_numpy(dtype=np.float64), frame["mem_v"].to_numpy(dtype=np.float64),
                 frame["time_s"].to_numpy(), flops_sp=frame["flops_sp"].to_numpy(),
                 flops_dp=frame["flops_dp"].to_numpy(), bytes_mem=frame["bytes_mem"].to_numpy(),
                 int_ops=frame["int_ops"].to_numpy(), bytes_shared=frame["bytes_shared"].to_numpy(),
                 bytes_l2=frame["bytes_l2"].to_numpy())
    return None, e


def distinct_settings(frame: pd.DataFrame) -> int:
    if not all(k in frame.columns for k in ("core_v", "mem_v")):
        return 0
    v = frame[["core_v", "mem_v"]].dropna()
    return len(v.drop_duplicates())


def fit_dvfs(frame: pd.DataFrame, *, platform: str = "", emulated: bool = False, n_boot: int = 200,
             seed: int = 0) -> FitResult:
    require_columns(frame, ("core_v", "mem_v"), "dvfs")
    rows, n_ignored = dvfs_rows(frame)
    warnings: list[str] = []
    if n_ignored:
        warnings.append(f"dvfs: {n_ignored} row(s) with L1, L3 or random-access counts left out (eq.48 has no "
                        f"such term)")
    x, y = design(rows)
    active = np.abs(x).sum(axis=0) > 0
    omitted: dict[str, str] = {}
    for j, name in enumerate(DVFS_COEFFICIENTS):
        if not active[j]:
            omitted[name] = "no rows exercise it"
    n_par = int(active.sum())
    require_points(len(rows), n_par, "dvfs")
    n_set = distinct_settings(rows)
    if n_set < 2:
        raise TooFewPointsError(f"the dvfs model needs at least 2 distinct (core_v, mem_v) settings, got {n_set}")
    beta = solve(x, y, active)

    rng = np.random.default_rng(seed)
    boots = np.empty((n_boot, x.shape[1]))
    n = len(rows)
    for b in range(n_boot):
        idx = rng.integers(0, n, n)
        boots[b] = solve(x[idx], y[idx], active)
    se = boots.std(axis=0, ddof=1) if n_boot > 1 else np.full(x.shape[1], math.nan)
    lo, hi = (np.percentile(boots, [2.5, 97.5], axis=0) if n_boot > 1
              else (np.full(x.shape[1], math.nan), np.full(x.shape[1], math.nan)))

    # identifiability: exact aliasing from the rank, weak identification from the bootstrap
    xs = x[:, active] / np.linalg.norm(x[:, active], axis=0)
    sv = np.linalg.svd(xs, compute_uv=False)
    cond = float(sv[0] / sv[-1]) if sv[-1] > 0 else math.inf
    unident: dict[str, str] = {}
    for j, name in enumerate(DVFS_COEFFICIENTS):
        if not active[j]:
            continue
        if beta[j] <= 0:
            unident[name] = "estimate at the non-negativity bound 0"
        elif (hi[j] - lo[j]) / 2 > 0.5 * beta[j]:
            unident[name] = (f"bootstrap 95% interval [{lo[j]:.3g}, {hi[j]:.3g}] wider than +-50% of the "
                             f"estimate {beta[j]:.3g}")
    corr = np.atleast_2d(np.asarray(np.corrcoef(boots[:, active].T) if n_boot > 2 else np.eye(int(active.sum()))))
    names_a = [nm for j, nm in enumerate(DVFS_COEFFICIENTS) if active[j]]
    pairs: list[tuple[str, str, float]] = []
    for ia in range(len(names_a)):
        for ib in range(ia + 1, len(names_a)):
            rho = float(corr[ia, ib])
            if math.isfinite(rho) and abs(rho) > 0.95 and (names_a[ia] in unident or names_a[ib] in unident):
                pairs.append((names_a[ia], names_a[ib], rho))
    vm = rows["mem_v"].to_numpy(dtype=np.float64)
    vc = rows["core_v"].to_numpy(dtype=np.float64)
    for a, b2, rho in pairs:
        detail = ""
        if {a, b2} == {"c1_mem", "pi_misc"}:
            detail = (f": the memory voltage varies only {vm.min():.4g}-{vm.max():.4g} V "
                      f"({100 * (vm.max() - vm.min()) / vm.mean():.2g}%), so C1,mem*Vmem and pi_misc are "
                      f"indistinguishable; their sum is in each setting's pi0")
        elif {a, b2} == {"c1_core", "pi_misc"}:
            detail = (f": the core voltage varies only {vc.min():.4g}-{vc.max():.4g} V, so C1,core*Vcore and "
                      f"pi_misc are indistinguishable; their sum is in each setting's pi0")
        warnings.append(f"{a} and {b2} cannot be told apart (bootstrap correlation {rho:+.3f}){detail}")
        unident[a] = f"cannot be told apart from {b2} (bootstrap correlation {rho:+.3f}; {unident.get(a, '')})"
        unident[b2] = f"cannot be told apart from {a} (bootstrap correlation {rho:+.3f}; {unident.get(b2, '')})"
    coeffs: dict[str, Coefficient] = {}
    for j, name in enumerate(DVFS_COEFFICIENTS):
        if not active[j]:
            continue
        if name in unident:
            omitted[name] = f"not identified by the data: {unident[name]}"
            warnings.append(f"{name} omitted: {omitted[name]}")
            continue
        coeffs[name] = Coefficient(name, float(beta[j]), float(se[j]), (float(lo[j]), float(hi[j])), UNITS[name],
                                   "nnls eq.48, bootstrap CI")
    params = dict(zip(DVFS_COEFFICIENTS, (float(b) for b in beta), strict=True))

    settings: list[dict[str, Any]] = []
    keys = [k for k in SETTING_KEYS if k in rows.columns]
    uniq = rows[keys].drop_duplicates().sort_values(keys, ascending=False)
    for _, srow in uniq.iterrows():
        cv, mv = float(srow["core_v"]), float(srow["mem_v"])
        point = costs_at(params, cv, mv).as_dict()
        boot_pi0 = boots[:, DVFS_COEFFICIENTS.index("c1_core")] * cv + \
            boots[:, DVFS_COEFFICIENTS.index("c1_mem")] * mv + boots[:, DVFS_COEFFICIENTS.index("pi_misc")]
        entry: dict[str, Any] = {k: (None if not math.isfinite(float(srow[k])) else float(srow[k])) for k in keys}
        sel = np.ones(len(rows), dtype=bool)
        for k in keys:
            sel &= rows[k].to_numpy(dtype=np.float64) == float(srow[k])
        entry["n_points"] = int(sel.sum())
        dependency = {"eps_flop_sp": ("c0_core_single",), "eps_flop_dp": ("c0_core_single", "delta_c0_core_double"),
                      "eps_mem": ("c0_mem",), "eps_int": ("c0_core_integer",), "eps_shared": ("c0_core_sm",),
                      "eps_l2": ("c0_core_l2",), "pi0": ()}
        for k, v in point.items():
            if any(d in omitted and d not in unident for d in dependency[k]):
                continue  # no data for it at all
            if any(d in unident and d != "delta_c0_core_double" for d in dependency[k]):
                continue
            entry[k] = float(v)
        entry["pi0_stderr"] = float(np.std(boot_pi0, ddof=1)) if n_boot > 1 else None
        settings.append(entry)

    _, e_pred = predict_dvfs(params, rows)
    errs = point_errors(rows, None, e_pred)
    quality: dict[str, Any] = {"n_points": len(rows), "n_settings": n_set, "condition_number": cond}
    quality.update(error_summary(errs["energy_rel_err"].to_numpy(), "energy"))
    quality["mape_pct"] = quality.get("energy_mape_pct", math.nan)
    ss_res = float(np.sum((x @ beta - y) ** 2 / np.maximum(x @ beta, 1e-300) ** 2))
    quality["rel_rmse_pct"] = 100 * math.sqrt(ss_res / len(rows))
    return FitResult(platform=platform, model="dvfs", emulated=emulated, n_points=len(rows), coefficients=coeffs,
                     quality=quality, warnings=warnings, omitted=omitted,
                     extra={"method": "scipy nnls of S1 eq.48, rows normalised by W (or their own count when "
                                      "W = 0), two-step relative weights; row bootstrap",
                            "settings": settings, "n_boot": n_boot, "all_estimates": params},
                     point_errors=errs, predictor=lambda f: predict_dvfs(params, f), rows=rows)
