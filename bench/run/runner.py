"""The one runner: for each point, warm up, run repetitions inside named windows of powermon's recorder, stop early
once the confidence interval is tight, and build one ``archline.results/1`` row plus its raw trace. Time only is
the same loop over powermon's null meter.

Per point (model.md §7.5, §8; docs/design.md §5):

1. apply the point's cap / clocks; restart the meter's stream (each point its own capture);
2. prepare the kernel; calibration runs (growing until one lasts 5% of a region) give the time of one rep;
3. a region holds ``--reps`` repetitions, or lasts ``--min-time``; on a meter also at least ``[bench] reps``
   (S0: 100) and long enough for ``min_samples`` samples (>= 200 at 128 Hz = 1.56 s);
4. warm-up (``warmup_reps`` repetitions, at least a few sample periods), regions back to back, then an untimed
   tail run so the power is steady across the last region's edge;
5. after ``min_regions`` regions, stop once the 95% CI half-width of the per-repetition energy (time without a
   meter) is below ``ci_rel`` of its median, or at ``max_regions``;
6. idle power is measured before the first point and after every point (``idle_w_before``, ``idle_w_after``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from archline.bench.config.options import MAX_REPS
from archline.bench.kernels import Backend, KernelSpec, PreparedKernel, RunResult
from archline.bench.run.points import Point, RunSettings
from archline.bench.run.progress import Progress
from archline.bench.run.rows import MeterInfo, Region, RunContext, build_row, ci_halfwidth_rel
from archline.powermon.monitor import Monitor

#: warm-up and tail last at least this many meter sample periods
EDGE_SAMPLES = 32

#: a calibration run shorter than this share of the region's time is too short to size reps from (likwid-bench,
#: too, raises its iteration count until a run lasts long enough): one cold L1 rep took 7x a warm one, so a region
#: sized from it lasted 29 ms instead of 200 ms and read 0.78x the bandwidth
CALIBRATE_SHARE = 0.05


def choose_reps(calibration: RunResult, min_time_s: float, max_reps: int = MAX_REPS) -> int:
    """Repetitions that make a timed region last at least ``min_time_s``, from a calibration run."""
    per_rep = calibration.time_s / max(calibration.reps, 1)
    if per_rep <= 0:
        return max_reps
    return int(min(max_reps, max(1, math.ceil(min_time_s / per_rep))))


def calibration_run(prepared: PreparedKernel, min_time_s: float) -> tuple[RunResult, bool]:
    """Warm up and time one repetition: run 1 rep, then grow the count until a run lasts CALIBRATE_SHARE x
    ``min_time_s``; returns the last run and whether every calibration run's checksum was ok."""
    reps, res = 1, prepared.run(1)
    ok = res.checksum_ok
    while res.time_s < CALIBRATE_SHARE * min_time_s and reps < MAX_REPS:
        grow = CALIBRATE_SHARE * min_time_s / max(res.time_s, 1e-9)
        reps = int(min(MAX_REPS, max(2 * reps, math.ceil(reps * grow))))
        res = prepared.run(reps)
        ok = ok and res.checksum_ok
    return res, ok


def calibrate(prepared: PreparedKernel, min_time_s: float) -> tuple[int, bool]:
    """(repetitions for a region of ``min_time_s``, calibration checksums ok)."""
    res, ok = calibration_run(prepared, min_time_s)
    return choose_reps(res, min_time_s), ok


