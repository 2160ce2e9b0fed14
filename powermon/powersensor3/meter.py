"""The PowerSensor3 as a recorder meter (real on its port, or emulated on a pty). Window marks become in-band
markers (``M``), and the device clock is aligned to them (:meth:`StreamDriver.clock_map`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from archline.powermon.emulator.power import PowerCallable, PowerSource
from archline.powermon.emulator.pty_server import PtyServer
from archline.powermon.errors import MeterError
from archline.powermon.powersensor3.driver import PowerSensor3
from archline.powermon.powersensor3.emulator import PowerSensor3Core
from archline.powermon.powersensor3.protocol import FRAME_BYTES, REAL_RATE_HZ
from archline.powermon.spec import MeterSpec
from archline.powermon.stream.core import StreamFaults
from archline.powermon.stream.meter import StreamMeter

MARKER = b"M"


def rate_of(spec: MeterSpec) -> float:
    """Frames per second: an emulator URL's ``rate``, the profile's ``rate_hz``, or the F411 firmware's 20 kHz."""
    url_rate = url_rate_hz(spec.port)
    if url_rate is not None:
        return url_rate
    return spec.rate_hz if "rate_hz" in spec.model_fields_set else REAL_RATE_HZ


def url_rate_hz(port: str | None) -> float | None:
    """The frame rate an emulator URL asks for (``powersensor3://default?rate=2000``), else None."""
    from urllib.parse import parse_qs, urlsplit

    if not port or not port.startswith("powersensor3://"):
        return None
    got = parse_qs(urlsplit(port).query).get("rate")
    try:
        rate = float(got[0]) if got else None
    except ValueError:
        raise MeterError(f"bad powersensor3:// URL {port!r}: rate must be a number") from None
    if rate is not None and not rate > 0:
        raise MeterError(f"bad powersensor3:// URL {port!r}: rate must be positive")
    return rate


def records_per_device_s(spec: MeterSpec) -> float:
    """The stream's weight over a pty in PowerMon-record units (4 bytes): 18-byte frames."""
    return rate_of(spec) * FRAME_BYTES / 4


def _port(spec: MeterSpec) -> str:
    if not spec.port:
        raise MeterError(f"meter '{spec.name}' has no port (e.g. port = \"/dev/ttyACM0\")")
    port = spec.port
    if port.startswith("powersensor3://") and "rate=" not in port:
        port += ("&" if "?" in port else "?") + f"rate={rate_of(spec):g}"
    return port


def open_from_spec(spec: MeterSpec, *, raw_dir: str | Path | None = None, name: str | None = None,
                   markers: bool = True, **kw: Any) -> StreamMeter:
    """A PowerSensor3 on ``spec.port`` (a ``powersensor3://`` URL opens the emulator in-process)."""
    if spec.kind != "powersensor3":
        raise MeterError(f"meter '{spec.name}' is a {spec.kind} meter, not a PowerSensor3")
    port = _port(spec)
    drv = PowerSensor3(port, rate_of(spec), name=name or spec.name, emulated=port.startswith("powersensor3://"),
                       **kw)
    return StreamMeter(drv, spec, marker_byte=MARKER if markers else None)


def emulate_from_spec(spec: MeterSpec, power: PowerSource | PowerCallable | None, *, speed: float = 1.0,
                      seed: int = 0, raw_dir: str | Path | None = None, faults: StreamFaults | None = None,
                      name: str | None = None, markers: bool = True, **kw: Any) -> StreamMeter:
    """A PowerSensor3 emulated on a real pty playing ``power`` (pairs 0-3 = channel ids), driven by the real
    driver; labelled emulated. ``speed`` compresses time."""
    rate = rate_of(spec)
    core = PowerSensor3Core(power, rate, faults, speed=speed, seed=seed)
    bind = getattr(power, "bind", None)
    if callable(bind):
        bind(core)
    server = PtyServer(core)  # type: ignore[arg-type]
    drv = PowerSensor3(server.port, rate, name=name or f"{spec.name}-emulated", speed=speed, emulated=True, **kw)
    return StreamMeter(drv, spec, server, marker_byte=MARKER if markers else None)
