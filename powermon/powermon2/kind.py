"""The PowerMon 2's declaration in the meter-kind registry (powermon/kinds.py): what every other module knows of it."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from archline.powermon.errors import MeterError
from archline.powermon.kinds import MeterKind, PtyEmulator
from archline.powermon.powermon2.protocol import (
    DEFAULT_R_SENSE_OHM,
    MAX_AGGREGATE_RECORDS_PER_S,
    MAX_CHANNELS,
    VOLTAGE_FULL_SCALE_V,
    half_lsb_w,
)

NAME = "powermon2"
#: a PowerMon 2's per-channel rate when --rate is not given
RECORD_RATE_HZ = 128.0


def _record(word: str, arg: str, channels: Sequence[int] | None, rate_hz: float | None,
            raw_path: Path | None) -> Any:
    """``powermon2:PORT`` (``powermon://NAME`` an emulator URL) or ``emulated[:SPEED]`` (a PowerMon 2 emulator)."""
    from archline.powermon.meter_words import url_speed
    from archline.powermon.spec import channels_spec, open_meter

    rate = RECORD_RATE_HZ if rate_hz is None else rate_hz
    if word != "emulated":
        if not arg:
            raise MeterError(f"--meter {NAME} needs a port: {NAME}:/dev/ttyUSB0")
        return open_meter(channels_spec(NAME, NAME, channels, port=arg, rate_hz=rate), raw_path=raw_path,
                          speed=url_speed(arg))
    from archline.formats.meters.versions import emulator_speed_problem, max_emulator_speed
    from archline.powermon.powermon2.meter import emulated_powermon

    try:
        speed = float(arg or 1.0)
    except ValueError:
        raise MeterError(f"--meter emulated:SPEED needs a number, got {arg!r}") from None
    if not (math.isfinite(speed) and speed > 0):
        raise MeterError(f"--meter emulated:SPEED needs a positive speed (emulated seconds per second), got {arg!r}")
    mspec = channels_spec(NAME, NAME, channels, rate_hz=rate)
    per_s = mspec.rate_hz * len(mspec.channels)
    problem = emulator_speed_problem(speed, per_s)
    if problem is not None:     # the pty cannot carry it: refused before an emulator starts (bench run's rule)
        raise MeterError(f"--meter emulated:{arg}: {problem}; lower the speed to {max_emulator_speed(per_s)} or "
                         "less (or record fewer channels, or at a lower --rate)")
    return emulated_powermon(mspec, None, speed=speed, raw_path=raw_path)


def _list(**_: Any) -> list[dict[str, Any]]:
    return [{"kind": NAME, "name": "-", "available": False,
             "detail": "a PowerMon 2 has no USB ID to find it by: try the serial ports above (--meter "
                       f"{NAME}:PORT)"},
            {"kind": NAME, "name": "powermon://default", "available": True,
             "detail": "emulator (labelled emulated): --meter emulated[:SPEED], or `archline meter emulate`"}]


def _pty_core(power: Any, *, speed: float, seed: int, rate_hz: float | None = None) -> Any:
    """``meter emulate``'s PowerMon 2 (its client sets the rate)."""
    from archline.powermon.powermon2.emulator import PowerMon2Core

    return PowerMon2Core(power, speed=speed, seed=seed)


def _resolution_w(s: Any, info: dict[str, Any]) -> Any:
    """Half an ADC step of V and I through the shunts the samples sidecar keeps (``r_sense_ohm``, the default for a
    channel it does not name), as the live meter had it; None where the sidecar does not say or says nonsense."""
    import numpy as np

    r_lut = info.get("r_sense_ohm")
    if not isinstance(r_lut, dict):
        return None
    try:
        r = np.array([float(r_lut.get(str(int(c)), DEFAULT_R_SENSE_OHM)) for c in s.channel], dtype=float)
    except (TypeError, ValueError):
        return None
    if not (np.isfinite(r).all() and (r > 0).all()):
        return None
    return half_lsb_w(s.current_a, s.voltage_v, r)


def _url_faults(url: str) -> Any:
    """The faults a ``powermon://`` URL asks for (bench's ``--emulate`` plays them)."""
    from archline.powermon.powermon2.protocol_powermon import url_faults

    return url_faults(url)


KINDS = (MeterKind(
    name=NAME, title="PowerMon 2", module="archline.powermon.powermon2.meter",
    record_words=((f"{NAME}:", f"PowerMon 2 on a serial port ({NAME}:/dev/ttyUSB0)"),
                  ("emulated", "an emulated PowerMon 2 (emulated:SPEED runs it faster)")),
    record=_record, lister=_list, absent="plug one in; give its port",
    channel_ids=range(MAX_CHANNELS), voltage_limit_v=VOLTAGE_FULL_SCALE_V, serial=True, scheme="powermon",
    reference=True, captures=True, emulated_by_default=True, resolution="shunts (r_sense_ohm)",
    resolution_w=_resolution_w, url_faults=_url_faults,
    pty_emulator=PtyEmulator(core=_pty_core, records_per_s=lambda rate_hz: MAX_AGGREGATE_RECORDS_PER_S),
    decoder="archline.powermon.powermon2.capture_decode"),)
