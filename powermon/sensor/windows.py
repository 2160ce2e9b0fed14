"""A window shorter than a profiled sensor can measure (``sensor_profile`` in a ``[[meters]]`` entry): the
strictest sensor among a recorder's meters (:func:`strictest_sensor`: what ``bench run`` sizes its windows by,
bench/run/sensor_windows.py), and a run's or phase's window widened to its shortest window about its middle, said
so in the window's warnings (``archline measure``, :mod:`archline.bench.measure.run`)."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from archline.powermon.record.meters import Meter
from archline.powermon.record.recorder import Recorder
from archline.powermon.record.windows import Measurement


@dataclass(frozen=True)
class Sensor:
    """The strictest sensor profile among a recorder's meters: its shortest window in host seconds."""
    meter: str
    limits: Any                 #: powermon.record.integrate.SensorLimits
    speed: float                #: device seconds per host second

    @property
    def need_s(self) -> float:
        return float(self.limits.min_window_s) / self.speed


def strictest_sensor(meters: Sequence[Meter]) -> Sensor | None:
    """A meter held to a sensor profile (``sensor_profile`` in its [[meters]] entry; a calibrated one passes its
    limits through) refuses a window shorter than the sensor allows: the longest such minimum, or None."""
    from archline.powermon.record.integrate import SensorLimits

    best: Sensor | None = None
    for m in meters:
        lim = getattr(m, "limits", None)
        if not isinstance(lim, SensorLimits):
            continue
        s = Sensor(m.name, lim, float(getattr(m, "speed", 1.0) or 1.0))
        if best is None or s.need_s > best.need_s:
            best = s
    return best


def round_up(x: float) -> str:
    return f"{math.ceil(x * 100) / 100:g}"


def is_short(t0: float, t1: float, sensor: Sensor | None) -> bool:
    return sensor is not None and (t1 - t0) < sensor.need_s * (1 - 1e-9)


def widen(t0: float, t1: float, sensor: Sensor, floor: float) -> tuple[float, float]:
    """The sensor's shortest window about [t0, t1]'s middle (moved later where it would begin before ``floor``),
    waited for until its end has passed, so that the meter has read all of it."""
    need = sensor.need_s * (1 + 1e-6)
    a = max(0.5 * (t0 + t1) - 0.5 * need, floor)
    b = a + need
    wait = b - time.monotonic()
    if wait > 0:
        time.sleep(wait)
    return a, b


def end_run(mon: Recorder, name: str, t0: float, sensor: Sensor | None, floor: float
            ) -> tuple[Measurement, tuple[float, float] | None]:
    """The run's window; a run shorter than a profiled sensor's shortest window (known only once the command has
    run) is measured over a window widened to that length about its middle (the measurement the user paid for
    is kept, said so in its warnings), and the asked edges are returned with it."""
    t1 = time.monotonic()
    if sensor is None or not is_short(t0, t1, sensor):
        return mon.end_window(name), None
    a, b = widen(t0, t1, sensor, floor)
    return mon.end_window(name, t0_s=a, t1_s=b), (t0, t1)    # the trace's marks say the widened edges


def between(mon: Recorder, name: str, t0: float, t1: float, sensor: Sensor | None, floor: float
            ) -> tuple[Measurement, tuple[float, float] | None]:
    """A phase's window (marked by the command), widened as a run's is when the sensor cannot measure it."""
    if sensor is None or not is_short(t0, t1, sensor):
        return mon.window_between(name, t0, t1), None
    a, b = widen(t0, t1, sensor, floor)
    return mon.window_between(name, a, b), (t0, t1)


def widened_note(name: str, have_s: float, got_s: float, sensor: Sensor) -> str:
    return (f"{name}: lasted {have_s:.4g} s, shorter than meter '{sensor.meter}' can measure "
            f"({sensor.limits.why()}); measured over a window widened to {got_s:.4g} s about it (its energy_j, "
            f"mean_power_w and truth include {max(got_s - have_s, 0.0):.4g} s before and after it: with "
            "--baseline-s and --subtract-idle, above_idle_j is its energy above idle); make it last at least "
            f"{round_up(sensor.need_s)} s to measure it alone")


