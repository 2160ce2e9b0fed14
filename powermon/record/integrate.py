"""Energy from power samples: trapezoid inside [t0, t1], partial samples at the edges, an error bound.

Inside the region, power is interpolated linearly at ``t0`` and ``t1`` from the neighbouring samples (the
partial samples at the edges). The error bound adds, per interval, half the power swing times the interval
(the distance from the trapezoid to either rectangle: the sample period × power swing of docs/design.md §5) and, when
given, the per-sample measurement bound (e.g. half an ADC step) times the duration.

Lost samples are never silent: a hole in the cadence (longer than 1.5 sample periods) or an edge of the region with
no sample near it is counted (``gaps``, ``lost_samples``, ``lost_s``) and widens the bound by its length times the
larger of the channel's power swing and its mean power, i.e. the power there may have been anything from zero to
twice what was seen. An offline integration (:func:`integrate_samples`) is done only where there is data: a window
outside the samples, too few samples, or NaN or negative power is an error naming it.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from archline.formats.meters.samples import Samples
from archline.formats.meters.samples_file import check_power
from archline.formats.meters.sensor_profile import SensorLimits as SensorLimits  # the profile's limits
from archline.powermon.errors import MeterError

F64 = npt.NDArray[np.float64]


def sensor_window(t0_s: float, t1_s: float, limits: SensorLimits, *, widen: bool = False,
                  scale: float = 1.0) -> tuple[float, float, str]:
    """The window to integrate on a sensor (``scale``: device seconds per second of t0_s/t1_s): unchanged when long
    enough (reason ''), else widened evenly about its middle to the sensor's shortest (``widen``), else refused."""
    need = limits.min_window_s / scale
    have = t1_s - t0_s
    if have >= need * (1 - 1e-9):
        return t0_s, t1_s, ""
    if not widen:
        raise MeterError(f"window of {have * scale:.4g} s is shorter than the sensor allows ({limits.why()}); "
                         f"make it last at least {limits.min_window_s:.4g} s (a measured command: loop its work "
                         "inside the phase or run, or time a larger input), or drop the meter's sensor_profile "
                         "line from the platform profile's [[meters]] to integrate without the sensor's limits "
                         "(its bound then leaves them out)")
    mid = 0.5 * (t0_s + t1_s)
    return mid - 0.5 * need, mid + 0.5 * need, (f"window widened from {have * scale:.4g} s to "
                                                f"{need * scale:.4g} s: {limits.why()}")


@dataclass
class ChannelEnergy:
    energy_j: float
    energy_err_j: float
    mean_power_w: float
    n_samples: int
    duration_s: float
    gaps: int = 0
    lost_samples: int = 0
    lost_s: float = 0.0

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
        raise MeterError(f"region ends before it starts ({a:g} > {b:g})")
    duration = b - a
    if period_s is None and t.size > 2:
        period_s = float(np.median(np.diff(t)))
    swing = float(p.max() - p.min()) if p.size > 1 else 0.0
    blind_w = max(swing, abs(float(p.mean())))         # what a lost stretch may have drawn, either way
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
    if power_err_w is not None:
        pe = np.asarray(power_err_w, dtype=np.float64)
        err += float(np.interp(0.5 * (a + b), t, pe)) * duration if inside.size == 0 else \
            float(np.mean(pe[inside])) * duration
    gaps = lost = 0
    lost_s = 0.0
    if period_s:
        near = t[(t >= a - period_s) & (t <= b + period_s)]
        # inside: a step of k periods between samples lost k - 1 of them; an edge of the region a period or more
        # from the nearest sample lost the samples that fit in that stretch
        steps = np.diff(near) if near.size > 1 else np.zeros(0)
        steps = steps[steps > 1.5 * period_s]
        edges = np.array([(near[0] if near.size else b) - a, b - (near[-1] if near.size else a)])
        edges = np.minimum(edges[edges >= period_s * (1 - 1e-6)], duration)
        gaps = int(steps.size + edges.size)
        lost = int(np.sum(np.rint(steps / period_s) - 1) + np.sum(np.floor(edges / period_s + 1e-6)))
        lost_s = float(np.sum(np.minimum(steps - period_s, duration)) + np.sum(edges))
        err += lost_s * blind_w
    else:
        err += (max(t[0] - a, 0.0) + max(b - t[-1], 0.0)) * blind_w
    # a sample on an edge counts whichever way the trace rounded its time (a CSV keeps 10 ns: the first sample fell
    # 3 ns before the recorded window and integrate counted 2000 where record counted 2001)
    eps = 1e-3 * period_s if period_s else 0.0
    return ChannelEnergy(energy, err, energy / duration, int(np.count_nonzero((t >= a - eps) & (t <= b + eps))),
                         duration, gaps, lost, lost_s)


