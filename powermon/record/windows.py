"""The window types: a mark on a window's edge, a :class:`Region` (every meter's integrated view of one named
window, with its samples: what the bench runner builds rows from), its :class:`Measurement` (time, energy per
device and rail, its bound, lost samples, the emulated flag: what the public API returns) and the one
:class:`Window` handle a recorder hands out for a named window (its edges once closed, its Measurement once
integrated). The running recorder that opens and closes windows is :class:`~archline.powermon.record.recorder.Recorder`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from archline.powermon.errors import MeterError
from archline.powermon.record.bounds import edge_err_j, short_window_err_j
from archline.powermon.record.meters import MeterRegion


@dataclass
class Mark:
    name: str
    kind: str          #: "begin", "end" or "cancel"
    t_s: float


@dataclass
class Region:
    name: str
    t_start_s: float
    t_end_s: float
    meters: dict[str, MeterRegion]
    emulated: bool = False
    warnings: list[str] = field(default_factory=list)

    @property
    def time_s(self) -> float:
        return self.t_end_s - self.t_start_s

    def energy_j(self, meter: str | None = None, device: str | None = None) -> float:
        m = self._meter(meter)
        return m.devices[device].energy_j if device is not None else m.energy_j

    def energy_err_j(self, meter: str | None = None, device: str | None = None) -> float:
        m = self._meter(meter)
        return m.devices[device].energy_err_j if device is not None else m.energy_err_j

    def _meter(self, meter: str | None) -> MeterRegion:
        if meter is None:
            if len(self.meters) != 1:
                raise MeterError(f"region {self.name!r} has {len(self.meters)} meters: name one")
            return next(iter(self.meters.values()))
        return self.meters[meter]

    def summary(self) -> dict[str, Any]:
        """A flat dict for a result row (no samples); a meter that sampled device readings (NVML, AMD SMI: clocks
        and temperature, see :attr:`MeterRegion.readings`) adds them under ``readings``."""
        out: dict[str, Any] = {"name": self.name, "time_s": self.time_s, "emulated": self.emulated}
        for mname, m in self.meters.items():
            out[mname] = {"energy_j": m.energy_j, "energy_err_j": m.energy_err_j, "mean_power_w": m.mean_power_w,
                          "n_samples": m.n_samples, "sample_hz": m.sample_hz, "duration_s": m.duration_s,
                          "expected_samples": m.expected_samples, "lost_samples": m.lost_samples,
                          "lost_share": m.lost_share, "lost_s": m.lost_s, "overflows": m.overflows,
                          "gaps": m.gaps, "warnings": list(m.warnings), "emulated": m.emulated,
                          "channels": {k: vars(c) for k, c in m.channels.items()},
                          "devices": {k: vars(d) for k, d in m.devices.items()}}
            if m.readings:   # clocks and temperature a counter meter sampled on its polls over the window
                out[mname]["readings"] = dict(m.readings)
        return out


@dataclass(frozen=True)
class Measurement:
    """One window: host time, energy (NaN without a meter: ``reason`` says why) and its bound, per device and rail."""

    name: str
    time_s: float                         #: host seconds between the window's edges
    energy_j: float                       #: every meter's channels together (NaN: no energy, see ``reason``)
    energy_err_j: float                   #: bound on |energy_j - truth|: the meters' own + clock_err_j
    device_energy_j: dict[str, float] = field(default_factory=dict)
    device_energy_err_j: dict[str, float] = field(default_factory=dict)   #: the meters' own bounds (no clock)
    rail_energy_j: dict[str, float] = field(default_factory=dict)
    duration_s: float = math.nan          #: the window on the meter's timeline (an emulator may run faster)
    lost_samples: int = 0
    n_samples: int = 0
    expected_samples: int = 0             #: what the meters' cadences promise in the window (0: no cadence)
    emulated: bool = False
    reason: str = ""                      #: why there is no energy ("time only: ...") or where it is
    warnings: tuple[str, ...] = ()
    t_start_s: float = math.nan           #: host monotonic seconds (time.monotonic(): one clock per machine)
    t_end_s: float = math.nan
    clock_err_j: float = 0.0              #: part of energy_err_j: the edges placed on the meter's clock (below)
    region: Region | None = field(default=None, repr=False, compare=False)

    @property
    def has_energy(self) -> bool:
        return math.isfinite(self.energy_j)

    @property
    def lost_share(self) -> float:
        """Lost samples over the samples the window should hold (0 without a cadence), as --max-lost reads it."""
        return self.lost_samples / self.expected_samples if self.expected_samples else 0.0

    @property
    def mean_power_w(self) -> float:
        d = self.duration_s if math.isfinite(self.duration_s) else self.time_s
        return self.energy_j / d if d > 0 else math.nan

    @property
    def mean_power_err_w(self) -> float:
        d = self.duration_s if math.isfinite(self.duration_s) else self.time_s
        return self.energy_err_j / d if d > 0 else math.nan

    @classmethod
    def from_region(cls, region: Region, reason: str = "", clock_err_s: dict[str, float] | None = None,
                    full_scale_w: dict[str, float] | None = None) -> Measurement:
        """``clock_err_s``: per sampling meter, how well its clock is aligned with the host's (see edge_err_j);
        ``full_scale_w``: per sampling meter, the most power it can read (see short_window_err_j)."""
        metered = [m for m in region.meters.values() if m.kind != "none" and math.isfinite(m.energy_j)]
        clock_j = sum(edge_err_j(m, (clock_err_s or {}).get(m.meter, 0.0)) for m in metered)
        warnings = list(region.warnings)
        short_j = 0.0                # a window too short for the meter to see a step inside it (below)
        for m in metered:
            j, note = short_window_err_j(m, (full_scale_w or {}).get(m.meter))
            short_j += j
            if note:
                warnings.append(note)
        dev_e: dict[str, float] = {}
        dev_err: dict[str, float] = {}
        rails: dict[str, float] = {}
        for m in metered:
            for d, r in m.devices.items():
                dev_e[d] = dev_e.get(d, 0.0) + r.energy_j
                dev_err[d] = dev_err.get(d, 0.0) + r.energy_err_j
            for c in m.channels.values():
                rails[c.rail] = rails.get(c.rail, 0.0) + c.energy_j
        nan = math.nan
        return cls(name=region.name, time_s=region.time_s,
                   energy_j=sum(m.energy_j for m in metered) if metered else nan,
                   energy_err_j=sum(m.energy_err_j for m in metered) + clock_j + short_j if metered else nan,
                   device_energy_j=dev_e, device_energy_err_j=dev_err, rail_energy_j=rails,
                   duration_s=metered[0].duration_s if metered else region.time_s,
                   lost_samples=sum(m.lost_samples for m in region.meters.values()),
                   n_samples=sum(m.n_samples for m in region.meters.values()),
                   expected_samples=sum(m.expected_samples for m in region.meters.values()),
                   emulated=region.emulated, reason="" if metered else reason, warnings=tuple(warnings),
                   t_start_s=region.t_start_s, t_end_s=region.t_end_s, clock_err_j=clock_j, region=region)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, units in the names; NaN (no energy) becomes None."""
        def num(x: float) -> float | None:
            return x if math.isfinite(x) else None

        return {"name": self.name, "time_s": self.time_s, "duration_s": num(self.duration_s),
                "energy_j": num(self.energy_j), "energy_err_j": num(self.energy_err_j),
                "mean_power_w": num(self.mean_power_w), "mean_power_err_w": num(self.mean_power_err_w),
                "device_energy_j": self.device_energy_j, "device_energy_err_j": self.device_energy_err_j,
                "rail_energy_j": self.rail_energy_j, "lost_samples": self.lost_samples,
                "n_samples": self.n_samples, "expected_samples": self.expected_samples,
                "clock_err_j": self.clock_err_j, "emulated": self.emulated,
                "reason": self.reason or None,
                "warnings": list(self.warnings), "t_start_s": self.t_start_s, "t_end_s": self.t_end_s}


