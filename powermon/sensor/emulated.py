"""An emulated on-board sensor (labelled emulated) as a recorder meter: the readings a
:class:`~archline.powermon.emulator.sensor.SensorModel` makes of the power an emulated PowerMon 2 plays, on that
emulator's timeline, so that ``meter probe`` and ``meter calibrate`` can measure it against the PowerMon 2 and
recover what it was given.

The sensor shares the reference's device core: device time is the core's emulated time, host time its
``host_time_s``, and the power is the same :class:`PowerSource` summed over the meter's channels. Its readings are
computed when asked (each is a pure function of the power history), so it needs no thread.

A region integrates the readings as they were held (a reading stands until the next), as a driver of a real sensor
would: the sensor's limits, delay and calibration are applied by the wrappers of :mod:`archline.powermon.sensor.apply`
(what a ``[[meters]]`` entry's ``sensor_profile`` and ``calibration`` ask for), as for any other meter.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from archline.formats.meters.samples import Samples
from archline.powermon.errors import DeviceError
from archline.powermon.record.meters import ChannelResult, DeviceResult, MeterRegion

F64 = npt.NDArray[np.float64]


class ReadingModel(Protocol):
    update_period_s: float

    def readings(self, power_w: Callable[[F64], F64], t0_s: float, t1_s: float) -> tuple[F64, F64]: ...


class EmulatedSensorMeter:
    kind = "sampling"
    emulated = True

    def __init__(self, name: str, model: ReadingModel, power: Any, channels: Sequence[int], core: Any, *,
                 device: str = "device") -> None:
        self.name = name
        self.model = model
        self.power = power
        self.channels = list(channels)
        self.core = core
        self.device = device
        self.error: Exception | None = None
        self._running = False

    # the shared timeline --------------------------------------------------------------------------------
    @property
    def speed(self) -> float:
        return float(self.core.speed)

    @property
    def update_hz(self) -> float:
        return 1.0 / self.model.update_period_s

    def power_w(self, t_dev_s: F64) -> F64:
        """True power (W) at device times: the reference's channels summed."""
        t = np.atleast_1d(np.asarray(t_dev_s, dtype=np.float64))
        volts, amps = self.power.sample(t, self.channels)
        return np.asarray((volts * amps).sum(axis=1), dtype=np.float64)

    def to_device_s(self, t_host_s: float) -> float:
        return (t_host_s - float(self.core.host_time_s(0.0))) * self.speed

    def _now_dev_s(self) -> float:
        return float(self.core.emulated_time_s())

    def _readings(self, d0: float, d1: float) -> tuple[F64, F64]:
        t, v = self.model.readings(self.power_w, max(d0, 0.0), d1)
        return np.asarray(t, dtype=np.float64), np.asarray(v, dtype=np.float64)

    # the recorder meter ---------------------------------------------------------------------------------
    def start(self) -> None:
        if not self.core.streaming:
            raise DeviceError(f"{self.name}: the emulated sensor follows the reference meter's emulator, which is "
                              "not streaming: start the reference first")
        self._running = True

    def stop(self) -> None:
        self._running = False

    def mark(self, t_s: float) -> None:
        pass

    def wait_until(self, t_s: float, timeout_s: float = 2.0) -> bool:
        """True once the device clock is past ``t_s`` plus a reading (readings are computed, never late)."""
        import time

        need = self.to_device_s(t_s) + self.model.update_period_s
        end = time.monotonic() + timeout_s
        while self._now_dev_s() < need:
            if time.monotonic() > end:
                return False
            time.sleep(min(0.01, max((need - self._now_dev_s()) / self.speed, 0.0)))
        return True

    def samples(self) -> Samples:
        t, v = self._readings(0.0, self._now_dev_s())
        return self._as_samples(t, v)

    def _as_samples(self, t_dev: F64, v: F64) -> Samples:
        host = np.asarray(self.core.host_time_s(t_dev), dtype=np.float64)
        ch = np.zeros(t_dev.size, np.int16)
        # one whole-device reading: no volts or amps; power_w is the reading (current_a = power at 1 V)
        return Samples(host, ch, np.ones(t_dev.size), v.copy(), v.copy(), None, self.name, True, "host_monotonic",
                       {"t_dev_s": t_dev})

    def info(self) -> dict[str, Any]:
        m = self.model
        out: dict[str, Any] = {"meter": self.name, "type": "sensor", "emulated": True, "speed": self.speed,
                               "rate_hz": self.update_hz, "rails": {"0": "sensor"},
                               "devices": {self.device: ["sensor"]},
                               "model": {k: getattr(m, k) for k in ("update_period_s", "window_s", "lag_s",
                                                                   "quantum_w", "gain", "offset_w")
                                         if hasattr(m, k)}}
        return out

    def region(self, t0_s: float, t1_s: float) -> MeterRegion:
        d0, d1 = self.to_device_s(t0_s), self.to_device_s(t1_s)
        period = self.model.update_period_s
        t, v = self._readings(d0 - 4 * period, d1 + 4 * period)
        dur = d1 - d0
        warnings: list[str] = []
        if t.size == 0:
            e, err, n = 0.0, 0.0, 0
            warnings.append("no sensor readings in the window")
        else:
            # each reading holds until the next (a step, as the sensor reports it): integrated exactly; the hold
            # may be off by the swing over a period at each edge
            e = hold_energy_j(t, v, d0, d1)
            err = float(np.ptp(v)) * period
            n = int(np.count_nonzero((t >= d0) & (t <= d1)))
        mean = e / dur if dur > 0 else float("nan")
        chans = {"0": ChannelResult(e, err, mean, n, "sensor")}
        devices = {self.device: DeviceResult(e, err, mean, ["sensor"])}
        inside = (t >= d0) & (t <= d1)
        return MeterRegion(self.name, self.kind, True, t0_s, t1_s, chans, devices, e, err, mean, n,
                           self.update_hz, samples=self._as_samples(t[inside], v[inside]), warnings=warnings,
                           device_time_s=dur, device_window_s=(d0, d1))


def hold_energy_j(t_s: F64, value_w: F64, t0_s: float, t1_s: float) -> float:
    """Energy over [t0_s, t1_s] of readings each held until the next (the first one also before it)."""
    edges = np.concatenate([[-np.inf], t_s[1:], [np.inf]])
    lo = np.clip(edges[:-1], t0_s, t1_s)
    hi = np.clip(edges[1:], t0_s, t1_s)
    return float(np.sum(value_w * (hi - lo)))
