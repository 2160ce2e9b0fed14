"""The PMD-USB as a recorder meter (real on its port, or emulated on a pty). It has no in-band markers: the
device clock is mapped by the lower envelope of arrival lags. Channel ids 0-3 = PCIE1, PCIE2, EPS1, EPS2."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from archline.powermon.emulator.power import PowerCallable, PowerSource
from archline.powermon.emulator.pty_server import PtyServer
from archline.powermon.errors import MeterError
from archline.powermon.pmd.driver import PmdUsb
from archline.powermon.pmd.emulator import PmdCore
from archline.powermon.pmd.protocol import FRAME_BYTES
from archline.powermon.spec import MeterSpec
from archline.powermon.stream.core import StreamFaults
from archline.powermon.stream.meter import StreamMeter

#: frames per second when the profile gives no ``rate_hz`` (the stream rate is undocumented: measure yours)
DEFAULT_RATE_HZ = 1000.0


def rate_of(spec: MeterSpec) -> float:
    """Frames per second: an emulator URL's ``rate``, the profile's ``rate_hz``, or 1000."""
    url_rate = url_rate_hz(spec.port)
    if url_rate is not None:
        return url_rate
    return spec.rate_hz if "rate_hz" in spec.model_fields_set else DEFAULT_RATE_HZ


def url_rate_hz(port: str | None) -> float | None:
    """The frame rate an emulator URL asks for (``pmd://default?rate=2000``), else None."""
    from urllib.parse import parse_qs, urlsplit

    if not port or not port.startswith("pmd://"):
        return None
    got = parse_qs(urlsplit(port).query).get("rate")
    try:
        rate = float(got[0]) if got else None
    except ValueError:
        raise MeterError(f"bad pmd:// URL {port!r}: rate must be a number") from None
    if rate is not None and not rate > 0:
        raise MeterError(f"bad pmd:// URL {port!r}: rate must be positive")
    return rate


def records_per_device_s(spec: MeterSpec) -> float:
    """The stream's weight over a pty in PowerMon-record units (4 bytes): 20-byte frames."""
    return rate_of(spec) * FRAME_BYTES / 4


def open_from_spec(spec: MeterSpec, *, raw_dir: str | Path | None = None, name: str | None = None,
                   **kw: Any) -> StreamMeter:
    """A PMD-USB on ``spec.port`` (a ``pmd://`` URL opens the emulator in-process)."""
    if spec.kind != "pmd":
        raise MeterError(f"meter '{spec.name}' is a {spec.kind} meter, not a PMD-USB")
    if not spec.port:
        raise MeterError(f"meter '{spec.name}' has no port (e.g. port = \"/dev/ttyUSB0\")")
    port = spec.port
    if port.startswith("pmd://") and "rate=" not in port:
        port += ("&" if "?" in port else "?") + f"rate={rate_of(spec):g}"
    drv = PmdUsb(port, rate_of(spec), name=name or spec.name, emulated=port.startswith("pmd://"), **kw)
    return StreamMeter(drv, spec)


def emulate_from_spec(spec: MeterSpec, power: PowerSource | PowerCallable | None, *, speed: float = 1.0,
                      seed: int = 0, raw_dir: str | Path | None = None, faults: StreamFaults | None = None,
                      name: str | None = None, **kw: Any) -> StreamMeter:
    """A PMD-USB emulated on a real pty playing ``power`` (channel ids 0-3), driven by the real driver;
    labelled emulated. ``speed`` compresses time."""
    rate = rate_of(spec)
    core = PmdCore(power, rate, faults, speed=speed, seed=seed)
    bind = getattr(power, "bind", None)
    if callable(bind):
        bind(core)
    server = PtyServer(core)  # type: ignore[arg-type]
    drv = PmdUsb(server.port, rate, name=name or f"{spec.name}-emulated", speed=speed, emulated=True, **kw)
    return StreamMeter(drv, spec, server)
