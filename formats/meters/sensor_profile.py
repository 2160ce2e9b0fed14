"""Sensor profiles (``archline.sensor_profile/1``, JSON): what ``archline meter probe`` measured of an on-board sensor.
This module is the format's only reader and writer (:meth:`SensorProfile.read`, :meth:`SensorProfile.write`).

    {"format": "archline.sensor_profile/1", "meter": "nvml0", "emulated": true, "reference": "powermon",
     "created_utc": "...", "update_period_s": 0.1, "update_period_err_s": 1e-5, "window_s": 0.05, ...}

The profile is what the integrator then uses (:meth:`SensorProfile.limits`): a window shorter than the sensor allows
is refused or widened, and the energy bound adds the sensor's share (:mod:`archline.powermon.record.integrate`).
A reader takes a newer version of the same family as far as it knows its keys (unknown keys are refused by name).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field

from archline.common.inputs import Strict, validate
from archline.formats.meters.errors import MeterError

FORMAT = "archline.sensor_profile/1"
FAMILY = FORMAT.split("/")[0]



@dataclass(frozen=True)
class SensorLimits:
    """What a sensor profile (``archline meter probe``) says limits a window on an on-board sensor: a reading
    averages ``window_s`` and appears ``lag_s`` later, a new one every ``update_period_s``, rounded to ``quantum_w``.

    At each edge of a window the readings mix the power inside with the power outside over about half a window and
    half an update period, so the edge error is at most the power swing times ``edge_s`` = window + period (both
    edges together), plus twice the lag's uncertainty, plus half a quantum over the window. A window shorter than
    ``min_window_s`` (the edges more than ``max_edge_share`` of it) is refused or widened (:func:`sensor_window`).
    """

    update_period_s: float
    window_s: float
    lag_s: float = 0.0
    quantum_w: float = 0.0
    lag_err_s: float = 0.0
    max_edge_share: float = 0.1
    source: str = ""

    @property
    def edge_s(self) -> float:
        return self.update_period_s + self.window_s

    @property
    def min_window_s(self) -> float:
        return self.edge_s / self.max_edge_share

    def err_j(self, swing_w: float, duration_s: float) -> float:
        """The sensor's share of a window's energy bound (see the class)."""
        return swing_w * (self.edge_s + 2 * self.lag_err_s) + 0.5 * self.quantum_w * duration_s

    def why(self) -> str:
        return (f"{self.source or 'the sensor'}: a reading every {self.update_period_s:.4g} s averaging "
                f"{self.window_s:.4g} s, so each edge is smeared over {self.edge_s:.4g} s; windows under "
                f"{self.min_window_s:.4g} s (edges over {100 * self.max_edge_share:.3g}% of it) are too short")


class SensorProfile(Strict):
    format: str = FORMAT
    meter: str
    emulated: bool
    reference: str = ""                              #: the reference meter it was probed against
    load: str = ""                                   #: the step load that switched the power (kernel, threads)
    created_utc: str = ""
    update_period_s: float = Field(gt=0)
    update_period_err_s: float = Field(default=0.0, ge=0)
    window_s: float = Field(ge=0)
    window_err_s: float = Field(default=0.0, ge=0)
    lag_s: float = Field(ge=0)
    lag_err_s: float = Field(default=0.0, ge=0)
    quantum_w: float = Field(default=0.0, ge=0, lt=1e6)     # below the 1 MW every power limit uses
    quantum_err_w: float = Field(default=0.0, ge=0)
    #: False: fewer than 5 distinct readings, the quantum could not be told (quantum_w 0 then means "not resolved",
    #: not "none"); written only when False, so that a profile with a resolved quantum reads as before
    quantum_resolved: bool = True
    gain: float | None = None                        #: as seen during the probe (calibrate measures it properly)
    offset_w: float | None = None
    residual_w: float | None = None
    n_readings: int = Field(default=0, ge=0)
    n_steps: int = Field(default=0, ge=0)
    reference_period_s: float | None = Field(default=None, gt=0)
    max_edge_share: float = Field(default=0.1, gt=0, le=1)   #: the integrator's rule (see SensorLimits)

    def limits(self, source: str = "") -> SensorLimits:
        return SensorLimits(self.update_period_s, self.window_s, self.lag_s, self.quantum_w,
                            lag_err_s=self.lag_err_s, max_edge_share=self.max_edge_share,
                            source=source or f"sensor profile of {self.meter}")

    @classmethod
    def from_obj(cls, obj: Any, origin: str) -> SensorProfile:
        if not isinstance(obj, dict):
            raise MeterError(f"{origin}: not a sensor profile (expected a JSON object with \"format\": "
                             f"\"{FORMAT}\")")
        fmt = obj.get("format")
        if not isinstance(fmt, str) or fmt.split("/")[0] != FAMILY:
            raise MeterError(f"{origin}: format is {fmt!r}, not {FORMAT!r}: not a sensor profile "
                             "(write one with archline meter probe)")
        if fmt != FORMAT:          # another major version: its fields may mean something else (docs/formats.md)
            raise MeterError(f"{origin}: format {fmt!r} is not {FORMAT!r}, the one this archline reads; upgrade "
                             "archline, or probe the sensor again")
        return validate(cls, obj, origin, error=MeterError)

    @classmethod
    def read(cls, path: str | Path) -> SensorProfile:
        from archline.common.files import read_json

        return cls.from_obj(read_json(path, error=MeterError, what="sensor profile"), str(path))

    def to_json(self) -> str:
        d = self.model_dump()
        if d.get("quantum_resolved", True):
            d.pop("quantum_resolved", None)
        return json.dumps(d, indent=1) + "\n"

    def write(self, path: str | Path) -> Path:
        """Atomically (an input of the command, e.g. the profile it was read from, is refused)."""
        from archline.common.atomic import write_atomic

        return write_atomic(path, self.to_json())