@dataclass
class Integration:
    channels: dict[str, ChannelEnergy]
    total_energy_j: float
    energy_err_j: float
    duration_s: float                  #: on the device's timeline (emulated seconds under time compression)
    overflows: int | None
    gaps: int
    t_start_s: float                   #: the window, in the file's t_s
    t_end_s: float
    emulated: bool = False
    lost_samples: int = 0
    lost_s: float = 0.0
    time_compression: float = 1.0      #: device seconds per t_s second (an emulator running faster)
    warnings: list[str] = field(default_factory=list)
    expected_samples: int = 0          #: what the cadence promises in the window, all channels (0: unknown)

    @property
    def lost_share(self) -> float:
        """Lost samples over the samples the window should hold (what arrived plus what is missing when the
        cadence is not known), as :attr:`MeterRegion.lost_share` has it for a live window."""
        expected = self.expected_samples or (sum(c.n_samples for c in self.channels.values()) + self.lost_samples)
        return self.lost_samples / expected if expected else 0.0

    def loss_text(self) -> str:
        """``lost 19 of 20 samples (95%, 0.15 s) in 3 gap(s)`` ('' when nothing was lost)."""
        if not self.lost_samples:
            return ""
        expected = self.expected_samples or (sum(c.n_samples for c in self.channels.values()) + self.lost_samples)
        return (f"lost {self.lost_samples} of {expected} samples ({100 * self.lost_share:.3g}%, "
                f"{self.lost_s:.3g} s) in {self.gaps} gap(s)")

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "channels": {k: {"energy_j": c.energy_j, "energy_err_j": c.energy_err_j,
                             "mean_power_w": c.mean_power_w, "n_samples": c.n_samples,
                             "lost_samples": c.lost_samples}
                         for k, c in self.channels.items()},
            "total_energy_j": self.total_energy_j, "energy_err_j": self.energy_err_j,
            "duration_s": self.duration_s, "overflows": self.overflows, "gaps": self.gaps,
            "lost_samples": self.lost_samples, "lost_s": self.lost_s, "lost_share": self.lost_share,
            "t_start_s": self.t_start_s, "t_end_s": self.t_end_s,
        }
        if self.time_compression != 1.0:
            out["time_compression"] = self.time_compression
        if self.warnings:
            out["warnings"] = list(self.warnings)
        if self.emulated:
            out["emulated"] = True
        return out


def integrate_samples(samples: Samples, t0_s: float | None = None, t1_s: float | None = None,
                      overflows: int | None = None, gaps: int | None = None,
                      power_err_w: F64 | None = None, period_s: float | None = None, *, min_samples: int = 2,
                      time_compression: float = 1.0) -> Integration:
    """Energy per channel and in total over a common region (default: the span every channel covers), only where
    there is data: the window must lie within every channel's samples (give or take a sample period) and hold at
    least ``min_samples`` of each; NaN or negative power is an error. ``time_compression`` (device seconds per
    second of ``t_s``) puts the integral on the device's timeline, as the recorder does."""
    if len(samples) == 0:
        raise MeterError("no samples to integrate")
    check_power(samples)
    if float(samples.t_s.max()) == float(samples.t_s.min()):
        raise MeterError(f"all {len(samples)} sample(s) are at one time (t_s {float(samples.t_s[0]):.9g} s): there is "
                         "no duration to integrate over (a file whose times were lost or overwritten?)")
    if not (math.isfinite(time_compression) and time_compression > 0):
        raise MeterError(f"time compression must be a positive number, got {time_compression:g}")
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
    first = {c: float(samples.t_s[g[0]]) for c, g in groups.items()}
    last = {c: float(samples.t_s[g[-1]]) for c, g in groups.items()}
    a = max(first.values()) if t0_s is None else float(t0_s)
    b = min(last.values()) if t1_s is None else float(t1_s)
    if not (math.isfinite(a) and math.isfinite(b)):
        raise MeterError(f"the window [{a:g}, {b:g}] s is not finite")
    if b < a:
        if t0_s is None and t1_s is None:
            raise MeterError("the channels' samples do not overlap in time")
        raise MeterError(f"the window ends before it starts ({a:g} > {b:g} s)")
    # the window must lie within the samples (give or take a period); a channel whose edge samples were lost is
    # a loss inside the window (counted below), not a window outside the data
    periods = [float(np.median(np.diff(samples.t_s[g]))) for g in groups.values() if g.size > 2]
    tol = max(periods, default=0.0)
    lo, hi = min(first.values()), max(last.values())
    if a < lo - tol or b > hi + tol:
        raise MeterError(f"the window [{a:g}, {b:g}] s reaches outside the samples ([{lo:g}, {hi:g}] s): "
                         "integrate only where there is data")
    res: dict[str, ChannelEnergy] = {}
    k = time_compression
    for c, g in groups.items():
        r = integrate_series(samples.t_s[g] * k, samples.power_w[g], a * k, b * k,
                             None if power_err_w is None else power_err_w[g], None if period_s is None else
                             period_s * k)
        if r.n_samples < min_samples:
            raise MeterError(f"only {r.n_samples} sample(s) of channel {c} in the window [{a:g}, {b:g}] s "
                             f"(need {min_samples}; --min-samples 0 integrates anyway)")
        res[str(c)] = r
    total = sum(r.energy_j for r in res.values())
    err = sum(r.energy_err_j for r in res.values())
    found_gaps = max((r.gaps for r in res.values()), default=0)
    lost = sum(r.lost_samples for r in res.values())
    lost_s = max((r.lost_s for r in res.values()), default=0.0)
    warnings = []
    if lost:
        warnings.append(f"{lost} sample(s) missing in {found_gaps} gap(s) ({lost_s:.4g} s); the error bound covers "
                        "them")
    # the cadence promises one sample a period per channel over the window (as a live window counts its events)
    expected = (len(res) * (math.floor((b - a) / period_s + 1e-6) + 1)) if period_s else 0
    return Integration(res, total, err, (b - a) * k, overflows, max(found_gaps, gaps or 0), a, b,
                       bool(samples.emulated), lost, lost_s, k, warnings, expected)
