"""The PMD-USB as a recorder meter (real on its port, or emulated on a pty). It has no in-band markers: the
device clock is mapped by the lower envelope of arrival lags. Channel ids 0-3 = PCIE1, PCIE2, EPS1, EPS2."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from archline.formats.meters.capture import read_stream_capture, stream_capture
from archline.formats.meters.samples import Samples
from archline.powermon.emulator.power import PowerCallable, PowerSource
from archline.powermon.pmd.driver import PmdUsb
from archline.powermon.pmd.emulator import PmdCore
from archline.powermon.pmd.protocol import FRAME_BYTES
from archline.powermon.spec import MeterSpec
from archline.powermon.stream import meter as stream
from archline.powermon.stream.core import StreamFaults
from archline.powermon.stream.meter import StreamMeter

#: frames per second when the profile gives no ``rate_hz`` (the stream rate is undocumented: measure yours)
DEFAULT_RATE_HZ = 1000.0
SCHEME = "pmd"
#: the kind's rate rules; module-level functions are what spec dispatch and the emulated back end look up
KIND = stream.StreamKind(SCHEME, DEFAULT_RATE_HZ, FRAME_BYTES)
rate_of, url_rate_hz, records_per_device_s = KIND.rate_of, KIND.url_rate_hz, KIND.records_per_device_s


def open_from_spec(spec: MeterSpec, *, raw_dir: str | Path | None = None, raw_path: str | Path | None = None,
                   name: str | None = None, **kw: Any) -> StreamMeter:
    """A PMD-USB on ``spec.port`` (a ``pmd://`` URL opens the emulator in-process)."""
    return stream.open_stream(spec, PmdUsb, SCHEME, DEFAULT_RATE_HZ, "/dev/ttyUSB0", name=name,
                              capture=stream_capture(SCHEME, raw_dir, raw_path), **kw)


def emulate_from_spec(spec: MeterSpec, power: PowerSource | PowerCallable | None, *, speed: float = 1.0,
                      seed: int = 0, raw_dir: str | Path | None = None, raw_path: str | Path | None = None,
                      faults: StreamFaults | None = None,
                      name: str | None = None, **kw: Any) -> StreamMeter:
    """A PMD-USB emulated on a real pty playing ``power`` (channel ids 0-3), driven by the real driver;
    labelled emulated. ``speed`` compresses time."""
    return stream.emulate_stream(spec, PmdUsb, PmdCore, rate_of(spec), power, speed=speed, seed=seed,
                                 faults=faults, name=name, capture=stream_capture(SCHEME, raw_dir, raw_path), **kw)


def decode_capture(path: str | Path, channels: Sequence[int] | None = None) -> tuple[Samples, dict[str, int]]:
    """The samples of a raw capture this meter kept (``archline meter decode``), as the live run decoded them, and
    the decoder's counts."""
    data, side = read_stream_capture(path, PmdUsb.kind)
    return stream.decode_capture(PmdUsb, data, side, channels)
