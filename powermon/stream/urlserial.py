"""The pyserial side of an emulated stream meter URL (``powersensor3://NAME?...``, ``pmd://NAME?...``): a
``Serial`` class over an in-process emulator core, and the fault options every stream URL takes.

Options: ``speed``, ``seed``, ``rate`` (frames per emulated second), ``drop=OFF,OFF``, ``noise=OFF:N,...``,
``cut=N`` (bytes missing from the first frame), ``stall=AT_S:DUR_S``, ``disconnect=AT_S``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

from serial.serialutil import PortNotOpenError, SerialBase, SerialException

from archline.powermon.emulator.registry import get_device
from archline.powermon.stream.core import StreamCore, StreamFaults

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


class CoreSerial(SerialBase):
    """An emulated stream meter behind pyserial's interface (no real port); ``make_core(url)`` builds it."""

    make_core: Callable[[str], StreamCore]
    core: StreamCore | None = None

    def open(self) -> None:
        if self.is_open:
            raise SerialException("port already open")
        url = getattr(self, "_port", None)
        if url is None:
            raise SerialException("port must be configured before it can be used")
        self.core = type(self).make_core(str(url))
        self._rx = bytearray()
        self.is_open = True

    def close(self) -> None:
        self.is_open = False

    def _reconfigure_port(self) -> None:
        pass

    def _pull(self) -> None:
        if not self.is_open or self.core is None:
            raise PortNotOpenError()
        self._rx += self.core.read_available()
        if self.core.disconnected and not self._rx:
            raise SerialException("device disconnected (emulated)")

    @property
    def in_waiting(self) -> int:
        self._pull()
        return len(self._rx)

    def read(self, size: int = 1) -> bytes:
        assert self.core is not None
        timeout = getattr(self, "_timeout", None)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            self._pull()
            if len(self._rx) >= size:
                break
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                break
            due = self.core.next_due_s()
            wait = 0.01 if due is None else max(due - now, 0.0005)
            if deadline is not None:
                wait = min(wait, deadline - now)
            time.sleep(min(wait, 0.01))
        out = bytes(self._rx[:size])
        del self._rx[:size]
        return out

    def write(self, data: bytes) -> int:  # type: ignore[override]
        if not self.is_open or self.core is None:
            raise PortNotOpenError()
        if self.core.disconnected:
            raise SerialException("device disconnected (emulated)")
        self.core.write(bytes(data))
        return len(data)

    def reset_input_buffer(self) -> None:
        self._pull()
        self._rx.clear()

    def reset_output_buffer(self) -> None:
        pass

    def flush(self) -> None:
        pass

    def _update_break_state(self) -> None:
        pass

    def _update_rts_state(self) -> None:
        pass

    def _update_dtr_state(self) -> None:
        pass

    @property
    def cts(self) -> bool:
        return True

    @property
    def dsr(self) -> bool:
        return True

    @property
    def ri(self) -> bool:
        return False

    @property
    def cd(self) -> bool:
        return True
