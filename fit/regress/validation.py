"""k-fold cross-validation and holdout validation of any fit (model.md §6.4 "Validation").

A *fitter* takes a configuration table and returns a predictor (:data:`~archline.fit.regress.result.Predictor`).
The error is the relative error of energy against measured energy, |model - measured|/measured, in percent,
pooled over all held-out rows (each row is held out exactly once); the per-fold means are reported too.

Folds are drawn over *configurations* by default (``split="configuration"``), or over (core_v, mem_v)
*settings* for the DVFS model (``split="setting"``), never inside one: a sweep repeats each configuration
many times, and repeats split across training and test folds would let the fit see the test points. The
row-wise split (``split="row"``) is kept as an option, named as such. Training fits use configuration
statistics only; held-out rows are predicted from their configuration's affine energy model, so a fold costs
O(configurations) plus one pass over the rows in all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from archline.fit.io.config_stats import CHUNK_ROWS
from archline.fit.io.configs import Columns, Grouped, restat
from archline.fit.regress.pointwise import Predictor, affine, error_summary, relative_error, signed_errors
from archline.formats.results_check import ResultsError

Fitter = Callable[[Columns], Predictor]

#: Values of a holdout column that put a row in the validation set (everything else trains).
VALIDATION_VALUES = {"v", "validate", "validation", "test", "holdout", "1", "true", "yes"}
SPLITS = {"configuration": "by configuration", "setting": "by (core_v, mem_v) setting",
          "row": "row-wise (repeats of a configuration can sit in training and test folds)"}
_FAILURES = (ValueError, np.linalg.LinAlgError, ResultsError)


def kfold_indices(n: int, k: int, seed: int = 0) -> list[np.ndarray]:
    """k disjoint folds covering 0..n-1, shuffled with a fixed seed."""
    if k < 2:
        raise ResultsError(f"--folds must be at least 2, got {k}")
    if n < k:
        raise ResultsError(f"cannot make {k} folds from {n} points")
    perm = np.random.default_rng(seed).permutation(n)
    return [np.sort(f) for f in np.array_split(perm, k)]


def fold_units(cfg: Columns, split: str) -> np.ndarray:
    """The unit each configuration belongs to: itself, or its (core_v, mem_v) setting."""
    if split == "configuration":
        return np.arange(len(cfg))
    if split == "setting":
        from archline.fit.regress.dvfs import setting_ids

        ids = setting_ids(cfg)
        return np.where(ids >= 0, ids, ids.max(initial=-1) + 1 + np.arange(len(cfg)))
    raise ValueError(f"unknown split {split!r}")


def config_folds(cfg: Columns, k: int, split: str, seed: int = 0) -> np.ndarray:
    """Fold number (0..k-1) of every configuration; all configurations of one unit share a fold."""
    units = fold_units(cfg, split)
    uniq, inverse = np.unique(units, return_inverse=True)
    fold_of_unit = np.empty(uniq.size, dtype=np.int64)
    for f, idx in enumerate(kfold_indices(uniq.size, k, seed)):
        fold_of_unit[idx] = f
    return fold_of_unit[inverse.reshape(-1)]


def n_units(cfg: Columns, split: str, n_rows: int) -> int:
    return n_rows if split == "row" else int(np.unique(fold_units(cfg, split)).size)


def _summary(data: Grouped, per_cfg: dict[str, np.ndarray], fold_of_cfg: np.ndarray, k: int, split: str,
             failed: int) -> dict[str, Any]:
    """CV figures from per-configuration predictions (each configuration predicted by the fold that held
    it out)."""
    a = signed_errors("energy", per_cfg, data)
    np.abs(a, out=a)
    sums, counts = np.zeros(k), np.zeros(k)
    for i in range(0, data.n_kept, CHUNK_ROWS):
        f, x = fold_of_cfg[data.g[i:i + CHUNK_ROWS]], a[i:i + CHUNK_ROWS]
        ok = np.isfinite(x)
        sums += np.bincount(f[ok], x[ok], minlength=k)
        counts += np.bincount(f[ok], minlength=k)
    fold_mape = [float(100 * s / c) for s, c in zip(sums, counts, strict=True) if c > 0]
    out: dict[str, Any] = {"cv_folds": k, "cv_split": split, "cv_fold_mape_pct": fold_mape}
    out.update(error_summary(a, "cv", absolute=True))
    del a
    if "time" in per_cfg and np.isfinite(per_cfg["time"]).any():
        t = signed_errors("time", per_cfg, data)
        np.abs(t, out=t)
        out.update(error_summary(t, "cv_time", absolute=True))
    if failed:
        out["cv_failed_folds"] = failed
    return out


def cross_validate(data: Grouped, fitter: Fitter, k: int, *, seed: int = 0,
                   split: str = "configuration") -> dict[str, Any]:
    """k-fold CV: fit on k-1 folds, predict the held-out fold; energy (and time, where predicted) errors."""
    if split == "row":
        return _cross_validate_rows(data, fitter, k, seed)
    cfg = data.cfg
    fold = config_folds(cfg, k, split, seed)
    g = len(cfg)
    per_cfg = {"alpha": np.full(g, np.nan), "gamma": np.full(g, np.nan), "time": np.full(g, np.nan)}
    failed = 0
    for f in range(k):
        test = fold == f
        try:
            predictor = fitter(cfg.take(~test))
        except _FAILURES:
            failed += 1
            continue
        tm, a, c = affine(predictor, cfg.take(test))
        per_cfg["alpha"][test], per_cfg["gamma"][test] = a, c
        if tm is not None:
            per_cfg["time"][test] = tm
    return _summary(data, per_cfg, fold, k, split, failed)


def _cross_validate_rows(data: Grouped, fitter: Fitter, k: int, seed: int) -> dict[str, Any]:
    """Row-wise folds (the option): each fold's training statistics are recomputed from its rows (the rows
    kept: with bounded memory, a uniform sample of them)."""
    n = data.n_kept
    fold_of_row = np.empty(n, dtype=np.int64)
    for f, idx in enumerate(kfold_indices(n, k, seed)):
        fold_of_row[idx] = f
    e_pred, t_pred = np.full(n, np.nan), np.full(n, np.nan)
    failed = 0
    for f in range(k):
        test = fold_of_row == f
        train = restat(data, ~test)
        try:
            predictor = fitter(train.cfg)
        except _FAILURES:
            failed += 1
            continue
        tm, a, c = affine(predictor, data.cfg)
        gt = data.g[test]
        e_pred[test] = a[gt] + c[gt] * data.t[test]
        if tm is not None:
            t_pred[test] = tm[gt]
    e_err = relative_error(e_pred, data.e)
    t_err = relative_error(t_pred, data.t)
    a = np.abs(e_err)
    ok = np.isfinite(a)
    sums = np.bincount(fold_of_row[ok], a[ok], minlength=k)
    counts = np.bincount(fold_of_row[ok], minlength=k)
    out: dict[str, Any] = {"cv_folds": k, "cv_split": "row",
                           "cv_fold_mape_pct": [float(100 * s / c) for s, c in zip(sums, counts, strict=True)
                                                if c > 0]}
    out.update(error_summary(e_err, "cv"))
    if np.isfinite(t_err).any():
        out.update(error_summary(t_err, "cv_time"))
    if failed:
        out["cv_failed_folds"] = failed
    return out


def holdout_mask(frame: Columns | Any, column: str) -> np.ndarray:
    """Entries whose ``column`` says validation (V/validation/test/1/true/...)."""
    if column not in frame.columns:
        raise ResultsError(f"holdout column '{column}' is not in the data")
    v = np.asarray(frame[column], dtype=object)
    return np.array([x is not None and x == x and str(x).strip().lower() in VALIDATION_VALUES for x in v],
                    dtype=bool)


def holdout(data: Grouped, fitter: Fitter, column: str) -> dict[str, Any]:
    """Train on rows whose ``column`` is not a validation value (e.g. "T"), validate on the rest ("V")."""
    cfg = data.cfg
    val_cfg = holdout_mask(cfg, column)
    val = val_cfg[data.g]
    if not val.any() or val.all():
        raise ResultsError(f"holdout column '{column}' must split the rows into a training set and a "
                           f"validation set (V/validation/test/1/true), got {int(val.sum())} of {len(val)} held out")
    predictor = fitter(cfg.take(~val_cfg))
    tm, a, c = affine(predictor, cfg)
    gv, tv, ev = data.g[val], data.t[val], data.e[val]
    err = relative_error(a[gv] + c[gv] * tv, ev)
    out: dict[str, Any] = {"holdout_column": column, "holdout_n_train": int((~val).sum()),
                           "holdout_n_validate": int(val.sum())}
    out.update(error_summary(err, "holdout"))
    if tm is not None:
        out.update(error_summary(relative_error(tm[gv], tv), "holdout_time"))
    prec = cfg["precision"][gv]
    for p in ("sp", "dp"):
        sel = prec == p
        if sel.any():
            out[f"holdout_mape_pct_{p}"] = float(np.nanmean(np.abs(err[sel])) * 100)
    return out
