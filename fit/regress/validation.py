"""k-fold cross-validation and holdout validation of any fit (model.md §6.4 "Validation").

A *fitter* takes a frame and returns a predictor; a predictor takes a frame and returns (time or None, energy).
The error is the relative error of energy against measured energy, |model - measured|/measured, in percent,
pooled over all held-out points (each point is held out exactly once); the per-fold means are reported too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from archline.fit.io.results import ResultsError
from archline.fit.regress.result import Predictor, error_summary, relative_error

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

Fitter = Callable[["pd.DataFrame"], Predictor]

#: Values of a holdout column that put a row in the validation set (everything else trains).
VALIDATION_VALUES = {"v", "validate", "validation", "test", "holdout", "1", "true", "yes"}


def kfold_indices(n: int, k: int, seed: int = 0) -> list[np.ndarray]:
    """k disjoint folds covering 0..n-1, shuffled with a fixed seed."""
    if k < 2:
        raise ResultsError(f"--folds must be at least 2, got {k}")
    if n < k:
        raise ResultsError(f"cannot make {k} folds from {n} points")
    perm = np.random.default_rng(seed).permutation(n)
    return [np.sort(f) for f in np.array_split(perm, k)]


def cross_validate(frame: pd.DataFrame, fitter: Fitter, k: int, *, seed: int = 0) -> dict[str, Any]:
    """k-fold CV: fit on k-1 folds, predict the held-out fold; energy (and time, where predicted) errors."""
    n = len(frame)
    e_err = np.full(n, np.nan)
    t_err = np.full(n, np.nan)
    fold_mape: list[float] = []
    failed = 0
    for fold in kfold_indices(n, k, seed):
        train = np.ones(n, dtype=bool)
        train[fold] = False
        try:
            predictor = fitter(frame.iloc[np.flatnonzero(train)])
        except (ValueError, np.linalg.LinAlgError, ResultsError):
            failed += 1
            continue
        test = frame.iloc[fold]
        t_pred, e_pred = predictor(test)
        e_err[fold] = relative_error(e_pred, test["energy_j"].to_numpy())
        if t_pred is not None:
            t_err[fold] = relative_error(t_pred, test["time_s"].to_numpy())
        fold_mape.append(float(np.nanmean(np.abs(e_err[fold])) * 100))
    out: dict[str, Any] = {"cv_folds": k, "cv_fold_mape_pct": fold_mape}
    s = error_summary(e_err, "cv")
    out.update(s)
    if np.isfinite(t_err).any():
        out.update(error_summary(t_err, "cv_time"))
    if failed:
        out["cv_failed_folds"] = failed
    return out


def holdout_mask(frame: pd.DataFrame, column: str) -> np.ndarray:
    if column not in frame.columns:
        raise ResultsError(f"holdout column '{column}' is not in the data")
    v = frame[column].astype("string").str.strip().str.lower().fillna("")
    return v.isin(VALIDATION_VALUES).to_numpy(dtype=bool)


def holdout(frame: pd.DataFrame, fitter: Fitter, column: str) -> dict[str, Any]:
    """Train on rows whose ``column`` is not a validation value (e.g. "T"), validate on the rest ("V")."""
    val = holdout_mask(frame, column)
    if not val.any() or val.all():
        raise ResultsError(f"holdout column '{column}' must split the rows into a training set and a "
                           f"validation set (V/validation/test/1/true), got {int(val.sum())} of {len(val)} held out")
    predictor = fitter(frame.loc[~val])
    test = frame.loc[val]
    t_pred, e_pred = predictor(test)
    err = relative_error(e_pred, test["energy_j"].to_numpy())
    out: dict[str, Any] = {"holdout_column": column, "holdout_n_train": int((~val).sum()),
                           "holdout_n_validate": int(val.sum())}
    out.update(error_summary(err, "holdout"))
    if t_pred is not None:
        out.update(error_summary(relative_error(t_pred, test["time_s"].to_numpy()), "holdout_time"))
    for prec in ("sp", "dp"):
        sel = (test["precision"] == prec).to_numpy(dtype=bool)
        if sel.any():
            out[f"holdout_mape_pct_{prec}"] = float(np.nanmean(np.abs(err[sel])) * 100)
    return out
