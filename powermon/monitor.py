"""The public measuring API (docs/api.md): a :class:`Monitor` over powermon's one :class:`Recorder`, whose windows
return a :class:`Measurement` (time, energy per device and rail, its bound, lost samples, the emulated flag).

    with Monitor([meter]) as mon:                 # or archline.open_monitor("gtx580", emulate=True)
        mon.begin_window("step")
        work()
        m = mon.end_window("step")                # m.time_s, m.energy_j, m.energy_err_j, m.device_energy_j
        with mon.window("solve") as w:            # a context manager: w.energy_j once the block has ended
            solve()

        @mon.measure()                            # a decorator: each call is one window (measurements kept)
        def step(): ...

The window logic is the recorder's (named, nested, overlapping windows; edges; lost samples): a Monitor adds the
Measurement, hooks that see each edge (an emulated device draws power inside a window), and the marks channel of
``archline measure`` (:meth:`Monitor.from_env`). The bench runner measures its points through a Monitor too.
"""

from __future__ import annotations

import functools
import math
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol, TypeVar

from archline.powermon.errors import MeterError
from archline.powermon.record.bounds import clock_err_s, edge_err_j, full_scale_w, short_window_err_j
from archline.powermon.record.meters import Meter
from archline.powermon.record.null import NullMeter
from archline.powermon.record.recorder import Recorder, Region

#: the environment variable ``archline measure`` sets in its child: the path of the marks FIFO
MARKS_ENV = "ARCHLINE_MARKS"

