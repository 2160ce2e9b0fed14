"""Named emulated devices for ``powermon://NAME`` URLs."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from archline.powermon.emulator.device import Faults, PowerMon2Core
from archline.powermon.emulator.power import PowerCallable, PowerSource


@dataclass
class DeviceSpec:
    power: PowerSource | PowerCallable | None = None
    faults: Faults = field(default_factory=Faults)
    speed: float = 1.0
    seed: int = 0
    cores: list[PowerMon2Core] = field(default_factory=list)   #: one per open, newest last


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
