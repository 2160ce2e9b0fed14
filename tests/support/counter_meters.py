"""An emulated counter device (hwmon or AMD SMI) with archline's real reader on a given clock, for bound tests."""

from __future__ import annotations

from typing import Any

from archline.powermon.counters import amdsmi, hwmon
from archline.powermon.counters.base import CounterMeter
from archline.powermon.counters.emulated import SensorEnergy, Timeline, device_power


class FakeClock:
    """A host clock the test moves by hand (``clock.t += dt``)."""

    def __init__(self, t: float = 100.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def emulated_counter(kind: str, src: Any, clock: Any) -> tuple[CounterMeter, Timeline]:
    """The kind's emulated device playing ``src`` and its real reader on ``clock`` (nothing polls on its own: no
    thread)."""
    timeline = Timeline(1.0, clock=clock)
    if kind == "hwmon":
        sensor = hwmon.DEFAULT_SENSOR
        tree = hwmon.EmulatedHwmon(SensorEnergy(sensor, device_power(src, [0], timeline)), timeline)
        m: CounterMeter = hwmon.EmulatedHwmonMeter(tree, sensor, clock=clock)
    else:
        sensor = amdsmi.DEFAULT_SENSOR
        lib = amdsmi.EmulatedAmdSmi(SensorEnergy(sensor, device_power(src, [0], timeline)), timeline)
        m = amdsmi.AmdSmiMeter(0, lib=lib, clock=clock, readings=False)
        m.emulated, m.latched_at_read_start = True, True
        m.update_hz = 1.0 / sensor.update_period_s          # type: ignore[attr-defined]
    return m, timeline
