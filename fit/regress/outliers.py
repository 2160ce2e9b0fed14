"""Outlier report of a fit: configurations whose energy is far from a robust fit of the others.

One bad row (a kJ value written as J: 1000x the energy, still a plausible mean power) pulls least squares and
NNLS so far that every coefficient but one can vanish, and the residuals of the contaminated fit no longer
single the row out (masking). So the report does not use the fit's own residuals. The rule:

1. Each configuration's mean energy per operation ``y = E/N`` is regressed on the fit's own design (eq.9 /
   the joint cache design for basic, capped and cache; eq.48 for dvfs). The regression is robust: statsmodels
   ``RLM`` with Huber's norm (k = 1.345), its scale ``s`` the normalised median absolute deviation of the
   residuals (``scale_est="mad"``), so the bad configuration moves neither.
2. Two passes: first every design row scaled to unit length (no configuration, however wrong its energy, has
   leverage: a bad one is a plain vertical outlier); then every configuration divided by that first robust
   prediction ``ref``, so the residual ``r = (y - yhat)/ref`` is relative and ``s`` is the relative noise.
3. A configuration is an outlier when ``|r|/s > Z_LIMIT`` (5 robust standard deviations: with normal noise a
   false alarm in about one configuration of 1.7 million) *and* ``|r| > MIN_RELATIVE`` (10%), so that noise-free
   emulated data, whose ``s`` is rounding, raise nothing.

Each outlier is named by the file and line of its row that is farthest from the robust fit (among the rows
kept; else the configuration's first row). The same robust fit names the configuration to check when a fit
keeps at most one coefficient although the energy per operation varies (:func:`collapse_warning`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from archline.fit.io.configs import Grouped
    from archline.fit.regress.result import FitResult
    from archline.fit.regress.sufficient import Pseudo

#: robust standardized residual beyond which a configuration is reported
Z_LIMIT = 5.0
#: and the relative distance from the robust fit it must also exceed
MIN_RELATIVE = 0.10
#: configurations the robust coefficients are estimated from at most (a seeded sample beyond)
MAX_ROBUST_CONFIGS = 10_000
#: outliers named at most (the farthest first); more are counted in a warning
MAX_REPORTED = 20
#: key columns shown for a configuration
_KEYS: tuple[str, ...] = ("platform", "kernel", "precision", "level", "flops_sp", "flops_dp", "bytes_mem",
                          "bytes_l1", "bytes_l2", "bytes_l3", "bytes_shared", "rand_accesses", "int_ops",
                          "core_v", "mem_v")


@dataclass
class Outlier:
    """One flagged configuration (JSON: an entry of ``outliers``)."""

    where: str                 # file:line (CSV) or "file, row N" (Parquet) of the row to check
    configuration: dict[str, Any]
    rows: int
    energy_ratio: float        # measured mean energy / the robust fit's
    robust_z: float            # relative residual / robust scale

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    def message(self) -> str:
        key = ", ".join(f"{k}={v}" for k, v in self.configuration.items() if k in ("kernel", "precision", "level"))
        from archline.fit.regress.sources import unit_slip

        slip = unit_slip("energy", self.energy_ratio)      # only a factor near a known slip is called one
        return (f"outlier: {self.where} ({key}, {self.rows} row(s)): energy is {self.energy_ratio:.3g}x a robust "
                f"fit of the other configurations (robust z = {self.robust_z:.3g}); "
                + (f"a unit slip ({slip})? " if slip else "") + "check or drop that row")


@dataclass
class RobustFit:
    resid: np.ndarray      # (G,) relative residual (y - yhat)/y, NaN where not fitted
    z: np.ndarray          # (G,) resid / scale
    ratio: np.ndarray      # (G,) y / yhat
    scale: float


def energy_design(result: FitResult) -> Pseudo | None:
    """The fit's linear energy design on its own configurations (None for a model without one)."""
    rows = result.rows
    if rows is None or rows.n_configs == 0:
        return None
    if result.model == "dvfs":
        from archline.fit.regress.dvfs import design as dvfs_design

        return dvfs_design(rows.cfg)
    if result.model in ("basic", "capped", "cache"):
        from archline.fit.regress.cache import design as joint_design

        return joint_design(rows.cfg)[0]
    return None


#: Huber's tuning constant (95% efficiency at the normal), as statsmodels' HuberT
HUBER_T = 1.345
#: MAD / this is the normal's standard deviation (statsmodels.robust.scale.mad's default)
MAD_NORMAL = 0.6744897501960817


@dataclass(frozen=True)
class Huber:
    params: np.ndarray


