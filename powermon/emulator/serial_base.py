"""The pyserial side of every emulator URL (``powermon://``, ``powersensor3://``, ``pmd://``): a ``Serial`` class
over an in-process device core, which a handler module ``protocol_<scheme>`` subclasses with its ``make_core``."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit

from serial.serialutil import PortNotOpenError, SerialBase, SerialException

from archline.powermon.emulator.registry import device_names, get_device


def url_device(url: str, scheme: str, what: str) -> tuple[Any, dict[str, str]]:
    """The registered device (:func:`~archline.powermon.emulator.register_device`) that ``scheme://NAME?options``
    names (``default`` when none), and its options (the first value of each)."""
    parts = urlsplit(url)
    if parts.scheme != scheme:
        raise SerialException(f"expected a URL of the form {scheme}://NAME?speed=1, not {url!r}")
    name = parts.netloc or parts.path.strip("/") or "default"
    dev = get_device(name)
    if dev is None:
        # other names exist only inside a program that registers them (register_device): not a command-line action
        offered = ", ".join(f"{scheme}://{n}" for n in device_names())
        raise SerialException(f"no emulated {what} named {name!r}: use {offered} (options after '?', e.g. "
                              f"{scheme}://default?speed=4)")
    try:
        return dev, url_options(url)
    except ValueError as e:
        raise SerialException(f"bad {scheme}:// URL: {e}") from None


def url_options(url: str) -> dict[str, str]:
    """The options after ``?`` of an emulator URL, each given once (ValueError naming one given twice, whose second
    value would otherwise be ignored unchecked)."""
    options = parse_qs(urlsplit(url).query, keep_blank_values=True)
    for key, values in options.items():
        if len(values) > 1:
            given = ", ".join(f"{key}={v}" for v in values)
            raise ValueError(f"option {key} is given {len(values)} times ({given}): give each option once")
    return {k: v[0] for k, v in options.items()}


def url_number(key: str, v: str, *, whole: bool = False, positive: bool = False) -> Any:
    """An emulator URL option's number; ValueError naming the option and the form it takes when ``v`` is not."""
    import math

    form = ("a whole number" if whole else "a number") + (" above 0" if positive else " of 0 or more")
    try:
        x: float = int(v) if whole else float(v)
    except ValueError:
        raise ValueError(f"{key} takes {form}, got {v!r}") from None
    if not math.isfinite(x) or x < 0 or (positive and x == 0):
        raise ValueError(f"{key} takes {form}, got {v!r}")
    return x


def pairs(key: str, v: str, form: str) -> list[tuple[str, str]]:
    out = []
    for x in v.split(","):
        a, sep, b = x.partition(":")
        if not sep or not a or not b or ":" in b:
            raise ValueError(f"{key} takes {form}, got {v!r}")
        out.append((a, b))
    return out


def set_byte_fault(faults: Any, key: str, v: str) -> bool:
    """Set a fault every emulator URL takes (``drop``, ``noise``, ``stall``, ``disconnect``) on ``faults``;
    False when ``key`` is not one of them (ValueError naming the option and its form when its value is bad)."""
    if key == "drop":
        form = "byte offsets of 0 or more, comma-separated (drop=OFF,OFF)"
        try:
            faults.drop_bytes = tuple(url_number(key, x, whole=True) for x in v.split(",") if x)
        except ValueError:
            raise ValueError(f"drop takes {form}, got {v!r}") from None
    elif key == "noise":
        form = "OFF:N pairs, comma-separated (noise=OFF:N,...; byte offset 0 or more, N above 0)"
        try:
            faults.noise = tuple((url_number(key, a, whole=True), url_number(key, b, whole=True, positive=True))
                                 for a, b in pairs(key, v, form))
        except ValueError:
            raise ValueError(f"noise takes {form}, got {v!r}") from None
    elif key == "stall":
        form = "AT_S:DUR_S (seconds: stall=1:0.5; start 0 or more, duration above 0)"
        try:
            ((a, b),) = pairs(key, v, form)
            faults.stall = (url_number(key, a), url_number(key, b, positive=True))
        except ValueError:
            raise ValueError(f"stall takes {form}, got {v!r}") from None
    elif key == "disconnect":
        faults.disconnect_s = url_number(key, v) * 1.0
    else:
        return False
    return True


class ByteDevice(Protocol):
    """What an emulated device core offers the port (the interface the pty server serves too)."""

    disconnected: bool

    def write(self, data: bytes) -> None: ...

    def read_available(self) -> bytes: ...

    def next_due_s(self) -> float | None: ...


class CoreSerial(SerialBase):
    """An emulated meter behind pyserial's interface (no real port); ``make_core(url)`` builds its device core."""

    make_core: Callable[[str], ByteDevice]
    core: ByteDevice | None = None

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
