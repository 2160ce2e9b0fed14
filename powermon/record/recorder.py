"""One recorder: several meters at once, each on its own thread, all on the host monotonic clock.

    with Recorder([meter_a, meter_b]) as rec:
        rec.begin("dgemm-n4096")
        ...                                  # the timed work
        region = rec.end("dgemm-n4096")      # Region: time_s, energy per meter/channel/device, samples
    rec.write_traces("results/run-1")        # trace-<meter>.parquet (or .csv.gz)

Named regions may overlap or nest; reopening a live name or ending an unknown one is an error.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from archline.common.outputs import safe_component
from archline.powermon.errors import DeviceError, MeterError, SamplesLostError
from archline.powermon.record.meters import Meter, MeterRegion
from archline.powermon.record.samples_file import write_samples


@dataclass
class Mark:
    name: str
    kind: str          #: "begin" or "end"
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


class Recorder:
    def __init__(self, meters: Sequence[Meter], clock: Callable[[], float] = time.monotonic,
                 settle_timeout_s: float = 3.0, keep_regions: bool = True) -> None:
        names = [m.name for m in meters]
        if len(set(names)) != len(names):
            raise MeterError(f"meter names must be unique, got {names}")
        self.meters = list(meters)
        self.clock = clock
        self.settle_timeout_s = settle_timeout_s
        self.keep_regions = keep_regions
        self.marks: list[Mark] = []
        self.regions: dict[str, Region] = {}
        self._open: dict[str, float] = {}
        self._started: list[Meter] = []
        self.failed_meter: str | None = None     #: the meter whose start failed (its name), for the message

    @property
    def emulated(self) -> bool:
        return any(m.emulated for m in self.meters)

    def start(self) -> Recorder:
        if getattr(self, "started_at_s", None) is None:
            self.started_at_s: float | None = self.clock()   # nothing before this host time was measured
        try:
            for m in self.meters:
                self.failed_meter = m.name
                m.start()
                self._started.append(m)
            self.failed_meter = None
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        errors: list[BaseException] = []
        while self._started:
            m = self._started.pop()
            try:
                m.stop()
            except Exception as e:  # stop every meter even if one fails
                errors.append(e)
        if errors:
            raise errors[0]

    def __enter__(self) -> Recorder:
        return self.start()

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

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