def _mad(resid: np.ndarray) -> float:
    """The normalised median absolute deviation about 0, as statsmodels' ``mad(resid, center=0)``."""
    return float(np.median(np.abs(resid)) / MAD_NORMAL) if resid.size else 0.0


def _huber(y: np.ndarray, x: np.ndarray, max_iter: int = 50, rtol: float = 1e-10) -> Huber:
    """Huber M-estimate by iteratively reweighted least squares, scale re-estimated by the MAD each step: what
    ``statsmodels.RLM(y, x, M=HuberT()).fit(scale_est="mad")`` computes (tests/fit/test_fit_outliers.py holds
    the two together). Written out because importing statsmodels.api costs 1.5-3 s, more than the bounded fit of
    100 M rows may spend beyond its pyarrow floor (issue 28)."""
    params = np.linalg.lstsq(x, y, rcond=None)[0]
    for _ in range(max_iter):
        resid = y - x @ params
        scale = _mad(resid)
        if not scale > 0:           # an exact fit of most rows: nothing to reweight
            break
        a = np.abs(resid / scale)
        w = np.where(a <= HUBER_T, 1.0, HUBER_T / np.maximum(a, HUBER_T))
        sw = np.sqrt(w)
        new = np.linalg.lstsq(x * sw[:, None], y * sw, rcond=None)[0]
        done = np.all(np.abs(new - params) <= rtol * np.maximum(np.abs(params), np.abs(new)).max(initial=0.0))
        params = new
        if done:
            break
    return Huber(params)


