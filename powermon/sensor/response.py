"""How an on-board sensor answers the true power, fitted against a reference meter (pure numpy functions).

A sensor reading that appears at time ``r`` is modelled as ``gain * mean(reference power over [r - lag - window,
r - lag]) + offset`` (what :class:`archline.powermon.emulator.sensor.SensorModel` plays). :func:`fit_response`
searches window and lag on a grid (coarse, then fine around the best point, finally at a quarter of the
reference's sample period), solving gain and offset by least squares at each point: the residual sum of squares
is ``Svv - Sxv**2 / Sxx``, so the whole grid is one vectorised pass.

The uncertainty of window and lag combines in quadrature what limits them (:func:`time_uncertainty`): the half-width
of the region where the residual sum of squares rises by no more than one residual variance (the profile-likelihood
interval, Delta chi^2 = 1, never less than the fine grid step); the reference's sample period / sqrt(3) (an edge is
seen at the next reference sample, anywhere within one period: uniform over [0, T], so a spread of T / sqrt(12)
either way in each of the two series the fit matches, T / sqrt(6), which rounds up to T / sqrt(3) for the edges
that fall between samples of both); and, for a quantised sensor, window x quantum / (gain x swing), the time one
quantum of a reading stands for while a step passes through the window (a slow sensor sees one or two readings per
edge, so the rounding does not average out: seen up to 1.1 of it over 12 seeds of a 1 W BMC). Without these two the
interval alone was 3 to 15 times smaller than the actual error (a grid search on one exact-looking minimum).

Gain and offset get their ordinary least-squares standard errors at the best window and lag, and, in quadrature,
two systematic terms (:func:`level_systematics`) that the least-squares error cannot see because they shift a whole
level the same way at every reading: the reference's resolution (half an ADC step of V and I at each level, e.g. a
PowerMon 2 reading 40 W as 39.966 W: gain off by 3e-4 and offset by 0.04 W on every seed) and the sensor's quantum
(a level read rounded to the nearest quantum, the same way every time). Each is uniform within its step, so its
standard deviation is half a step / sqrt(3), independent between the two levels; how much of it reaches gain and
offset is the least-squares projection of a shift of one level's readings. Without them a noise-free sensor got
gain 0.99968 +- 8e-17 (truth 1) and the offset missed +-1 stated error on 7 of 8 seeds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from archline.powermon.errors import MeterError

F64 = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Response:
    window_s: float
    window_err_s: float
    lag_s: float
    lag_err_s: float
    gain: float
    gain_err: float
    offset_w: float
    offset_err_w: float
    residual_w: float          #: rms residual of the readings about the fitted response
    n_readings: int
    warnings: tuple[str, ...] = ()     #: what limits the fit (few readings inside edges, a quantum not resolved)


def cumulative_energy(t_s: F64, power_w: F64) -> F64:
    """Energy from the first sample to each sample (trapezoid), the integral the windows are cut from."""
    if t_s.size < 2:
        raise MeterError("the reference has fewer than 2 samples: nothing to compare the sensor with")
    return np.concatenate([[0.0], np.cumsum(0.5 * (power_w[1:] + power_w[:-1]) * np.diff(t_s))])


def window_means(t_s: F64, energy_j: F64, power_w: F64, ends_s: F64, window_s: float) -> F64:
    """Mean reference power over [end - window, end] for each end (the instantaneous power for a zero window)."""
    if window_s <= 0:
        return np.interp(ends_s, t_s, power_w)
    return (np.interp(ends_s, t_s, energy_j) - np.interp(ends_s - window_s, t_s, energy_j)) / window_s


def _sse_grid(t_s: F64, energy_j: F64, power_w: F64, read_t: F64, read_v: F64, windows: F64, lags: F64
              ) -> F64:
    """Residual sum of squares of the best gain/offset line at every (window, lag) pair: shape (windows, lags)."""
    out = np.empty((windows.size, lags.size))
    vc = read_v - read_v.mean()
    svv = float(vc @ vc)
    for i, w in enumerate(windows):
        ends = read_t[None, :] - lags[:, None]                       # (lags, n)
        x = window_means(t_s, energy_j, power_w, ends.ravel(), float(w)).reshape(ends.shape)
        xc = x - x.mean(axis=1, keepdims=True)
        sxx = np.einsum("ij,ij->i", xc, xc)
        sxv = xc @ vc
        with np.errstate(divide="ignore", invalid="ignore"):
            out[i] = np.where(sxx > 0, svv - sxv ** 2 / sxx, svv)
    return out


def _interval(values: F64, sse: F64, best: int, limit: float) -> float:
    """Half-width of the contiguous stretch around ``best`` where ``sse`` stays within ``limit``."""
    lo = hi = best
    while lo > 0 and sse[lo - 1] <= limit:
        lo -= 1
    while hi < sse.size - 1 and sse[hi + 1] <= limit:
        hi += 1
    return 0.5 * float(values[hi] - values[lo])


def time_uncertainty(fit_err_s: float, *, reference_period_s: float, window_s: float, quantum_w: float,
                     gain: float, swing_w: float) -> float:
    """The stated uncertainty of a fitted window or lag (see the module): the fit's interval, the reference's
    sample period / sqrt(3) and a quantum's share, in quadrature."""
    q_s = window_s * quantum_w / (abs(gain) * swing_w) if quantum_w > 0 and swing_w > 0 and gain else 0.0
    return math.sqrt(fit_err_s ** 2 + reference_period_s ** 2 / 3 + q_s ** 2)


