"""What the emulated on-board counters (AMD SMI, hwmon) share: a device timeline on the host clock, and the energy
a slow sensor's readings add up to.

The timeline is the ``core`` a PowerSource binds to (``host_time_s`` maps device to host time, ``speed`` device
seconds per host second), as for the PowerMon 2 emulator. Power reaches the counter through a
:class:`~archline.powermon.emulator.sensor.SensorModel`: a new reading every ``update_period_s``, each the mean
over its window, lagged, quantised, with gain and offset; the accumulator adds each reading times its period, as
firmware that integrates its own power readings does, so ``meter probe`` recovers the model from the counter.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from archline.powermon.emulator.power import PowerCallable, PowerSource, as_power_source
from archline.powermon.emulator.sensor import SensorModel

F64 = npt.NDArray[np.float64]


class Timeline:
    """Device time = (host monotonic - start) x speed, from construction."""

    streaming = True

    def __init__(self, speed: float = 1.0, clock: Callable[[], float] = time.monotonic) -> None:
        if not (math.isfinite(speed) and speed > 0):
            raise ValueError(f"speed must be > 0, got {speed}")
        self.speed, self.clock = speed, clock
        self.t0_host_s = clock()

    def host_time_s(self, t_dev_s: Any) -> Any:
        return self.t0_host_s + np.asarray(t_dev_s, dtype=np.float64) / self.speed

    def emulated_time_s(self) -> float:
        return (self.clock() - self.t0_host_s) * self.speed


def device_power(power: PowerSource | PowerCallable | None, channels: Sequence[int], timeline: Timeline
                 ) -> Callable[[F64], F64]:
    """Watts at device times: ``power`` (bound to ``timeline`` where it binds) summed over ``channels``."""
    src = as_power_source(power)
    bind = getattr(src, "bind", None)
    if callable(bind):
        bind(timeline)
    ch = list(channels)

    def power_w(t_dev_s: F64) -> F64:
        t = np.atleast_1d(np.asarray(t_dev_s, dtype=np.float64))
        volts, amps = src.sample(t, ch)
        return np.asarray((np.asarray(volts) * np.asarray(amps)).sum(axis=1), dtype=np.float64)

    return power_w


class SensorEnergy:
    """The energy (J) an accumulator holds at device time t: every sensor reading up to t, each held for one
    update period. Computed on demand, thread-safe, incremental (each reading is evaluated once)."""

    def __init__(self, model: SensorModel, power_w: Callable[[F64], F64]) -> None:
        self.model, self.power_w = model, power_w
        self._lock = threading.Lock()
        self._t_done = -math.inf     # readings up to here are in _energy_j
        self._energy_j = 0.0
        self._last_w = 0.0

    def energy_j(self, t_dev_s: float) -> float:
        with self._lock:
            if t_dev_s > self._t_done:
                lo = 0.0 if self._t_done == -math.inf else self._t_done + 0.5 * self.model.update_period_s
                t, v = self.model.readings(self.power_w, lo, t_dev_s)
                if t.size:
                    v = np.maximum(v, 0.0)           # an accumulator never runs backwards
                    self._energy_j += float(v.sum()) * self.model.update_period_s
                    self._last_w = float(v[-1])
                    self._t_done = float(t[-1])
            return self._energy_j

    def power_now_w(self, t_dev_s: float) -> float:
        """The latest reading visible at ``t_dev_s`` (what an instant-power query returns)."""
        return max(self.model.reading_at(self.power_w, t_dev_s), 0.0)
