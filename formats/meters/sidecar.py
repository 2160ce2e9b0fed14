"""The sidecars: the JSON beside a samples file (``S.csv.json``) and beside a raw PowerMon 2 capture
(``C.raw.bin.json``), as versioned pydantic models (pyperf style: a ``format`` string ``family/N``).

* newer versions and unknown keys are tolerated (a newer archline may add fields; they are kept, not checked);
* a known key of the wrong type is one line naming the sidecar and the key;
* the clock and the cadence must be plausible: ``offset_s`` finite, ``|drift_ppm|`` at most
  :data:`MAX_DRIFT_PPM`, ``seconds_per_device_s``, ``rate_hz`` and ``speed`` positive and finite.

This module imports pydantic (about 0.1 s): import it only where a sidecar is read (``load``); writers build plain
dicts (:func:`samples_meta`) and the format strings live in :mod:`archline.formats.meters.versions`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from archline.common.files import read_json
from archline.common.inputs import validate
from archline.common.outputs import show
from archline.formats.meters.errors import MeterError
from archline.formats.meters.versions import (
    MAX_DRIFT_PPM,
    RAW_FORMAT,
    RAW_TICK_HZ,
    SAMPLES_FORMAT,
    emulator_speed_problem,
    max_emulator_speed,
)

S = TypeVar("S", bound="_Sidecar")


def _finite(v: float | None, what: str, *, positive: bool = False) -> float | None:
    if v is None:
        return v
    if not math.isfinite(v):
        raise ValueError(f"{what} must be a finite number, got {v}")
    if positive and v <= 0:
        raise ValueError(f"{what} must be a positive number, got {v:g}")
    return v


class _Sidecar(BaseModel):
    """Unknown keys are kept (a newer writer's fields), known keys are typed strictly (no "12" for 12)."""

    model_config = ConfigDict(extra="allow", strict=True, frozen=True, defer_build=True)

    FAMILY: ClassVar[str] = ""          #: the ``format`` family ("archline.samples"); set by subclasses
    WHAT: ClassVar[str] = "sidecar"     #: how messages name it

    format: str | None = None

    @field_validator("format")
    @classmethod
    def _family(cls, v: str | None) -> str | None:
        if v is None:
            return v
        family, _, version = v.rpartition("/")
        if family != cls.FAMILY or not version.isdigit():
            raise ValueError(f"format is {v!r}, not {cls.FAMILY}/N: this is not a {cls.__name__} of archline")
        return v

    @property
    def version(self) -> int:
        """The sidecar's format version (1 when it names none); a newer one is read as far as it is known."""
        return int(self.format.rpartition("/")[2]) if self.format else 1

    def extra(self, key: str, default: Any = None) -> Any:
        return (self.model_extra or {}).get(key, default)

    @classmethod
    def load(cls: type[S], path: str | Path) -> S:
        """The sidecar at ``path``, validated: one line naming the file and the key on a problem."""
        data = read_json(path, error=MeterError, what=f"{cls.WHAT}")
        if not isinstance(data, dict):
            raise MeterError(f"{cls.WHAT} {show(path)} is not a JSON object")
        side = validate(cls, data, f"{cls.WHAT} {show(path)}:", error=MeterError)
        side.check_consistent(f"{cls.WHAT} {show(path)}")
        return side

    def check_consistent(self, where: str) -> None:
        """Keys that are each plausible but contradict each other: MeterError naming ``where`` and the keys."""

    def dump(self) -> str:
        return json.dumps(self.model_dump(exclude_none=True), indent=1, default=str)


def says_emulated(data: dict[str, Any]) -> bool:
    """Whether any part of a sidecar (or its ``info``) says the meter was archline's emulator: ``emulated`` true, a
    meter named ``...emulated``, or a version reply ``... EMULATED by archline``."""
    for d in (data, data.get("info")):
        if not isinstance(d, dict):
            continue
        meter, version = d.get("meter"), d.get("version")
        if (d.get("emulated") is True or (isinstance(meter, str) and "emulated" in meter.lower())
                or (isinstance(version, str) and "EMULATED" in version.upper())):
            return True
    return False


def _label(data: Any) -> Any:
    """``emulated`` true when any part of the sidecar says so (a false flag never removes the label); a mistyped
    flag is left for validation to name."""
    if (isinstance(data, dict) and (data.get("emulated") is False or data.get("emulated") is None)
            and says_emulated(data)):
        data = {**data, "emulated": True}
    return data


def _number(v: Any) -> float | None:
    """``v`` as a float when it is a finite number (not a bool), else None."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return float(v)


def _agree(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-6 * max(abs(a), abs(b))


def check_speed(where: str, speed: float, speed_key: str, seconds_per_device_s: float | None, clock_key: str,
                records_per_device_s: float) -> None:
    """An emulator's speed as a sidecar states it: ``seconds_per_device_s`` (its clock map) must be 1/speed, and
    the stream at that speed must be one an emulator can run (:func:`archline.formats.meters.versions.
    emulator_speed_problem`); else one line naming the sidecar and the keys."""
    if seconds_per_device_s is not None and not _agree(seconds_per_device_s * speed, 1.0):
        raise MeterError(f"{where}: {speed_key} {speed:g} and {clock_key} {seconds_per_device_s:g} disagree (the "
                         f"clock of a {speed:g}x emulator runs {1 / speed:g} host s per device s): the sidecar is "
                         "inconsistent, damaged or edited")
    problem = emulator_speed_problem(speed, records_per_device_s)
    if problem is not None:
        raise MeterError(f"{where}: {speed_key} {speed:g} is not a clock any meter ran at: {problem}, and no "
                         f"emulator runs faster than {max_emulator_speed(records_per_device_s)}x with this stream; "
                         "the sidecar is implausible or damaged")


class ClockSidecar(BaseModel):
    """How device time maps onto the host monotonic clock: ``t = offset_s + t_dev * seconds_per_device_s *
    (1 + drift_ppm * 1e-6)``."""

    model_config = ConfigDict(extra="allow", strict=True, frozen=True, defer_build=True)

    offset_s: float
    seconds_per_device_s: float = 1.0
    drift_ppm: float = 0.0

    @field_validator("offset_s")
    @classmethod
    def _offset(cls, v: float) -> float:
        _finite(v, "offset_s")
        return v

    @field_validator("seconds_per_device_s")
    @classmethod
    def _scale(cls, v: float) -> float:
        _finite(v, "seconds_per_device_s", positive=True)
        return v

    @field_validator("drift_ppm")
    @classmethod
    def _drift(cls, v: float) -> float:
        _finite(v, "drift_ppm")
        if abs(v) > MAX_DRIFT_PPM:
            raise ValueError(f"drift_ppm {v:g} is not a clock's drift (a crystal drifts less than "
                             f"{MAX_DRIFT_PPM:g} ppm): the sidecar is damaged")
        return v

    def scale(self) -> float:
        return self.seconds_per_device_s * (1.0 + self.drift_ppm * 1e-6)


class CaptureSidecar(_Sidecar):
    """``C.raw.bin.json``: what an offline decode of a PowerMon 2 capture needs."""

    FAMILY: ClassVar[str] = RAW_FORMAT.rpartition("/")[0]
    WHAT: ClassVar[str] = "capture sidecar"

    meter: str | None = None      #: None: not stated (the decoder names the kind that wrote this format)
    emulated: bool = False
    channels: list[int] | None = Field(default=None, min_length=1)
    r_sense_ohm: dict[str, float] = Field(default_factory=dict)
    period_ticks: int | None = Field(default=None, ge=1)
    rate_hz: float | None = None
    time_set_s: int | None = Field(default=None, ge=0)
    speed: float = 1.0
    clock: ClockSidecar | None = None
    error: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _emulated(cls, data: Any) -> Any:
        return _label(data)

    @field_validator("channels")
    @classmethod
    def _channels(cls, v: list[int] | None) -> list[int] | None:
        if v is not None and any(not 0 <= c < 16 for c in v):
            raise ValueError(f"channels must be channel numbers 0-15, got {v}")
        return v

    @field_validator("r_sense_ohm")
    @classmethod
    def _shunts(cls, v: dict[str, float]) -> dict[str, float]:
        for k, r in v.items():
            if not (k.isdigit() and int(k) < 16) or not (math.isfinite(r) and r > 0):
                raise ValueError(f"r_sense_ohm must map channels 0-15 to positive ohms, got {k!r}: {r!r}")
        return v

    @field_validator("rate_hz", "speed")
    @classmethod
    def _positive(cls, v: float | None, info: Any) -> float | None:
        return _finite(v, info.field_name, positive=True)

    def shunts(self) -> dict[int, float]:
        return {int(k): float(r) for k, r in self.r_sense_ohm.items()}

    def check_consistent(self, where: str) -> None:
        rate = self.rate_hz or (RAW_TICK_HZ / self.period_ticks if self.period_ticks else 128.0)
        check_speed(where, self.speed, "speed", self.clock.seconds_per_device_s if self.clock else None,
                    "clock.seconds_per_device_s", rate * len(self.channels or [0]))


class SamplesSidecar(_Sidecar):
    """``S.csv.json`` (or ``.csv.gz.json``, ``.parquet.json``): what the columns cannot say."""

    FAMILY: ClassVar[str] = SAMPLES_FORMAT.rpartition("/")[0]
    WHAT: ClassVar[str] = "samples sidecar"

    meter: str = ""
    emulated: bool | None = False         #: None: the source is not known (a capture decoded without its sidecar)
    clock: str = "unknown"
    rate_hz: float | None = None          #: per-channel samples per device second (the cadence holes are counted by)
    speed: float = 1.0                    #: device seconds per t_s second (an emulator's time compression)
    window_s: list[float] | None = None   #: [start, end] on the t_s clock: the recorded window
    stats: dict[str, Any] | None = None
    info: dict[str, Any] | None = None
    overflows: int | None = None
    gaps: int | None = None

    @field_validator("rate_hz", "speed")
    @classmethod
    def _positive(cls, v: float | None, info: Any) -> float | None:
        return _finite(v, info.field_name, positive=True)

    @field_validator("window_s")
    @classmethod
    def _window(cls, v: list[float] | None) -> list[float] | None:
        if v is not None and not (len(v) == 2 and math.isfinite(v[0]) and math.isfinite(v[1]) and v[0] <= v[1]):
            raise ValueError(f"window_s must be two finite times, the first not after the second, got {list(v)}")
        return v

    @model_validator(mode="before")
    @classmethod
    def _older(cls, data: Any) -> Any:
        """Sidecars written before rate_hz and speed were kept at the top: take them from ``info``."""
        if isinstance(data, dict) and isinstance(data.get("info"), dict):
            info = data["info"]
            data = dict(data)
            for key in ("rate_hz", "speed", "stats"):
                if data.get(key) is None and info.get(key) is not None:
                    data[key] = info[key]
        return _label(data)

    def counts(self) -> dict[str, Any]:
        return self.stats or {}

    def check_consistent(self, where: str) -> None:
        """``speed``, ``info.speed`` and ``info.clock.seconds_per_device_s`` (the recording's meter) say one speed,
        and one an emulator can run at."""
        info = self.info or {}
        inner = _number(info.get("speed"))
        if inner is not None and not _agree(inner, self.speed):
            raise MeterError(f"{where}: speed {self.speed:g} and info.speed {inner:g} disagree (device seconds per "
                             "t_s second): the sidecar is inconsistent, damaged or edited")
        clock = info.get("clock")
        spd = _number(clock.get("seconds_per_device_s")) if isinstance(clock, dict) else None
        chans = info.get("channels") if isinstance(info.get("channels"), list) else self.extra("channels")
        rate = self.rate_hz or _number(info.get("rate_hz")) or 1.0
        check_speed(where, self.speed, "speed", spd, "info.clock.seconds_per_device_s",
                    rate * (len(chans) if isinstance(chans, list) and chans else 1))
