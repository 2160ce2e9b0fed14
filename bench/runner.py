"""The metered runner: for each sweep point, warm up, run repetitions inside marked regions on the meter's clock,
stop early once the confidence interval is tight, and write one ``archline.results/1`` row plus its raw trace.

Per point (model.md §7.5, §8; DESIGN.md §5):

1. prepare the kernel; one calibration run gives the time of one repetition;
2. a region holds ``reps`` repetitions, at least ``[bench] reps`` (S0: 100) and long enough for
   ``min_samples`` meter samples (>= 200 at 128 Hz = 1.56 s), or ``min_region_s`` without a meter;
3. warm-up (``warmup_reps`` repetitions, at least a few sample periods), then regions back to back, then an
   untimed tail run so the power is steady across the last region's edge;
4. after ``min_regions`` regions, stop once the 95% CI half-width of the per-repetition energy (time without a
   meter) is below ``ci_rel`` of its median, or at ``max_regions``;
5. the row carries the median region (time, energy) and the spread (``time_spread_rel``,
   ``energy_spread_rel``: (max - min) / median over regions), throttling (per-repetition time rising over the
   regions by more than ``THROTTLE_REL``) and clock drift (meter clock vs kernel timer over the region);
6. idle power is measured before the first point and after every point (``idle_w_before``, ``idle_w_after``).

Rows are appended one complete line per ``os.write`` and fsynced (:func:`append_row`), so a killed run never
leaves a partial row. ``bench run`` writes ``<out>/<run_id>.csv.partial`` and renames it to ``.csv`` when the
run is complete; ``bench sweep`` appends to its results file and resumes (:mod:`archline.bench.sweep`).
"""

from __future__ import annotations

import csv
import datetime as _dt
import io
import math
import os
import socket
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from archline.bench.errors import BenchError
from archline.bench.kernels import Backend, KernelSpec, RunResult
from archline.bench.profile_sections import QUICK_RANGES, BenchProfile, BenchSection
from archline.bench.results import COLUMNS as CONTRACT_COLUMNS
from archline.bench.results import EXTRA_COLUMNS as RESULTS_EXTRA_COLUMNS
from archline.bench.results import SCHEMA
from archline.bench.runner_meters import RegionEnergy, RunnerMeter

#: This runner's columns after the contract ones (DESIGN.md §3) and bench.results' extras.
RUNNER_COLUMNS: tuple[str, ...] = (
    "emulated", "point_id", "config_hash", "n_regions", "time_spread_rel", "energy_spread_rel", "power_w",
    "idle_w_before", "idle_w_after", "throttled", "clock_drift_rel", "power_cap_requested_w",
    "core_mhz_requested", "mem_mhz_requested", "energy_by_device", "trace",
)
EXTRA_COLUMNS: tuple[str, ...] = RESULTS_EXTRA_COLUMNS + tuple(c for c in RUNNER_COLUMNS
                                                               if c not in RESULTS_EXTRA_COLUMNS)
COLUMNS: tuple[str, ...] = CONTRACT_COLUMNS + EXTRA_COLUMNS
#: per-repetition time rising by more than this over a point's regions flags throttling
THROTTLE_REL = 0.05
#: meter-clock vs kernel-timer disagreement above this flags clock drift
DRIFT_REL = 0.01
#: without a meter, a region lasts at least this long (device seconds)
MIN_REGION_S = 0.1
#: warm-up and tail last at least this many meter sample periods
EDGE_SAMPLES = 32


@dataclass
class RunSettings:
    """Everything that shapes a run; ``quick`` shrinks it to about a minute."""

    kernels: tuple[str, ...] = ("intensity",)
    precisions: tuple[str, ...] = ("sp", "dp")
    quick: bool = False
    reps: int = 100
    warmup_reps: int = 3
    min_samples: int = 200
    min_region_s: float = MIN_REGION_S
    max_region_s: float = 10.0
    ci_rel: float = 0.01
    min_regions: int = 3
    max_regions: int = 9
    idle_s: float = 2.0
    traces: bool = True

    @classmethod
    def from_section(cls, b: BenchSection, *, quick: bool = False, kernels: Sequence[str] | None = None,
                     precisions: Sequence[str] | None = None) -> RunSettings:
        s = cls(kernels=tuple(kernels or b.kernels), precisions=tuple(precisions or b.precisions), quick=quick,
                reps=b.reps, warmup_reps=b.warmup_reps, min_samples=b.min_samples, max_region_s=b.max_region_s,
                ci_rel=b.ci_rel, min_regions=b.min_regions, max_regions=b.max_regions, idle_s=b.idle_s)
        if quick:
            s.reps = min(s.reps, 20)
            s.min_samples = min(s.min_samples, 128)
            s.min_region_s = 0.03
            s.min_regions, s.max_regions = 2, 3
            s.ci_rel = max(s.ci_rel, 0.02)
            s.idle_s = min(s.idle_s, 0.5)
            s.warmup_reps = min(s.warmup_reps, 1)
        return s