class WindowHook(Protocol):
    """Sees each window edge before it is taken; may return the host time the edge is to have (an emulated
    device that switched its power at that instant), else None (the recorder's clock)."""

    def __call__(self, kind: str, name: str) -> float | None: ...


class Window:
    """One named window, as a recorder hands it out: ``with recorder.window(name) as w`` yields it (``w.energy_j``
    etc. once the block has ended), ``recorder.end_window_later(name)`` returns it with its edges taken
    (``.measurement()`` waits for the samples past the end edge and integrates, once)."""

    def __init__(self, name: str, t0_s: float | None = None, t1_s: float | None = None,
                 integrate: Callable[[bool, float | None], Measurement] | None = None) -> None:
        self.name = name
        self.t0_s, self.t1_s = t0_s, t1_s        #: host monotonic edges to integrate on (None until closed)
        self._integrate = integrate
        self._measured: Measurement | None = None
        self.cancelled = False                   #: an exception in its ``with`` block cancelled it: no measurement

    @property
    def measured(self) -> bool:
        """True once the window has its Measurement (integrated, or the end of its ``with`` block)."""
        return self._measured is not None

    def done(self, measurement: Measurement) -> None:
        """The window was closed and measured (the end of its ``with`` block)."""
        self._measured = measurement

    def measurement(self, *, strict: bool = False, max_lost: float | None = None) -> Measurement:
        """The window's Measurement: integrated now if its edges were taken without waiting (once)."""
        if self._measured is None:
            if self._integrate is None:
                raise MeterError(self._why_not("its measurement"))
            self._measured = self._integrate(strict, max_lost)
        return self._measured

    def _why_not(self, what: str) -> str:
        if self.__dict__.get("cancelled"):
            return f"window {self.name!r} was cancelled (an exception left its 'with' block): it has no {what}"
        if self.__dict__.get("_integrate") is not None:
            return f"window {self.name!r} is closed but not yet integrated: call .measurement() first, then read {what}"
        return f"window {self.name!r} is still open: read {what} after its 'with' block"

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):          # copy, pickle and the like probe dunders: not a Measurement's
            raise AttributeError(attr)
        m = self.__dict__.get("_measured")
        if m is None:
            raise MeterError(self._why_not(attr))
        return getattr(m, attr)

    def __repr__(self) -> str:
        return f"Window({self.name!r}, {self._measured!r})"


