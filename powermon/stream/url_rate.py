"""A byte-stream meter kind's frame rate: an emulator URL's ``rate`` option, the profile's ``rate_hz`` or the
kind's default; the port an emulator URL gets (the profile's rate appended), and the emulator's ceiling."""

from __future__ import annotations

import math
from dataclasses import dataclass
from urllib.parse import quote

from archline.powermon.errors import MeterError
from archline.powermon.spec import MeterSpec
from archline.powermon.stream.driver import StreamDriver

#: an in-process emulator's ceiling (10x a real PowerSensor3's 20 kHz): a rate far above it fills memory instead
MAX_EMULATED_FRAMES_PER_S = 200_000.0


@dataclass(frozen=True)
class StreamKind:
    """A byte-stream meter kind's frame-rate rules: its emulator URL scheme, its default frame rate and its frame
    size; a kind's module exports these methods as its ``rate_of``, ``url_rate_hz`` and ``records_per_device_s``."""

    scheme: str
    default_hz: float
    frame_bytes: int

    def url_rate_hz(self, port: str | None) -> float | None:
        """The frame rate an emulator URL asks for (``SCHEME://default?rate=2000``), else None."""
        return url_rate_hz(port, self.scheme)

    def rate_of(self, spec: MeterSpec) -> float:
        """Frames per second: an emulator URL's ``rate``, the profile's ``rate_hz``, or the kind's default."""
        return rate_of(spec, self.scheme, self.default_hz)

    def records_per_device_s(self, spec: MeterSpec) -> float:
        """The stream's weight over a pty in PowerMon-record units (4 bytes)."""
        return self.rate_of(spec) * self.frame_bytes / 4


def url_rate_hz(port: str | None, scheme: str) -> float | None:
    """The frame rate an emulator URL asks for (``pmd://default?rate=2000``), else None."""
    from archline.powermon.emulator.serial_base import url_number, url_options

    if not port or not port.startswith(f"{scheme}://"):
        return None
    try:
        got = url_options(port).get("rate")
    except ValueError as e:
        raise MeterError(f"bad {scheme}:// URL {port!r}: {e}") from None
    if got is None:
        return None
    try:
        return float(url_number("rate", got, positive=True))
    except ValueError as e:
        raise MeterError(f"bad {scheme}:// URL {port!r}: {e} (frames per second)") from None


def rate_of(spec: MeterSpec, scheme: str, default_hz: float) -> float:
    """Frames per second: an emulator URL's ``rate``, the profile's ``rate_hz``, or the meter's ``default_hz``."""
    url_rate = url_rate_hz(spec.port, scheme)
    if url_rate is not None:
        given = spec.rate_hz if "rate_hz" in spec.model_fields_set else None
        if given is not None and not math.isclose(given, url_rate, rel_tol=1e-9):
            # two rates asked for (as --rate against ?rate=): neither may win silently
            raise MeterError(f"meter '{spec.name}': rate_hz = {given:g} and its port's rate={url_rate:g} "
                             f"({spec.port}) disagree: give the rate once (drop rate_hz or the URL's ?rate=)")
        return url_rate
    return spec.rate_hz if "rate_hz" in spec.model_fields_set else default_hz


def spec_port(spec: MeterSpec, scheme: str, default_hz: float, example: str) -> str:
    """The port of ``spec``; an emulator URL gets the profile's rate unless it names one."""
    if not spec.port:
        raise MeterError(f"meter '{spec.name}' has no port (e.g. port = \"{example}\")")
    port = spec.port
    if port.startswith(f"{scheme}://") and "rate=" not in port:
        # quoted: a rate such as 1e+07 must not come back as '1e 07' (a '+' in a query is a space)
        port += ("&" if "?" in port else "?") + f"rate={quote(repr(rate_of(spec, scheme, default_hz)))}"
    return port


def check_emulated_rate(port: str, scheme: str, rate_hz: float, driver: type[StreamDriver]) -> None:
    """Refuse an emulator URL whose frame rate times its speed is past :data:`MAX_EMULATED_FRAMES_PER_S`."""
    from archline.powermon.emulator.serial_base import url_number, url_options

    try:
        got = url_options(port).get("speed")
        speed = float(url_number("speed", got, positive=True)) if got is not None else 1.0
    except ValueError as e:
        raise MeterError(f"bad {scheme}:// URL: {e}") from None
    if rate_hz * speed > MAX_EMULATED_FRAMES_PER_S:
        raise MeterError(f"rate {rate_hz:g} (--rate, or the URL's rate=) at speed {speed:g}x is more frames per "
                         f"second than an emulated {driver.label} streams (at most {MAX_EMULATED_FRAMES_PER_S:g} "
                         "frames per host second); lower the rate or the speed")
