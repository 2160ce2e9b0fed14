"""Where a counter's cumulative energy may lie at a window's edge between two polls (pure functions of the polls'
times and energies, for :meth:`CounterMeter.energy_bound_j` and :meth:`CounterMeter.window_energy_j`)."""

from __future__ import annotations

import numpy as np


def interp_range_j(a_s: float, b_s: float, p_mean_w: float, p_top_w: float, period_s: float
                    ) -> tuple[float, float]:
    """How far below and above the straight line between two polls the cumulative energy at an edge ``a_s`` after
    one poll and ``b_s`` before the next may lie, the power between them ``p_mean_w`` on average and, it is assumed,
    between 0 and ``p_top_w`` (the most the channel was seen to draw; a burst shorter than a poll above it is not
    covered). With ``A`` the energy before the edge, ``A - a p_mean`` is at most ``a (p_top - p_mean)`` and
    ``b p_mean`` above, ``a p_mean`` and ``b (p_top - p_mean)`` below: none when the power between the two polls
    was steady at the top (a step at a poll), ``a b / (a + b)`` of the top at most. The mean is known to one
    update more or less."""
    jit = p_top_w * period_s / (a_s + b_s)
    up, down = max(p_top_w - p_mean_w, 0.0) + jit, max(p_mean_w, 0.0) + jit
    cap = (p_top_w + jit) * a_s * b_s / (a_s + b_s)
    return min(down * a_s, up * b_s, cap), min(up * a_s, down * b_s, cap)


def outside_edge_j(t: np.ndarray, e: np.ndarray, te: float, start: bool, period_s: float) -> float:
    """The cumulative energy at a window's edge ``te`` taking the power outside the window as steady from the
    poll about the edge outward: a start edge at the mean power over four update periods or more before the poll
    ahead of it, an end edge at the mean as long after the poll past it. Linear where the edge is within an update
    period of a poll or no such mean is there; kept between the two polls' values."""
    lin = float(np.interp(te, t, e))
    ib = int(np.searchsorted(t, te))
    if ib <= 0 or ib >= t.size:
        return lin
    ia = ib - 1
    ta, tb = float(t[ia]), float(t[ib])
    if min(te - ta, tb - te) <= period_s:
        return lin
    span = max(4.0 * period_s, 1e-9)
    if start:
        j = int(np.searchsorted(t, ta - span, side="right")) - 1
        if j < 0 or j >= ia:
            return lin
        est = float(e[ia]) + (float(e[ia]) - float(e[j])) / (ta - float(t[j])) * (te - ta)
    else:
        k = int(np.searchsorted(t, tb + span))
        if k >= t.size:
            return lin
        est = float(e[ib]) - (float(e[k]) - float(e[ib])) / (float(t[k]) - tb) * (tb - te)
    return float(np.clip(est, min(e[ia], e[ib]), max(e[ia], e[ib])))


def at_poll(t: np.ndarray, te: float, tol_s: float) -> bool:
    """Whether a poll of ``t`` is within ``tol_s`` of ``te`` (a mark's poll comes just after its edge)."""
    i = int(np.searchsorted(t, te))
    return any(abs(float(t[j]) - te) <= tol_s for j in (i - 1, i) if 0 <= j < t.size)


def spaced(t: np.ndarray, min_span_s: float) -> np.ndarray:
    """Indices of the times ``t`` (ascending) kept so that each is at least ``min_span_s`` after the one kept
    before it (the first and the last always kept; the last replaces the one before it when too close)."""
    keep = [0]
    for i in range(1, t.size):
        if t[i] - t[keep[-1]] >= min_span_s:
            keep.append(i)
    if keep[-1] != t.size - 1:
        if len(keep) > 1:
            keep[-1] = t.size - 1
        else:
            keep.append(t.size - 1)
    return np.asarray(keep, dtype=np.intp)
