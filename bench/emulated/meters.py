"""Which ``[[meters]]`` entry ``--emulate`` can play, and the power it plays through it.

* :func:`emulated_kinds` / :func:`check_emulatable`: a meter kind with an emulator (its driver module's
  ``emulate_from_spec``) can be played; one without (NVML, RAPL) is refused by name, never replaced by another
  meter: ``bench run --emulate`` and ``measure --emulate`` refuse it alike.
* :func:`has_shunt`: the kinds whose channels read a shunt (serial meters), the only ones with a full-scale
  current to check the emulated power against.
* :class:`SensorPlayed`: a meter entry with a ``calibration`` (``archline meter calibrate``) or a
  ``sensor_profile`` (``archline meter probe``) is opened wrapped so that its readings are corrected and read
  later by the sensor's delay (powermon.sensor.apply); the emulator then plays the sensor that entry describes,
  ``gain x true + offset_w``, ``lag_s`` (plus half the profile's averaging window) late, so that the correction
  gives the true energy back. The averaging window is played as its delay (its middle), not as a moving average.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from archline.bench.emulated.model import EmulationError
from archline.powermon.spec import METER_KINDS, METER_MODULES, SERIAL_KINDS, MeterSpec

F64 = npt.NDArray[np.float64]


def emulated_kinds() -> tuple[str, ...]:
    """The meter kinds ``--emulate`` can play: those whose driver module has ``emulate_from_spec``."""
    out = []
    for kind in METER_KINDS:
        name = METER_MODULES.get(kind)
        if name is None:
            continue
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        if callable(getattr(mod, "emulate_from_spec", None)):
            out.append(kind)
    return tuple(out)


def check_emulatable(spec: MeterSpec, platform: str) -> MeterSpec:
    """``spec`` when its kind has an emulator; else EmulationError (exit 2) naming the meter and the kinds
    ``--emulate`` plays."""
    kinds = emulated_kinds()
    if spec.kind not in kinds:
        raise EmulationError(
            f"meter '{spec.name}' ({spec.kind}) of platform '{platform}' cannot be emulated: --emulate plays "
            f"meters of kind {', '.join(kinds)}; choose one of those with --meter, or drop --emulate to read "
            f"'{spec.name}' on this machine")
    return spec


def has_shunt(kind: str) -> bool:
    """Whether a meter of ``kind`` reads its channels through shunts with a full scale (the serial meters); a
    counter or a BMC reads a whole device's power and has none."""
    return kind in SERIAL_KINDS


def sensor_delay_s(spec: MeterSpec) -> float:
    """Device seconds the opened meter reads each window later than asked (what powermon.sensor.apply's wrappers
    do): with a calibration, its lag plus half the sensor profile's window; with a sensor profile alone, the
    profile's lag plus half its window; else 0."""
    window_s = lag_s = 0.0
    if spec.sensor_profile:
        from archline.powermon.sensor.profile import SensorProfile

        prof = SensorProfile.read(spec.sensor_profile)
        window_s, lag_s = prof.window_s, prof.lag_s
    if spec.calibration:
        lag_s = float(spec.calibration.get("lag_s", 0.0))
    return lag_s + 0.5 * window_s if (spec.calibration or spec.sensor_profile) else 0.0


class SensorPlayed:
    """A power source (``sample(t_s, channels) -> (volts, amps)``, ``bind(core)``) that plays ``inner`` as the
    sensor ``spec`` describes: each channel's power ``gain x p + offset_w x its share of the meter's power``,
    read ``delay`` device seconds late. Summed over the meter's channels: ``gain x P(t - delay) + offset_w``."""

    def __init__(self, inner: Any, spec: MeterSpec) -> None:
        cal = dict(spec.calibration or {})
        self.inner = inner
        self.gain = float(cal.get("gain", 1.0))
        self.offset_w = float(cal.get("offset_w", 0.0))
        self.delay_s = sensor_delay_s(spec)
        shares = {c.id: (c.share if c.share is not None else 1.0) for c in spec.channels}
        total = sum(shares.values())
        self.weight = {k: (v / total if total > 0 else 1.0 / len(shares)) for k, v in shares.items()}

    def bind(self, core: Any) -> None:
        bind = getattr(self.inner, "bind", None)
        if callable(bind):
            bind(core)

    def sample(self, t_s: F64, channels: Sequence[int]) -> tuple[F64, F64]:
        t = np.asarray(t_s, dtype=np.float64) - self.delay_s
        volts, amps = self.inner.sample(t, channels)
        volts = np.asarray(volts, dtype=np.float64)
        amps = np.array(amps, dtype=np.float64)
        for j, c in enumerate(channels):
            w = self.weight.get(int(c))
            if w is None:
                continue
            v = volts[:, j]
            ok = v > 0
            amps[ok, j] = (self.gain * v[ok] * amps[ok, j] + self.offset_w * w) / v[ok]
        return volts, amps


def played(inner: Any, spec: MeterSpec) -> Any:
    """``inner`` as the sensor ``spec`` describes (:class:`SensorPlayed`), or ``inner`` itself when the entry
    carries neither a calibration nor a sensor profile."""
    if not (spec.calibration or spec.sensor_profile):
        return inner
    return SensorPlayed(inner, spec)