@dataclass
class Point:
    """One sweep point with the settings it runs under."""

    spec: KernelSpec
    power_cap_w: float | None = None
    dvfs_id: str | None = None

    @property
    def point_id(self) -> str:
        parts = [self.spec.label]
        if self.power_cap_w is not None:
            parts.append(f"cap={self.power_cap_w:g}W")
        if self.dvfs_id is not None:
            parts.append(f"dvfs={self.dvfs_id}")
        return "|".join(parts)


@dataclass
class RunContext:
    """Who and where: the fixed columns of every row in one run."""

    run_id: str
    started_at: str
    platform: str
    host: str
    device: str
    backend: str
    emulated: bool
    config_hash: str = ""
    note: str = ""
    settings_cols: dict[str, Any] = field(default_factory=dict)   # power_cap_w, core_mhz … in force

    @classmethod
    def new(cls, platform: str, device: str, backend: str, emulated: bool, *, config_hash: str = "",
            note: str = "") -> RunContext:
        now = _dt.datetime.now(_dt.timezone.utc)
        run_id = f"{platform}-{now:%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:6]}"
        return cls(run_id=run_id, started_at=now.isoformat(timespec="seconds").replace("+00:00", "Z"),
                   platform=platform, host=socket.gethostname(), device=device, backend=backend, emulated=emulated,
                   config_hash=config_hash, note=note)


def intensity_of(spec: KernelSpec, counts_flops: int, counts_bytes: int) -> float | None:
    if counts_bytes <= 0:
        return None
    return counts_flops / counts_bytes


def ci_halfwidth_rel(values: Sequence[float]) -> float:
    """95% CI half-width of the mean (Student t), relative to the median; inf with fewer than 2 values."""
    n = len(values)
    if n < 2:
        return math.inf
    med = statistics.median(values)
    if med == 0:
        return math.inf
    # two-sided 97.5% t quantiles for n-1 = 1..10 degrees of freedom, then the normal value
    t = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228)
    q = t[n - 2] if n - 2 < len(t) else 1.96
    return q * statistics.stdev(values) / math.sqrt(n) / abs(med)


