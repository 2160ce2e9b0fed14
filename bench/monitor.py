"""A :class:`~archline.powermon.monitor.Monitor` for a platform (through powermon's one
:func:`~archline.powermon.monitor.open_windows`): its profile's ``[[meters]]`` opened, or the null meter with the
reason, or (``emulate=True``) an emulated meter of that platform whose device draws ``busy_w``
while any window is open and ``idle_w`` otherwise, so that every window has a known true energy
(:meth:`PhasePower.energy_j`). ``archline.open_monitor`` is this function (docs/api.md)."""

from __future__ import annotations

import bisect
import math
import numbers
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from archline.bench.config.profile import BenchProfile, load_bench_profile
from archline.bench.errors import BenchError
from archline.powermon.errors import MeterError, reworded
from archline.powermon.monitor import Monitor, check_raw_dir, open_windows
from archline.powermon.spec import MeterSpec

F64 = npt.NDArray[np.float64]


class PhasePower:
    """An emulated device's power over host time: ``idle_w`` while no phase is open, ``busy_w`` while one or more
    are. Each switch is stamped under the lock with the clock, so the meter's emulator never samples a time after
    a switch with the power before it; :meth:`energy_j` integrates the schedule exactly (the truth)."""

    def __init__(self, idle_w: float, busy_w: float, clock: Callable[[], float] = time.monotonic) -> None:
        for what, w in (("idle_w", idle_w), ("busy_w", busy_w)):
            if isinstance(w, bool) or not isinstance(w, numbers.Real) or not (math.isfinite(w) and w >= 0):
                raise BenchError(f"emulated power: {what} must be a finite number of watts >= 0, got {w!r}")
        self.idle_w = float(idle_w)
        self.busy_w = float(busy_w)
        self.clock = clock
        self._times: list[float] = []
        self._power: list[float] = []
        self._depth = 0
        self._cache: tuple[F64, F64] | None = None
        self._lock = threading.Lock()

    def edge(self, kind: str, name: str = "") -> float:
        """A phase begins or ends now: the switch's host time (a window hook, and the marks reader's callback)."""
        with self._lock:
            self._depth = self._depth + 1 if kind == "begin" else max(self._depth - 1, 0)
            t = self.clock()
            self._times.append(t)
            self._power.append(self.busy_w if self._depth else self.idle_w)
            return t

    def idle(self) -> float:
        """Every phase is over (the run ended; a phase left open does not carry into the next run)."""
        with self._lock:
            t = self.clock()
            if self._depth:
                self._depth = 0
                self._times.append(t)
                self._power.append(self.idle_w)
            return t

    def power_w(self, t_host_s: F64) -> F64:
        with self._lock:   # arrays rebuilt only when an edge was added since (not on every meter read)
            if self._cache is None or len(self._cache[0]) != len(self._times):
                self._cache = (np.asarray(self._times), np.asarray(self._power))
            times, power = self._cache
        t = np.asarray(t_host_s, dtype=np.float64)
        out = np.full(t.shape, self.idle_w)
        if times.size:
            i = np.searchsorted(times, t, side="right") - 1
            out[i >= 0] = power[i[i >= 0]]
        return out

    def energy_j(self, t0_s: float, t1_s: float) -> float:
        """The exact energy the device drew between two host times (the truth a measurement is compared with)."""
        with self._lock:   # append-only lists: the first n entries are a snapshot, without an O(n) copy
            times, power, n = self._times, self._power, len(self._times)
        # bisect, not a scan: one call per phase, thousands of phases (a scan made mark processing quadratic)
        k = bisect.bisect_right(times, t0_s, 0, n) - 1
        j = bisect.bisect_left(times, t1_s, k + 1, n)
        inner = range(k + 1, j)
        edges = [t0_s] + [times[i] for i in inner if times[i] > t0_s] + [t1_s]
        levels = [power[k] if k >= 0 else self.idle_w] + [power[i] for i in inner if times[i] > t0_s]
        return float(sum(p * (b - a) for p, a, b in zip(levels, edges[:-1], edges[1:], strict=True)))


class PhasePowerSource:
    """What an emulated meter plays: emulated time -> host time (the emulator core's map) -> the schedule -> each
    channel's share at its nominal volts (a whole-device meter sums the channels)."""

    def __init__(self, schedule: PhasePower, spec: MeterSpec) -> None:
        self.schedule = schedule
        self.by_id = {c.id: c for c in spec.channels}
        self.core: Any = None

    def bind(self, core: Any) -> None:
        self.core = core

    def sample(self, t_s: F64, channels: Sequence[int]) -> tuple[F64, F64]:
        t = np.asarray(t_s, dtype=np.float64)
        p = self.schedule.power_w(self.core.host_time_s(t) if self.core is not None else t)
        volts = np.zeros((len(p), len(channels)))
        amps = np.zeros((len(p), len(channels)))
        for j, c in enumerate(channels):
            ch = self.by_id.get(int(c))
            if ch is None:
                continue
            share = ch.share if ch.share is not None else (1.0 if len(self.by_id) == 1 else 0.0)
            volts[:, j] = ch.nominal_v
            amps[:, j] = p * share / ch.nominal_v
        return volts, amps