def check_window_name(name: object) -> None:
    """A window's name is a non-empty string (it keys the trace's marks and the rows)."""
    if not isinstance(name, str) or not name.strip():
        raise MeterError(f"a window's name must be a non-empty string, got {name!r}")


def check_edges(name: str, t0_s: float, t1_s: float, started_s: float | None, now_s: float) -> None:
    """Edges a caller gave a window: finite, in order, not before the meters started (``started_s``) and not after
    now (a future edge has no samples yet: never a window of zero energy). MeterError names the window."""
    if not (isinstance(t0_s, (int, float)) and isinstance(t1_s, (int, float))
            and math.isfinite(t0_s) and math.isfinite(t1_s)):
        raise MeterError(f"window {name!r}: its edges must be finite host times, got {t0_s!r}, {t1_s!r}")
    if t1_s < t0_s:
        raise MeterError(f"window {name!r} ends {t0_s - t1_s:.3g} s before it begins: give t0_s <= t1_s")
    if started_s is not None and t0_s < started_s:
        raise MeterError(f"window {name!r} begins {started_s - t0_s:.3g} s before the meters started: its energy "
                         "was not measured (open the monitor before the work starts)")
    if t1_s > now_s:
        raise MeterError(f"window {name!r} ends {t1_s - now_s:.3g} s after now: nothing is measured there yet "
                         "(measure a window once it has ended)")
