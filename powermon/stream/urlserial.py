"""The pyserial side of an emulated stream meter URL (``powersensor3://NAME?...``, ``pmd://NAME?...``): a
``Serial`` class over an in-process emulator core, and the fault options every stream URL takes.

Options: ``speed``, ``seed``, ``rate`` (frames per emulated second), ``drop=OFF,OFF``, ``noise=OFF:N,...``,
``cut=N`` (bytes missing from the first frame), ``stall=AT_S:DUR_S``, ``disconnect=AT_S``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

from serial.serialutil import SerialException

from archline.powermon.emulator.registry import get_device
from archline.powermon.emulator.serial_base import CoreSerial as CoreSerial  # re-exported: the handlers' base
from archline.powermon.stream.core import StreamFaults

OPTIONS = ("speed", "seed", "rate", "drop", "noise", "cut", "stall", "disconnect")


def parse_url(url: str, scheme: str, default_rate_hz: float) -> tuple[Any, StreamFaults, float, int, float]:
    """(power, faults, speed, seed, rate_hz) of ``scheme://NAME?options``; NAME is a registered device."""
    parts = urlsplit(url)
    if parts.scheme != scheme:
        raise SerialException(f"expected a URL of the form {scheme}://NAME?speed=1, not {url!r}")
    name = parts.netloc or parts.path.strip("/") or "default"
    dev = get_device(name)
    if dev is None:
        raise SerialException(f"no emulated device named {name!r} (register it with register_device)")
    base = dev.faults if isinstance(dev.faults, StreamFaults) else StreamFaults()  # type: ignore[unreachable]
    faults = StreamFaults(**vars(base))
    speed, seed, rate = dev.speed, dev.seed, default_rate_hz
    try:
        for key, values in parse_qs(parts.query, keep_blank_values=True).items():
            v = values[0]
            if key == "speed":
                speed = float(v)
            elif key == "seed":
                seed = int(v)
            elif key == "rate":
                rate = float(v)
            elif key == "drop":
                faults.drop_bytes = tuple(int(x) for x in v.split(",") if x)
            elif key == "noise":
                faults.noise = tuple((int(a), int(b)) for a, b in (x.split(":") for x in v.split(",") if x))
            elif key == "cut":
                faults.cut_first = int(v)
            elif key == "stall":
                a, b = v.split(":")
                faults.stall = (float(a), float(b))
            elif key == "disconnect":
                faults.disconnect_s = float(v)
            else:
                raise ValueError(f"unknown option {key!r} (known: {', '.join(OPTIONS)})")
    except ValueError as e:
        raise SerialException(f"bad {scheme}:// URL {url!r}: {e}") from None
    return dev.power, faults, speed, seed, rate
