"""The PowerSensor3's declaration in the meter-kind registry (powermon/kinds.py): what every other module knows of
it."""

from __future__ import annotations

from typing import Any

from archline.powermon.kinds import MeterKind, PtyEmulator, protocol_frame_share
from archline.powermon.meter_words import stream_recorder

NAME = "powersensor3"


def _pty_core(power: Any, *, speed: float, seed: int, rate_hz: float | None = None) -> Any:
    """``meter emulate --kind powersensor3``: firmware 1.6.1's protocol at ``rate_hz`` (default the F411's)."""
    from archline.powermon.powersensor3.emulator import PowerSensor3Core
    from archline.powermon.powersensor3.protocol import REAL_RATE_HZ

    return PowerSensor3Core(power, REAL_RATE_HZ if rate_hz is None else rate_hz, speed=speed, seed=seed)


def _pty_records_per_s(rate_hz: float | None) -> float:
    """It streams its one rate: 18-byte frames, in 4-byte record units."""
    return (rate_hz or 20_000.0) * 18 / 4


KINDS = (MeterKind(
    name=NAME, title="PowerSensor3", module="archline.powermon.powersensor3.meter",
    record_words=((f"{NAME}:", f"PowerSensor3 on a serial port, or {NAME}://default (emulated)"),),
    record=stream_recorder("/dev/ttyACM0"), absent="plug one in",
    emulator_url=f"{NAME}://default",
    emulator_note="; streams 20000 frames/s as a real one does (?rate=N for fewer); a profile's lower rate_hz "
                  "(gtx580's ps3: 250) is the emulator's, not the hardware's",
    usb_ids=((0x0483, 0x5740),),          # the STM32 virtual COM port (other devices share it)
    frame_share=protocol_frame_share("archline.powermon.powersensor3.protocol"),
    reads_negative_a=True, channel_ids=range(4), serial=True, scheme=NAME, reference=True,
    captures=True, pty_emulator=PtyEmulator(core=_pty_core, records_per_s=_pty_records_per_s, takes_rate=True),
    resolution="ADC steps (resolution)"),)
