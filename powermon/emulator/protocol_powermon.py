"""pyserial URL handler ``powermon://NAME?options``: an emulated PowerMon 2 inside this process.

Registered by appending ``archline.powermon.emulator`` to ``serial.protocol_handler_packages`` (the driver
does this on import), so ``serial.serial_for_url("powermon://default?speed=10")`` opens one. ``NAME`` is a
device registered with :func:`archline.powermon.emulator.register_device` (``default`` always exists).

Options: ``speed``, ``seed``, ``partial_first``, ``drop=OFF,OFF``, ``noise=OFF:N,OFF:N``,
``overflow=EVENT:N,...``, ``stall=AT_S:DUR_S``, ``disconnect=AT_S``, ``silent=1``, ``adc_noise=LSB``.
"""

from __future__ import annotations

import time
from urllib.parse import parse_qs, urlsplit

from serial.serialutil import PortNotOpenError, SerialBase, SerialException

from archline.powermon.emulator.device import Faults, PowerMon2Core
from archline.powermon.emulator.registry import get_device

_OPTIONS = ("speed", "seed", "partial_first", "drop", "noise", "overflow", "stall", "disconnect", "silent",
            "adc_noise")


def _pairs(text: str) -> tuple[tuple[int, int], ...]:
    return tuple((int(a), int(b)) for a, b in (x.split(":") for x in text.split(",") if x))


def core_from_url(url: str) -> PowerMon2Core:
    parts = urlsplit(url)
    if parts.scheme != "powermon":
        raise SerialException(f"expected a URL of the form powermon://NAME?speed=1, not {url!r}")
    name = parts.netloc or parts.path.strip("/") or "default"
    spec = get_device(name)
    if spec is None:
        raise SerialException(f"no emulated PowerMon named {name!r} (register it with register_device)")
    faults = Faults(**vars(spec.faults))
    speed, seed = spec.speed, spec.seed
    try:
        for key, values in parse_qs(parts.query, keep_blank_values=True).items():
            v = values[0]
            if key == "speed":
                speed = float(v)
            elif key == "seed":
                seed = int(v)
            elif key == "partial_first":
                faults.partial_first = int(v)
            elif key == "drop":
                faults.drop_bytes = tuple(int(x) for x in v.split(",") if x)
            elif key == "noise":
                faults.noise = _pairs(v)
            elif key == "overflow":
                faults.overflow = _pairs(v)
            elif key == "stall":
                a, b = v.split(":")
                faults.stall = (float(a), float(b))
            elif key == "disconnect":
                faults.disconnect_s = float(v)
            elif key == "silent":
                faults.silent = v not in ("0", "false", "")
            elif key == "adc_noise":
                faults.adc_noise_lsb = float(v)
            else:
                raise ValueError(f"unknown option {key!r} (known: {', '.join(_OPTIONS)})")
    except ValueError as e:
        raise SerialException(f"bad powermon:// URL {url!r}: {e}") from None
    core = PowerMon2Core(spec.power, faults, speed=speed, seed=seed)
    spec.cores.append(core)
    return core


class Serial(SerialBase):
    """An emulated PowerMon 2 behind pyserial's interface (no real port)."""

    core: PowerMon2Core | None = None

    def open(self) -> None:
        if self.is_open:
            raise SerialException("port already open")
        if self._url_port() is None:
            raise SerialException("port must be configured before it can be used")
        self.core = core_from_url(str(self._url_port()))
        self._rx = bytearray()
        self.is_open = True

    def close(self) -> None:
        self.is_open = False

    def _url_port(self) -> str | None:
        return getattr(self, "_port", None)

    def _read_timeout(self) -> float | None:
        return getattr(self, "_timeout", None)

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
        timeout = self._read_timeout()
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
        b = bytes(data)
        self.core.write(b)
        return len(b)

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