class Progress:
    """A one-line live display on a terminal (point, ETA, live power); plain log lines otherwise."""

    def __init__(self, total: int, stream: TextIO | None = None, *, tty: bool | None = None,
                 log: Callable[[str], None] | None = None) -> None:
        self.total = total
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.done = 0
        self.t0 = time.monotonic()
        self.log = log

    def eta_s(self) -> float | None:
        if self.done == 0:
            return None
        return (time.monotonic() - self.t0) / self.done * (self.total - self.done)

    def _fmt_eta(self) -> str:
        eta = self.eta_s()
        return "--:--" if eta is None else f"{int(eta) // 60}:{int(eta) % 60:02d}"

    def update(self, label: str, power_w: float | None = None) -> None:
        if self.tty:
            pw = f"  {power_w:7.1f} W" if power_w is not None else ""
            self.stream.write(f"\r[{self.done + 1:>3}/{self.total}] {label[:60]:<60} ETA {self._fmt_eta()}{pw}\x1b[K")
            self.stream.flush()

    def point_done(self, label: str, row: dict[str, Any]) -> None:
        self.done += 1
        msg = (f"point {self.done}/{self.total} {label} time_s={row.get('time_s')} energy_j={row.get('energy_j')} "
               f"power_w={row.get('power_w')} ETA {self._fmt_eta()}")
        if self.log is not None:
            self.log(msg)
        if not self.tty:
            self.stream.write(_stamp() + " " + msg + "\n")
            self.stream.flush()

    def message(self, msg: str) -> None:
        if self.log is not None:
            self.log(msg)
        if self.tty:
            self.stream.write("\r\x1b[K" + msg + "\n")
        else:
            self.stream.write(_stamp() + " " + msg + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def _stamp() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _fmt(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "" if math.isnan(v) else repr(v)
    return str(v)


def row_line(row: dict[str, Any], columns: Sequence[str] = COLUMNS) -> bytes:
    """One complete CSV line (with its newline) for ``row``."""
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow([_fmt(row.get(c)) for c in columns])
    return buf.getvalue().encode()


def header_line(columns: Sequence[str] = COLUMNS) -> bytes:
    return (",".join(columns) + "\n").encode()


def repair_tail(path: Path) -> int:
    """Cut a trailing partial line (no newline: the machine lost power mid-write); return the bytes removed."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return 0
    if size == 0:
        return 0
    with open(path, "rb+") as f:
        f.seek(max(0, size - 65536))
        tail = f.read()
        if tail.endswith(b"\n"):
            return 0
        cut = tail.rfind(b"\n")
        keep = size - len(tail) + cut + 1 if cut >= 0 else 0
        f.truncate(keep)
        os.fsync(f.fileno())
        return size - keep


def ensure_header(path: Path, columns: Sequence[str] = COLUMNS) -> None:
    """Create ``path`` holding just the header, atomically (temp + rename); leave an existing file alone."""
    if path.exists() and path.stat().st_size > 0:
        return
    from archline.bench.runner_meters import write_atomic

    write_atomic(path, header_line(columns))


def append_row(path: Path, row: dict[str, Any], columns: Sequence[str] = COLUMNS) -> None:
    """Append one row as a single ``os.write`` of a complete line, then fsync: SIGKILL leaves it whole or absent."""
    line = row_line(row, columns)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        n = os.write(fd, line)
        if n != len(line):  # a short write on a full disk: remove what was written, never leave half a row
            os.ftruncate(fd, os.fstat(fd).st_size - n)
            raise BenchError(f"could not append a row to {path}: disk full?")
        os.fsync(fd)
    finally:
        os.close(fd)


class Runner:
    """Measures points with one back end and one meter and hands each finished row to ``sink``."""

    def __init__(self, backend: Backend, meter: RunnerMeter, ctx: RunContext, settings: RunSettings, *,
                 trace_dir: Path | None = None, device: str | None = None,
                 clock: Callable[[], float] = time.monotonic, idle: Callable[[float], None] | None = None,
                 set_point: Callable[[Point], dict[str, Any]] | None = None) -> None:
        self.backend = backend
        self.meter = meter
        self.ctx = ctx
        self.s = settings
        self.trace_dir = trace_dir
        self.device = device
        self.clock = clock
        self._idle = idle or (lambda s: time.sleep(s))
        self._set_point = set_point
        self._last_idle_w: float | None = None
        self._meter_point = -1

    # --- idle power ---
    def measure_idle(self, tag: str) -> float | None:
        if self.meter.sample_hz is None or self.s.idle_s <= 0:
            return None
        name = f"idle-{tag}"
        self._idle(EDGE_SAMPLES / self.meter.sample_hz)  # settle: the region starts on idle samples only
        self.meter.begin(name)
        self._idle(self.s.idle_s)
        r = self.meter.end(name)
        return r.power_w

    def region_target_s(self) -> float:
        if self.meter.sample_hz:
            return max(self.s.min_region_s, self.s.min_samples / self.meter.sample_hz)
        return self.s.min_region_s

    def measure(self, point: Point, index: int, progress: Progress | None = None) -> dict[str, Any]:
        spec = point.spec
        in_force: dict[str, Any] = {}
        if self._set_point is not None:
            in_force = self._set_point(point)
        start_point = getattr(self.meter, "start_point", None)
        if start_point is not None and index != self._meter_point:
            start_point()
            self._meter_point = index
        if self._last_idle_w is None:
            self._last_idle_w = self.measure_idle("first")
        idle_before = self._last_idle_w
        kern = self.backend.prepare(spec, self.device)
        try:
            calib = kern.run(1)
            t_rep = max(calib.time_s, 1e-9)
            target = self.region_target_s()
            reps = max(self.s.reps, math.ceil(target / t_rep))
            if reps * t_rep > self.s.max_region_s:
                reps = max(1, int(self.s.max_region_s / t_rep))
            edge_s = EDGE_SAMPLES / self.meter.sample_hz if self.meter.sample_hz else 0.0
            warm = max(self.s.warmup_reps, math.ceil(edge_s / t_rep))
            if warm:
                kern.run(warm)
            regions: list[tuple[RunResult, RegionEnergy]] = []
            t_host0 = self.clock()
            for r in range(self.s.max_regions):
                name = f"p{index}-r{r}"
                if progress is not None:
                    progress.update(f"{spec.kernel}/{spec.precision}/{spec.level} {_short_params(spec)}",
                                    self.meter.live_power_w())
                self.meter.begin(name)
                res = kern.run(reps)
                reg = self.meter.end(name, res.extra.get("t0_host_s"), res.extra.get("t1_host_s"))
                regions.append((res, reg))
                if not res.checksum_ok:
                    break
                if r + 1 >= self.s.min_regions:
                    vals = [(g.energy_j if g.energy_j is not None else x.time_s) / x.reps for x, g in regions]
                    if ci_halfwidth_rel(vals) < self.s.ci_rel:
                        break
            t_host1 = self.clock()
            tail = math.ceil(edge_s / t_rep)
            if tail:
                kern.run(tail)
        finally:
            kern.close()
        idle_after = self.measure_idle(f"after-p{index}")
        self._last_idle_w = idle_after
        row = self._row(point, regions, in_force, idle_before, idle_after)
        if self.trace_dir is not None and self.s.traces and self.meter.sample_hz is not None:
            safe = f"p{index:04d}"
            p = self.meter.save_trace(self.trace_dir / f"trace-{safe}.csv.gz", t_host0, t_host1)
            if p is not None:
                row["trace"] = f"{self.trace_dir.name}/{p.name}"
        return row

    def _row(self, point: Point, regions: list[tuple[RunResult, RegionEnergy]], in_force: dict[str, Any],
             idle_before: float | None, idle_after: float | None) -> dict[str, Any]:
        spec = point.spec
        times = [x.time_s for x, _ in regions]
        metered = all(g.energy_j is not None for _, g in regions)
        order_key = [g.energy_j if metered and g.energy_j is not None else t
               for t, (_, g) in zip(times, regions, strict=True)]
        order = sorted(range(len(regions)), key=lambda i: order_key[i])   # the median region (by energy when metered)
        mid = order[len(order) // 2]
        res, reg = regions[mid]
        c = res.counts
        med_t = statistics.median(times)
        energies = [g.energy_j for _, g in regions if g.energy_j is not None]
        med_e = statistics.median(energies) if len(energies) == len(regions) else None
        # throttling: per-repetition time of the last region vs the first
        per_rep = [x.time_s / x.reps for x, _ in regions]
        throttled = len(per_rep) >= 2 and per_rep[-1] > per_rep[0] * (1 + THROTTLE_REL)
        clocks = [float(x.extra["effective_clock_hz"]) for x, _ in regions if x.extra.get("effective_clock_hz")]
        if len(clocks) >= 2 and min(clocks) < max(clocks) * (1 - THROTTLE_REL):
            throttled = True
        drifts = [abs(g.duration_s - x.time_s) / x.time_s for x, g in regions
                  if x.time_s > 0 and self.meter.sample_hz is not None]
        drift = max(drifts) if drifts else None
        notes = [n for n in (self.ctx.note, self.meter.reason if self.meter.sample_hz is None else "") if n]
        if throttled:
            why = f"time per repetition rose {per_rep[-1] / per_rep[0] - 1:.1%}"
            if len(clocks) >= 2:
                why += f", effective clock {min(clocks) / 1e6:.0f}-{max(clocks) / 1e6:.0f} MHz over the regions"
            notes.append(f"throttling suspected: {why}")
        if drift is not None and drift > DRIFT_REL:
            notes.append(f"clock drift: meter and kernel timer disagree by {drift:.1%}")
        if len(regions) >= self.s.max_regions and len(regions) >= 2:
            vals = [(g.energy_j if g.energy_j is not None else x.time_s) / x.reps for x, g in regions]
            if ci_halfwidth_rel(vals) >= self.s.ci_rel:
                notes.append(f"CI not below {self.s.ci_rel:g} after {len(regions)} regions")
        flops = c.flops_sp + c.flops_dp + c.int_ops
        intensity = flops / c.bytes_total if c.bytes_total else None
        scale = med_t / res.time_s if res.time_s > 0 else 1.0   # counts are for the median region already
        del scale
        row: dict[str, Any] = {
            "schema": SCHEMA, "run_id": self.ctx.run_id, "started_at": self.ctx.started_at,
            "platform": self.ctx.platform, "host": self.ctx.host, "device": self.ctx.device,
            "backend": self.ctx.backend, "kernel": spec.kernel, "precision": spec.precision, "level": spec.level,
            "reps": res.reps, "time_s": med_t, "energy_j": med_e,
            "energy_err_j": max(g.energy_err_j for _, g in regions) if med_e is not None and all(
                g.energy_err_j is not None for _, g in regions) else None,
            **{k: v for k, v in c.as_row().items()},
            "meter": self.meter.name or "", "sample_hz": self.meter.sample_hz,
            "n_samples": reg.n_samples if med_e is not None else None,
            "checksum_ok": all(x.checksum_ok for x, _ in regions),
            "emulated": self.ctx.emulated or self.meter.emulated, "point_id": point.point_id,
            "config_hash": self.ctx.config_hash, "params": _short_params(spec),
            "intensity_flop_per_byte": intensity, "n_regions": len(regions),
            "time_spread_rel": (max(times) - min(times)) / med_t if med_t > 0 else None,
            "energy_spread_rel": (max(energies) - min(energies)) / med_e if med_e else None,
            "power_w": med_e / med_t if med_e is not None and med_t > 0 else None,
            "idle_w_before": idle_before, "idle_w_after": idle_after, "throttled": throttled,
            "clock_drift_rel": drift, "note": "; ".join(notes),
            "energy_by_device": ";".join(f"{d}={e!r}" for d, e in sorted(reg.per_device_j.items()))
            if med_e is not None and reg.per_device_j else None,
        }
        for key in ("isa", "threads", "effective_clock_hz", "ns_per_access", "cycles_per_access", "clock_method",
                    "clock_check"):
            if key in res.extra:
                row[key] = res.extra[key]
        if res.extra.get("effective_clock_hz"):
            row["core_mhz"] = round(float(res.extra["effective_clock_hz"]) / 1e6, 1)
        row.update(self.ctx.settings_cols)
        row.update(in_force)
        if c.bus_bytes == 0:
            row["bus_bytes"] = None
        return row

    def run(self, points: Iterable[Point], sink: Callable[[dict[str, Any]], None],
            progress: Progress | None = None, start_index: int = 0) -> int:
        n = 0
        for i, p in enumerate(points, start=start_index):
            row = self.measure(p, i, progress)
            sink(row)
            if progress is not None:
                progress.point_done(p.spec.label, row)
            n += 1
        return n


def _short_params(spec: KernelSpec) -> str:
    return ";".join(f"{k}={v}" for k, v in sorted(spec.params.items()))


def default_points(backend: Backend, settings: RunSettings, profile: BenchProfile | None = None,
                   power_caps_w: Sequence[float | None] = (None,), dvfs_ids: Sequence[str | None] = (None,)
                   ) -> tuple[list[Point], list[str]]:
    """The sweep's points for the chosen kernels and precisions, and notes on what was left out and why."""
    from archline.bench.errors import UnsupportedError

    specs: list[KernelSpec] = []
    notes: list[str] = []
    for k in settings.kernels:
        precs = settings.precisions if k == "intensity" else (settings.precisions[0],)
        for p in precs:
            try:
                kw: dict[str, Any] = {"quick": settings.quick}
                if profile is not None and backend.name == "emulated":
                    kw["ranges"] = dict(QUICK_RANGES) if settings.quick else dict(profile.bench.ranges)
                specs.extend(backend.sweep(k, p, **kw))
            except UnsupportedError as e:
                notes.append(str(e))
    points = [Point(s, cap, d) for d in dvfs_ids for cap in power_caps_w for s in specs]
    return points, notes
