"""pyserial URL handler ``pmd://NAME?options``: an emulated PMD-USB inside this process (registered by the
driver on import; options as :mod:`archline.powermon.stream.urlserial` lists them)."""

from __future__ import annotations

from archline.powermon.pmd.emulator import PmdCore
from archline.powermon.stream.core import StreamCore
from archline.powermon.stream.urlserial import CoreSerial, parse_url

DEFAULT_RATE_HZ = 1000.0


def core_from_url(url: str) -> StreamCore:
    power, faults, speed, seed, rate = parse_url(url, "pmd", DEFAULT_RATE_HZ)
    return PmdCore(power, rate, faults, speed=speed, seed=seed)


class Serial(CoreSerial):
    make_core = staticmethod(core_from_url)
