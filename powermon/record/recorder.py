"""The one running recorder: several meters at once, each on its own thread, all on the host monotonic clock, and
the named windows measured on them (the public API's ``archline.Monitor`` is this class; docs/api.md).

    with Recorder([meter_a, meter_b]) as rec:         # or powermon.monitor.open_windows(meters), archline.open_monitor
        rec.begin_window("dgemm-n4096")
        ...                                           # the timed work
        m = rec.end_window("dgemm-n4096")             # Measurement: time_s, energy_j and its bound, per device/rail
        with rec.window("solve") as w:                # a context manager: w.energy_j once the block has ended
            solve()
    rec.write_traces("results/run-1")                 # trace-<meter>.parquet (or .csv.gz)

Two levels over the same marks: ``begin``/``end`` (also ``close`` + ``integrate``) return a :class:`Region`, every
meter's integrated view with its samples (the bench runner builds rows from it); ``begin_window``/``end_window``/
``window``/``measure``/``end_window_later`` return a :class:`Measurement` and call the window hooks, which see each
edge (an emulated device draws power inside a window; ``from_env`` sends the edges to ``archline measure``). Named
windows may overlap or nest; reopening a live name or ending an unknown one is an error.
"""

from __future__ import annotations

import functools
import threading
import time
import warnings as py_warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from archline.common.outputs import safe_component
from archline.formats.meters.samples_file import write_samples
from archline.powermon.errors import DeviceError, MeterError, SamplesLostError
from archline.powermon.record import windows
from archline.powermon.record.bounds import clock_err_s, full_scale_w
from archline.powermon.record.meters import Meter, MeterRegion, given_meters, same_power_note
from archline.powermon.record.null import NullMeter
from archline.powermon.record.windows import Mark, Measurement, Region, Window, WindowHook, check_window_name

__all__ = ["Mark", "Measurement", "Recorder", "Region", "Window", "WindowHook"]

F = TypeVar("F", bound=Callable[..., Any])


