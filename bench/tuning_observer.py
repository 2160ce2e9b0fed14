"""Energy and power of each configuration a kernel tuner tries, through archline's meters (the logic behind
``archline.kernel_tuner``; no Kernel Tuner import here, so it is tested without the package).

It follows Kernel Tuner's observer protocol (kernel_tuner.observers.observer.BenchmarkObserver): per configuration
``register_configuration(params)``; per iteration ``before_start`` / ``after_start`` (the kernel was launched) /
``during`` (while it runs) / ``after_finish``; then ``get_results()`` once, returning averages over the iterations.

Two modes, as Kernel Tuner's own NVML and PMT observers have (docs/counters.md):

* **iteration**: each iteration is one archline window, from ``after_start`` to ``after_finish`` as Kernel Tuner's
  PowerSensorObserver measures. ``after_finish`` only marks the window's end (microseconds); the meters' samples are
  waited for and integrated in ``get_results``, after Kernel Tuner's timed loop.
* **continuous**: Kernel Tuner's continuous loop (``benchmark_continuous``: ceil(max(1 s, ``continuous_duration``) /
  its mean kernel time) launches back to back, then synchronised; how long that takes is the launches' own cost,
  docs/counters.md) is one window, from the loop's ``before_start`` to its ``after_finish``, and its energy is divided
  over the iterations in proportion to their time: power = the window's mean power, energy = power x Kernel Tuner's
  mean kernel time (``results["time"]``), as its ContinuousObserver and PMTContinuousObserver do. The observer
  hands Kernel Tuner that loop through its ``continuous_observer`` attribute (only where a meter measures energy).

``auto`` (the default) measures both and reports the continuous values for a configuration whose kernel is
shorter than the meter resolves: :data:`RESOLVE_PERIODS` of its sample periods (:func:`resolution_s`).

A window whose meters lost samples says so (note and warning); one that lost more than ``max_lost`` of them
(:data:`~archline.powermon.errors.MAX_LOST_SHARE`, as ``bench run --max-lost``) has no value (NaN, with the reason),
and a meter that failed (disconnected) stops the tuning at the next configuration, naming it.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import weakref
from typing import Any

from archline.bench.errors import BenchError
from archline.bench.tuning_args import MODES, OBSERVABLES, check_args
from archline.powermon.errors import MAX_LOST_SHARE
from archline.powermon.monitor import Monitor
from archline.powermon.record.period import sample_period_s
from archline.powermon.record.windows import Measurement, Window

log = logging.getLogger("archline.bench")

__all__ = ["MODES", "OBSERVABLES", "RESOLVE_PERIODS", "ContinuousEnergy", "EnergyObserver", "resolution_s"]

#: a window the meter resolves lasts at least this many of its sample periods. Each edge of a window is placed
#: between two samples, so a power step there moves up to about one period of the power swing across it (the
#: integration's edge term, plus the clock's placement): two periods in all. Twenty periods keep the edges within
#: 10% of the window, the share sensor windows are held to (powermon/record/integrate.SensorLimits.max_edge_share).
#: At the PowerMon 2's 128 Hz that is 156 ms, at NVML's 50 Hz 400 ms, at a PowerSensor3's 20 kHz 1 ms.
RESOLVE_PERIODS = 20


def resolution_s(monitor: Monitor) -> float:
    """The shortest window ``monitor``'s meters resolve (host seconds): :data:`RESOLVE_PERIODS` of the slowest
    meter's sample period; 0 when no meter has a cadence (the null meter)."""
    periods = [p[1] for m in monitor.meters if (p := sample_period_s(m)) is not None]
    return RESOLVE_PERIODS * max(periods) if periods else 0.0


class ContinuousEnergy:
    """Kernel Tuner's continuous observer for an :class:`EnergyObserver` (its ``continuous_observer``): Kernel Tuner
    sets ``results`` (with ``time``, the mean kernel time in ms) before its continuous loop and reads
    ``continuous_duration`` (seconds) to size it. It holds its parent weakly, so that an observer dropped without
    close() is collected and its finalizer stops the monitor it opened."""

    def __init__(self, parent: EnergyObserver, continuous_duration_s: float) -> None:
        self._parent = weakref.ref(parent)
        self.continuous_duration = continuous_duration_s
        self.results: dict[str, Any] | None = None

    @property
    def parent(self) -> EnergyObserver:
        p = self._parent()
        if p is None:
            raise BenchError("this continuous observer's ArchlineObserver is gone: keep the observer while tuning")
        return p

    def register_device(self, dev: Any) -> None:
        self.dev = dev

    def register_configuration(self, params: dict[str, Any]) -> None:
        """Kernel Tuner registers configurations with the parent only."""

    def before_start(self) -> None:
        self.parent._begin("continuous")

    def after_start(self) -> None:
        """The kernels are queued; the window opened before the first launch."""

    def during(self) -> None:
        """The meter samples on its own thread."""

    def after_finish(self) -> None:
        self.parent._end()

    def get_results(self) -> dict[str, Any]:
        return self.parent._continuous_results(self.results)


