"""Energy from power samples: trapezoid inside [t0, t1], partial samples at the edges, an error bound.

Inside the region, power is interpolated linearly at ``t0`` and ``t1`` from the neighbouring samples (the
partial samples at the edges). The error bound adds, per interval, half the power swing times the interval
(the distance from the trapezoid to either rectangle: the sample period × power swing of DESIGN.md §5), the
same for an edge with no sample beyond it (held constant there), and, when given, the per-sample
measurement bound (e.g. half an ADC step) times the duration.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from archline.powermon.errors import MeterError
from archline.powermon.record.samples import Samples

F64 = npt.NDArray[np.float64]


@dataclass
class ChannelEnergy:
    energy_j: float
    energy_err_j: float
    mean_power_w: float
    n_samples: int
    duration_s: float
    gaps: int = 0
    lost_samples: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def integrate_series(t_s: F64, power_w: F64, t0_s: float | None = None, t1_s: float | None = None,
                     power_err_w: F64 | None = None, period_s: float | None = None) -> ChannelEnergy:
    """Energy of one channel's samples (sorted by time) over [t0_s, t1_s] (default: first to last sample)."""
    t = np.asarray(t_s, dtype=np.float64)
    p = np.asarray(power_w, dtype=np.float64)
    if t.size == 0:
        return ChannelEnergy(0.0, 0.0, float("nan"), 0, 0.0)
    a = float(t[0]) if t0_s is None else float(t0_s)
    b = float(t[-1]) if t1_s is None else float(t1_s)
    if b < a:
        raise MeterError(f"region ends before it starts ({a} > {b})")
    duration = b - a
    if t.size == 1 or duration == 0.0:
        e = float(p[0]) * duration if t.size == 1 else float(np.interp(a, t, p)) * duration
        return ChannelEnergy(e, abs(e), float(p.mean()), int(np.count_nonzero((t >= a) & (t <= b))), duration)
    inside = np.flatnonzero((t > a) & (t < b))
    pa = float(np.interp(a, t, p))
    pb = float(np.interp(b, t, p))
    tt = np.concatenate([[a], t[inside], [b]])
    pp = np.concatenate([[pa], p[inside], [pb]])
    dt = np.diff(tt)
    energy = float(np.sum(0.5 * (pp[1:] + pp[:-1]) * dt))
    err = float(np.sum(0.5 * np.abs(np.diff(pp)) * dt))
    swing = float(p.max() - p.min()) if p.size > 1 else abs(float(p[0]))
    if a < t[0]:
        err += (t[0] - a) * swing
    if b > t[-1]:
        err += (b - t[-1]) * swing
    if power_err_w is not None:
        pe = np.asarray(power_err_w, dtype=np.float64)
        err += float(np.interp(0.5 * (a + b), t, pe)) * duration if inside.size == 0 else \
            float(np.mean(pe[inside])) * duration
    gaps = lost = 0
    if period_s is None and t.size > 2:
        period_s = float(np.median(np.diff(t)))
    if period_s:
        steps = np.diff(t[(t >= a - period_s) & (t <= b + period_s)]) / period_s
        big = steps > 1.5
        gaps = int(np.count_nonzero(big))
        lost = int(np.sum(np.rint(steps[big]) - 1)) if gaps else 0
    return ChannelEnergy(energy, err, energy / duration, int(np.count_nonzero((t >= a) & (t <= b))), duration,
                         gaps, lost)


@dataclass
class Integration:
    channels: dict[str, ChannelEnergy]
    total_energy_j: float
    energy_err_j: float
    duration_s: float
    overflows: int | None
    gaps: int
    t_start_s: float
    t_end_s: float
    emulated: bool = False

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "channels": {k: {"energy_j": c.energy_j, "energy_err_j": c.energy_err_j,
                             "mean_power_w": c.mean_power_w, "n_samples": c.n_samples}
                         for k, c in self.channels.items()},
            "total_energy_j": self.total_energy_j, "energy_err_j": self.energy_err_j,
            "duration_s": self.duration_s, "overflows": self.overflows, "gaps": self.gaps,
            "t_start_s": self.t_start_s, "t_end_s": self.t_end_s,
        }
        if self.emulated:
            out["emulated"] = True
        return out


def integrate_samples(samples: Samples, t0_s: float | None = None, t1_s: float | None = None,
                      overflows: int | None = None, gaps: int | None = None,
                      power_err_w: F64 | None = None, period_s: float | None = None) -> Integration:
    """Energy per channel and in total over a common region (default: the span every channel covers)."""
    if len(samples) == 0:
        raise MeterError("no samples to integrate")
    valid = samples.valid if samples.valid is not None else np.ones(len(samples), bool)
    order = np.lexsort((samples.t_s, samples.channel))
    ch_sorted = samples.channel[order]
    chans, starts = np.unique(ch_sorted, return_index=True)
    bounds = [*starts.tolist(), len(order)]
    groups = {int(c): order[bounds[k]:bounds[k + 1]] for k, c in enumerate(chans)}
    groups = {c: g[valid[g]] for c, g in groups.items()}
    groups = {c: g for c, g in groups.items() if g.size}
    if not groups:
        raise MeterError("every sample is a failed sensor read: nothing to integrate")
    a = max(float(samples.t_s[g[0]]) for g in groups.values()) if t0_s is None else t0_s
    b = min(float(samples.t_s[g[-1]]) for g in groups.values()) if t1_s is None else t1_s
    if b < a:
        raise MeterError("the channels' samples do not overlap in time")
    res: dict[str, ChannelEnergy] = {}
    for c, g in groups.items():
        res[str(c)] = integrate_series(samples.t_s[g], samples.power_w[g], a, b,
                                       None if power_err_w is None else power_err_w[g], period_s)
    total = sum(r.energy_j for r in res.values())
    err = sum(r.energy_err_j for r in res.values())
    found_gaps = max((r.gaps for r in res.values()), default=0)
    return Integration(res, total, err, b - a, overflows, max(found_gaps, gaps or 0), a, b, samples.emulated)
