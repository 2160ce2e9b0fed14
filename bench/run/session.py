"""One measuring session: options and a profile become a back end, a recorder with one meter (or the null meter),
the controls and the points, ready to run. ``archline bench run`` (:func:`run_once`) and ``archline bench sweep``
(:mod:`archline.bench.run.sweep`) both come through :func:`open_session` and :meth:`Session.run_indexed`, where a
point that fails is reported and skipped in one place.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO, cast

from archline.bench.config.options import RunOptions, check_applies
from archline.bench.config.profile import BenchProfile, ProfileSectionError, load_bench_profile
from archline.bench.errors import BenchError
from archline.bench.kernels import Backend, Emulator
from archline.bench.run.files import RunFiles
from archline.bench.run.points import Point, RunSettings, make_points, quick_roofline
from archline.bench.run.progress import Progress
from archline.bench.run.rows import MeterInfo, ResultsFile, RunContext, calibration_of
from archline.bench.run.runner import Runner
from archline.bench.run.sensor_windows import fit_sensor_windows, for_bench
from archline.bench.run.signals import _interrupts_remembered, _signals_held
from archline.common.exits import EXIT_DEVICE
from archline.common.outputs import inside, safe_component
from archline.formats.meters.versions import MAX_EMULATED_RECORDS_PER_S  # noqa: F401  (bench run's pty limit, as before)
from archline.powermon.errors import MeterError
from archline.powermon.monitor import Monitor, open_windows
from archline.powermon.record.null import NullMeter

log = logging.getLogger("archline.bench")
#: how long past a window's end the runner waits for its samples (host seconds)
SETTLE_TIMEOUT_S = 5.0


class NoUsableDevice(BenchError):
    """The back end asked for has no usable device here (its library, driver or platform is missing)."""

    exit_code = EXIT_DEVICE


class MeterMissing(BenchError):  # a meter the profile configures is not there (or not permitted)
    exit_code = EXIT_DEVICE


@dataclass
class Session:
    profile: BenchProfile
    path: str                           #: time-only, metered, emulated or schedule (bench/emulated/schedule.py)
    backend: Backend
    recorder: Monitor                   #: the public window API over powermon's Recorder (one path)
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
    rows_written: int = 0               #: rows appended by run_indexed, also when it was interrupted

    def describe(self) -> str:
        energy = f"meter {self.meter.label} at {self.meter.sample_hz:g} Hz" if self.meter.sample_hz else \
            self.meter.reason
        if self.path == "schedule":        # real kernels, emulated energy: the note says which is which
            return f"backend {self.backend.name}, {energy}; {self.ctx.note}"
        path = "emulated, " if self.path == "emulated" else ""     # the measurement path, not a back end
        return f"{path}backend {self.backend.name}, {energy}"

    def run_indexed(self, todo: Sequence[tuple[int, Point]], results: ResultsFile, *, stream: TextIO | None = None,
                    tty: bool | None = None) -> tuple[int, int]:
        """Measure ``todo`` (index, point), appending each row to ``results``; (written, failed). A point whose
        kernel or meter fails is reported and skipped; the others go on."""
        runner = Runner(self.backend, self.recorder, self.meter, self.ctx, self.settings, trace_dir=self.trace_dir,
                        device=self.device, idle=self.idle, set_point=self.set_point,
                        timed_windows=self.path == "schedule")
        progress = Progress(len(todo), stream, tty=tty)
        written = failed = 0
        with _interrupts_remembered() as stop:
            try:
                for i, p in todo:
                    if stop:              # a KeyboardInterrupt that some library swallowed: stop here anyway
                        raise KeyboardInterrupt
                    try:
                        row = runner.measure(p, i, progress)
                    except (BenchError, MeterError) as e:
                        failed += 1
                        progress.message(f"point {p.point_id} failed: {for_bench(str(e))}")
                        continue
                    results.append(row)
                    written += 1
                    self.rows_written += 1
                    self.n_bad_checksum += row["checksum_ok"] is False
                    progress.point_done(p.point_id, row)
            finally:
                progress.close()
        return written, failed

    def close(self, *, quiet: bool = False, own_errors: bool = False) -> OSError | None:
        """Stop the recorder (its meter, emulator and capture writers) and restore the controls. A SIGTERM or
        Ctrl-C that arrives meanwhile is held until every closer has run (a meter stopped half-way would leave
        its capture's temp file behind), then raised as KeyboardInterrupt. Returns the first write error (a raw
        capture that could not be finished: a full disk). A closing failure is a warning, DEBUG only when
        ``quiet`` (the run has already failed and says why) or, for a write error, when ``own_errors`` (the
        caller reports the one returned itself): the user reads one line."""
        first: OSError | None = None
        with _signals_held():
            for c in reversed(self.closers):
                try:
                    c()
                except Exception as e:  # closing must not hide the run's own outcome
                    if isinstance(e, OSError) and first is None:
                        first = e
                    hush = quiet or (own_errors and isinstance(e, OSError))
                    (log.debug if hush else log.warning)(f"while closing the session: {e}")
            self.closers.clear()
        return first


def _emulated(prof: BenchProfile, opts: RunOptions, caps: Sequence[float], raw_dir: Path | None
              ) -> tuple[Backend, Any, MeterInfo, str, Callable[[Point], dict[str, Any]], Callable[[float], None]]:
    from archline.bench.registry import emulator

    be = cast("Emulator", emulator().open(profile=prof, time_compression=opts.time_compression, seed=opts.seed,
                                          meter=prof.meter(opts.meter) if opts.meter else None))
    be.check_caps(caps)   # raises with the allowed range
    url_notes: list[str] = []
    meter, label, what, rate_hz = be.open_meter(seed=opts.seed, raw_dir=raw_dir, notes=url_notes)
    for n in be.meter_notes:   # a profile without [[meters]]: the default emulated PowerMon 2 (say so)
        log.info(f"note: {n}")
    for n in url_notes:   # the port's emulator URL: its faults are played, its speed/seed give way (say which)
        (log.warning if "not used" in n else log.info)(n)
    info = MeterInfo(label, float(getattr(meter, "update_hz", rate_hz)), True, what, calibration_of(meter))

    def set_point(p: Point) -> dict[str, Any]:
        be.set_cap(p.power_cap_w)
        return {"power_cap_w": p.power_cap_w, "power_cap_requested_w": p.power_cap_w}

    return be, meter, info, be.emulation_note(), set_point, be.idle


def _real_backend(prof: BenchProfile, opts: RunOptions) -> Backend:
    from archline.bench.registry import info_of

    name = opts.backend or prof.bench.backend
    if name is None:
        raise ProfileSectionError(f"platform '{prof.name}' names no [bench] backend; pass --backend")
    info = info_of(name)
    if info.needs_emulate:
        raise BenchError(f"--backend {name} needs --emulate (it runs the profile's model, not this machine)")
    return info.open(**({} if opts.isa is None else {"isa": opts.isa}))


@dataclass
class Plan:
    """What the options ask for, checked against the profile; nothing opened, nothing written."""

    profile: BenchProfile
    settings: RunSettings
    path: str
    caps: tuple[float, ...]
    dvfs_ids: tuple[str, ...]


def plan_session(opts: RunOptions) -> Plan:
    """Every check that needs no device: the profile, the path, the options that apply to it, the DVFS ids. A
    sweep calls it before it takes its lock or creates its directory, so a bad config leaves nothing behind."""
    prof = load_bench_profile(opts.platform)
    settings = RunSettings.from_section(prof.bench, quick=opts.quick, reps=opts.reps, min_time_s=opts.min_time_s,
                                        max_lost=opts.max_lost)
    from archline.bench.emulated.schedule import needs_schedule

    path = "metered" if prof.meters else "time-only"
    if opts.emulate:       # no power model (localhost before a fit): real kernels, an emulated power schedule
        path = "schedule" if needs_schedule(prof, True) else "emulated"
    backend_name = opts.backend or prof.bench.backend or ""   # --emulate's path runs its own back end
    check_applies(opts, path=path, backend=backend_name, platform=prof.name)
    if path == "schedule":
        from archline.bench.emulated.schedule import schedule_w

        schedule_w(prof.name, opts.busy_w, opts.idle_w, opts.tdp_w)    # refused before anything is opened
    caps = tuple(prof.bench.power_caps_w if opts.power_caps_w is None else opts.power_caps_w)
    dvfs_ids = tuple(prof.bench.dvfs_settings if opts.dvfs_settings is None else opts.dvfs_settings)
    if path == "emulated" and dvfs_ids:
        raise BenchError(f"platform '{prof.name}' lists [bench] dvfs_settings, which the emulated device does "
                         "not model (use power caps, or dvfs_settings = [] in the sweep)")
    for sid in dvfs_ids:
        prof.dvfs_setting(sid)
    if path == "emulated":   # a meter --emulate cannot play is refused, never replaced by another one
        from archline.bench.emulated.meters import choose

        choose(prof, opts.meter)
    elif opts.meter is not None:
        prof.meter(opts.meter)
    return Plan(prof, settings, path, caps, dvfs_ids)


def open_session(opts: RunOptions, *, trace_dir: Path | None = None,
                 config_hasher: Callable[[dict[str, Any]], str] | None = None,
                 restore_file: Path | None = None) -> Session:
    plan = plan_session(opts)
    prof, settings, path, caps, dvfs_ids = plan.profile, plan.settings, plan.path, plan.caps, plan.dvfs_ids
    s = Session(profile=prof, path=path, backend=None, recorder=None, meter=None, ctx=None,  # type: ignore[arg-type]
                settings=settings, points=[], trace_dir=trace_dir, device=opts.device or prof.bench.device)
    new_out = trace_dir is not None and not trace_dir.exists()
    try:
        _open(s, opts, caps, dvfs_ids, config_hasher, restore_file)
    except BaseException:
        s.close()
        if trace_dir is not None and s.ctx is not None:    # a meter that failed to start (exit 4) made its dir
            _discard_run(trace_dir, (), trace_dir / s.ctx.run_id)
            if new_out:
                with contextlib.suppress(OSError):
                    trace_dir.rmdir()
        raise
    return s


def _open(s: Session, opts: RunOptions, caps: tuple[float, ...], dvfs_ids: tuple[str, ...],
          config_hasher: Callable[[dict[str, Any]], str] | None, restore_file: Path | None) -> None:
    prof = s.profile
    hooks: list[Callable[[str, str], float | None]] = []
    if s.path == "emulated":
        s.ctx = _safe_run_id(RunContext.new(prof.name, f"emulated {prof.platform.title}", "emulated", True))
        raw_dir = None if s.trace_dir is None else s.trace_dir / s.ctx.run_id
        s.backend, meter, s.meter, s.ctx.note, s.set_point, s.idle = _emulated(prof, opts, caps, raw_dir)
    else:
        s.backend = _real_backend(prof, opts)
        ok, why = s.backend.availability()
        if not ok:   # no driver, library or platform: a device missing (4); an --isa it cannot run: bad input (2)
            raise (BenchError if opts.isa else NoUsableDevice)(
                f"backend '{s.backend.name}' {'is not usable' if opts.isa else 'has no usable device'} here: {why}")
        if s.device is not None:   # the device named, once, before any work
            why = s.backend.check_device(s.device) or why
        s.ctx = _safe_run_id(RunContext.new(prof.name, opts.device or prof.bench.device or why, s.backend.name,
                                            s.path == "schedule"))
        from archline.bench.controls import DEFAULT_RESTORE, apply_pending_restore, open_controls

        apply_pending_restore(restore_file or DEFAULT_RESTORE, log=log.info)  # what a crashed run left changed
        if s.path == "time-only":
            meter = NullMeter(prof.detected_note or f"platform '{prof.name}' configures no meter")
            s.meter = MeterInfo("", None, False, meter.reason)
        elif s.path == "schedule":     # real kernels, an emulated meter playing --busy-w/--idle-w
            from archline.bench.emulated.schedule import session_meter

            meter, hook, s.ctx.note, more = session_meter(prof, opts, None if s.trace_dir is None else
                                                          s.trace_dir / s.ctx.run_id)
            hooks.append(hook)
            s.notes += more
            s.meter = MeterInfo(f"{meter.name}:{meter.info().get('type', 'emulated')}",
                                float(getattr(meter, "update_hz", 0.0)) or None, True, s.ctx.note)
        else:
            spec = prof.meter(opts.meter) if opts.meter else prof.meters[0]

            def cannot_open(spec: Any, e: MeterError) -> MeterMissing:
                return MeterMissing(f"meter '{spec.name}' ({spec.kind}) is configured for platform '{prof.name}' "
                                    f"but cannot be opened: {e}")

            s.recorder = open_windows([spec], raw_dir=None if s.trace_dir is None else s.trace_dir / s.ctx.run_id,
                                      cannot_open=cannot_open, settle_timeout_s=SETTLE_TIMEOUT_S, keep_regions=False)
            (meter,) = s.recorder.meters
            s.meter = MeterInfo(f"{spec.name}:{spec.kind}", float(getattr(meter, "update_hz", spec.rate_hz)), False,
                                f"{spec.kind} meter {spec.name}", calibration_of(meter))
        if caps or dvfs_ids:
            ctl = open_controls(prof, caps, dvfs_ids, restore_file=restore_file, log=log.info)
            s.closers.append(ctl.restore)
            s.set_point = ctl.apply_point
    if config_hasher is not None:
        s.ctx.config_hash = config_hasher(prof.platform.raw)
    if s.trace_dir is not None:
        s.trace_dir = inside(s.trace_dir, s.trace_dir / s.ctx.run_id)
    s.points, s.notes = make_points(s.backend, opts, prof, caps or (None,), dvfs_ids or (None,))
    if quick_roofline(opts) and s.backend.has_roofline:   # its own region settings
        s.settings = RunSettings.from_section(prof.bench, quick=True, reps=opts.reps, min_time_s=opts.min_time_s,
                                              max_lost=opts.max_lost, roofline=True)
    s.backend.check_plans([p.spec for p in s.points], s.device)   # before any work
    s.notes += list(s.backend.plan_notes())   # e.g. what the back end made of the topology
    if not s.points:
        raise BenchError(f"nothing to run on '{prof.name}': " + ("; ".join(s.notes) or "no points"))
    fit_sensor_windows(s.settings, s.notes, meter)
    if s.recorder is None:     # (a profile's meter was opened as its recorder above)
        s.recorder = open_windows([meter], settle_timeout_s=SETTLE_TIMEOUT_S, keep_regions=False, hooks=hooks)
    try:
        s.recorder.start()
    except MeterError as e:
        if s.path == "metered":
            raise MeterMissing(f"meter '{s.meter.label.split(':')[0]}' is configured for platform '{prof.name}' "
                               f"but cannot be opened: {e}") from None
        raise
    s.closers.append(s.recorder.stop)


def _safe_run_id(ctx: RunContext) -> RunContext:
    """The run id names ``<out>/<run_id>.csv`` and ``<out>/<run_id>/``; it starts with the profile's name, which
    is data: made one safe file-name component (unchanged when it already is), in the rows too."""
    ctx.run_id = safe_component(ctx.run_id)
    return ctx


@dataclass
class RunOutcome:
    results: Path
    rows: int
    failed: int
    wall_s: float
    session_note: str
    precisions: tuple[str, ...] = ()    #: of the intensity points (what a roofline plot can show)
    n_bad_checksum: int = 0
    files: RunFiles | None = None       #: every file the run may write, named and checked before it measured


def run_once(opts: RunOptions, out: Path, *, stream: TextIO | None = None, tty: bool | None = None,
             restore_file: Path | None = None) -> RunOutcome:
    """``archline bench run``: all points into ``<out>/<run_id>.csv`` (``.partial`` until complete).

    Every file the run may write (:class:`RunFiles`) is checked before the first point. A write error (a full
    disk, exit 7) removes what this run wrote, its ``<run_id>.csv.partial`` (or ``.csv``) and its ``<run_id>/``
    directory of raw captures and traces: rows that name a capture never finished are not kept. SIGTERM or Ctrl-C
    keeps the finished rows in the ``.partial`` file. A run with no row leaves no ``.partial`` and no new folder."""
    t0 = time.monotonic()
    new_out = not out.exists()
    ok = write_error = False
    session = open_session(opts, trace_dir=out, restore_file=restore_file)   # nothing is created before it opens
    precs = tuple(sorted({p.spec.precision for p in session.points if p.spec.kernel == "intensity"}))
    files = RunFiles(out, session.ctx.run_id, precs)
    partial, final, written = files.partial, files.results, 0
    outcome: RunOutcome | None = None
    try:
        files.check()
        results = ResultsFile(partial)
        for n in session.notes:
            log.info(f"note: {n}")
        log.info(f"{session.profile.name}: {len(session.points)} points; {session.describe()}")
        written, failed = session.run_indexed(list(enumerate(session.points)), results, stream=stream, tty=tty)
        if written:
            partial.replace(final)
        else:
            partial.unlink()
        ok = True
        outcome = RunOutcome(final, written, failed, time.monotonic() - t0, session.describe(), precs,
                             session.n_bad_checksum, files)
    except KeyboardInterrupt:      # SIGTERM or Ctrl-C: the finished rows stay, marked partial
        if session.rows_written:
            log.warning(f"interrupted: {session.rows_written} finished row(s) kept in {partial}")
        raise
    except OSError:
        write_error = True
        raise
    finally:
        closing = session.close(quiet=not ok, own_errors=True)
        if write_error or closing is not None:
            _discard_run(out, (partial, final), session.trace_dir)
        elif not session.rows_written:     # whatever ended it (no memory, a bug): a header alone is no result
            with contextlib.suppress(OSError):
                partial.unlink()
        if not session.rows_written and closing is None:   # no row names them: the run's captures go too
            _discard_run(out, (), session.trace_dir)
        if not ok or closing is not None or not written:    # no rows: no empty directories left either
            for d in (session.trace_dir, out if new_out else None):
                if d is not None:
                    with contextlib.suppress(OSError):
                        d.rmdir()
    if closing is not None:    # the run's captures could not be finished: its rows would name missing files
        raise closing
    assert outcome is not None
    return outcome


def _discard_run(out: Path, files: Sequence[Path], run_dir: Path | None) -> None:
    """Remove what a run that hit a write error wrote: its results file and its own ``<run_id>/`` directory
    (raw captures, traces, their temp files), never anything else in ``out``."""
    import shutil

    for f in files:
        with contextlib.suppress(OSError):
            f.unlink()
    if run_dir is not None and run_dir != out and run_dir.is_dir() and not run_dir.is_symlink():
        inside(out, run_dir)
        shutil.rmtree(run_dir, ignore_errors=True)
