"""Meters as the runner sees them: named regions giving time, energy, its bound and the samples inside.

* :class:`TimeOnlyMeter`: no meter; every region has time only, and the reason is stated in every row.
* :class:`ScheduleMeter`: reads an emulated device's power schedule directly at the meter's rate on the device
  clock (no serial line). Used only when the PowerMon 2 emulator cannot be started, and labelled so.
* :class:`RecorderMeter` (in :mod:`archline.bench.runner_powermon`): the real ``powermon`` recorder, over the
  real PowerMon 2 driver (a serial port, or the emulator on a pty for ``--emulate``), RAPL or NVML.

Times and energies are in device seconds and joules: an emulated device with time compression ``c`` runs ``c``
device seconds per host second, and a meter region spanning ``h`` host seconds spans ``c * h`` device seconds.
"""

from __future__ import annotations

import gzip
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

from archline.common.atomic import write_atomic


@dataclass
class RegionEnergy:
    """One closed region: device seconds, joules and the bound, samples inside, mean power."""

    duration_s: float
    energy_j: float | None = None
    energy_err_j: float | None = None
    n_samples: int | None = None
    per_device_j: dict[str, float] = field(default_factory=dict)

    @property
    def power_w(self) -> float | None:
        if self.energy_j is None or self.duration_s <= 0:
            return None
        return self.energy_j / self.duration_s


class RunnerMeter(Protocol):
    name: str
    sample_hz: float | None          # samples per device second per channel (None: no meter)
    emulated: bool
    reason: str                      # what it is, or why there is no energy

    def begin(self, name: str) -> None: ...

    def end(self, name: str, t0_host_s: float | None = None, t1_host_s: float | None = None) -> RegionEnergy:
        """Close a region; explicit host times (the kernel's own start and end) replace the marks when given."""
        ...

    def live_power_w(self) -> float | None: ...

    def save_trace(self, path: Path, t0_host_s: float, t1_host_s: float) -> Path | None: ...

    def close(self) -> None: ...


class TimeOnlyMeter:
    """No energy: regions are timed on the host's monotonic clock only."""

    sample_hz = None
    emulated = False

    def __init__(self, reason: str, clock: Callable[[], float] = time.monotonic, time_scale: float = 1.0) -> None:
        self.name = ""
        self.reason = reason
        self._clock = clock
        self._open: dict[str, float] = {}
        self._scale = time_scale

    def begin(self, name: str) -> None:
        if name in self._open:
            raise ValueError(f"region '{name}' is already open")
        self._open[name] = self._clock()

    def end(self, name: str, t0_host_s: float | None = None, t1_host_s: float | None = None) -> RegionEnergy:
        t0 = self._open.pop(name)
        t1 = self._clock()
        if t0_host_s is not None and t1_host_s is not None:
            t0, t1 = t0_host_s, t1_host_s
        return RegionEnergy(duration_s=(t1 - t0) * self._scale)

    def live_power_w(self) -> float | None:
        return None

    def save_trace(self, path: Path, t0_host_s: float, t1_host_s: float) -> Path | None:
        return None

    def close(self) -> None:
        pass


class ScheduleMeter:
    """Samples an emulated device's power function at ``sample_hz`` device samples per second, exactly on the
    host clock, and integrates by the trapezoid rule with interpolated edges. A stand-in only for when the
    PowerMon 2 emulator is not available; rows name it ``emulated-schedule``."""

    emulated = True

    def __init__(self, power_w_array: Callable[[np.ndarray], np.ndarray], *, time_compression: float,
                 sample_hz: float = 128.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.name = "emulated-schedule"
        self.sample_hz = sample_hz
        self.reason = "emulated device power read directly from the model schedule (no serial meter)"
        self._power = power_w_array
        self._c = time_compression
        self._clock = clock
        self._open: dict[str, float] = {}
        self._origin = clock()

    def _host_period_s(self) -> float:
        return 1.0 / (self.sample_hz * self._c)

    def _samples(self, h0: float, h1: float) -> tuple[np.ndarray, np.ndarray]:
        dt = self._host_period_s()
        k0 = math.floor((h0 - self._origin) / dt)
        k1 = math.ceil((h1 - self._origin) / dt)
        t = self._origin + np.arange(k0, k1 + 1) * dt
        return t, self._power(t)

    def begin(self, name: str) -> None:
        if name in self._open:
            raise ValueError(f"region '{name}' is already open")
        self._open[name] = self._clock()

    def end(self, name: str, t0_host_s: float | None = None, t1_host_s: float | None = None) -> RegionEnergy:
        h0 = self._open.pop(name)
        h1 = self._clock()
        if t0_host_s is not None and t1_host_s is not None:
            h0, h1 = t0_host_s, t1_host_s
        t, p = self._samples(h0, h1)
        # trapezoid over the samples, clipped to [h0, h1] with linear interpolation at the edges
        inner = (t > h0) & (t < h1)
        tt = np.concatenate(([h0], t[inner], [h1]))
        pp = np.interp(tt, t, p)
        energy_host = float(np.sum(0.5 * (pp[1:] + pp[:-1]) * np.diff(tt)))
        swing = float(p.max() - p.min()) if p.size else 0.0
        err_host = self._host_period_s() * swing
        return RegionEnergy(duration_s=(h1 - h0) * self._c, energy_j=energy_host * self._c,
                            energy_err_j=err_host * self._c, n_samples=int(inner.sum()),
                            per_device_j={"device": energy_host * self._c})

    def live_power_w(self) -> float | None:
        return float(self._power(np.array([self._clock()]))[0])

    def save_trace(self, path: Path, t0_host_s: float, t1_host_s: float) -> Path | None:
        t, p = self._samples(t0_host_s, t1_host_s)
        lines = ["t_s,channel,voltage_v,current_a,power_w"]
        lines += [f"{(ti - self._origin) * self._c:.6f},0,12.0,{pi / 12.0:.6f},{pi:.6f}"
                  for ti, pi in zip(t, p, strict=True)]
        return write_atomic(path, gzip.compress(("\n".join(lines) + "\n").encode()))

    def close(self) -> None:
        pass