class Runner:
    """Measures points with one back end and one recorder (one meter, or the null meter)."""

    def __init__(self, backend: Backend, recorder: Monitor, meter: MeterInfo, ctx: RunContext,
                 settings: RunSettings, *, trace_dir: Path | None = None, device: str | None = None,
                 idle: Callable[[float], None] | None = None,
                 set_point: Callable[[Point], dict[str, Any]] | None = None, timed_windows: bool = False) -> None:
        self.backend = backend
        #: a kernel window's energy covers its timed region only (``time_s``, ending as the window closes), not the
        #: threads' start and join around it: --emulate's busy/idle schedule (bench/emulated/schedule.py), busy over
        #: the whole window, then gives busy_w x time_s within the meter's bound (issue 34 #6)
        self.timed_windows = timed_windows
        # the windows go through the public API (archline.Monitor: powermon's one recorder)
        self.rec = recorder
        self.meter = meter
        self.ctx = ctx
        self.s = settings
        self.trace_dir = trace_dir
        self.device = device
        self._idle = idle or time.sleep
        self._set_point = set_point
        self._last_idle_w: float | None = None
        self._first = True

    @property
    def metered(self) -> bool:
        return self.meter.sample_hz is not None

    def _window(self, name: str, result: RunResult | None = None) -> Region | tuple[float, float | None]:
        """Close window ``name``: a Region for a kernel result, else (duration_s, power_w) of an idle window."""
        edges = {} if result is None else {"t0_s": result.extra.get("t0_host_s"), "t1_s": result.extra.get("t1_host_s")}
        if result is not None and self.timed_windows and edges["t0_s"] is None and result.time_s > 0:
            t1 = self.rec.clock()     # the schedule stays busy until the window closes, after this
            edges = {"t0_s": t1 - result.time_s, "t1_s": t1}
        # a window whose meter lost more than max_lost of its samples raises SamplesLostError: the point fails
        win = self.rec.end_region(name, strict=self.metered, max_lost=self.s.max_lost if self.metered else None,
                                  **edges)
        (mr,) = win.meters.values()
        # plain floats: a meter may give numpy scalars, whose repr ("np.float64(...)") would reach the CSV cells
        e = float(mr.energy_j) if self.metered and math.isfinite(mr.energy_j) else None
        if result is None:
            return mr.duration_s, None if e is None or mr.duration_s <= 0 else e / mr.duration_s
        return Region(result, mr.duration_s, e, float(mr.energy_err_j) if e is not None else None,
                      mr.n_samples if e is not None else None,
                      {d: float(r.energy_j) for d, r in mr.devices.items()} if e is not None else {},
                      mr.lost_samples, mr.lost_s, mr.gaps, mr.overflows, dict(mr.readings))

    def measure_idle(self, tag: str) -> float | None:
        if self.meter.sample_hz is None or self.s.idle_s <= 0:
            return None
        name = f"idle-{tag}"
        self._idle(EDGE_SAMPLES / self.meter.sample_hz)  # settle: the window starts on idle samples only
        self.rec.begin_window(name)
        self._idle(self.s.idle_s)
        _, power_w = self._window(name)  # type: ignore[misc]
        return power_w

    def region_target_s(self, spec: KernelSpec | None = None) -> float:
        """A region lasts --min-time (the quick roofline's intensity points: its longer ``intensity_region_s``);
        on a meter also long enough for min_samples samples (not on --emulate's schedule, whose energy is
        busy_w x time_s by construction: its samples only bound the integration, and the quick roofline keeps its
        short regions, as measured)."""
        base_s = self.s.min_region_s
        if spec is not None and spec.kernel == "intensity" and self.s.intensity_region_s is not None:
            base_s = max(base_s, self.s.intensity_region_s)
        if self.meter.sample_hz and not self.timed_windows:
            return max(base_s, self.s.min_samples / self.meter.sample_hz)
        return base_s

    def region_reps(self, t_rep_s: float, spec: KernelSpec | None = None) -> int:
        if self.s.fixed_reps is not None:
            return self.s.fixed_reps
        # a real meter's window holds [bench] reps (S0: 100); a schedule (timed_windows) needs no floor
        floor = self.s.reps if self.meter.sample_hz and not self.timed_windows else 1
        reps = max(floor, math.ceil(self.region_target_s(spec) / t_rep_s))
        if reps * t_rep_s > self.s.max_region_s:
            reps = max(1, int(self.s.max_region_s / t_rep_s))
        return reps

    def measure(self, point: Point, index: int, progress: Progress | None = None) -> dict[str, Any]:
        spec = point.spec
        in_force = self._set_point(point) if self._set_point is not None else {}
        if not self._first:
            self.rec.segment()
        self._first = False
        if self._last_idle_w is None:
            self._last_idle_w = self.measure_idle("first")
        idle_before = self._last_idle_w
        kern = self.backend.prepare(spec, self.device)
        regions: list[Region] = []
        try:
            if self.s.fixed_reps is not None:
                calib = kern.run(1)
                pre_ok = calib.checksum_ok
            else:
                calib, pre_ok = calibration_run(kern, self.region_target_s(spec))
            t_rep = max(calib.time_s / calib.reps, 1e-9)
            reps = self.region_reps(t_rep, spec)
            edge_s = EDGE_SAMPLES / self.meter.sample_hz if self.meter.sample_hz else 0.0
            warm = max(self.s.warmup_reps, math.ceil(edge_s / t_rep))
            pre_ok = pre_ok and (kern.run(warm).checksum_ok if warm else True)
            t_host0 = time.monotonic()
            for r in range(self.s.max_regions):
                name = f"p{index}-r{r}"
                if progress is not None:
                    progress.update(f"{spec.kernel}/{spec.precision}/{spec.level} {_short(spec.params)}",
                                    self.rec.live_power_w())
                self.rec.begin_window(name)
                region = self._window(name, kern.run(reps))
                assert isinstance(region, Region)
                regions.append(region)
                if not region.result.checksum_ok:
                    break
                if r + 1 >= self.s.min_regions and ci_halfwidth_rel([g.value for g in regions]) < self.s.ci_rel:
                    break
            t_host1 = time.monotonic()
            tail = math.ceil(edge_s / t_rep)
            if tail:
                kern.run(tail)
        finally:
            kern.close()
        idle_after = self.measure_idle(f"after-p{index}")
        self._last_idle_w = idle_after
        row = build_row(self.ctx, spec, point.point_id, regions, self.meter, ci_rel=self.s.ci_rel,
                        max_regions=self.s.max_regions, in_force=in_force, idle_w=(idle_before, idle_after))
        row["checksum_ok"] = row["checksum_ok"] and pre_ok
        if self.trace_dir is not None and self.s.traces and self.metered:
            p = self.rec.write_window(self.trace_dir / f"trace-p{index:04d}.csv.gz", t_host0, t_host1,
                                      {"point_id": point.point_id, "run_id": self.ctx.run_id})
            if p is not None:
                row["trace"] = f"{self.trace_dir.name}/{p.name}"
        raw = next((m.raw_path for m in self.rec.meters if getattr(m, "raw_path", None) is not None), None)
        if raw is not None and self.trace_dir is not None:   # the raw capture this point's stream segment went to
            row["raw_capture"] = f"{self.trace_dir.name}/{Path(raw).name}"
        return row


def _short(params: Any) -> str:
    # shortest first: the bar's 40 columns then show what tells points apart (intensity=0.25), not a long size
    return " ".join(sorted((f"{k}={v}" for k, v in params.items()), key=lambda kv: (len(kv), kv)))
