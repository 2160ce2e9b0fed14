"""The window types every meter shares: the ``Meter`` interface the recorder drives, and what one meter says
about one window (:class:`MeterRegion`: energy per channel and per device on the host monotonic clock).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from archline.formats.meters.samples import Samples
from archline.powermon.errors import MeterError


@dataclass
class ChannelResult:
    energy_j: float
    energy_err_j: float
    mean_power_w: float
    n_samples: int
    rail: str = ""


@dataclass
class DeviceResult:
    energy_j: float
    energy_err_j: float
    mean_power_w: float
    rails: list[str] = field(default_factory=list)


@dataclass
class MeterRegion:
    """One meter's view of one region."""

    meter: str
    kind: str                       #: "sampling" or "counter"
    emulated: bool
    t_start_s: float
    t_end_s: float
    channels: dict[str, ChannelResult]
    devices: dict[str, DeviceResult]
    energy_j: float                 #: all channels of this meter (on the device timeline: emulated seconds)
    energy_err_j: float
    mean_power_w: float
    n_samples: int
    sample_hz: float
    overflows: int = 0
    gaps: int = 0
    lost_samples: int = 0              #: samples the window should hold (cadence x channels) that never arrived
    samples: Samples | None = None
    warnings: list[str] = field(default_factory=list)
    device_time_s: float | None = None  #: the window on the device's timeline (an emulator may run faster)
    expected_samples: int = 0          #: what the cadence promises in the window (0: a counter meter)
    lost_s: float = 0.0                #: the longest stretch of the window a channel saw nothing (device seconds)
    device_window_s: tuple[float, float] | None = None  #: the window on the device's timeline, as integrated
    #: device readings a counter meter sampled on its polls over the window (clocks, temperature: each key's mean,
    #: ``<key>_min``, ``<key>_max``, ``n_readings``; powermon/counters/base.py); {} for meters that sample none
    readings: dict[str, float] = field(default_factory=dict)

    @property
    def time_s(self) -> float:
        return self.t_end_s - self.t_start_s

    @property
    def lost_share(self) -> float:
        """Lost samples over the samples the window should hold (0 for a meter without a cadence)."""
        return self.lost_samples / self.expected_samples if self.expected_samples else 0.0

    def loss_text(self) -> str:
        """``lost 574 of 768 samples (74.7%, 1.5 s) in 1 gap, 1 overflow`` ('' when nothing was lost)."""
        if not (self.lost_samples or self.overflows):
            return ""
        return (f"{self.meter}: lost {self.lost_samples} of {self.expected_samples} samples "
                f"({100 * self.lost_share:.3g}%, {self.lost_s:.3g} s) in {self.gaps} gap(s), "
                f"{self.overflows} overflow(s)")

    @property
    def duration_s(self) -> float:
        """Device seconds of the window (host seconds for a meter without its own timeline)."""
        return self.time_s if self.device_time_s is None else self.device_time_s


@runtime_checkable
class Meter(Protocol):
    """What the recorder drives. Optional extras a meter may have: ``update_hz`` (how often its energy reading
    advances, per device second; sizes windows), ``speed`` (device seconds per host second), ``error`` (a
    background failure), ``segment()`` (restart its stream between windows) and ``live_power_w()``."""

    name: str
    emulated: bool

    def start(self) -> None: ...
    def stop(self) -> None: ...
    def mark(self, t_s: float) -> None: ...
    def wait_until(self, t_s: float, timeout_s: float = 2.0) -> bool: ...
    def region(self, t0_s: float, t1_s: float) -> MeterRegion: ...
    def samples(self) -> Samples: ...
    def info(self) -> dict[str, Any]: ...


def _devices(channels: dict[str, ChannelResult], devices: Mapping[str, list[str]], duration_s: float
             ) -> dict[str, DeviceResult]:
    out: dict[str, DeviceResult] = {}
    by_rail = {c.rail: c for c in channels.values()}
    for dev, rails in devices.items():
        parts = [by_rail[r] for r in rails if r in by_rail]
        e = sum(p.energy_j for p in parts)
        out[dev] = DeviceResult(e, sum(p.energy_err_j for p in parts), e / duration_s if duration_s > 0 else
                                float("nan"), list(rails))
    return out


def same_power_note(meters: Sequence[Meter]) -> str:
    """Why a Measurement of these meters would count a device twice (a window adds every meter's energy), or ''.
    Meters opened from a profile's entries know what they measure; a reference beside a sensor on one device
    (``meter calibrate``) is read per meter, through ``Recorder.end`` (a Region), and is not refused there."""
    specs: list[tuple[str, Any]] = [(m.name, getattr(m, "spec", None)) for m in meters]
    specs = [(n, sp) for n, sp in specs if callable(getattr(sp, "same_power", None))]
    for i, (a, sa) in enumerate(specs):
        for b, sb in specs[i + 1:]:
            if devs := sa.same_power(sb):
                return (f"meters {a!r} and {b!r} both measure {', '.join(sorted(devs))}: a window adds the meters' "
                        "energies, so that power would be counted twice; give the monitor one of them (or one "
                        "monitor each)")
    return ""


def given_meters(meters: object) -> list[Meter]:
    """A monitor's meters as given (None: none), each an object with a ``name`` and ``start``/``stop``/``region``;
    anything else (a string, None in the list) is one MeterError saying what a monitor takes, not an
    AttributeError from deep inside."""
    if meters is None:
        return []
    what = ("a monitor takes a list of meters (archline.powermon.open_meter(spec), emulated_powermon(...), "
            "NullMeter(reason)), or archline.open_monitor(platform)")
    if isinstance(meters, (str, bytes)) or not isinstance(meters, Iterable):
        raise MeterError(f"{what}; got {meters!r}")
    out = list(meters)
    for m in out:
        if not (isinstance(getattr(m, "name", None), str)
                and all(callable(getattr(m, f, None)) for f in ("start", "stop", "mark", "region"))):
            raise MeterError(f"{what}; got {m!r} in the list")
    return out