def robust_fit(ps: Pseudo) -> RobustFit | None:
    """Huber M-estimate of ``y`` on the design, relative residuals (module docstring, steps 1-2); None when the
    configurations are too few to tell an outlier from the fit (fewer than the coefficients + 3)."""
    y, x = ps.ybar, ps.xbar
    ok = np.isfinite(y) & (y > 0) & np.isfinite(x).all(axis=1)
    cols = np.abs(x[ok]).sum(axis=0) > 0
    g = int(ok.sum())
    if g < int(cols.sum()) + 3:
        return None
    xs = x[ok][:, cols]
    xs = xs / np.linalg.norm(xs, axis=0)
    ys = y[ok]
    # start: every design row scaled to unit length, so that neither a configuration far too high nor one far
    # too low (whose x/y would be huge) has leverage; both are then plain vertical outliers
    row = np.linalg.norm(xs, axis=1)
    row[row == 0] = 1.0
    # the coefficients from at most MAX_ROBUST_CONFIGS configurations (a seeded uniform sample): plenty for a
    # handful of coefficients, and the residuals and their scale are still those of every configuration
    fit_on = (np.sort(np.random.default_rng(0).choice(g, MAX_ROBUST_CONFIGS, replace=False))
              if g > MAX_ROBUST_CONFIGS else slice(None))
    start = _huber((ys / row)[fit_on], (xs / row[:, None])[fit_on])
    ref = xs @ np.asarray(start.params)
    ref = np.where(ref > 0, ref, ys)
    # then the residuals relative to that robust prediction: (y - yhat)/yhat
    res = _huber((ys / ref)[fit_on], (xs / ref[:, None])[fit_on])
    yhat = xs @ np.asarray(res.params)
    resid = np.full(y.size, math.nan)
    ratio = np.full(y.size, math.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        resid[ok] = (ys - yhat) / ref
        ratio[ok] = np.where(yhat > 0, ys / yhat, math.nan)
    scale = _mad(resid[ok])
    with np.errstate(divide="ignore", invalid="ignore"):
        z = resid / scale if scale > 0 else np.where(resid == 0, 0.0, np.copysign(np.inf, resid))
    return RobustFit(resid, z, ratio, scale)


def _row_to_check(rows: Grouped, j: int, yhat_energy_j: float) -> str:
    """The kept row of configuration ``j`` farthest (in log energy) from the robust fit, else its first row."""
    mine = np.flatnonzero(rows.g == j)
    if rows.sampled and mine.size < int(rows.cfg["n"][j]):
        return f"{rows.where_config(j)} (the configuration's first row; only a sample of its rows is kept)"
    if mine.size <= 1 or not rows.sources or not (yhat_energy_j > 0):
        return rows.where_config(j)
    with np.errstate(divide="ignore", invalid="ignore"):
        far = np.abs(np.log(rows.e[mine] / yhat_energy_j))
    i = int(mine[int(np.nanargmax(far))]) if np.isfinite(far).any() else int(mine[0])
    return rows.sources[int(rows.src[i])].where(int(rows.pos[i]))


def _key(rows: Grouped, j: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k in _KEYS:
        if k not in rows.cfg:
            continue
        v = rows.cfg[k][j]
        if isinstance(v, (np.floating, float)):
            if not math.isfinite(float(v)) or (k not in ("core_v", "mem_v") and float(v) == 0.0):
                continue
            out[k] = float(v)
        elif v not in (None, ""):
            out[k] = str(v)
    return out


def find_outliers(result: FitResult) -> tuple[list[Outlier], int, RobustFit | None]:
    """The configurations of ``result`` that the rule of the module docstring flags, most extreme first (at most
    :data:`MAX_REPORTED`), how many it flags in all, and the robust fit (None when there are too few)."""
    ps = energy_design(result)
    rows = result.rows
    if ps is None or rows is None:
        return [], 0, None
    rf = robust_fit(ps)
    if rf is None:
        return [], 0, None
    flag = np.isfinite(rf.z) & (np.abs(rf.z) > Z_LIMIT) & (np.abs(rf.resid) > MIN_RELATIVE)
    out: list[Outlier] = []
    n = rows.cfg.num("n")
    for j in sorted(np.flatnonzero(flag).tolist(), key=lambda k: -abs(float(rf.z[k])))[:MAX_REPORTED]:
        yhat_energy_j = float(rows.cfg["energy_j"][j] / rf.ratio[j])
        out.append(Outlier(_row_to_check(rows, j, yhat_energy_j), _key(rows, j), int(n[j]), float(rf.ratio[j]),
                           float(rf.z[j])))
    return out, int(flag.sum()), rf


def collapse_warning(result: FitResult, rf: RobustFit | None) -> str | None:
    """A warning when the fit kept at most one energy coefficient (e.g. NNLS left pi0 alone) although the
    configurations' energy per operation is not constant, naming the configuration the robust fit disagrees
    with most (the likeliest cause)."""
    ps = energy_design(result)
    rows = result.rows
    if ps is None or rows is None or rows.n_configs < 3:
        return None
    kept = [k for k, c in result.coefficients.items() if c.value is not None and c.value > 0]
    if len(kept) > 1 or len(kept) + len(result.omitted) < 3:
        return None
    y = ps.ybar[np.isfinite(ps.ybar) & (ps.ybar > 0)]
    if y.size < 3 or float(y.max() / y.min()) < 1.01:
        return None            # the data are constant: one coefficient is the right answer
    left = (f"{kept[0]} alone (every other coefficient is zero or omitted)" if kept
            else "no coefficient (each is zero or omitted)")
    what = (f"the fit kept {left} although the energy per "
            f"operation varies {float(y.max() / y.min()):.3g}-fold over {y.size} configurations")
    if rf is None or not np.isfinite(rf.z).any():
        return what
    j = int(np.nanargmax(np.abs(rf.z)))
    yhat_energy_j = float(rows.cfg["energy_j"][j] / rf.ratio[j])
    return (f"{what}; the configuration the robust fit disagrees with most is {_row_to_check(rows, j, yhat_energy_j)}"
            f" (energy {float(rf.ratio[j]):.3g}x the robust fit, robust z = {float(rf.z[j]):.3g}): check it")


def attach_outlier_report(result: FitResult) -> None:
    """Add ``extra["outliers"]`` (a list, empty when none) and a warning per outlier and for a collapsed fit."""
    try:
        outliers, n_flagged, rf = find_outliers(result)
    except (np.linalg.LinAlgError, ValueError, ZeroDivisionError):    # a report must never cost the fit
        result.extra["outliers"] = []
        result.warnings.append("outlier report skipped: the robust fit of the configurations failed")
        return
    result.extra["outliers"] = [o.as_json() for o in outliers]
    said = [o.message() for o in outliers]
    if n_flagged > len(outliers):
        said.append(f"{n_flagged - len(outliers)} more outlier configuration(s) not listed (the {len(outliers)} "
                    f"farthest are): the model may not describe these rows")
    msg = collapse_warning(result, rf)
    if msg:
        said.append(msg)
    result.warnings.extend(said)
    from archline.fit.regress.sources import attach_source_report

    said += attach_source_report(result)      # a whole file off by one factor, a non-physical fit quality
    result.extra["outlier_warnings"] = said


def outlier_warnings(result: FitResult) -> list[str]:
    """The warnings the outlier report and the source check (:mod:`archline.fit.regress.sources`) added (the CLI
    also puts them on stderr beside a table on stdout)."""
    return list(result.extra.get("outlier_warnings", []))
