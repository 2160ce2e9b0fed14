"""The PMD-USB's declaration in the meter-kind registry (powermon/kinds.py): what every other module knows of it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from archline.powermon.kinds import MeterKind

NAME = "pmd"


# the driver, protocol and recording modules are imported when used: the registry is read on every command
def _record(word: str, arg: str, channels: Sequence[int] | None, rate_hz: float | None,
            raw_path: Path | None) -> Any:
    from archline.powermon.recording import record_stream_meter

    return record_stream_meter(word, arg, channels, rate_hz, raw_path, port_hint="/dev/ttyUSB0")


def _frame_share(data: Any, min_frames: int) -> float:
    from archline.powermon.pmd.protocol import frame_share

    return float(frame_share(data, min_frames))


KINDS = (MeterKind(
    name=NAME, title="PMD-USB", module="archline.powermon.pmd.meter",
    record_words=((f"{NAME}:", f"PMD-USB on a serial port, or {NAME}://default (emulated)"),),
    record=_record, absent="plug one in",
    emulator_url=f"{NAME}://default",
    usb_ids=((0x1A86, 0x7523),),          # its CH340 bridge (other devices share it)
    reads_negative_a=True, frame_share=_frame_share, channel_ids=range(4), voltage_limit_v=15.49,     # 2047 x 7.568 mV
    serial=True, scheme=NAME, reference=True, captures=True, resolution="ADC steps (resolution)"),)
