"""pyserial URL handler ``powermon://NAME?options``: an emulated PowerMon 2 inside this process.

Registered by appending ``archline.powermon.emulator`` to ``serial.protocol_handler_packages`` (the driver
does this on import), so ``serial.serial_for_url("powermon://default?speed=10")`` opens one. ``NAME`` is a
device registered with :func:`archline.powermon.emulator.register_device` (``default`` always exists).

Options: ``speed``, ``seed``, ``partial_first``, ``drop=OFF,OFF``, ``noise=OFF:N,OFF:N``,
``overflow=EVENT:N,...``, ``stall=AT_S:DUR_S``, ``disconnect=AT_S``, ``silent=1``, ``adc_noise=LSB``.
"""

from __future__ import annotations

from typing import Any

from serial.serialutil import SerialException

from archline.powermon.emulator.registry import Faults
from archline.powermon.emulator.serial_base import CoreSerial, pairs, set_byte_fault, url_device, url_number
from archline.powermon.powermon2.emulator import PowerMon2Core

_OPTIONS = ("speed", "seed", "partial_first", "drop", "noise", "overflow", "stall", "disconnect", "silent",
            "adc_noise")


def _pairs(key: str, text: str) -> tuple[tuple[int, int], ...]:
    """``EVENT:N,...`` (a record index of 0 or more, N records lost above 0); ValueError naming the form."""
    form = "EVENT:N pairs, comma-separated (overflow=64:3,...; record index 0 or more, N above 0)"
    try:
        return tuple((url_number(key, a, whole=True), url_number(key, b, whole=True, positive=True))
                     for a, b in pairs(key, text, form))
    except ValueError:
        raise ValueError(f"{key} takes {form}, got {text!r}") from None


def parse_url(url: str) -> tuple[Any, Faults, float, int]:
    """A ``powermon://`` URL's registered device, and the faults, speed and seed its options ask for; a bad option
    is a ValueError naming it."""
    spec, options = url_device(url, "powermon", "PowerMon")
    faults = Faults(**vars(spec.faults))
    speed, seed = spec.speed, spec.seed
    for key, v in options.items():
        if key == "speed":
            speed = url_number(key, v, positive=True) * 1.0
        elif key == "seed":
            seed = url_number(key, v, whole=True)
        elif key == "partial_first":
            faults.partial_first = url_number(key, v, whole=True)
        elif key == "overflow":
            faults.overflow = _pairs(key, v)
        elif key == "silent":
            faults.silent = v not in ("0", "false", "")
        elif key == "adc_noise":
            faults.adc_noise_lsb = url_number(key, v) * 1.0
        elif not set_byte_fault(faults, key, v):
            raise ValueError(f"unknown option {key!r} (known: {', '.join(_OPTIONS)})")
    return spec, faults, speed, seed


def url_faults(url: str) -> Faults:
    """The faults a ``powermon://`` URL asks for, parsed as opening it parses them, without building its core
    (bench's ``--emulate`` plays them on its own emulated device); a bad option is a ValueError naming it."""
    return parse_url(url)[1]


def core_from_url(url: str) -> PowerMon2Core:
    try:
        spec, faults, speed, seed = parse_url(url)
    except ValueError as e:
        raise SerialException(f"bad powermon:// URL {url!r}: {e}") from None
    core = PowerMon2Core(spec.power, faults, speed=speed, seed=seed)
    spec.cores.append(core)
    return core


class Serial(CoreSerial):
    """An emulated PowerMon 2 behind pyserial's interface (no real port)."""

    make_core = staticmethod(core_from_url)
