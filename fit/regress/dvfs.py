"""The DVFS model: S1 eq.48 by non-negative least squares (scipy nnls) over every setting (model.md §6.4).

Design matrix (nine columns, all coefficients >= 0), each row divided by its own operation count N:

    [W*Vc^2, Q*Vm^2, Vc*T, Vm*T, W_int*Vc^2, Q_SM*Vc^2, Q_L2*Vc^2, T, W_dp*Vc^2] / N

W = 0 rows (integer, shared-memory, L2): DECISION for the open point of model.md §6.4. N is W when the row has
flops (exactly eq.48, where the DP indicator R equals W_dp/W), and otherwise the row's own count (int_ops,
bytes_shared, bytes_l2, ...; :func:`~archline.fit.regress.result.row_normaliser`). The response E/N is then energy per
operation of the row's kind, so every row kind enters the loss on the same footing.
The solve is two-step: nnls, then nnls again with configurations weighted by 1/yhat (relative residuals),
because E/N spans orders of magnitude across intensities; both from configuration statistics
(:mod:`archline.fit.regress.sufficient`), equal to the row-wise solve. Uncertainty is a bootstrap over
configurations (not OLS).

A coefficient the data cannot identify -- its bootstrap 95% interval is wider than +-50% of its value, or it
sits at the bound 0 -- is left out with a warning; a pair that moves together (bootstrap correlation beyond
+-0.95), typically C1,mem and pi_misc when the memory voltage barely varies, is named as such. Per-setting pi0
stays well determined in that case and is reported.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from archline.fit.io.configs import Columns, Grouped, iter_groups
from archline.fit.regress.requirements import require_columns, require_points
from archline.fit.regress.result import UNITS, Coefficient, FitResult, as_grouped, row_normaliser
from archline.fit.regress.sufficient import Pseudo, nnls_relative, rel_rmse_pct
from archline.formats.results_check import TooFewPointsError
from archline.model.dvfs import DVFS_COEFFICIENTS, costs_at, energy_j

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

IGNORED_COUNTS = ("bytes_l1", "bytes_l3", "rand_accesses")
SETTING_KEYS = ("core_mhz", "mem_mhz", "core_v", "mem_v")
#: eq.48 columns that carry the measured time (per unit time: Vc, Vm, 1); the rest carry counts.
_TIME_FACTOR = {"c1_core": "core_v", "c1_mem": "mem_v", "pi_misc": None}


def dvfs_mask(cfg: Columns) -> tuple[np.ndarray, int]:
    n, _ = row_normaliser(cfg)
    other = np.zeros(len(cfg))
    for c in IGNORED_COUNTS:
        other = other + cfg.num(c)
    ignored = other > 0
    return (n > 0) & ~ignored, int(cfg.num("n")[ignored].sum()) if "n" in cfg else int(ignored.sum())


def design(cfg: Columns) -> Pseudo:
    """The eq.48 design (columns in DVFS_COEFFICIENTS order), rows divided by N."""
    n, _ = row_normaliser(cfg)
    vc, vm = cfg.num("core_v"), cfg.num("mem_v")
    vc2, vm2 = vc**2, vm**2
    counts = {
        "c0_core_single": cfg.num("work_flop") * vc2, "c0_mem": cfg.num("bytes_mem") * vm2,
        "c0_core_integer": cfg.num("int_ops") * vc2, "c0_core_sm": cfg.num("bytes_shared") * vc2,
        "c0_core_l2": cfg.num("bytes_l2") * vc2, "delta_c0_core_double": cfg.num("flops_dp") * vc2,
    }
    zero = np.zeros(len(cfg))
    a = np.column_stack([counts.get(name, zero) for name in DVFS_COEFFICIENTS])
    per_t = {k: (np.ones(len(cfg)) if v is None else cfg.num(v)) for k, v in _TIME_FACTOR.items()}
    b = np.column_stack([per_t.get(name, zero) for name in DVFS_COEFFICIENTS])
    return Pseudo.build(cfg, a, b, n)


def _active(ps: Pseudo) -> np.ndarray:
    return np.asarray((np.abs(ps.xbar).sum(axis=0) + np.abs(ps.b).sum(axis=0)) > 0)


def fit_dvfs_params(cfg: Columns) -> dict[str, float]:
    keep, _ = dvfs_mask(cfg)
    ps = design(cfg.take(keep))
    return dict(zip(DVFS_COEFFICIENTS, (float(b) for b in nnls_relative(ps, _active(ps))), strict=True))


def predict_dvfs(params: dict[str, float], cfg: Columns) -> tuple[np.ndarray | None, np.ndarray]:
    c = {k: params.get(k, 0.0) for k in DVFS_COEFFICIENTS}
    e = energy_j(c, cfg.num("core_v"), cfg.num("mem_v"), cfg.num("time_s"), flops_sp=cfg.num("flops_sp"),
                 flops_dp=cfg.num("flops_dp"), bytes_mem=cfg.num("bytes_mem"), int_ops=cfg.num("int_ops"),
                 bytes_shared=cfg.num("bytes_shared"), bytes_l2=cfg.num("bytes_l2"))
    return None, e


def setting_ids(cfg: Columns) -> np.ndarray:
    """Index of each configuration's (core_v, mem_v) setting (-1 where either is missing)."""
    vc, vm = cfg.num("core_v") if "core_v" in cfg else np.full(len(cfg), np.nan), \
        cfg.num("mem_v") if "mem_v" in cfg else np.full(len(cfg), np.nan)
    ok = np.isfinite(vc) & np.isfinite(vm)
    ids = np.full(len(cfg), -1, dtype=np.int64)
    seen: dict[tuple[float, float], int] = {}
    for j in np.flatnonzero(ok):
        ids[j] = seen.setdefault((float(vc[j]), float(vm[j])), len(seen))
    return ids


