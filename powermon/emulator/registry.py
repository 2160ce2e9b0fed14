"""Named emulated devices for emulator URLs (``powermon://NAME``, a stream kind's ``SCHEME://NAME``) and the faults
they inject."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from archline.powermon.emulator.power import PowerCallable, PowerSource


@dataclass
class Faults:
    """Faults to inject. Byte offsets count bytes of the clean binary stream (0 = first byte after ``e``)."""

    drop_bytes: tuple[int, ...] = ()                      #: clean-stream offsets of bytes that never arrive
    noise: tuple[tuple[int, int], ...] = ()               #: (offset, n): n random bytes inserted before offset
    partial_first: int = 0                                #: bytes missing from the start of the first record
    overflow: tuple[tuple[int, int], ...] = ()            #: (event index, records lost) bursts
    stall: tuple[float, float] | None = None              #: (emulated s, duration s): the port goes quiet
    disconnect_s: float | None = None                     #: emulated s after which the device vanishes
    silent: bool = False                                  #: never answers
    adc_noise_lsb: float = 0.0                            #: Gaussian noise on the 12-bit codes (LSB rms)

    @property
    def any(self) -> bool:
        return bool(self.drop_bytes or self.noise or self.partial_first or self.overflow or self.stall
                    or self.disconnect_s is not None or self.silent or self.adc_noise_lsb)


@dataclass
class DeviceSpec:
    power: PowerSource | PowerCallable | None = None
    faults: Faults = field(default_factory=Faults)
    speed: float = 1.0
    seed: int = 0
    cores: list[Any] = field(default_factory=list)   #: the device cores opened on it, one per open, newest last


_LOCK = threading.Lock()
_DEVICES: dict[str, DeviceSpec] = {"default": DeviceSpec()}


def register_device(name: str, power: PowerSource | PowerCallable | None = None, faults: Faults | None = None,
                    speed: float = 1.0, seed: int = 0) -> str:
    """Register an emulated PowerMon 2 and return its URL ``powermon://NAME``."""
    with _LOCK:
        _DEVICES[name] = DeviceSpec(power, faults or Faults(), speed, seed)
    return f"powermon://{name}"


def get_device(name: str) -> DeviceSpec | None:
    with _LOCK:
        return _DEVICES.get(name)


def device_names() -> list[str]:
    """The names registered now (``default`` always; others only where a program registered them)."""
    with _LOCK:
        return sorted(_DEVICES)


def unregister_device(name: str) -> None:
    with _LOCK:
        _DEVICES.pop(name, None)