class EnergyObserver:
    """Reports ``<prefix>_energy`` (J per iteration) and ``<prefix>_power`` (W) of each configuration, measured in
    archline windows on ``monitor`` (or, without one, on ``open_monitor(platform, emulate=emulate, meter=meter)``,
    started here, so that a meter that cannot be opened is said now, and stopped by :meth:`close`, or when the
    observer is collected).

    Every result carries ``<prefix>_mode`` (iteration or continuous), ``<prefix>_samples`` and
    ``<prefix>_lost_samples`` (totals over the configuration's windows, every channel's: the samples behind the
    value and those that never arrived), ``<prefix>_short_window`` (True: a window was shorter than the meter
    resolves, :func:`resolution_s`), ``<prefix>_unresolved`` (True: the value's bound is as large as the value, or
    there is no value), ``<prefix>_emulated``, ``<prefix>_note`` saying what is flagged and ``<prefix>_reason`` why
    there is no value ('' when there is nothing to say; a flag is also logged as a warning). No value is NaN.
    ``prefix``: letters and digits, inner underscores (``archline``). ``mode``: see the module. A wrong argument
    raises ValueError or TypeError naming it, as Kernel Tuner's observers do."""

    #: the continuous observer handed to Kernel Tuner (archline.kernel_tuner makes it Kernel Tuner's type)
    continuous_class: type[ContinuousEnergy] = ContinuousEnergy

    def __init__(self, monitor: Monitor | None = None, *, platform: str | None = None, emulate: bool = False,
                 meter: str | None = None, observables: tuple[str, ...] | list[str] | None = None,
                 prefix: str = "archline", mode: str = "auto", continuous_duration_s: float = 1.0,
                 max_lost: float = MAX_LOST_SHARE) -> None:
        self._closed = True            # until made: close() and the finalizer have nothing to do
        self.observables = check_args(monitor, platform, emulate, meter, observables, prefix, mode,
                                       continuous_duration_s, max_lost)
        self.prefix = prefix
        self.max_lost = float(max_lost)
        self._own = monitor is None
        if monitor is None:
            monitor = _open_own("localhost" if platform is None else platform, emulate, meter)
            # an observer dropped without close() still stops its meter's thread and port
            self._finalizer = weakref.finalize(self, monitor.stop)
        self.monitor = monitor
        self._closed = False
        self.resolution_s = resolution_s(monitor)
        #: False with the null meter (time only): no continuous loop is offered to Kernel Tuner for it
        self.metered = any(getattr(m, "kind", "") != "none" for m in monitor.meters)
        if not self.metered and mode != "iteration":
            log.info("%s: no meter measures energy (%s): iteration mode, no continuous loop", prefix,
                     _reason_text(monitor.reason))
        self.mode = mode if self.metered else "iteration"
        if self.mode != "iteration":   # Kernel Tuner runs its continuous loop for observers that have one
            self.continuous_observer = self.continuous_class(self, continuous_duration_s)
        self.params: dict[str, Any] = {}
        self._pending: list[Window] = []
        #: every configuration measured so far: (params, its iterations' measurements)
        self.history: list[tuple[dict[str, Any], list[Measurement]]] = []
        #: every continuous loop measured so far: (params, its window's measurement, the kernel time in s)
        self.continuous_history: list[tuple[dict[str, Any], Measurement, float]] = []
        self._config = 0
        self._window: str | None = None
        self._short_iterations = False
        self._iteration_note = ""      # auto mode: said when the iterations' values stand
        self._just_registered = False

    # --- Kernel Tuner's protocol ---
    def register_device(self, dev: Any) -> None:
        self.dev = dev

    def register_configuration(self, params: dict[str, Any]) -> None:
        if self._just_registered and dict(params) == self.params:
            raise BenchError(f"{self.prefix}: configuration {params} registered twice in a row: the observer is "
                             "listed twice in observers= (list each ArchlineObserver once)")
        self._check_open()
        self._check_meters(params)
        self._cancel()
        self.monitor.start()
        self._config += 1
        self.params = dict(params)
        self._pending = []
        self._just_registered = True

    def before_start(self) -> None:
        self._just_registered = False
        self._cancel()

    def after_start(self) -> None:
        if self.mode != "continuous":
            if self._window is not None:
                raise BenchError(f"{self.prefix}: after_start twice without after_finish: the observer is listed "
                                 "twice in observers= (list each ArchlineObserver once)")
            self._begin(f"iteration{len(self._pending) + 1}")

    def during(self) -> None:
        """The meter samples on its own thread: nothing to do while the kernel runs."""

    def after_finish(self) -> None:
        if self.mode != "continuous":
            self._end()

    def get_results(self) -> dict[str, Any]:
        """The iterations' means (integrated now: the samples past each window's end have arrived meanwhile).
        In continuous mode the values come from the continuous loop's results instead (:class:`ContinuousEnergy`)."""
        self._cancel()
        pending, self._pending = self._pending, []
        if self.mode == "continuous":
            return {}
        ms = [self._integrate(p) for p in pending]
        self.history.append((self.params, ms))
        self._short_iterations = any(m.time_s < self.resolution_s for m in ms)
        # in auto mode Kernel Tuner's continuous loop follows and may replace the iterations' values: said then
        out = self._values(ms, [m.energy_j for m in ms], [m.mean_power_w for m in ms],
                           [m.energy_err_j for m in ms], "iteration", quiet=self.mode == "auto")
        self._iteration_note = out[f"{self.prefix}_note"]
        return out

    # --- the windows ---
    def _begin(self, what: str) -> None:
        self._cancel()
        self.monitor.start()
        self._window = f"config{self._config}/{what}"
        self.monitor.begin_window(self._window)

    def _end(self) -> None:
        if self._window is None:
            raise BenchError("after_finish without after_start: the observer was called out of Kernel Tuner's order")
        name, self._window = self._window, None
        self._pending.append(self.monitor.end_window_later(name))   # microseconds: no wait for samples here

    def _integrate(self, pending: Window) -> Measurement:
        """The window's measurement without its samples: a tuning run of thousands of configurations keeps only
        numbers (the recorder's copy of the region, which holds them, is dropped too)."""
        m = pending.measurement()
        self.monitor.regions.pop(pending.name, None)
        return dataclasses.replace(m, region=None)

    def _continuous_results(self, kt_results: dict[str, Any] | None) -> dict[str, Any]:
        """The continuous loop's window, divided over its iterations by Kernel Tuner's mean kernel time."""
        self._cancel()
        pending, self._pending = self._pending, []
        if not pending:
            return {}
        m = self._integrate(pending[-1])
        kernel_ms = (kt_results or {}).get("time")
        if not isinstance(kernel_ms, (int, float)) or not (math.isfinite(kernel_ms) and kernel_ms > 0):
            log.warning("Kernel Tuner gave no kernel time for the continuous loop: its energy is not divided")
            return {}
        kernel_s = float(kernel_ms) / 1e3
        self.continuous_history.append((self.params, m, kernel_s))
        if self.mode == "auto" and kernel_s >= self.resolution_s and not self._short_iterations:
            if self._iteration_note:     # the iterations' values stand: their flags are said now
                log.warning("%s %s: %s", self.prefix, self.params, self._iteration_note)
            return {}
        out = self._values([m], [m.mean_power_w * kernel_s], [m.mean_power_w], [m.mean_power_err_w * kernel_s],
                           "continuous")
        out[f"{self.prefix}_continuous_s"] = m.time_s
        return out

    def _values(self, ms: list[Measurement], energy_j: list[float], power_w: list[float], err_j: list[float],
                mode: str, quiet: bool = False) -> dict[str, Any]:
        p = self.prefix
        lost, expected = sum(m.lost_samples for m in ms), sum(m.expected_samples for m in ms)
        too_lossy = [m for m in ms if m.lost_share > self.max_lost]
        reasons = sorted({_reason_text(m.reason) for m in ms if not m.has_energy and m.reason}) or (
            [_reason_text(self.monitor.reason)] if not ms and self.monitor.reason else [])
        notes = []
        if lost:
            notes.append(f"the meter lost {lost} of {expected} samples ({100 * lost / max(expected, 1):.3g}%)")
        if too_lossy:
            worst = max(too_lossy, key=lambda m: m.lost_share)
            reasons.append(f"window {worst.name} lost {100 * worst.lost_share:.3g}% of its samples, more than the "
                           f"allowed {100 * self.max_lost:.3g}% (max_lost)" +
                           "".join(f"; {e}" for e in self._meter_errors()))
        has_value = bool(ms) and all(m.has_energy for m in ms) and not too_lossy
        nan = math.nan
        values = {"energy": energy_j, "power": power_w, "energy_err": err_j}
        out: dict[str, Any] = {}
        for o in self.observables:
            if o == "lost_samples":
                out[f"{p}_{o}"] = lost
            else:
                out[f"{p}_{o}"] = sum(values[o]) / len(values[o]) if has_value else nan
        shortest = min((m.time_s for m in ms), default=nan)
        e = sum(energy_j) / len(energy_j) if has_value else nan
        err = sum(err_j) / len(err_j) if has_value else nan
        out.update({f"{p}_mode": mode, f"{p}_samples": sum(m.n_samples for m in ms), f"{p}_lost_samples": lost,
                    f"{p}_short_window": bool(self.metered and shortest < self.resolution_s),
                    f"{p}_unresolved": not err < abs(e), f"{p}_emulated": any(m.emulated for m in ms)})
        if out[f"{p}_short_window"]:
            notes.append(self._short_note(shortest, f"{mode} window"))
        if has_value and out[f"{p}_unresolved"]:
            notes.append(f"energy {e:.4g} J is inside a bound of {err:.4g} J, larger than itself")
        if self.metered and not has_value:
            notes.append("no value: " + "; ".join(reasons))
        out[f"{p}_note"] = "; ".join(notes)
        out[f"{p}_reason"] = "" if has_value else "; ".join(reasons)
        if self.metered and notes and not quiet:
            log.warning("%s %s: %s", p, self.params, out[f"{p}_note"])
        return out

    def _meter_errors(self) -> list[str]:
        return [f"{m.name}: {err}" for m in self.monitor.meters if (err := getattr(m, "error", None)) is not None]

    def _short_note(self, shortest_s: float, what: str) -> str:
        return (f"{what} of {shortest_s * 1e3:.3g} ms, shorter than the {self.resolution_s * 1e3:.3g} ms the meter "
                f"resolves ({RESOLVE_PERIODS} sample periods)")

    # --- life cycle ---
    def _check_open(self) -> None:
        if self._closed:
            raise BenchError(f"{self.prefix}: this observer is closed (its monitor is stopped): make a new one")
        if self.monitor.stopped:
            raise BenchError(f"{self.prefix}: its monitor was stopped by its owner: pass a running monitor")

    def _check_meters(self, params: dict[str, Any]) -> None:
        """A meter that failed (disconnected) measures nothing more: the tuning stops here, naming it, rather than
        going on with values that cannot be had."""
        errors = self._meter_errors()
        if errors:
            raise BenchError(f"{self.prefix}: the meter failed during the tuning ({'; '.join(errors)}): no energy "
                             f"can be measured from configuration {params} on; reconnect it and make a new observer")

    def _cancel(self) -> None:
        """A window left open (an iteration that failed before after_finish) is dropped, not measured."""
        if self._window is not None:
            name, self._window = self._window, None
            self.monitor.cancel_window(name)

    def close(self) -> None:
        """Stop the monitor this observer opened (one passed in stays the caller's). Closing twice is harmless."""
        if self._closed:
            return
        self._closed = True
        if not self.monitor.stopped:
            self._cancel()
        if self._own:
            self._finalizer()

    def __enter__(self) -> EnergyObserver:
        self._check_open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _reason_text(reason: str) -> str:
    """The null meter's reason without its prefix said twice ('time only: localhost: time only, no energy: ...')."""
    rest = reason.removeprefix("time only: ")
    return rest if "time only" in rest else reason


def _open_own(platform: str, emulate: bool, meter: str | None) -> Monitor:
    """The observer's own monitor, started now (a meter that cannot be opened is an error here, not at the first
    configuration). Of a profile with several meters on one device only one is opened, the first as ``bench run``
    takes it (several would add the same rails' energy twice): ``meter`` names another."""
    from archline.bench.config.profile import load_bench_profile
    from archline.bench.monitor import open_monitor
    from archline.powermon.errors import MeterError

    prof = load_bench_profile(platform)
    if meter is None and not emulate and len(prof.meters) > 1:
        meter = prof.meters[0].name
        log.info("platform '%s' has %d meters: the observer reads '%s' (meter= picks another)", prof.name,
                 len(prof.meters), meter)
    mon = open_monitor(prof, emulate=emulate, meter=meter)
    try:
        mon.start()
    except MeterError as e:
        mon.stop()
        hint = "" if emulate else (f"; ArchlineObserver(platform='{prof.name}', emulate=True) measures with its "
                                   "emulated meter (results say archline_emulated)")
        raise BenchError(f"the observer's meter on platform '{prof.name}' cannot start: {e}{hint}") from None
    return mon
