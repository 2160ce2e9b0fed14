"""Decoded samples in physical units, one row per (time, channel)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]

COLUMNS = ("t_s", "channel", "voltage_v", "current_a", "power_w")


@dataclass
class Samples:
    """Columns of equal length. ``t_s`` is on the host monotonic clock when a clock map was available,
    otherwise device seconds since streaming started (``clock`` says which)."""

    t_s: F64
    channel: npt.NDArray[np.int16]
    voltage_v: F64
    current_a: F64
    power_w: F64
    valid: npt.NDArray[np.bool_] | None = None       #: False for failed sensor reads
    meter: str = ""
    emulated: bool | None = False     #: None: not known (decoded from a capture without its sidecar)
    clock: str = "host_monotonic"
    meta: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.t_s)

    @classmethod
    def empty(cls, meter: str = "", emulated: bool | None = False) -> Samples:
        z = np.zeros(0)
        return cls(z, np.zeros(0, np.int16), z, z, z, np.zeros(0, bool), meter, emulated)

    def take(self, idx: npt.NDArray[Any]) -> Samples:
        return Samples(self.t_s[idx], self.channel[idx], self.voltage_v[idx], self.current_a[idx],
                       self.power_w[idx], None if self.valid is None else self.valid[idx], self.meter,
                       self.emulated, self.clock, dict(self.meta))

    def between(self, t0_s: float, t1_s: float) -> Samples:
        return self.take(np.flatnonzero((self.t_s >= t0_s) & (self.t_s <= t1_s)))

    def channels(self) -> list[int]:
        return [int(c) for c in np.unique(self.channel)]

    def columns(self) -> dict[str, Any]:
        return {"t_s": self.t_s, "channel": self.channel, "voltage_v": self.voltage_v,
                "current_a": self.current_a, "power_w": self.power_w}

    @staticmethod
    def concat(parts: list[Samples]) -> Samples:
        if not parts:
            return Samples.empty()
        first = parts[0]
        valid = [p.valid if p.valid is not None else np.ones(len(p), bool) for p in parts]
        return Samples(np.concatenate([p.t_s for p in parts]), np.concatenate([p.channel for p in parts]),
                       np.concatenate([p.voltage_v for p in parts]), np.concatenate([p.current_a for p in parts]),
                       np.concatenate([p.power_w for p in parts]), np.concatenate(valid), first.meter,
                       any(p.emulated for p in parts), first.clock, dict(first.meta))
