"""The PowerSensor3's declaration in the meter-kind registry (powermon/kinds.py): what every other module knows of
it."""

from __future__ import annotations

from archline.powermon.kinds import MeterKind, protocol_frame_share, stream_recorder

NAME = "powersensor3"


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
    captures=True,
    resolution="ADC steps (resolution)"),)