#: the emulator URL options measure's own settings replace (bench's: bench/emulated/port.REPLACED)
MEASURE_REPLACED = {"speed": "real time", "seed": "the monitor's seed"}


def _emulated_meter(prof: BenchProfile, schedule: PhasePower, *, meter: str | None, speed: float, seed: int,
                    raw_dir: str | Path | None, notes: list[str] | None = None) -> Any:
    """The entry ``--emulate`` plays (bench/emulated/meters.choose: ``meter``'s, else the profile's PowerMon 2,
    else its first with an emulator, else a default PowerMon 2 with a note; refused when none can be played),
    built as bench run builds it (meters.emulate_entry: calibration, sensor profile and its port's emulator URL
    faults applied) playing the schedule; its channels' played range checked first (never a silent clip)."""
    from archline.bench.emulated.device import check_range, rail_split
    from archline.bench.emulated.meters import choose, emulate_entry

    peak = max(schedule.busy_w, schedule.idle_w)
    spec, chosen = choose(prof, meter)
    if notes is not None:
        notes += chosen
    pm = rail_split(spec, peak)          # the channels' shares of the power (a default PowerMon 2 when none)
    check_range(pm, peak, prof.name, min(schedule.busy_w, schedule.idle_w))
    return emulate_entry(pm, PhasePowerSource(schedule, pm), speed=speed, seed=seed, raw_dir=raw_dir, notes=notes,
                         replaced=MEASURE_REPLACED)


def open_monitor(platform: str | BenchProfile = "localhost", *, emulate: bool = False, meter: str | None = None,
                 raw_dir: str | Path | None = None, busy_w: float | None = None, idle_w: float | None = None,
                 seed: int = 0, settle_timeout_s: float = 5.0, notes: list[str] | None = None) -> Monitor:
    """A monitor on ``platform`` (a profile name or path, or a loaded profile).

    Real: the profile's meters (``meter`` names one), or the null meter with the reason when it configures none.
    ``emulate=True``: an emulated meter of that platform (its PowerMon 2 channel map, else the kind's emulator),
    labelled emulated, whose device draws ``busy_w`` inside windows (default: the model's peak power) and
    ``idle_w`` outside (default: the profile's idle power); ``monitor.power.energy_j(t0, t1)`` is the truth.
    Not started: use ``with open_monitor(...) as mon`` (or ``mon.start()``/``mon.stop()``). ``notes``: a list
    to which what ``emulate=True`` made of the profile is appended (a default meter, its port URL's faults).
    ``raw_dir``: where the raw captures go; refused when empty, not a directory, or already holding captures
    (:func:`~archline.powermon.monitor.check_raw_dir`: a capture is never overwritten).
    """
    if raw_dir is not None:         # never an overwritten capture, nor the cwd for an empty name
        raw_dir = check_raw_dir(raw_dir)
    prof = load_bench_profile(platform) if isinstance(platform, str) else platform
    if emulate:
        from archline.bench.emulated.model import EmulatedModel, EmulationError

        try:
            model = EmulatedModel.from_profile(prof)
        except EmulationError as e:       # no power model (localhost before a fit): say what works instead
            if prof.platform.value("pi0") is not None:
                raise
            raise EmulationError(f"{e}: emulate=True plays a device from the platform's power model; fit one "
                                 "(`archline fit`), emulate a paper platform (open_monitor('gtx580', emulate=True)), "
                                 f"or run the program under `archline measure --platform {prof.name} --emulate "
                                 "--busy-w W --idle-w W` (busy_w x its measured time)") from None
        schedule = PhasePower(model.idle_w if idle_w is None else idle_w,
                              model.free_peak_power_w if busy_w is None else busy_w)
        m = _emulated_meter(prof, schedule, meter=meter, speed=1.0, seed=seed, raw_dir=raw_dir, notes=notes)
        mon = open_windows([m], hooks=[schedule.edge], settle_timeout_s=settle_timeout_s)
        mon.power = schedule  # type: ignore[attr-defined]
        return mon
    if busy_w is not None or idle_w is not None:
        raise BenchError("busy_w and idle_w set an emulated device's power: pass emulate=True too")
    specs = [prof.meter(meter)] if meter else list(prof.meters)

    def cannot_open(s: MeterSpec, e: MeterError) -> MeterError:
        return reworded(e, f"meter '{s.name}' ({s.kind}) of platform '{prof.name}' cannot be opened: {e}")

    # no [[meters]]: the null meter with the reason
    return open_windows(specs, reason=prof.detected_note or f"platform '{prof.name}' configures no meter",
                        raw_dir=raw_dir, cannot_open=cannot_open, settle_timeout_s=settle_timeout_s)
