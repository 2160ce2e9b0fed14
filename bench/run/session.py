"""One measuring session: options and a profile become a back end, a recorder with one meter (or the null meter),
the controls and the points, ready to run. ``archline bench run`` (:func:`run_once`) and ``archline bench sweep``
(:mod:`archline.bench.run.sweep`) both come through :func:`open_session` and :meth:`Session.run_indexed`, where a
point that fails is reported and skipped in one place.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from archline.bench.config.options import RunOptions, check_applies
from archline.bench.config.profile import BenchProfile, ProfileSectionError, load_bench_profile
from archline.bench.errors import BenchError
from archline.bench.kernels import Backend
from archline.bench.run.points import Point, RunSettings, make_points
from archline.bench.run.progress import Progress
from archline.bench.run.rows import MeterInfo, ResultsFile, RunContext
from archline.bench.run.runner import Runner
from archline.powermon.errors import MeterError
from archline.powermon.record.null import NullMeter
from archline.powermon.record.recorder import Recorder

log = logging.getLogger("archline.bench")
#: the emulated PowerMon 2's stream over the pty, records per host second, that the decoder keeps up with
MAX_EMULATED_RECORDS_PER_S = 60_000
#: how long past a window's end the runner waits for its samples (host seconds)
SETTLE_TIMEOUT_S = 5.0


class MeterMissing(BenchError):
    """A meter the profile configures is not there (or not permitted)."""

    exit_code = 4


@dataclass
class Session:
    profile: BenchProfile
    path: str                           #: time-only, metered or emulated
    backend: Backend
    recorder: Recorder
    meter: MeterInfo
    ctx: RunContext
    settings: RunSettings
    points: list[Point]
    notes: list[str] = field(default_factory=list)
    set_point: Callable[[Point], dict[str, Any]] | None = None
    idle: Callable[[float], None] | None = None
    trace_dir: Path | None = None
    device: str | None = None
    closers: list[Callable[[], None]] = field(default_factory=list)
    n_bad_checksum: int = 0

    def describe(self) -> str:
        energy = f"meter {self.meter.label} at {self.meter.sample_hz:g} Hz" if self.meter.sample_hz else \
            self.meter.reason
        return f"{'emulated, ' if self.path == 'emulated' else ''}backend {self.backend.name}, {energy}"

    def run_indexed(self, todo: Sequence[tuple[int, Point]], results: ResultsFile, *, stream: TextIO | None = None,
                    tty: bool | None = None) -> tuple[int, int]:
        """Measure ``todo`` (index, point), appending each row to ``results``; (written, failed). A point whose
        kernel or meter fails is reported and skipped; the others go on."""
        runner = Runner(self.backend, self.recorder, self.meter, self.ctx, self.settings, trace_dir=self.trace_dir,
                        device=self.device, idle=self.idle, set_point=self.set_point)
        progress = Progress(len(todo), stream, tty=tty)
        written = failed = 0
        try:
            for i, p in todo:
                try:
                    row = runner.measure(p, i, progress)
                except (BenchError, MeterError) as e:
                    failed += 1
                    progress.message(f"point {p.point_id} failed: {e}")
                    continue
                results.append(row)
                written += 1
                self.n_bad_checksum += not row["checksum_ok"]
                progress.point_done(p.point_id, row)
        finally:
            progress.close()
        return written, failed

    def close(self) -> None:
        for c in reversed(self.closers):
            try:
                c()
            except Exception as e:  # closing must not hide the run's own outcome
                log.warning(f"while closing the session: {e}")
        self.closers.clear()


def _emulated(prof: BenchProfile, opts: RunOptions, caps: Sequence[float], raw_dir: Path | None
              ) -> tuple[Backend, Any, MeterInfo, str, Callable[[Point], dict[str, Any]], Callable[[float], None]]:
    from archline.bench.emulated.backend import EmulatedBackend
    from archline.bench.emulated.device import ModelPowerSource
    from archline.bench.emulated.model import EmulationError
    from archline.powermon.powermon2.meter import emulated_powermon

    be = EmulatedBackend(prof, time_compression=opts.time_compression, seed=opts.seed,
                         meter=prof.meter(opts.meter) if opts.meter else None)
    for c in caps:
        be.model.with_cap(c)  # raises with the allowed range
    per_tc = be.meter.rate_hz * len(be.meter.channels)
    if per_tc * be.device.time_compression > MAX_EMULATED_RECORDS_PER_S:
        raise EmulationError(
            f"time compression {be.device.time_compression:g}x would stream {per_tc * be.device.time_compression:.0f}"
            f" PowerMon records per second over the pty (limit {MAX_EMULATED_RECORDS_PER_S}); lower "
            f"--time-compression to {MAX_EMULATED_RECORDS_PER_S / per_tc:.0f} or less")
    meter = emulated_powermon(be.meter, ModelPowerSource(be.device), speed=be.device.time_compression,
                              seed=opts.seed, raw_dir=raw_dir, stall_error_s=30.0)
    rails = ", ".join(f"{c.id}={c.rail}" for c in be.meter.channels)
    info = MeterInfo(f"{be.meter.name}:powermon2-emulated", be.meter.rate_hz, True,
                     f"PowerMon 2 (emulated on a pty), channels {rails}")
    note = (f"emulated {prof.name}: time compression {be.device.time_compression:g}x, idle {be.model.idle_w:g} W "
            f"({be.model.idle_source})")

    def set_point(p: Point) -> dict[str, Any]:
        be.device.set_cap(p.power_cap_w)
        return {"power_cap_w": p.power_cap_w, "power_cap_requested_w": p.power_cap_w}

    return be, meter, info, note, set_point, be.device.idle


def _real_backend(prof: BenchProfile, opts: RunOptions) -> Backend:
    from archline.bench.registry import get_backend

    name = opts.backend or prof.bench.backend
    if name is None:
        raise ProfileSectionError(f"platform '{prof.name}' names no [bench] backend; pass --backend")
    if name == "emulated":
        raise BenchError("--backend emulated needs --emulate (it runs the profile's model, not this machine)")
    be: Any = get_backend(name)
    if opts.isa is not None:
        be = type(be)(isa=opts.isa)
    return be  # type: ignore[no-any-return]


def open_session(opts: RunOptions, *, trace_dir: Path | None = None,
                 config_hasher: Callable[[dict[str, Any]], str] | None = None,
                 restore_file: Path | None = None) -> Session:
    prof = load_bench_profile(opts.platform)
    settings = RunSettings.from_section(prof.bench, quick=opts.quick, reps=opts.reps, min_time_s=opts.min_time_s)
    path = "emulated" if opts.emulate else "metered" if prof.meters else "time-only"
    backend_name = "emulated" if opts.emulate else (opts.backend or prof.bench.backend or "")
    check_applies(opts, path=path, backend=backend_name, platform=prof.name)
    caps = tuple(prof.bench.power_caps_w if opts.power_caps_w is None else opts.power_caps_w)
    dvfs_ids = tuple(prof.bench.dvfs_settings if opts.dvfs_settings is None else opts.dvfs_settings)
    if path == "emulated" and dvfs_ids:
        raise BenchError(f"platform '{prof.name}' lists [bench] dvfs_settings, which the emulated device does "
                         "not model (use power caps, or dvfs_settings = [] in the sweep)")
    for sid in dvfs_ids:
        prof.dvfs_setting(sid)
    s = Session(profile=prof, path=path, backend=None, recorder=None, meter=None, ctx=None,  # type: ignore[arg-type]
                settings=settings, points=[], trace_dir=trace_dir, device=opts.device or prof.bench.device)
    try:
        _open(s, opts, caps, dvfs_ids, config_hasher, restore_file)
    except BaseException:
        s.close()
        raise
    return s


def _open(s: Session, opts: RunOptions, caps: tuple[float, ...], dvfs_ids: tuple[str, ...],
          config_hasher: Callable[[dict[str, Any]], str] | None, restore_file: Path | None) -> None:
    prof = s.profile
    if s.path == "emulated":
        s.ctx = RunContext.new(prof.name, f"emulated {prof.platform.title}", "emulated", True)
        raw_dir = None if s.trace_dir is None else s.trace_dir / s.ctx.run_id
        s.backend, meter, s.meter, s.ctx.note, s.set_point, s.idle = _emulated(prof, opts, caps, raw_dir)
    else:
        s.backend = _real_backend(prof, opts)
        ok, why = s.backend.availability()
        if not ok:
            raise BenchError(f"backend '{s.backend.name}' is not usable here: {why}")
        s.ctx = RunContext.new(prof.name, opts.device or prof.bench.device or why, s.backend.name, False)
        from archline.bench.controls import DEFAULT_RESTORE, apply_pending_restore, open_controls

        apply_pending_restore(restore_file or DEFAULT_RESTORE, log=log.info)  # what a crashed run left changed
        if s.path == "time-only":
            meter = NullMeter(prof.detected_note or f"platform '{prof.name}' configures no meter")
            s.meter = MeterInfo("", None, False, meter.reason)
        else:
            spec = prof.meter(opts.meter) if opts.meter else prof.meters[0]
            from archline.powermon.spec import open_meter

            try:
                meter = open_meter(spec, raw_dir=None if s.trace_dir is None else s.trace_dir / s.ctx.run_id)
            except MeterError as e:
                raise MeterMissing(f"meter '{spec.name}' ({spec.kind}) is configured for platform '{prof.name}' "
                                   f"but cannot be opened: {e}") from None
            s.meter = MeterInfo(f"{spec.name}:{spec.kind}", float(getattr(meter, "update_hz", spec.rate_hz)), False,
                                f"{spec.kind} meter {spec.name}")
        if caps or dvfs_ids:
            ctl = open_controls(prof, caps, dvfs_ids, restore_file=restore_file, log=log.info)
            s.closers.append(ctl.restore)
            s.set_point = ctl.apply_point
    if config_hasher is not None:
        s.ctx.config_hash = config_hasher(prof.platform.raw)
    if s.trace_dir is not None:
        s.trace_dir = s.trace_dir / s.ctx.run_id
    s.points, s.notes = make_points(s.backend, opts, prof, caps or (None,), dvfs_ids or (None,))
    plan_notes = getattr(s.backend, "plan_notes", None)   # e.g. what the back end made of the topology
    if callable(plan_notes):
        s.notes += list(plan_notes())
    if not s.points:
        raise BenchError(f"nothing to run on '{prof.name}': " + ("; ".join(s.notes) or "no points"))
    s.recorder = Recorder([meter], settle_timeout_s=SETTLE_TIMEOUT_S, keep_regions=False)
    try:
        s.recorder.start()
    except MeterError as e:
        if s.path == "metered":
            raise MeterMissing(f"meter '{s.meter.label.split(':')[0]}' is configured for platform '{prof.name}' "
                               f"but cannot be opened: {e}") from None
        raise
    s.closers.append(s.recorder.stop)


@dataclass
class RunOutcome:
    results: Path
    rows: int
    failed: int
    wall_s: float
    session_note: str
    precisions: tuple[str, ...] = ()    #: of the intensity points (what a roofline plot can show)
    n_bad_checksum: int = 0


def run_once(opts: RunOptions, out: Path, *, stream: TextIO | None = None, tty: bool | None = None,
             restore_file: Path | None = None) -> RunOutcome:
    """``archline bench run``: all points into ``<out>/<run_id>.csv`` (``.partial`` until complete)."""
    t0 = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    session = open_session(opts, trace_dir=out, restore_file=restore_file)
    try:
        partial = out / f"{session.ctx.run_id}.csv.partial"
        results = ResultsFile(partial)
        for n in session.notes:
            log.info(f"note: {n}")
        log.info(f"{session.profile.name}: {len(session.points)} points; {session.describe()}")
        written, failed = session.run_indexed(list(enumerate(session.points)), results, stream=stream, tty=tty)
        final = out / f"{session.ctx.run_id}.csv"
        if written:
            partial.replace(final)
        else:
            partial.unlink()
        precs = tuple(sorted({p.spec.precision for p in session.points if p.spec.kernel == "intensity"}))
        return RunOutcome(final, written, failed, time.monotonic() - t0, session.describe(), precs,
                          session.n_bad_checksum)
    finally:
        session.close()
