"""The window types every meter shares: the ``Meter`` interface the recorder drives, and what one meter says
about one window (:class:`MeterRegion`: energy per channel and per device on the host monotonic clock).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from archline.powermon.record.samples import Samples


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
    lost_samples: int = 0
    samples: Samples | None = None
    warnings: list[str] = field(default_factory=list)
    device_time_s: float | None = None  #: the window on the device's timeline (an emulator may run faster)

    @property
    def time_s(self) -> float:
        return self.t_end_s - self.t_start_s

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
