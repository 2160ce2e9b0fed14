"""The update period of a sensor from the instants its reading changed (pure numpy functions, used by
:mod:`archline.powermon.sensor.probe`): the instants lie on a lattice ``t0 + k * period`` with some updates unseen
(the reading did not move) and a few seen late (a delayed poll); each gap is rounded to a whole number of periods
and the period is the slope of a straight-line fit of time on lattice index. What the changes identify is the
largest period every interval between them is a whole multiple of (:func:`_finer_lattice`).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from archline.powermon.errors import MeterError

F64 = npt.NDArray[np.float64]


#: a lattice is accepted only when the chance that continuous values fit it (or any of the candidates tried) is
#: below this: each value fits a lattice within a relative tolerance tau with probability 2 tau
MAX_CHANCE = 1e-3


#: the share of update instants that may sit off the lattice (seen late) before a probe says there is none
MAX_OFF_LATTICE = 0.1


def update_period(times_s: F64) -> tuple[float, float]:
    """(period, standard error) of update instants that lie on a lattice (some updates may be missing, and up to
    :data:`MAX_OFF_LATTICE` of them seen more than a quarter period late or early: left out of the fit)."""
    t = np.unique(np.asarray(times_s, dtype=np.float64))
    if t.size < 3:
        raise MeterError(f"only {t.size} sensor update(s) seen: record longer or with more steps")
    gaps = np.diff(t)
    try:
        guess = _first_guess(gaps)
        best = _lattice_fit(t, gaps, guess)
    except MeterError:
        # no gap of one period: a sensor whose reading changes only at the load's edges (no averaging window, a
        # noise-free level) shows updates many periods apart; its period is then the common divisor of the gaps
        common = _common_period(gaps)
        if common is None:
            raise
        guess = common
        best = _lattice_fit(t, gaps, guess)
    return _finer_lattice(t, gaps, guess, best)


#: finer lattices (the first guess or the fitted period over 2, 3, ...) tried against the one first fitted
MAX_SUBDIVISION = 16


def _finer_lattice(t: F64, gaps: F64, guess: float, fit: tuple[float, float, float]) -> tuple[float, float]:
    """(period, error) of the largest lattice that fits the instants as well as any: the first fit's or one of its
    subdivisions' (the first guess or the fitted period over 2, 3, ... :data:`MAX_SUBDIVISION`).

    A sensor whose reading changes only at some of its updates (a step shorter than the period: 0.3 s steps on a
    0.5 s sensor change it after 2, 3, 4 or 5 periods) shows no gap of one period: the first guess (the 10th
    percentile gap, 1.0 s there) is a multiple of the period, and a least-squares fit from it settled on a lattice
    of 0.902 s that held those 11 instants within a quarter period (+-0.008 s, 51 sigma from the truth). What is
    identifiable from the changes alone is the largest period of which every gap is a whole multiple (their common
    divisor): among the lattices whose scatter (floored at the instants' float resolution) as a share of their
    period is within twice the smallest, and which continuous instants would fit that well by chance with
    probability below :data:`MAX_CHANCE` (:func:`_chance`), the largest period stands (a subdivision of the true
    lattice fits it no better). None passing: no lattice."""
    floor = _time_resolution(t)
    found = [(fit[0], fit[1], max(fit[2], floor))]
    for base in (guess, fit[0]):
        for m in range(2, MAX_SUBDIVISION + 1):
            p0 = base / m
            if p0 <= 8 * floor:
                break
            try:
                p, e, s = _lattice_fit(t, gaps, p0)
            except MeterError:
                continue
            found.append((p, e, max(s, floor)))
    tried = len(found)
    good = [f for f in found if _chance(t, f[0], f[2], tried) < MAX_CHANCE]
    if not good:
        # a handful of instants fit some lattice within a quarter period by chance (11 irregular ones did)
        raise _no_lattice(gaps)
    # scatter as a share of the period: what tells a lattice from chance (a real counter's instants, 2 ms about a
    # 50 ms lattice, sit 0.9 ms about a 6.6 ms one, nearer in seconds but 3x farther as a share of its period)
    r_min = min(f[2] / f[0] for f in good)
    period, err, _ = max((f for f in good if f[2] / f[0] <= 2 * r_min), key=lambda f: f[0])
    return period, err


def _chance(t: F64, period: float, scatter: float, tried: int = 1) -> float:
    """The chance that ``t.size`` continuous instants fit some lattice of about ``period`` with a scatter of
    ``scatter`` (each within +-sqrt(3) scatter of it with probability 2 sqrt(3) scatter / period): one lattice per
    period of the span is told apart by the fit (its period is refined on a continuum), times the bases tried."""
    span_periods = max(1.0, float(np.ptp(t)) / period)
    per_point = min(1.0, 2 * math.sqrt(3) * scatter / period)
    return tried * span_periods * per_point ** t.size


def _time_resolution(t: F64) -> float:
    """The float resolution of the instants (a few ulps of the largest): below it no lattice fits better."""
    return 4.0 * float(np.spacing(np.max(np.abs(t)))) if t.size else 0.0


def _first_guess(gaps: F64) -> float:
    """A first guess from the shortest gaps, but not the very shortest: an update seen late leaves a short gap after
    it (seen 40 ms late on a 50 ms sensor: a 10 ms gap), which the 10th percentile passes over."""
    return float(np.percentile(gaps, 10))


def _common_period(gaps: F64, *, max_divisor: int = 10_000, tol: float = 0.1) -> float | None:
    """The largest ``min(gaps) / m`` of which all but :data:`MAX_OFF_LATTICE` of the gaps are whole multiples
    (within ``tol`` of one), accepted only when gaps at random would fit that well by chance with probability below
    :data:`MAX_CHANCE` (each fits with probability ``2 tol``); None when none does."""
    g = np.sort(gaps[gaps > 0])
    if g.size < 3:
        return None
    need = math.ceil((1 - MAX_OFF_LATTICE) * g.size)
    base = float(g[0])
    for m in range(1, max_divisor + 1):
        p = base / m
        r = g / p
        fit = int(np.count_nonzero(np.abs(r - np.rint(r)) < tol))
        if fit >= need:
            chance = m * math.comb(g.size, fit) * (2 * tol) ** fit
            return p if chance < MAX_CHANCE else None
    return None


def _no_lattice(gaps: F64) -> MeterError:
    return MeterError("the sensor's updates are on no regular lattice (gaps of "
                      f"{np.min(gaps):.4g}-{np.max(gaps):.4g} s): not a periodic sensor, or polled too slowly")


def _lattice_fit(t: F64, gaps: F64, period: float) -> tuple[float, float, float]:
    """(period, error, robust scatter of the instants about the lattice) of the lattice fitted from ``period``."""
    try:
        return _lattice_fit_raw(t, gaps, period)
    except np.linalg.LinAlgError:    # a degenerate lattice (every gap rounded to 0 periods): none
        raise _no_lattice(gaps) from None


def _lattice_fit_raw(t: F64, gaps: F64, period: float) -> tuple[float, float, float]:
    if not (math.isfinite(period) and period > 0):
        raise _no_lattice(gaps)
    # refine on gaps of one period first (a rounded gap of many periods needs a good period), then on all
    for limit in (1.5, 4.0, math.inf):
        use = gaps <= limit * period
        if not use.any():      # every gap is many periods (a guess from their common divisor): the next limit
            continue
        k = np.rint(gaps[use] / period)
        kk = float(np.sum(k * k))
        if kk == 0:            # every gap rounds to no period at all (a guess far too long): no lattice
            raise _no_lattice(gaps)
        period = float(np.sum(gaps[use] * k) / kk)
        if not (math.isfinite(period) and period > 0):
            raise _no_lattice(gaps)
    k_all = np.concatenate([[0.0], np.cumsum(np.rint(gaps / period))])
    a = np.column_stack([k_all, np.ones_like(k_all)])
    coef, *_ = np.linalg.lstsq(a, t, rcond=None)
    resid = t - a @ coef
    # an update seen late (a poll delayed on a busy host) sits off the lattice while its neighbours stay on it:
    # up to MAX_OFF_LATTICE of them are left out of the fit; more, and there is no lattice
    off = np.abs(resid) > 0.25 * coef[0]
    if off.sum() > MAX_OFF_LATTICE * t.size or t.size - off.sum() < 3:
        raise _no_lattice(gaps)
    if off.any():
        t, k_all, a = t[~off], k_all[~off], a[~off]
        coef, *_ = np.linalg.lstsq(a, t, rcond=None)
        resid = t - a @ coef
    s2 = float(resid @ resid) / max(t.size - 2, 1)
    skk = max(float(np.sum((k_all - k_all.mean()) ** 2)), 1e-300)
    err = math.sqrt(s2 / skk)
    # an exact lattice (an emulator's instants) leaves a residual of float rounding only, which stated 1e-18 s: the
    # error is floored at the instants' resolution over the span in periods (each instant is known to a few ulps of
    # the largest) and a few ulps of the period itself, below which no period is told
    floor = math.hypot(_time_resolution(t) / math.sqrt(skk), 4.0 * float(np.spacing(abs(coef[0]))))
    # the scatter, robust (1.4826 x the median absolute residual): an update seen late that still fell within a
    # quarter period inflates the rms, and a finer lattice that catches it is no better a lattice
    return float(coef[0]), math.hypot(err, floor), 1.4826 * float(np.median(np.abs(resid)))


def period_warning(times_s: F64, period_s: float) -> list[str]:
    """A warning when no two update instants are one period apart (the reading changed only at some updates): the
    period is then the largest of which every gap is a whole multiple, and the sensor may update at a divisor of
    it, which the changes cannot tell."""
    gaps = np.diff(np.unique(np.asarray(times_s, dtype=np.float64)))
    if gaps.size == 0 or not period_s > 0 or float(np.min(gaps)) < 1.5 * period_s:
        return []
    return [f"the reading changed only at some updates (no two changes less than {float(np.min(gaps)):.4g} s "
            f"apart): {period_s:.6g} s is the largest period every interval between changes is a whole multiple "
            "of, and the sensor may update at a divisor of it, which its readings cannot tell (more --steps give "
            "more intervals, which rule out a multiple of the period, never a divisor)"]
