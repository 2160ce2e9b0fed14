"""Which ``[[meters]]`` entry ``--emulate`` can play, and the power it plays through it.

* :func:`emulated_kinds` / :func:`check_emulatable`: a meter kind with an emulator (its driver module's
  ``emulate_from_spec``) can be played; one without (NVML, RAPL) is refused by name, never replaced by another
  meter: ``bench run --emulate`` and ``measure --emulate`` refuse it alike.
* :func:`choose`: the one entry ``--emulate`` plays (``--meter``'s, else the profile's PowerMon 2, else its first
  entry with an emulator); a profile whose ``[[meters]]`` are all of kinds without an emulator is refused, one
  without ``[[meters]]`` gets a default emulated PowerMon 2 and a note saying so (``bench run`` and ``measure``
  alike).
* :func:`has_shunt` / :func:`played_range_a`: the kinds whose channels read a shunt (serial meters), the only
  ones with a full-scale current to check the emulated power against; the current each channel is played,
  calibration included (device.check_range refuses one outside the channel's range: the emulator would clip it).
* :func:`emulate_entry`: the entry's emulated meter playing a power source as its sensor reads it, with the
  faults its port's emulator URL asks for (bench/emulated/port.py), ``bench run`` and ``measure`` alike.
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
from archline.powermon import kinds
from archline.powermon.spec import MeterSpec

F64 = npt.NDArray[np.float64]


def emulated_kinds() -> tuple[str, ...]:
    """The meter kinds ``--emulate`` can play: those whose driver module has ``emulate_from_spec``."""
    out = []
    for kind in kinds.kinds():
        if kind.module is None:
            continue
        try:
            mod = importlib.import_module(kind.module)
        except ImportError:
            continue
        if callable(getattr(mod, "emulate_from_spec", None)):
            out.append(kind.name)
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


def choose(prof: Any, meter: str | None) -> tuple[MeterSpec | None, list[str]]:
    """(the entry ``--emulate`` plays, notes): ``meter``'s (refused when its kind has no emulator), else the
    profile's PowerMon 2, else its first entry with an emulator; None (a default PowerMon 2, said in a note) when
    the profile has no ``[[meters]]``. A profile whose entries all lack an emulator is refused (EmulationError,
    exit 2) naming them and the kinds ``--emulate`` plays: another meter is never put in their place silently."""
    if meter:
        return check_emulatable(prof.meter(meter), prof.name), []
    playable = emulated_kinds()
    first = kinds.default_emulated().name      # the PowerMon 2
    spec = next((s for s in prof.meters if s.kind == first), None) or \
        next((s for s in prof.meters if s.kind in playable), None)
    if spec is not None:
        return spec, []
    if prof.meters:
        have = ", ".join(f"'{s.name}' ({s.kind})" for s in prof.meters)
        raise EmulationError(
            f"platform '{prof.name}' cannot be emulated with its meters {have}: --emulate plays meters of kind "
            f"{', '.join(playable)}; add a [[meters]] entry of one of those kinds to the profile, or drop --emulate")
    return None, [f"platform '{prof.name}' configures no [[meters]]: --emulate plays a default emulated PowerMon 2 "
                  "(12 V channels on the stock shunt, enough to carry 1.3 x the model's peak power)"]


def has_shunt(kind: str) -> bool:
    """Whether a meter of ``kind`` reads its channels through shunts with a full scale (the serial meters); a
    counter or a BMC reads a whole device's power and has none."""
    found = kinds.find(kind)
    return found is not None and found.serial


def played_range_a(spec: MeterSpec, c: Any) -> tuple[float, float]:
    """(lowest, highest) current the emulated meter of ``spec`` reads on channel ``c`` without clipping: up to
    the shunt's full scale (ChannelSpec.full_scale_a); a PowerMon 2's codes stop at 0 A, the bipolar sensors'
    (PowerSensor3, PMD) at minus their full scale."""
    top = float(c.full_scale_a)
    return (-top if kinds.get(spec.kind).reads_negative_a else 0.0), top


def played_w(spec: MeterSpec, c: Any, power_w: float) -> float:
    """The power channel ``c`` of ``spec``'s emulated meter plays when the device draws ``power_w``: its share,
    and under a calibration ``gain x`` it ``+ offset_w x`` the channel's part of the offset (:class:`SensorPlayed`)."""
    cal = dict(spec.calibration or {})
    total = sum((ch.share if ch.share is not None else 1.0) for ch in spec.channels)
    share = c.share if c.share is not None else 1.0
    weight = share / total if total > 0 else 1.0 / len(spec.channels)
    return float(cal.get("gain", 1.0)) * power_w * (c.share or 0.0) + float(cal.get("offset_w", 0.0)) * weight


def sensor_delay_s(spec: MeterSpec) -> float:
    """Device seconds the opened meter reads each window later than asked (what powermon.sensor.apply's wrappers
    do): with a calibration, its lag plus half the sensor profile's window; with a sensor profile alone, the
    profile's lag plus half its window; else 0."""
    window_s = lag_s = 0.0
    if spec.sensor_profile:
        from archline.formats.meters.sensor_profile import SensorProfile

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


def emulate_entry(spec: MeterSpec, source: Any, *, speed: float, seed: int, raw_dir: Any,
                  notes: list[str] | None = None, replaced: dict[str, str] | None = None) -> Any:
    """The emulated meter of ``spec`` playing ``source`` as the entry's sensor reads it (:func:`played`), with
    the faults its port's emulator URL asks for (a stall, dropped bytes, ...: played as ``meter record`` plays
    them); what was made of the URL is appended to ``notes``. ``replaced``: the URL options the caller's own
    settings replace, and by what (bench's: speed by --time-compression, seed by the run's)."""
    from archline.bench.emulated.port import port_faults
    from archline.powermon.spec import emulate_meter

    faults, url_notes = port_faults(spec, replaced)
    if notes is not None:
        notes += url_notes
    kw: dict[str, Any] = {"stall_error_s": 30.0} if has_shunt(spec.kind) else {}
    # a calibrated entry's meter corrects what it reads: the emulator plays the sensor the calibration describes
    return emulate_meter(spec, played(source, spec), speed=speed, seed=seed, raw_dir=raw_dir, faults=faults, **kw)
