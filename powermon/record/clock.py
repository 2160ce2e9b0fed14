"""Mapping a device's own time onto the host monotonic clock.

Each read from the device gives a pair (host time the bytes were in hand, device time of the newest record
in them). The device time is earlier than the host time by the transfer latency (always >= 0), so the lower
envelope of ``host - device / rate`` is the offset; with enough span, a line through per-window minima also
gives the crystal's drift.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class ClockMap:
    offset_s: float            #: host time of device time 0
    seconds_per_device_s: float = 1.0   #: 1 / speed for an emulator running faster than real time
    drift_ppm: float = 0.0
    n_pairs: int = 0

    def to_host(self, t_dev_s: npt.ArrayLike) -> npt.NDArray[np.float64]:
        t = np.asarray(t_dev_s, dtype=np.float64)
        return self.offset_s + t * self.seconds_per_device_s * (1.0 + self.drift_ppm * 1e-6)

    def to_device(self, t_host_s: float) -> float:
        return (t_host_s - self.offset_s) / (self.seconds_per_device_s * (1.0 + self.drift_ppm * 1e-6))


def fit_clock(t_host_s: npt.ArrayLike, t_dev_s: npt.ArrayLike, seconds_per_device_s: float = 1.0,
              min_span_s: float = 60.0, n_windows: int = 10) -> ClockMap | None:
    h = np.asarray(t_host_s, dtype=np.float64)
    d = np.asarray(t_dev_s, dtype=np.float64) * seconds_per_device_s
    if h.size == 0:
        return None
    lag = h - d
    span = float(d.max() - d.min())
    if span >= min_span_s and h.size >= 3 * n_windows:
        edges = np.linspace(d.min(), d.max(), n_windows + 1)
        idx = np.clip(np.searchsorted(edges, d, side="right") - 1, 0, n_windows - 1)
        xs, ys = [], []
        for k in range(n_windows):
            sel = np.flatnonzero(idx == k)
            if sel.size:
                j = sel[np.argmin(lag[sel])]
                xs.append(d[j])
                ys.append(lag[j])
        if len(xs) >= 3:
            slope, _ = np.polyfit(xs, ys, 1)
            # lower envelope: shift the line down to touch the lowest point
            off = float(np.min(lag - slope * d))
            return ClockMap(off, seconds_per_device_s, float(slope) * 1e6, int(h.size))
    return ClockMap(float(lag.min()), seconds_per_device_s, 0.0, int(h.size))
