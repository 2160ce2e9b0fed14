"""The pyserial side of an emulated stream meter URL (``powersensor3://NAME?...``, ``pmd://NAME?...``): a
``Serial`` class over an in-process emulator core, and the fault options every stream URL takes.

Options: ``speed``, ``seed``, ``rate`` (frames per emulated second), ``drop=OFF,OFF``, ``noise=OFF:N,...``,
``cut=N`` (bytes missing from the first frame), ``stall=AT_S:DUR_S``, ``disconnect=AT_S``.
"""

from __future__ import annotations

from typing import Any

from serial.serialutil import SerialException

from archline.powermon.emulator.serial_base import CoreSerial as CoreSerial  # re-exported: the handlers' base
from archline.powermon.emulator.serial_base import set_byte_fault, url_device, url_number
from archline.powermon.stream.core import StreamFaults

OPTIONS = ("speed", "seed", "rate", "drop", "noise", "cut", "stall", "disconnect")


def parse_url(url: str, scheme: str, default_rate_hz: float) -> tuple[Any, StreamFaults, float, int, float]:
    """(power, faults, speed, seed, rate_hz) of ``scheme://NAME?options``; NAME is a registered device."""
    dev, options = url_device(url, scheme, "device")
    base = dev.faults if isinstance(dev.faults, StreamFaults) else StreamFaults()
    faults = StreamFaults(**vars(base))
    speed, seed, rate = dev.speed, dev.seed, default_rate_hz
    try:
        for key, v in options.items():
            if key == "speed":
                speed = url_number(key, v, positive=True) * 1.0
            elif key == "seed":
                seed = url_number(key, v, whole=True)
            elif key == "rate":
                rate = url_number(key, v, positive=True) * 1.0
            elif key == "cut":
                faults.cut_first = url_number(key, v, whole=True)
            elif not set_byte_fault(faults, key, v):
                raise ValueError(f"unknown option {key!r} (known: {', '.join(OPTIONS)})")
    except ValueError as e:
        # the option alone: the URL may hold what the user never typed (the profile's rate, appended)
        raise SerialException(f"bad {scheme}:// URL: {e}") from None
    return dev.power, faults, speed, seed, rate
