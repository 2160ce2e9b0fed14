"""A BMC's power reading and the values it is made of (Redfish's and DCMI's clients both return one): watts a
node can draw, a Sensor's units, Redfish Durations and DateTimes. A value no meter can read is refused, never
integrated."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from archline.powermon.errors import DeviceError


class BmcUnavailable(DeviceError):
    """The BMC answered 5xx or did not answer in time: one lost poll, not a dead meter."""



@dataclass(frozen=True)
class PowerReading:
    power_w: float
    reading_time_s: float | None = None     #: the BMC's ReadingTime (seconds since the epoch), where it gives one
    average_w: float | None = None          #: PowerMetrics.AverageConsumedWatts over interval_min
    interval_min: float | None = None


_ISO_DURATION = re.compile(r"^P(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?"
                           r"(?:(\d+(?:\.\d+)?)S)?)?$")


MAX_POWER_W = 1e6     #: no node a BMC meters draws a megawatt: a larger reading is a broken sensor, not power


def watts(value: Any, where: str) -> float:
    """A BMC's power field as watts; BmcUnavailable when null (the host may be off: one lost poll), DeviceError
    (exit 4, the meter misbehaves) for anything no meter can read (text, NaN, infinity, negative, above 1 MW), saying
    what was there: such a reading is never integrated."""
    if value is None:
        raise BmcUnavailable(f"{where} is null (host off?)")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise DeviceError(f"{where} is {json.dumps(value)[:60]}, not a number of watts: the BMC misbehaves")
    w = float(value)
    if not (math.isfinite(w) and 0 <= w <= MAX_POWER_W):
        raise DeviceError(f"{where} is {w:g} W, not a power a node can draw (0 to {MAX_POWER_W:g} W): "
                          "the BMC misbehaves")
    return w


#: ReadingUnits a power reading may carry (UCUM): the factor to watts
_UNITS_W = {"W": 1.0, "kW": 1e3, "mW": 1e-3}


def sensor_watts(sensor: dict[str, Any], where: str) -> float:
    """A Sensor's ``Reading`` in watts, by its ``ReadingUnits`` (W, kW, mW; absent: W); another unit is refused
    naming it (DeviceError: a power sensor in volts is no power)."""
    units = sensor.get("ReadingUnits")
    factor = 1.0 if units is None else _UNITS_W.get(units) if isinstance(units, str) else None
    if factor is None:
        raise DeviceError(f"{where}: ReadingUnits is {json.dumps(units)[:40]}, not W, kW or mW: the BMC misbehaves "
                          "(or give power_source to read another source)")
    w = watts(sensor.get("Reading"), f"{where}: Reading")
    # the BMC's resolution: a kW reading of 0.374 is 374 W, not 374.00000000000006
    return watts(round(w * factor, 6), f"{where}: Reading ({units})") if factor != 1.0 else w


def iso_duration_s(text: str) -> float:
    """``PT0.25S``, ``PT1M``, ``P1DT2H`` -> seconds (the Redfish Duration subset of ISO 8601)."""
    m = _ISO_DURATION.match(text.strip())
    if m is None or not any(m.groups()):
        raise ValueError(f"not an ISO 8601 duration: {text!r}")
    d, h, mi, s = (float(g) if g else 0.0 for g in m.groups())
    return ((d * 24 + h) * 60 + mi) * 60 + s


def iso_time_s(text: str) -> float:
    """A Redfish DateTime (``2026-01-01T00:00:01.250+00:00`` or ``...Z``) -> seconds since the epoch; ValueError
    for anything else (``yesterday``, ``""``)."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"not an ISO 8601 time: {text!r}")
    return datetime.fromisoformat(text.strip().replace("Z", "+00:00")).timestamp()
