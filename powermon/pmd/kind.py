"""The PMD-USB's declaration in the meter-kind registry (powermon/kinds.py): what every other module knows of it."""

from __future__ import annotations

from archline.powermon.kinds import MeterKind, protocol_frame_share
from archline.powermon.meter_words import stream_recorder

NAME = "pmd"


KINDS = (MeterKind(
    name=NAME, title="PMD-USB", module="archline.powermon.pmd.meter",
    record_words=((f"{NAME}:", f"PMD-USB on a serial port, or {NAME}://default (emulated)"),),
    record=stream_recorder("/dev/ttyUSB0"), absent="plug one in",
    emulator_url=f"{NAME}://default",
    usb_ids=((0x1A86, 0x7523),),          # its CH340 bridge (other devices share it)
    frame_share=protocol_frame_share("archline.powermon.pmd.protocol"),
    reads_negative_a=True, channel_ids=range(4), voltage_limit_v=15.49,     # 2047 x 7.568 mV
    serial=True, scheme=NAME, reference=True, captures=True, resolution="ADC steps (resolution)"),)
