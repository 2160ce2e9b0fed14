"""The PowerSensor3's declaration in the meter-kind registry (powermon/kinds.py): what every other module knows of
it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from archline.powermon.kinds import MeterKind

NAME = "powersensor3"


# the driver, protocol and recording modules are imported when used: the registry is read on every command
def _record(word: str, arg: str, channels: Sequence[int] | None, rate_hz: float | None,
            raw_path: Path | None) -> Any:
    from archline.powermon.recording import record_stream_meter

    return record_stream_meter(word, arg, channels, rate_hz, raw_path, port_hint="/dev/ttyACM0")


def _frame_share(data: Any, min_frames: int) -> float:
    from archline.powermon.powersensor3.protocol import frame_share

    return float(frame_share(data, min_frames))


KINDS = (MeterKind(
    name=NAME, title="PowerSensor3", module="archline.powermon.powersensor3.meter",
    record_words=((f"{NAME}:", f"PowerSensor3 on a serial port, or {NAME}://default (emulated)"),),
    record=_record, absent="plug one in",
    emulator_url=f"{NAME}://default",
    emulator_note="; streams 20000 frames/s as a real one does (?rate=N for fewer); a profile's lower rate_hz "
                  "(gtx580's ps3: 250) is the emulator's, not the hardware's",
    usb_ids=((0x0483, 0x5740),),          # the STM32 virtual COM port (other devices share it)
    reads_negative_a=True, frame_share=_frame_share, channel_ids=range(4), serial=True, scheme=NAME, reference=True,
    captures=True,
    resolution="ADC steps (resolution)"),)