def distinct_settings(frame: Grouped | Columns | pd.DataFrame) -> int:
    if isinstance(frame, Grouped):
        frame = frame.cfg
    if not isinstance(frame, Columns):
        if not all(k in frame.columns for k in ("core_v", "mem_v")):
            return 0
        return len(frame[["core_v", "mem_v"]].dropna().drop_duplicates())
    ids = setting_ids(frame)
    return int(ids.max()) + 1 if ids.size else 0


def fit_dvfs(frame: Grouped | pd.DataFrame, *, platform: str = "", emulated: bool = False, n_boot: int = 200,
             seed: int = 0) -> FitResult:
    from archline.fit.regress.pointwise import row_errors

    data = as_grouped(frame)
    require_columns(data, ("core_v", "mem_v"), "dvfs")
    keep, n_ignored = dvfs_mask(data.cfg)
    rows = data.select(keep)
    warnings: list[str] = []
    if n_ignored:
        warnings.append(f"dvfs: {n_ignored} row(s) with L1, L3 or random-access counts left out (eq.48 has no "
                        f"such term)")
    ps = design(rows.cfg)
    active = _active(ps)
    omitted: dict[str, str] = {}
    for j, name in enumerate(DVFS_COEFFICIENTS):
        if not active[j]:
            omitted[name] = "no rows exercise it"
    n_par = int(active.sum())
    require_points(rows.n_configs, n_par, "dvfs", "distinct configurations")
    n_set = distinct_settings(rows.cfg)
    if n_set < 2:
        raise TooFewPointsError(f"the dvfs model needs at least 2 distinct (core_v, mem_v) settings, got {n_set}")
    beta = nnls_relative(ps, active)

    rng = np.random.default_rng(seed)
    p = len(DVFS_COEFFICIENTS)
    boots = np.empty((n_boot, p))
    g = rows.n_configs
    for b in range(n_boot):
        boots[b] = nnls_relative(ps.take(rng.integers(0, g, g)), active)
    se = boots.std(axis=0, ddof=1) if n_boot > 1 else np.full(p, math.nan)
    lo, hi = (np.percentile(boots, [2.5, 97.5], axis=0) if n_boot > 1
              else (np.full(p, math.nan), np.full(p, math.nan)))

    # identifiability: exact aliasing from the rank, weak identification from the bootstrap. The pseudo-rows
    # have the rows' Gram matrix, hence their singular values.
    x, _ = ps.columns(active).rows()
    xs = x / np.linalg.norm(x, axis=0)
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
    vm, vc = rows.cfg.num("mem_v"), rows.cfg.num("core_v")
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
    keys = [k for k in SETTING_KEYS if k in rows.cfg]
    dependency = {"eps_flop_sp": ("c0_core_single",), "eps_flop_dp": ("c0_core_single", "delta_c0_core_double"),
                  "eps_mem": ("c0_mem",), "eps_int": ("c0_core_integer",), "eps_shared": ("c0_core_sm",),
                  "eps_l2": ("c0_core_l2",), "pi0": ()}
    groups = list(iter_groups(rows.cfg, keys))
    groups.sort(key=lambda kv: tuple(-float(v) for v in kv[0]))
    for key, sel in groups:
        entry: dict[str, Any] = {k: (None if not math.isfinite(float(v)) else float(v)) for k, v in zip(keys, key,
                                                                                                      strict=True)}
        cv, mv = float(rows.cfg.num("core_v")[sel][0]), float(rows.cfg.num("mem_v")[sel][0])
        point = costs_at(params, cv, mv).as_dict()
        boot_pi0 = boots[:, DVFS_COEFFICIENTS.index("c1_core")] * cv + \
            boots[:, DVFS_COEFFICIENTS.index("c1_mem")] * mv + boots[:, DVFS_COEFFICIENTS.index("pi_misc")]
        entry["n_points"] = int(rows.cfg["n"][sel].sum())
        for k, v in point.items():
            if any(d in omitted and d not in unident for d in dependency[k]):
                continue  # no data for it at all
            if any(d in unident and d != "delta_c0_core_double" for d in dependency[k]):
                continue
            entry[k] = float(v)
        entry["pi0_stderr"] = float(np.std(boot_pi0, ddof=1)) if n_boot > 1 else None
        settings.append(entry)

    def predictor(c: Columns) -> tuple[np.ndarray | None, np.ndarray]:
        return predict_dvfs(params, c)

    errs = row_errors(predictor, rows)
    quality: dict[str, Any] = {"n_points": rows.n_rows, "n_configurations": rows.n_configs, "n_settings": n_set,
                               "condition_number": cond}
    quality.update(errs.quality())
    quality["mape_pct"] = quality.get("energy_mape_pct", math.nan)
    quality["rel_rmse_pct"] = rel_rmse_pct(ps, beta)
    return FitResult(platform=platform, model="dvfs", emulated=emulated, n_points=rows.n_rows, coefficients=coeffs,
                     quality=quality, warnings=warnings, omitted=omitted,
                     extra={"method": "scipy nnls of S1 eq.48, rows normalised by W (or their own count when "
                                      "W = 0), two-step relative weights per configuration; bootstrap over "
                                      "configurations",
                            "settings": settings, "n_boot": n_boot, "all_estimates": params},
                     errors=errs, predictor=predictor, rows=rows)