class Recorder:
    """Meters (or the null meter with its reason) and named windows on the host monotonic clock.

    Use it as a context manager (the meters' threads stop at the end, also on an error), or call :meth:`start` /
    :meth:`stop`; a stopped recorder cannot measure again. ``hooks`` see each window edge (:class:`WindowHook`);
    ``closers`` run once the meters are stopped (a marks writer's close)."""

    def __init__(self, meters: Sequence[Meter] | None = None, clock: Callable[[], float] = time.monotonic,
                 settle_timeout_s: float = 3.0, keep_regions: bool = True, *, reason: str = "",
                 hooks: Sequence[WindowHook] = (), closers: Sequence[Callable[[], None]] = ()) -> None:
        ms = given_meters(meters) or [NullMeter(reason or "no meter given")]
        names = [m.name for m in ms]
        if len(set(names)) != len(names):
            raise MeterError(f"meter names must be unique, got {names}")
        self.meters = ms
        self.clock = clock
        self.settle_timeout_s = settle_timeout_s
        self.keep_regions = keep_regions
        self.hooks = list(hooks)
        self.marks: list[Mark] = []
        self.regions: dict[str, Region] = {}
        self.measurements: list[Measurement] = []     #: what the decorator measured, in order
        self.started_at_s: float | None = None        #: nothing before this host time was measured
        self.failed_meter: str | None = None          #: the meter whose start failed (its name), for the message
        self._open: dict[str, float] = {}             #: open windows: the recorder's begin mark
        self._edges: dict[str, float] = {}            #: open windows: the edge a hook gave (else the mark)
        self._started: list[Meter] = []
        self._closers = list(closers)
        self._stopped = False
        self._left_open: list[str] = []               #: windows still open at stop (cancelled then)
        self._names_lock = threading.Lock()           #: the decorator's name for a call, taken once
        self._same_power = same_power_note(ms)            #: why a Measurement would count a device twice ('' if not)

    # --- what is measured ---
    @property
    def emulated(self) -> bool:
        return any(m.emulated for m in self.meters)

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

    @property
    def open_names(self) -> list[str]:
        """The windows open now (begun, not yet ended or cancelled), sorted."""
        return sorted(self._open)

    # --- life cycle ---
    @property
    def stopped(self) -> bool:
        """True once :meth:`stop` ran: its meters are closed and it cannot measure again."""
        return self._stopped

    def start(self) -> Recorder:
        if self._stopped:
            raise MeterError("this monitor is stopped (its meters are closed): make a new one to measure again")
        if self._started:
            return self
        if self.started_at_s is None:
            self.started_at_s = self.clock()
        try:
            for m in self.meters:
                self.failed_meter = m.name
                m.start()
                self._started.append(m)
            self.failed_meter = None
        except BaseException:
            self._stop_meters()
            raise
        return self

    def _stop_meters(self) -> None:
        errors: list[BaseException] = []
        while self._started:
            m = self._started.pop()
            try:
                m.stop()
            except Exception as e:  # stop every meter even if one fails
                errors.append(e)
        if errors:
            raise errors[0]

    def stop(self) -> None:
        """Stop the meters; a window still open is cancelled (its hooks see it) with a RuntimeWarning."""
        left = sorted((n for n in self._open if n in self._edges), key=self._open.__getitem__)
        if not self._stopped and left:       # (a begin/end region is the caller's: left as it is)
            for name in left:
                try:      # a failing meter or hook: the meters are stopped all the same
                    self._close_window(name, True, None, None)
                except Exception:
                    self._open.pop(name, None)
            self._left_open += left
            py_warnings.warn(f"window(s) {', '.join(map(repr, left))} still open when the monitor stopped: cancelled, "
                             "not measured (end a window before the monitor stops)", RuntimeWarning, stacklevel=3)
        self._stopped = True
        try:
            self._stop_meters()
        finally:
            while self._closers:
                self._closers.pop()()

    def __enter__(self) -> Recorder:
        return self.start()

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    # --- marks and regions ---
    def begin(self, name: str) -> float:
        if name in self._open:
            raise MeterError(f"region {name!r} is already open")
        t = self.clock()
        for m in self.meters:
            m.mark(t)
        self._open[name] = t
        self.marks.append(Mark(name, "begin", t))
        return t

    def end(self, name: str, cancel: bool = False, *, t0_s: float | None = None, t1_s: float | None = None,
            strict: bool = False, max_lost: float | None = None) -> Region:
        """Close window ``name``. ``t0_s``/``t1_s`` (host monotonic) replace the marks when the work timed itself
        more exactly (an emulated kernel knows its own interval). ``strict``: a meter with no data up to the end
        or a failed meter raises DeviceError instead of a warning. ``max_lost``: a meter that lost more than this
        share of the window's samples raises SamplesLostError (the loss is always in the region and its
        warnings)."""
        t0, t1 = self.close(name, cancel, t0_s=t0_s, t1_s=t1_s)
        return self.integrate(name, t0, t1, cancel, strict=strict, max_lost=max_lost)

    def close(self, name: str, cancel: bool = False, *, t0_s: float | None = None, t1_s: float | None = None
              ) -> tuple[float, float]:
        """The first half of :meth:`end`, which never waits: mark the end of window ``name`` and return the
        (t0, t1) it is to be integrated on. :meth:`integrate` (later, e.g. off a tuner's timed loop) does the rest."""
        if name not in self._open:
            raise MeterError(f"region {name!r} was never begun (open: {sorted(self._open)})")
        t1 = self.clock()
        for m in self.meters:
            m.mark(t1)
        t0 = self._open.pop(name)
        end_mark = Mark(name, "end" if not cancel else "cancel", t1)
        self.marks.append(end_mark)
        if t0_s is not None and t1_s is not None:
            # the trace's marks carry the edges the window is measured on, not the moment they were handed over
            begin_mark = next((m for m in reversed(self.marks) if m.name == name and m.kind == "begin" and
                               m.t_s == t0), None)
            if begin_mark is not None:
                begin_mark.t_s = t0_s
            end_mark.t_s = t1_s
            t0, t1 = t0_s, t1_s
        return t0, t1

    def integrate(self, name: str, t0: float, t1: float, cancel: bool = False, *, strict: bool = False,
                  max_lost: float | None = None) -> Region:
        """The second half of :meth:`end`: wait for each meter's samples past ``t1`` and integrate [t0, t1]."""
        results: dict[str, MeterRegion] = {}
        warnings: list[str] = []
        for m in self.meters:
            ok = m.wait_until(t1, self.settle_timeout_s)
            err = getattr(m, "error", None)
            if strict and (err is not None or not ok):
                raise err if err is not None else DeviceError(
                    f"{m.name}: no samples arrived for the end of window {name!r} "
                    f"(waited {self.settle_timeout_s:g} s)")
            if not ok:
                warnings.append(f"{m.name}: no data up to the end of the region within {self.settle_timeout_s} s")
            r = m.region(t0, t1)
            results[m.name] = r
            warnings.extend(f"{m.name}: {w}" for w in r.warnings)
            if max_lost is not None and r.lost_share > max_lost:
                why = [w for w in r.warnings if not w.startswith(("lost ", "channel "))]   # e.g. the meter vanished
                raise SamplesLostError(f"window {name!r}: {r.loss_text()}: more than the allowed "
                                       f"{100 * max_lost:.3g}%" + (f" ({why[-1]})" if why else ""))
        region = Region(name, t0, t1, results, self.emulated, warnings)
        if not cancel and self.keep_regions:
            self.regions[name] = region
        return region

    def segment(self) -> None:
        """Restart the streams of meters that have one (each point of a long sweep on its own capture)."""
        for m in self.meters:
            seg = getattr(m, "segment", None)
            if callable(seg):
                seg()

    def live_power_w(self) -> float | None:
        """Latest total power over the meters that can say (for a progress display), else None."""
        vals = [f() for m in self.meters if callable(f := getattr(m, "live_power_w", None))]
        vals = [v for v in vals if v is not None]
        return sum(vals) if vals else None

    def write_window(self, path: str | Path, t0_s: float, t1_s: float, meta: dict[str, Any] | None = None
                     ) -> Path | None:
        """The samples of the first sampling meter between two host times, as a trace file (None if none)."""
        for m in self.meters:
            if getattr(m, "kind", "") != "sampling":
                continue
            s = m.samples().between(t0_s, t1_s)
            if len(s) == 0:
                return None
            info = m.info()
            return write_samples(s, path, {**(meta or {}), "t0_s": t0_s, "t1_s": t1_s, "rate_hz": info.get("rate_hz"),
                                           "speed": getattr(m, "speed", 1.0), "info": info})
        return None

    def write_traces(self, directory: str | Path, fmt: str = "parquet") -> list[Path]:
        """Write ``trace-<meter>.<fmt>`` per meter (fmt: parquet, csv.gz or csv), with marks in the sidecar."""
        d = Path(directory)
        out = []
        marks = [vars(m) for m in self.marks]
        for m in self.meters:
            s = m.samples()
            safe = safe_component(m.name)
            out.append(write_samples(s, d / f"trace-{safe}.{fmt}", {"marks": marks, "info": m.info()}))
        return out

    # --- windows (hooks, Measurement) ---
    def _edge(self, kind: str, name: str) -> float | None:
        t: float | None = None
        for h in self.hooks:
            got = h(kind, name)
            t = got if got is not None else t
        return t

    def begin_window(self, name: str) -> float:
        """Open window ``name`` (names may nest or overlap); returns its host start time."""
        check_window_name(name)
        if self._same_power:
            raise MeterError(self._same_power)
        self.start()
        if name in self._open:
            raise MeterError(f"window {name!r} is already open")
        t_hook = self._edge("begin", name)
        t = self.begin(name)
        self._edges[name] = t if t_hook is None else t_hook
        return self._edges[name]

    def end_region(self, name: str, *, cancel: bool = False, t0_s: float | None = None, t1_s: float | None = None,
                   strict: bool = False, max_lost: float | None = None) -> Region:
        """Close window ``name`` and return its Region (what the bench runner builds rows from)."""
        t0, t1 = self._close_window(name, cancel, t0_s, t1_s)
        return self.integrate(name, t0, t1, cancel, strict=strict, max_lost=max_lost)

    def _close_window(self, name: str, cancel: bool, t0_s: float | None, t1_s: float | None) -> tuple[float, float]:
        """The window's end edge (hooks, marks), without waiting for samples: the (t0, t1) to integrate."""
        if self._stopped:      # its meters are closed (and a marks channel with them): nothing is measured now
            why = ("was still open when the monitor stopped and was cancelled then: end it before the monitor stops"
                   if name in self._left_open else "cannot be ended: this monitor is stopped (its meters are closed)")
            raise MeterError(f"window {name!r} {why}")
        if name not in self._open:
            raise MeterError(f"window {name!r} was never begun (open: {sorted(self._open)})")
        t_hook = self._edge("cancel" if cancel else "end", name)
        t0 = self._edges.pop(name)
        if t0_s is None and t1_s is None and t_hook is not None:
            t0_s, t1_s = t0, t_hook
        elif t0_s is None and t1_s is None and t0 != self._open[name]:
            t0_s, t1_s = t0, self.clock()
        return self.close(name, cancel, t0_s=t0_s, t1_s=t1_s)

    def end_window_later(self, name: str) -> Window:
        """Close window ``name`` now without waiting for the meters (its end edge is taken here, in
        microseconds); ``.measurement()`` on what it returns waits for the samples past the edge and integrates,
        once. For a caller inside a timed loop (a tuner's iterations) that reads the energies afterwards."""
        t0, t1 = self._close_window(name, False, None, None)

        def integrate(strict: bool, max_lost: float | None) -> Measurement:
            return self.measurement_of(self.integrate(name, t0, t1, strict=strict, max_lost=max_lost))

        return Window(name, t0, t1, integrate)

    def end_window(self, name: str, *, t0_s: float | None = None, t1_s: float | None = None, strict: bool = False,
                   max_lost: float | None = None) -> Measurement:
        """Close window ``name``: its Measurement. ``t0_s``/``t1_s`` (host monotonic; one given: the other is the
        window's own; windows.check_edges) replace the edges when the work timed itself; ``strict``: a meter without
        data is an error; ``max_lost``: a larger lost share is."""
        if (t0_s is not None or t1_s is not None) and name in self._edges:   # (else: never begun, said below)
            t0_s = self._edges[name] if t0_s is None else t0_s
            t1_s = self.clock() if t1_s is None else t1_s
            windows.check_edges(name, t0_s, t1_s, self.started_at_s, self.clock())
        region = self.end_region(name, t0_s=t0_s, t1_s=t1_s, strict=strict, max_lost=max_lost)
        return self.measurement_of(region)

    def measurement_of(self, region: Region) -> Measurement:
        """A Region of these meters as a Measurement (the clock and short-window bounds of each meter added)."""
        return Measurement.from_region(region, self.reason, {m.name: clock_err_s(m) for m in self.meters},
                                       {m.name: fs for m in self.meters if (fs := full_scale_w(m)) is not None})

    def cancel_window(self, name: str) -> None:
        """Drop window ``name``: its edge is marked (and its hooks see it), nothing is integrated or waited for."""
        if not (self._stopped and name in self._left_open):      # (the stop cancelled it already)
            self._close_window(name, True, None, None)

    def window_between(self, name: str, t0_s: float, t1_s: float) -> Measurement:
        """A window whose edges were taken elsewhere (marks a child process sent), measured now (see check_edges)."""
        check_window_name(name)
        if self._same_power:
            raise MeterError(self._same_power)
        self.start()
        windows.check_edges(name, t0_s, t1_s, self.started_at_s, self.clock())
        self.begin(name)
        return self.measurement_of(self.end(name, t0_s=t0_s, t1_s=t1_s))

    @contextmanager
    def window(self, name: str, *, _begun: bool = False) -> Iterator[Window]:
        """``with recorder.window("solve") as w: ...``: w.energy_j etc. after the block (an error cancels it)."""
        w = Window(name)
        if not _begun:          # (the decorator begins its call's window under its lock)
            self.begin_window(name)
        try:
            yield w
        except BaseException:
            w.cancelled = True
            if name in self._open and not self._stopped:
                self.cancel_window(name)
            raise
        w.done(self.end_window(name))

    def measure(self, name: str | None = None) -> Callable[[F], F]:
        """A decorator: each call of the function is one window (named ``name`` or the function's name); its
        Measurement is appended to ``measurements``. A call while another is open (threads, recursion) is window
        ``NAME#2`` (the lowest number not open then)."""
        def wrap(fn: F) -> F:
            label: str = name or str(getattr(fn, "__qualname__", "call"))

            @functools.wraps(fn)
            def inner(*args: Any, **kwargs: Any) -> Any:
                with self._names_lock:        # the name is free and taken in one step (another thread may call)
                    call = next(n for k in range(1, len(self._open) + 2)
                                if (n := label if k == 1 else f"{label}#{k}") not in self._open)
                    self.begin_window(call)
                with self.window(call, _begun=True) as w:
                    out = fn(*args, **kwargs)
                self.measurements.append(w.measurement())
                return out
            return inner  # type: ignore[return-value]
        return wrap

    # --- inside a command run by ``archline measure`` ---
    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Recorder:
        """Inside ``archline measure -- CMD``: a recorder whose windows are sent to the parent as phase marks (the
        parent measures them and reports each as a window; here they carry time only). Elsewhere: one with the
        null meter, saying that no ``archline measure`` is around."""
        from archline.powermon.marks import recorder_args

        meter, hooks = recorder_args(env)
        return cls([meter], hooks=hooks, closers=[h.close for h in hooks])

