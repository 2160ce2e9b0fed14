"""The PowerSensor3's declaration in the meter-kind registry (powermon/kinds.py): what every other module knows of
it."""

from __future__ import annotations

import functools

from archline.powermon.kinds import MeterKind
from archline.powermon.powersensor3.protocol import frame_share
from archline.powermon.recording import record_stream_meter

NAME = "powersensor3"

KINDS = (MeterKind(
    name=NAME, title="PowerSensor3", module="archline.powermon.powersensor3.meter",
    record_words=((f"{NAME}:", f"PowerSensor3 on a serial port, or {NAME}://default (emulated)"),),
    record=functools.partial(record_stream_meter, port_hint="/dev/ttyACM0"), absent="plug one in",
    emulator_url=f"{NAME}://default",
    emulator_note="; streams 20000 frames/s as a real one does (?rate=N for fewer); a profile's lower rate_hz "
                  "(gtx580's ps3: 250) is the emulator's, not the hardware's",
    usb_ids=((0x0483, 0x5740),),          # the STM32 virtual COM port (other devices share it)
    reads_negative_a=True, frame_share=frame_share, channel_ids=range(4), serial=True, scheme=NAME, reference=True,
    captures=True,
    resolution="ADC steps (resolution)"),)
