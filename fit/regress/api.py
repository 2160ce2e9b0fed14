"""``archline fit`` as a library call: read result files, group them, fit a model per group, validate.

    results = fit_files(["results/run1.csv"], FitOptions(model="auto", folds=10))
    write_costs(results, "gtx580.json", fmt="json")

``--model auto`` chooses by cross-validated error and says so in ``extra["auto"]`` and the warnings:
dvfs when the rows span at least two (core_v, mem_v) settings; otherwise the cache model (joint or residual,
whichever cross-validates better) when cache/random/integer rows exist; otherwise basic or capped, whichever
has the lower CV error of time and energy, capped only when its power cap is identified. A score within 1% of
the lowest counts as a tie, which goes to the simpler candidate (basic, joint).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from archline.fit.io.configs import Columns, Grouped
from archline.fit.io.results import Group, from_frame, group_rows, read_results
from archline.fit.regress.basic import fit_basic, fit_basic_params, predict_linear
from archline.fit.regress.cache import fit_cache, fit_joint_params, fit_residual_params, has_cache_rows
from archline.fit.regress.capped import fit_capped, fit_capped_params, predict_capped
from archline.fit.regress.dvfs import distinct_settings, fit_dvfs, fit_dvfs_params, predict_dvfs
from archline.fit.regress.pointwise import Predictor
from archline.fit.regress.result import FitResult
from archline.fit.regress.validation import SPLITS, cross_validate, holdout, n_units
from archline.formats.results_check import ResultsError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

MODELS: tuple[str, ...] = ("basic", "cache", "capped", "dvfs", "time", "auto")
CV_MODES: tuple[str, ...] = ("grouped", "rowwise")


@dataclass
class FitOptions:
    model: str = "auto"
    folds: int | None = None            # None: 10, or the number of settings for dvfs (S1: 16-fold)
    holdout_col: str | None = None
    include_emulated: bool = True
    mix_emulated: bool = False
    platform: str | None = None
    cache_method: str = "joint"         # joint | residual
    one_precision: bool = False         # basic: allow a single precision
    n_boot: int = 200
    seed: int = 0
    validate: bool = True
    cv: str = "grouped"                 # grouped (by configuration; by setting for dvfs) | rowwise
    where: tuple[str, ...] = ()         # --where key=value filters (archline.fit.io.select)


def _fitter(model: str, opts: FitOptions) -> Callable[[Columns], Predictor]:
    """Point-estimate fitter used by cross-validation and holdout."""
    def basic(f: Columns) -> Predictor:
        p = fit_basic_params(f)
        return lambda g: predict_linear(p, g)

    def cache(f: Columns) -> Predictor:
        p = fit_joint_params(f) if opts.cache_method == "joint" else fit_residual_params(f)
        return lambda g: predict_linear(p, g)

    def capped(f: Columns) -> Predictor:
        p = fit_capped_params(f)
        return lambda g: predict_capped(p, g)

    def dvfs(f: Columns) -> Predictor:
        p = fit_dvfs_params(f)
        return lambda g: predict_dvfs(p, g)

    return {"basic": basic, "cache": cache, "capped": capped, "dvfs": dvfs}[model]


def _fit_one(data: Grouped, model: str, platform: str, emulated: bool, opts: FitOptions) -> FitResult:
    try:
        return _fit_model(data, model, platform, emulated, opts)
    except np.linalg.LinAlgError as e:
        raise ResultsError(_singular(platform, model, e)) from None


def _singular(platform: str, model: str, e: Exception) -> str:
    return (f"the rows of '{platform}' cannot identify the {model} model ({e}): they do not vary enough (several "
            "intensities and levels are needed, not the same point repeated)")


def _fit_model(data: Grouped, model: str, platform: str, emulated: bool, opts: FitOptions) -> FitResult:
    if model == "basic":
        return fit_basic(data, platform=platform, emulated=emulated,
                         require_both_precisions=not opts.one_precision)
    if model == "cache":
        return fit_cache(data, platform=platform, emulated=emulated, method=opts.cache_method)
    if model == "capped":
        return fit_capped(data, platform=platform, emulated=emulated, n_boot=min(opts.n_boot, 100),
                          seed=opts.seed)
    if model == "dvfs":
        return fit_dvfs(data, platform=platform, emulated=emulated, n_boot=opts.n_boot, seed=opts.seed)
    raise ResultsError(f"unknown model '{model}' (known: {', '.join(MODELS)})")


def _split(model: str, opts: FitOptions) -> str:
    if opts.cv not in CV_MODES:
        raise ResultsError(f"unknown cross-validation split '{opts.cv}' (known: {', '.join(CV_MODES)})")
    if opts.cv == "rowwise":
        return "row"
    return "setting" if model == "dvfs" else "configuration"


def _folds(model: str, rows: Grouped, units: int, opts: FitOptions) -> int:
    """--folds, else one fold per voltage setting for dvfs (S1: 16-fold), else 10 (fewer for little data)."""
    if opts.folds is not None:
        return opts.folds
    if model == "dvfs":
        return max(2, distinct_settings(rows.cfg))
    return max(2, min(10, units // 3))


def _validate(result: FitResult, opts: FitOptions, cache_method: str | None = None) -> None:
    assert result.rows is not None
    rows = result.rows
    o = opts if cache_method is None else FitOptions(**{**opts.__dict__, "cache_method": cache_method})
    fitter = _fitter(result.model, o)
    split = _split(result.model, opts)
    units = n_units(rows.cfg, split, rows.n_kept)
    k = _folds(result.model, rows, units, opts)
    what = {"configuration": "configurations", "setting": "settings", "row": "rows"}[split]
    if units >= 2 * k or (split == "setting" and units >= k >= 2):
        result.quality.update(cross_validate(rows, fitter, k, seed=opts.seed, split=split))
        result.quality["cv_split_detail"] = SPLITS[split]
    else:
        result.warnings.append(f"too few {what} ({units}) for {k}-fold cross-validation {SPLITS[split]}; skipped")
    if opts.holdout_col:
        result.quality.update(holdout(rows, fitter, opts.holdout_col))


def _cv_score(q: dict[str, Any], with_time: bool = True) -> float:
    e = q.get("cv_mape_pct", math.inf)
    t = q.get("cv_time_mape_pct")
    return float(e if t is None or not with_time else (e + t) / 2)


def fit_group(group: Group, opts: FitOptions, time_only_reasons: Sequence[str] = ()) -> FitResult:
    """The fit of one group (``opts.model``, or the best by cross-validated error for auto); rows that cannot
    identify the model are a ResultsError, never a numpy traceback. The result carries the outlier report
    (:mod:`archline.fit.regress.outliers`): ``extra["outliers"]`` and one warning per flagged configuration.

    Rows without energy (issue 34, :mod:`archline.fit.regress.timing`): all of them, or ``--model time``, give
    the time cost table; beside rows with energy they give the time terms only."""
    from archline.fit.regress.outliers import attach_outlier_report
    from archline.fit.regress.timing import absent_reason, add_time_terms, fit_time, time_only_mask

    tonly = time_only_mask(group.data)
    if opts.model == "time" or tonly.all():
        if opts.model not in ("auto", "time"):
            raise ResultsError(f"--model {opts.model} fits energy, but the rows of '{group.platform}' have none "
                               f"({absent_reason(time_only_reasons)}); leave --model out for their time cost table")
        return fit_time(group.data, platform=group.platform, emulated=group.emulated, reasons=time_only_reasons)
    if tonly.any():
        r = fit_group(Group(group.platform, group.emulated, group.data.select(~tonly)), opts)
        add_time_terms(r, group.data, int(group.data.cfg["n"][tonly].sum()))
        return r
    try:
        r = _fit_group(group, opts)
    except np.linalg.LinAlgError as e:
        raise ResultsError(_singular(group.platform, opts.model, e)) from None
    attach_outlier_report(r)
    return r


def _fit_group(group: Group, opts: FitOptions) -> FitResult:
    data = group.data
    if opts.model != "auto":
        r = _fit_one(data, opts.model, group.platform, group.emulated, opts)
        if opts.validate:
            _validate(r, opts)
        return r
    # --- auto ---
    n_set = distinct_settings(data.cfg)
    if n_set >= 2:
        r = _fit_one(data, "dvfs", group.platform, group.emulated, opts)
        _validate(r, opts)
        r.extra["auto"] = {"chosen": "dvfs", "reason": f"{n_set} (core_v, mem_v) settings"}
        r.warnings.insert(0, "auto: chose dvfs (the rows span several voltage settings)")
        return r
    candidates: list[FitResult] = []
    if has_cache_rows(data.cfg):
        for method in ("joint", "residual"):
            o = FitOptions(**{**opts.__dict__, "cache_method": method})
            r = fit_cache(data, platform=group.platform, emulated=group.emulated, method=method)
            _validate(r, o, method)
            candidates.append(r)
    else:
        errors: list[str] = []
        for model in ("basic", "capped"):
            try:
                r = _fit_one(data, model, group.platform, group.emulated,
                             FitOptions(**{**opts.__dict__, "one_precision": True}))
            except ResultsError as e:
                errors.append(f"{model}: {e}")
                continue
            if model == "capped" and "delta_pi" in r.omitted:
                errors.append("capped: the power cap is not identified")
                continue
            _validate(r, opts)
            candidates.append(r)
        if not candidates:
            raise ResultsError("no model fits these rows: " + "; ".join(errors))
    with_time = not has_cache_rows(data.cfg)  # the cache methods share one time model: compare energy only
    scores = {f"{c.model}" + (f"/{c.extra.get('method')}" if c.model == "cache" else ""):
              _cv_score(c.quality, with_time) for c in candidates}
    lowest = min(_cv_score(c.quality, with_time) for c in candidates)
    # ties (within 1% of the lowest score) go to the simpler candidate: basic before capped, joint before residual
    best = next(c for c in candidates if _cv_score(c.quality, with_time) <= lowest * 1.01)
    label = best.model + (f"/{best.extra.get('method')}" if best.model == "cache" else "")
    best.extra["auto"] = {"chosen": label, "cv_scores_pct": scores,
                          "score": "mean of CV energy and time MAPE" if with_time else "CV energy MAPE"}
    best.warnings.insert(0, "auto: chose " + label + " by cross-validated error ("
                         + ", ".join(f"{k} {v:.3g}%" for k, v in scores.items()) + ")")
    return best


def fit_files(paths: Iterable[str | Path], opts: FitOptions | None = None) -> list[FitResult]:
    """Read, validate, group and fit. One result per (platform, emulated) group."""
    opts = opts or FitOptions()
    if opts.model not in MODELS:
        raise ResultsError(f"unknown model '{opts.model}' (known: {', '.join(MODELS)})")
    from archline.fit.io.hosts import mixed_hosts
    from archline.fit.io.results import FIT_MAX_ROWS

    rs = read_results(paths, opts.where, extra_keys=[opts.holdout_col] if opts.holdout_col else [], carry=(),
                      max_rows=FIT_MAX_ROWS)
    groups = group_rows(rs, include_emulated=opts.include_emulated, mix_emulated=opts.mix_emulated,
                        platform=opts.platform)
    results = [fit_group(g, opts, list(rs.data.time_only_reasons.get(g.platform, {}))) for g in groups]
    for r in results:
        r.warnings.extend(rs.notes)
        if (mixed := mixed_hosts(r.platform, rs.hosts)) is not None:    # one machine per table: said, not merged
            r.warnings.append(mixed)
        r.extra["files"] = rs.files
        if rs.data.sampled:
            r.extra["rows_kept"] = rs.data.n_kept
            r.warnings.append(f"{rs.data.n_rows} rows: coefficients and standard errors from all of them; per-row "
                              f"error figures (MAPE, percentiles, outliers, --points, figures) from a uniform sample "
                              f"of {rs.data.n_kept} rows (bounded memory)"
                              + ("; row-wise CV on that sample" if opts.cv == "rowwise" else ""))
    return results


def fit_frame(frame: pd.DataFrame, opts: FitOptions | None = None, *, platform: str = "",
              emulated: bool = False) -> FitResult:
    """Fit one already-read frame (e.g. from :mod:`archline.fit.regress.synthetic` after :func:`prepare_frame`)."""
    opts = opts or FitOptions()
    data = from_frame(frame, extra_keys=[opts.holdout_col] if opts.holdout_col else [])
    return fit_group(Group(platform, emulated, data), opts)


def prepare_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Validate an in-memory frame exactly as files are validated (writes nothing)."""
    import tempfile

    from archline.fit.regress.synthetic import write_results_csv

    with tempfile.TemporaryDirectory() as d:
        p = write_results_csv(frame, Path(d) / "frame.csv")
        out = read_results([p]).frame
    if len(out) == len(frame):  # columns the reader does not key on (run_id, host, a split column) ride along
        for c in frame.columns:
            if c not in out.columns and c != "schema":
                out[c] = frame[c].to_numpy()
    return out
