"""An on-board sensor's behaviour: slow, averaged, lagging, quantised readings (issue 24).

Emulators of slow sensors (BMC, NVML-like, AMD SMI, hwmon) take a SensorModel so that
`meter probe` can recover what they were given. Readings appear on a fixed grid
k * update_period_s; each is the mean true power over [t - lag_s - window_s, t - lag_s].
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

PowerFn = Callable[[NDArray[np.float64]], NDArray[np.float64]]

# Points per window for the mean: a midpoint rule, exact for piecewise-constant power to 1/N of a step.
_POINTS_PER_WINDOW = 256


@dataclass(frozen=True)
class SensorModel:
    update_period_s: float
    window_s: float
    lag_s: float = 0.0
    quantum_w: float = 0.0
    gain: float = 1.0
    offset_w: float = 0.0

    def __post_init__(self) -> None:
        for name in ("update_period_s", "window_s", "lag_s", "quantum_w", "gain", "offset_w"):
            if not math.isfinite(getattr(self, name)):
                raise ValueError(f"SensorModel.{name} must be finite")
        if self.update_period_s <= 0:
            raise ValueError("SensorModel.update_period_s must be > 0")
        if self.window_s < 0 or self.lag_s < 0 or self.quantum_w < 0:
            raise ValueError("SensorModel window_s, lag_s and quantum_w must be >= 0")

    def _values(self, power_w: PowerFn, t_s: NDArray[np.float64]) -> NDArray[np.float64]:
        end = t_s - self.lag_s
        if self.window_s == 0:
            mean = np.asarray(power_w(end), dtype=float)
        else:
            frac = (np.arange(_POINTS_PER_WINDOW) + 0.5) / _POINTS_PER_WINDOW
            pts = end[:, None] - self.window_s + frac[None, :] * self.window_s
            mean = np.asarray(power_w(pts.ravel()), dtype=float).reshape(pts.shape).mean(axis=1)
        out = self.gain * mean + self.offset_w
        if self.quantum_w > 0:
            out = np.round(out / self.quantum_w) * self.quantum_w
        return out

    def readings(
        self, power_w: PowerFn, t0_s: float, t1_s: float
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(times, values) of every reading that appears in [t0_s, t1_s]."""
        k0 = math.ceil(t0_s / self.update_period_s - 1e-9)
        k1 = math.floor(t1_s / self.update_period_s + 1e-9)
        t = np.arange(k0, k1 + 1, dtype=float) * self.update_period_s
        if t.size == 0:
            return t, np.zeros(0)
        return t, self._values(power_w, t)

    def reading_at(self, power_w: PowerFn, t_s: float) -> float:
        """The latest reading visible at host time t_s."""
        k = math.floor(t_s / self.update_period_s + 1e-9)
        return float(self._values(power_w, np.array([k * self.update_period_s]))[0])