F = TypeVar("F", bound=Callable[..., Any])


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
    """What ``with monitor.window(name) as w`` yields: the measurement's fields once the block has ended."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.measurement: Measurement | None = None

    def __getattr__(self, attr: str) -> Any:
        m = self.__dict__.get("measurement")
        if m is None:
            raise MeterError(f"window {self.name!r} is still open: read {attr} after its 'with' block")
        return getattr(m, attr)

    def __repr__(self) -> str:
        return f"Window({self.name!r}, {self.measurement!r})"


class PendingWindow:
    """A window whose edges are taken and whose integration waits for :meth:`measurement` (Monitor.end_window_later)."""

    def __init__(self, monitor: Monitor, name: str, t0_s: float, t1_s: float) -> None:
        self.monitor, self.name, self.t0_s, self.t1_s = monitor, name, t0_s, t1_s
        self._measurement: Measurement | None = None

    def measurement(self, *, strict: bool = False, max_lost: float | None = None) -> Measurement:
        if self._measurement is None:
            region = self.monitor.recorder.integrate(self.name, self.t0_s, self.t1_s, strict=strict,
                                                     max_lost=max_lost)
            self._measurement = self.monitor._measurement(region)
        return self._measurement


class Monitor:
    """Meters (or the null meter with its reason) and named windows on the host monotonic clock.

    ``Monitor(meters)`` takes recorder meters (powermon.spec.open_meter, emulated_powermon, NullMeter); a
    platform's meters come from ``archline.open_monitor(platform)`` (bench). Use it as a context manager (the
    meters' threads stop at the end, also on an error), or call :meth:`start` / :meth:`stop`.
    """

    def __init__(self, meters: Sequence[Meter] | None = None, *, reason: str = "", recorder: Recorder | None = None,
                 hooks: Sequence[WindowHook] = (), settle_timeout_s: float = 3.0, keep_regions: bool = True,
                 clock: Callable[[], float] = time.monotonic, closers: Sequence[Callable[[], None]] = ()) -> None:
        if recorder is None:
            ms = list(meters or ()) or [NullMeter(reason or "no meter given")]
            recorder = Recorder(ms, clock=clock, settle_timeout_s=settle_timeout_s, keep_regions=keep_regions)
        self.recorder = recorder
        self.hooks = list(hooks)
        self.measurements: list[Measurement] = []     #: what the decorator measured, in order
        self._edges: dict[str, float] = {}
        self._closers = list(closers)
        self._running = bool(recorder._started)

    # --- what is measured ---
    @property
    def meters(self) -> list[Meter]:
        return self.recorder.meters

    @property
    def emulated(self) -> bool:
        return self.recorder.emulated

    @property
    def reason(self) -> str:
        """Why a window has no energy ("time only: ..."), '' when a meter measures."""
        return "; ".join(str(getattr(m, "reason", "")) for m in self.meters if getattr(m, "kind", "") == "none")

    def describe(self) -> str:
        parts = []
        for m in self.meters:
            info = m.info()
            kind = info.get("type") or getattr(m, "kind", "meter")
            parts.append(getattr(m, "reason", "") if kind == "none" else
                         f"{m.name} ({'emulated ' if m.emulated else ''}{kind})")
        return ", ".join(p for p in parts if p)

    # --- life cycle ---
    @property
    def stopped(self) -> bool:
        """True once :meth:`stop` ran: its meters are closed and it cannot measure again."""
        return bool(getattr(self, "_stopped", False))

    def start(self) -> Monitor:
        if getattr(self, "_stopped", False):
            raise MeterError("this monitor is stopped (its meters are closed): make a new one to measure again")
        if not self._running:
            self.recorder.start()
            self._running = True
        return self

    def stop(self) -> None:
        self._stopped = True
        try:
            if self._running:
                self._running = False
                self.recorder.stop()
        finally:
            while self._closers:
                self._closers.pop()()

    close = stop

    def __enter__(self) -> Monitor:
        return self.start()

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    # --- windows ---
    def _edge(self, kind: str, name: str) -> float | None:
        t: float | None = None
        for h in self.hooks:
            got = h(kind, name)
            t = got if got is not None else t
        return t

    def begin_window(self, name: str) -> float:
        """Open window ``name`` (names may nest or overlap); returns its host start time."""
        _check_name(name)
        self.start()
        if name in self.recorder._open:
            raise MeterError(f"window {name!r} is already open")
        t_hook = self._edge("begin", name)
        t = self.recorder.begin(name)
        self._edges[name] = t if t_hook is None else t_hook
        return self._edges[name]

    def end_region(self, name: str, *, cancel: bool = False, t0_s: float | None = None, t1_s: float | None = None,
                   strict: bool = False, max_lost: float | None = None) -> Region:
        """Close window ``name`` and return the recorder's Region (what the bench runner builds rows from)."""
        t0, t1 = self._close(name, cancel, t0_s, t1_s)
        return self.recorder.integrate(name, t0, t1, cancel, strict=strict, max_lost=max_lost)

    def _close(self, name: str, cancel: bool, t0_s: float | None, t1_s: float | None) -> tuple[float, float]:
        """The window's end edge (hooks, marks), without waiting for samples: the (t0, t1) to integrate."""
        if name not in self.recorder._open:
            raise MeterError(f"window {name!r} was never begun (open: {sorted(self.recorder._open)})")
        t_hook = self._edge("end", name)
        t0 = self._edges.pop(name)
        if t0_s is None and t1_s is None and t_hook is not None:
            t0_s, t1_s = t0, t_hook
        elif t0_s is None and t1_s is None and t0 != self.recorder._open[name]:
            t0_s, t1_s = t0, self.recorder.clock()
        return self.recorder.close(name, cancel, t0_s=t0_s, t1_s=t1_s)

    def end_window_later(self, name: str) -> PendingWindow:
        """Close window ``name`` now without waiting for the meters (its end edge is taken here, in
        microseconds); ``.measurement()`` on what it returns waits for the samples past the edge and integrates,
        once. For a caller inside a timed loop (a tuner's iterations) that reads the energies afterwards."""
        t0, t1 = self._close(name, False, None, None)
        return PendingWindow(self, name, t0, t1)

    def end_window(self, name: str, *, t0_s: float | None = None, t1_s: float | None = None, strict: bool = False,
                   max_lost: float | None = None) -> Measurement:
        """Close window ``name``: its Measurement. ``t0_s``/``t1_s`` (host monotonic) replace the edges when the
        work timed itself; ``strict``: a meter without data is an error; ``max_lost``: a larger lost share is."""
        region = self.end_region(name, t0_s=t0_s, t1_s=t1_s, strict=strict, max_lost=max_lost)
        return self._measurement(region)

    def _measurement(self, region: Region) -> Measurement:
        return Measurement.from_region(region, self.reason, {m.name: clock_err_s(m) for m in self.meters},
                                       {m.name: fs for m in self.meters if (fs := full_scale_w(m)) is not None})

    def cancel_window(self, name: str) -> None:
        """Drop window ``name``: its edge is marked (and its hooks see it), nothing is integrated or waited for."""
        self._close(name, True, None, None)

    def window_between(self, name: str, t0_s: float, t1_s: float) -> Measurement:
        """A window whose edges were taken elsewhere (marks a child process sent), measured now."""
        _check_name(name)
        if not (math.isfinite(t0_s) and math.isfinite(t1_s)):
            raise MeterError(f"window {name!r}: its edges must be finite host times, got {t0_s!r}, {t1_s!r}")
        self.start()
        started = getattr(self.recorder, "started_at_s", None)
        if started is not None and t0_s < started:
            raise MeterError(f"window {name!r} begins {started - t0_s:.3g} s before the meters started: its energy "
                             "was not measured (open the monitor before the work starts)")
        self.recorder.begin(name)
        return self._measurement(self.recorder.end(name, t0_s=t0_s, t1_s=t1_s))

    @contextmanager
    def window(self, name: str) -> Iterator[Window]:
        """``with monitor.window("solve") as w: ...``: w.energy_j etc. after the block (an error cancels it)."""
        w = Window(name)
        self.begin_window(name)
        try:
            yield w
        except BaseException:
            if name in self.recorder._open:
                self.cancel_window(name)
            raise
        w.measurement = self.end_window(name)

    def measure(self, name: str | None = None) -> Callable[[F], F]:
        """A decorator: each call of the function is one window (named ``name`` or the function's name); its
        Measurement is appended to ``monitor.measurements``."""
        def wrap(fn: F) -> F:
            label: str = name or str(getattr(fn, "__qualname__", "call"))

            @functools.wraps(fn)
            def inner(*args: Any, **kwargs: Any) -> Any:
                with self.window(label) as w:
                    out = fn(*args, **kwargs)
                assert w.measurement is not None
                self.measurements.append(w.measurement)
                return out
            return inner  # type: ignore[return-value]
        return wrap

    # --- the recorder's extras (the bench runner uses them) ---
    def segment(self) -> None:
        self.recorder.segment()

    def live_power_w(self) -> float | None:
        return self.recorder.live_power_w()

    def write_window(self, path: str | Path, t0_s: float, t1_s: float, meta: dict[str, Any] | None = None
                     ) -> Path | None:
        return self.recorder.write_window(path, t0_s, t1_s, meta)

    def write_traces(self, directory: str | Path, fmt: str = "parquet") -> list[Path]:
        return self.recorder.write_traces(directory, fmt)

    # --- inside a command run by ``archline measure`` ---
    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Monitor:
        """Inside ``archline measure -- CMD``: a monitor whose windows are sent to the parent as phase marks (the
        parent measures them and reports each as a window; here they carry time only). Elsewhere: a monitor with
        the null meter, saying that no ``archline measure`` is around."""
        from archline.powermon.marks import MarksWriter

        path = (os.environ if env is None else env).get(MARKS_ENV)
        if not path:
            return cls([NullMeter(f"{MARKS_ENV} is not set: not running under 'archline measure'")])
        writer = MarksWriter(path)
        return cls([NullMeter("measured by the parent 'archline measure': this window is a phase in its output")],
                   hooks=[writer], closers=[writer.close])


def _check_name(name: object) -> None:
    """A window's name is a non-empty string (it keys the trace's marks and the rows)."""
    if not isinstance(name, str) or not name.strip():
        raise MeterError(f"a window's name must be a non-empty string, got {name!r}")
