"""A BMC window's energy and bound from its readings' step function: the one computation the live meter
(:meth:`archline.powermon.bmc.bmc_meter.BmcMeter.region`) and ``meter integrate`` of its trace both use, so the two
state the same bound (the terms travel in the trace's sidecar ``info``: update period, speed, poll, the BMC's
averaging window, the watt quantum, whether readings carried a ReadingTime)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from archline.formats.meters.samples import Samples

RESOLUTION_W = 1.0             # a BMC's reading is good to a watt at best (most serve whole watts)

#: failed polls' times kept in a trace's sidecar (for the count of those inside a window offline)
MAX_FAILED_KEPT = 1000


@dataclass(frozen=True)
class BoundTerms:
    """What a BMC window's bound needs: ``update_period_s``, ``window_s`` device seconds; ``poll_s`` host seconds;
    ``timed``: every reading carried a ReadingTime (else each change of value is placed to within a poll);
    ``summed``: each reading is a sum of readings the BMC updates apart (Redfish PowerSubsystem: one per supply), so
    a change of the sum may belong to a period that ended up to a period earlier: it is placed to within a period."""

    update_period_s: float
    speed: float = 1.0
    poll_s: float = 0.25
    window_s: float | None = None
    quantum_w: float = 0.0
    timed: bool = True
    summed: bool = False
    #: the readings a recording's window was integrated on (the sidecar's ``window_readings``): readings that
    #: arrived later (while the meter stopped) are left out of a window they cover, so that ``meter integrate`` of
    #: the trace states the recording's bound; None: every reading
    readings: int | None = None

    @property
    def period_s(self) -> float:           # host seconds
        return self.update_period_s / self.speed

    @classmethod
    def from_info(cls, info: dict[str, Any]) -> BoundTerms | None:
        """The terms a trace's sidecar ``info`` keeps (a BMC trace: ``type`` "bmc"), or None when any is missing
        or malformed (a sidecar from an older archline)."""
        period, speed, poll = _positive(info.get("update_period_s")), _positive(info.get("speed")), \
            _positive(info.get("poll_s"))
        window, quantum, timed = info.get("window_s"), info.get("quantum_w"), info.get("timed")
        summed = info.get("summed", False)                  # absent from sidecars before issue 35
        if period is None or speed is None or poll is None or not isinstance(timed, bool) \
                or not isinstance(summed, bool):
            return None
        if window is not None and _positive(window) is None:
            return None
        if isinstance(quantum, bool) or not isinstance(quantum, (int, float)) or not (math.isfinite(quantum)
                                                                                      and quantum >= 0):
            return None
        used = info.get("window_readings")
        used = used if isinstance(used, int) and not isinstance(used, bool) and used > 0 else None
        return cls(period, speed, poll, None if window is None else float(window), float(quantum), timed, summed,
                   used)


@dataclass
class WindowEnergy:
    energy_j: float
    err_j: float
    mean_power_w: float
    n: int
    gaps: int
    lost: int
    lost_s: float
    expected: int
    warnings: list[str] = field(default_factory=list)


def _positive(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (math.isfinite(v) and v > 0):
        return None
    return float(v)


def _cum(t: np.ndarray, e: np.ndarray, x: float) -> float:
    """Cumulative energy at host time x, held at the last reading beyond the breakpoints."""
    if x >= t[-1]:
        w_last = (e[-1] - e[-2]) / (t[-1] - t[-2]) if t.size > 1 else 0.0
        return float(e[-1] + w_last * (x - t[-1]))
    if x <= t[0]:
        w_first = (e[1] - e[0]) / (t[1] - t[0]) if t.size > 1 else 0.0
        return float(e[0] - w_first * (t[0] - x))
    return float(np.interp(x, t, e))


def window_energy(t: np.ndarray, e: np.ndarray, t0_s: float, t1_s: float, terms: BoundTerms, failed: int = 0,
                  last_failure: str = "") -> WindowEnergy:
    """Energy of the window [t0_s, t1_s] (host seconds) from the breakpoints ``t`` of the readings' cumulative
    energy ``e`` (device joules; reading k covers (t[k], t[k+1]]), and its bound: at each edge the straddling
    reading's power may sit anywhere in its period, watts are quantised, a BMC averaging less than its period misses
    part of each, a window shorter than a period is bounded by its whole energy, stretches without a fresh reading
    cost their length times the largest power seen."""
    speed, period_s = terms.speed, terms.period_s
    if terms.readings is not None and terms.readings + 1 < t.size and t[terms.readings] >= t1_s:
        t, e = t[:terms.readings + 1], e[:terms.readings + 1]     # as the recording saw them
    energy = _cum(t, e, t1_s) - _cum(t, e, t0_s)
    dur_host = t1_s - t0_s
    dur = dur_host * speed
    w = np.diff(e) / np.diff(t) / speed            # reading k on (t[k], t[k+1]]
    # the readings that cover the window (and one each side: an edge's power may belong to either)
    k0 = int(np.clip(np.searchsorted(t, t0_s) - 1, 0, w.size - 1))
    k1 = int(np.clip(np.searchsorted(t, t1_s), 0, w.size - 1))
    near = w[max(k0 - 1, 0): k1 + 2]
    max_w = float(np.abs(near).max()) if near.size else 0.0

    def edge_spread(k: int) -> float:
        around = w[max(k - 1, 0): k + 2]
        return float(around.max() - around.min())
    warnings: list[str] = []
    u_host = terms.poll_s                                  # where a reading appeared, to within a poll
    # each edge: the straddling reading's power may sit anywhere in its period, and it appeared within a poll
    err = (period_s + u_host) * speed * (edge_spread(k0) + edge_spread(k1))
    err += 0.5 * max(terms.quantum_w, RESOLUTION_W) * dur
    inside = (t[1:] > t0_s) & (t[:-1] < t1_s)
    if terms.window_s is not None and terms.window_s < terms.update_period_s:
        # part of each period the BMC never averaged: a change there is seen only by the next reading
        unseen = (1 - terms.window_s / terms.update_period_s) * period_s * speed
        err += unseen * sum(edge_spread(int(k)) for k in np.flatnonzero(inside))
    if dur_host < period_s:
        warnings.append(f"the window ({dur:.3g} s) is shorter than the BMC's update period "
                        f"({terms.update_period_s:.3g} s): one averaged reading cannot say where inside it "
                        "the energy went; the bound is the whole energy (use a longer window or another meter)")
        err = max(err, max_w * dur)
    uncovered = max(0.0, t1_s - float(t[-1])) + max(0.0, float(t[0]) - t0_s)
    if uncovered > 0:
        warnings.append(f"no reading covers {uncovered * speed:.3g} s of the window; "
                        "the nearest reading was held there")
        err += max_w * uncovered * speed
    # lost readings: stretches between consecutive readings longer than 1.5 periods; the readings missing from one
    # lie before its last period (the next reading covers that), and only those inside the window are the
    # window's: a stretch running past an edge (a BMC that restarted) loses at most the window's share
    gaps_dt = np.diff(t)[inside]
    big = gaps_dt > 1.5 * period_s
    lost, lost_s, n_gaps = 0, 0.0, 0
    for k in np.flatnonzero(inside)[big]:
        miss = min(float(t[k + 1]) - period_s, t1_s) - max(float(t[k]), t0_s)
        n_miss = round(miss / period_s) if miss > 0 else 0
        if n_miss:
            lost += n_miss
            lost_s = max(lost_s, miss * speed)
            n_gaps += 1
    # no reading covers the window's end (the meter waited a period past it: a ReadingTime that stopped moving, or a
    # BMC whose polls failed) or its start: each period of the window there is a reading never shown. Without a
    # ReadingTime and with every poll answered, a late end is the host's delay, not a loss (the bound covers it)
    shown = terms.timed or failed > 0
    stale_s = t1_s - max(float(t[-1]), t0_s)
    stale = round(stale_s / period_s) if stale_s > 0 and shown else 0
    head_s = min(float(t[0]), t1_s) - t0_s
    head = round(head_s / period_s) if head_s > 0 and shown else 0
    for n_lost, span_s in ((stale, stale_s), (head, head_s)):
        if n_lost:
            lost += n_lost
            lost_s = max(lost_s, span_s * speed)
            n_gaps += 1
    if not terms.timed:   # no ReadingTime: each change of value is placed to within a poll (a sum's: a period)
        dw = np.abs(np.diff(w))[inside[1:] & inside[:-1]] if w.size > 1 else np.zeros(0)
        err += (period_s if terms.summed else u_host) * speed * float(dw.sum())
    if big.any():
        # a stretch without a fresh reading beyond one period: the power there may have been anything the node
        # draws (docs/errors.md), from zero to the most seen, so the stretch (clipped to the window) costs its
        # length times the largest power seen, as the sampling meters' lost stretches do
        kk = np.flatnonzero(inside)[big]
        w_top = max(float(np.abs(w).max()), max_w)
        for k in kk:
            span = min(float(t[k + 1]), t1_s) - max(float(t[k]), t0_s)
            err += max(0.0, min(span, float(t[k + 1] - t[k]) - period_s)) * speed * w_top
    n = int(np.count_nonzero(inside))
    expected = max(1, round(dur_host / period_s))
    lost, lost_s = min(lost, expected), min(lost_s, dur)      # rounding per stretch: never more than the window
    if lost:
        warnings.append(f"{lost} BMC reading(s) never shown (stale or unanswered), up to "
                        f"{lost_s:.3g} s; the next reading was spread over the gap")
    if failed:
        warnings.append(f"{failed} poll(s) inside the window failed ({last_failure}; the sidecar's polls and "
                        "failed_polls count the whole recording)")
    mean = energy / dur if dur > 0 else float("nan")
    return WindowEnergy(energy, err, mean, n, n_gaps, lost, lost_s, expected, warnings)


def breakpoints(s: Samples, terms: BoundTerms) -> tuple[np.ndarray, np.ndarray]:
    """A BMC trace's rows back to the breakpoints and cumulative energy the live meter integrated: each row is a
    reading at the middle of the span it covers (:meth:`CounterMeter._samples`), the first span one period long,
    so each span's end is twice its middle less its start."""
    order = np.argsort(s.t_s, kind="stable")
    tm, p = s.t_s[order].astype(np.float64), s.power_w[order].astype(np.float64)
    t = np.empty(tm.size + 1)
    t[0] = tm[0] - 0.5 * terms.period_s
    for k in range(tm.size):
        t[k + 1] = 2.0 * tm[k] - t[k]
    e = np.concatenate([[0.0], np.cumsum(p * np.diff(t))])
    return t, e
