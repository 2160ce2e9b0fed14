"""pyserial URL handler ``powersensor3://NAME?options``: an emulated PowerSensor3 inside this process.

Registered by appending ``archline.powermon.powersensor3`` to ``serial.protocol_handler_packages`` (the driver
does this on import). NAME is a device registered with :func:`archline.powermon.emulator.register_device`
(``default`` always exists); options as :mod:`archline.powermon.stream.urlserial` lists them."""

from __future__ import annotations

from archline.powermon.powersensor3.emulator import PowerSensor3Core
from archline.powermon.powersensor3.protocol import REAL_RATE_HZ
from archline.powermon.stream.core import StreamCore
from archline.powermon.stream.urlserial import CoreSerial, parse_url


def core_from_url(url: str) -> StreamCore:
    power, faults, speed, seed, rate = parse_url(url, "powersensor3", REAL_RATE_HZ)
    return PowerSensor3Core(power, rate, faults, speed=speed, seed=seed)


class Serial(CoreSerial):
    make_core = staticmethod(core_from_url)
