"""The PowerSensor3 as a recorder meter (real on its port, or emulated on a pty). Window marks become in-band
markers (``M``), and the device clock is aligned to them (:meth:`StreamDriver.clock_map`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from archline.formats.meters.capture import read_stream_capture, stream_capture
from archline.formats.meters.samples import Samples
from archline.powermon.emulator.power import PowerCallable, PowerSource
from archline.powermon.powersensor3.driver import PowerSensor3
from archline.powermon.powersensor3.emulator import PowerSensor3Core
from archline.powermon.powersensor3.protocol import FRAME_BYTES, REAL_RATE_HZ
from archline.powermon.spec import MeterSpec
from archline.powermon.stream import meter as stream
from archline.powermon.stream.core import StreamFaults
from archline.powermon.stream.meter import StreamMeter

MARKER = b"M"
SCHEME = "powersensor3"
#: the kind's rate rules; module-level functions are what spec dispatch and the emulated back end look up
KIND = stream.StreamKind(SCHEME, REAL_RATE_HZ, FRAME_BYTES)
rate_of, url_rate_hz, records_per_device_s = KIND.rate_of, KIND.url_rate_hz, KIND.records_per_device_s


def open_from_spec(spec: MeterSpec, *, raw_dir: str | Path | None = None, raw_path: str | Path | None = None,
                   name: str | None = None,
                   markers: bool = True, **kw: Any) -> StreamMeter:
    """A PowerSensor3 on ``spec.port`` (a ``powersensor3://`` URL opens the emulator in-process)."""
    return stream.open_stream(spec, PowerSensor3, SCHEME, REAL_RATE_HZ, "/dev/ttyACM0", name=name,
                              marker_byte=MARKER if markers else None,
                              capture=stream_capture(SCHEME, raw_dir, raw_path), **kw)


def emulate_from_spec(spec: MeterSpec, power: PowerSource | PowerCallable | None, *, speed: float = 1.0,
                      seed: int = 0, raw_dir: str | Path | None = None, raw_path: str | Path | None = None,
                      faults: StreamFaults | None = None,
                      name: str | None = None, markers: bool = True, **kw: Any) -> StreamMeter:
    """A PowerSensor3 emulated on a real pty playing ``power`` (pairs 0-3 = channel ids), driven by the real
    driver; labelled emulated. ``speed`` compresses time."""
    return stream.emulate_stream(spec, PowerSensor3, PowerSensor3Core, rate_of(spec), power, speed=speed,
                                 seed=seed, faults=faults, name=name, marker_byte=MARKER if markers else None,
                                 capture=stream_capture(SCHEME, raw_dir, raw_path), **kw)


def decode_capture(path: str | Path, channels: Sequence[int] | None = None) -> tuple[Samples, dict[str, int]]:
    """The samples of a raw capture this meter kept (``archline meter decode``), as the live run decoded them, and
    the decoder's counts."""
    data, side = read_stream_capture(path, PowerSensor3.kind)
    return stream.decode_capture(PowerSensor3, data, side, channels)