def level_systematics(x_w: F64, ref_power_w: F64, *, gain: float, quantum_w: float,
                      ref_resolution_w: F64 | None) -> F64:
    """Covariance (2 x 2, of gain and offset) of the systematic terms (see the module): the readings split into the
    low and the high level at the middle of the reference's range; at each level a shift of the reference by its
    resolution (half a step, sd half-step / sqrt(3), seen as ``gain`` times it in the readings) and of the readings by
    their rounding (sd quantum / sqrt(12)), projected onto gain and offset by least squares."""
    lo_w, hi_w = np.percentile(ref_power_w, [5, 95])
    mid = 0.5 * (lo_w + hi_w)
    a = np.column_stack([x_w, np.ones_like(x_w)])
    proj = np.linalg.pinv(a)                                   # (2, n): coef = proj @ readings
    cov = np.zeros((2, 2))
    for sel_x, sel_r in ((x_w < mid, ref_power_w < mid), (x_w >= mid, ref_power_w >= mid)):
        if not sel_x.any():
            continue
        var = quantum_w ** 2 / 12.0
        if ref_resolution_w is not None and sel_r.any():
            var += (gain * float(np.mean(ref_resolution_w[sel_r]))) ** 2 / 3.0
        u = proj @ sel_x.astype(np.float64)
        cov += var * np.outer(u, u)
    return cov


def fit_response(ref_t_s: F64, ref_power_w: F64, read_t_s: F64, read_w: F64, *, max_window_s: float,
                 max_lag_s: float, resolution_s: float, window_s: float | None = None,
                 reference_period_s: float | None = None, quantum_w: float = 0.0,
                 ref_resolution_w: F64 | None = None, level_rounding_w: float | None = None) -> Response:
    """Window, lag, gain and offset of a sensor's readings (``read_t_s``, ``read_w``) against the reference's
    samples (``ref_t_s``, ``ref_power_w``, on the same timeline). ``window_s`` fixes the window (calibration with
    a probed profile); ``resolution_s`` is the finest grid step (a quarter of the reference period, the default
    ``reference_period_s``); ``quantum_w`` the sensor's quantum (0: none), for the uncertainty of window and lag
    and its share of gain and offset; ``ref_resolution_w`` half a step of the reference at each of its samples (None:
    unknown, left out), for its share of gain and offset (:func:`level_systematics`); ``level_rounding_w`` the step
    each level's reading may be rounded to for that share (None: ``quantum_w``; a quantum not resolved gives the
    largest one the readings allow, :func:`archline.powermon.sensor.probe.rounding_bound_w`)."""
    rt = np.asarray(ref_t_s, dtype=np.float64)
    rp = np.asarray(ref_power_w, dtype=np.float64)
    order = np.argsort(rt, kind="stable")
    rt, rp = rt[order], rp[order]
    res = None if ref_resolution_w is None else np.asarray(ref_resolution_w, dtype=np.float64)[order]
    energy = cumulative_energy(rt, rp)
    t = np.asarray(read_t_s, dtype=np.float64)
    v = np.asarray(read_w, dtype=np.float64)
    keep = (t - max_lag_s - max_window_s >= rt[0]) & (t <= rt[-1])   # readings whose every window is measured
    t, v = t[keep], v[keep]
    if t.size < 8:
        raise MeterError(f"only {t.size} sensor reading(s) fall inside the reference's samples: record longer "
                         "(more steps) or check that both meters ran at once")
    if float(np.ptp(v)) == 0.0:
        raise MeterError("the sensor's readings never change: the load did not step (or the sensor is stuck)")
    fixed = window_s is not None
    w_lo, w_hi = (float(window_s), float(window_s)) if fixed else (0.0, max_window_s)  # type: ignore[arg-type]
    l_lo, l_hi = 0.0, max_lag_s
    n_coarse = 48
    for _ in range(8):                     # zoom in until the grid step is the resolution
        windows = np.array([w_lo]) if fixed else np.linspace(w_lo, w_hi, n_coarse)
        lags = np.linspace(l_lo, l_hi, n_coarse)
        sse = _sse_grid(rt, energy, rp, t, v, windows, lags)
        i, j = np.unravel_index(int(np.argmin(sse)), sse.shape)
        dw = (w_hi - w_lo) / (n_coarse - 1) if not fixed else 0.0
        dl = (l_hi - l_lo) / (n_coarse - 1)
        if max(dw, dl) <= resolution_s:
            break
        # the next grid spans 4 steps either side of the best point, clipped to the search range
        if not fixed:
            w_lo, w_hi = max(0.0, windows[i] - 4 * dw), min(max_window_s, windows[i] + 4 * dw)
        l_lo, l_hi = max(0.0, lags[j] - 4 * dl), min(max_lag_s, lags[j] + 4 * dl)
    best_w, best_l = float(windows[i]), float(lags[j])
    n = t.size
    sse_min = float(sse[i, j])
    var = max(sse_min / max(n - 4, 1), 1e-300)
    limit = sse_min + var
    w_err = 0.0 if fixed else float(max(_interval(windows, sse[:, j], int(i), limit), dw))
    l_err = float(max(_interval(lags, sse[i, :], int(j), limit), dl))
    x = window_means(rt, energy, rp, t - best_l, best_w)
    a = np.column_stack([x, np.ones_like(x)])
    coef, *_ = np.linalg.lstsq(a, v, rcond=None)
    resid = v - a @ coef
    s2 = float(resid @ resid) / max(n - 2, 1)
    rounding_w = quantum_w if level_rounding_w is None else level_rounding_w
    cov = s2 * np.linalg.inv(a.T @ a) + level_systematics(x, rp, gain=float(coef[0]), quantum_w=rounding_w,
                                                          ref_resolution_w=res)
    lo_w, hi_w = np.percentile(rp, [5, 95])
    honest = dict(reference_period_s=4 * resolution_s if reference_period_s is None else reference_period_s,
                  window_s=best_w, quantum_w=quantum_w, gain=float(coef[0]), swing_w=float(hi_w - lo_w))
    l_err = time_uncertainty(l_err, **honest)
    if not fixed:
        w_err = time_uncertainty(w_err, **honest)
    return Response(best_w, w_err, best_l, l_err, float(coef[0]), math.sqrt(max(cov[0, 0], 0.0)),
                    float(coef[1]), math.sqrt(max(cov[1, 1], 0.0)), math.sqrt(float(resid @ resid) / n), n)
