"""One measuring session: a profile, a back end, a meter, the controls and the points, ready to run.

Shared by ``archline bench run`` (:func:`run_once`) and ``archline bench sweep`` (:mod:`archline.bench.sweep`).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from archline.bench.errors import BenchError
from archline.bench.kernels import Backend
from archline.bench.profile_sections import BenchProfile, MeterSpec, ProfileSectionError, load_bench_profile
from archline.bench.runner import (
    Point,
    Progress,
    RunContext,
    Runner,
    RunSettings,
    append_row,
    default_points,
    ensure_header,
)
from archline.bench.runner_meters import RunnerMeter, ScheduleMeter, TimeOnlyMeter

#: the emulated PowerMon 2's stream over the pty, records per host second, that the decoder keeps up with
MAX_EMULATED_RECORDS_PER_S = 60_000


class MeterMissing(BenchError):
    """A meter the profile configures is not there (or not permitted)."""

    exit_code = 4


@dataclass
class Session:
    profile: BenchProfile
    backend: Backend
    meter: RunnerMeter
    ctx: RunContext
    settings: RunSettings
    points: list[Point]
    notes: list[str] = field(default_factory=list)
    set_point: Callable[[Point], dict[str, Any]] | None = None
    idle: Callable[[float], None] | None = None
    trace_dir: Path | None = None
    closers: list[Callable[[], None]] = field(default_factory=list)
    emulated: bool = False

    def describe(self) -> str:
        energy = f"meter {self.meter.name} at {self.meter.sample_hz:g} Hz" if self.meter.sample_hz else \
            f"time only ({self.meter.reason})"
        emu = "emulated, " if self.emulated else ""
        return f"{emu}backend {self.backend.name}, {energy}"

    def runner(self) -> Runner:
        return Runner(self.backend, self.meter, self.ctx, self.settings, trace_dir=self.trace_dir,
                      idle=self.idle, set_point=self.set_point)

    def run_indexed(self, todo: Sequence[tuple[int, Point]], results: Path, *, stream: TextIO | None = None,
                    tty: bool | None = None, log: Callable[[str], None] | None = None) -> tuple[int, int]:
        """Measure ``todo`` (index, point), appending each row to ``results``; (written, failed)."""
        from archline.powermon.errors import MeterError

        runner = self.runner()
        progress = Progress(len(todo), stream or sys.stderr, tty=tty, log=log)
        written = failed = 0
        try:
            for i, p in todo:
                try:
                    row = runner.measure(p, i, progress)
                except (BenchError, MeterError) as e:
                    failed += 1
                    progress.message(f"point {p.point_id} failed: {e}")
                    continue
                append_row(results, row)
                written += 1
                progress.point_done(p.point_id, row)
        finally:
            progress.close()
        return written, failed

    def close(self) -> None:
        for c in reversed(self.closers):
            try:
                c()
            except Exception:  # closing must not hide the run's own outcome
                pass
        self.closers.clear()


def _emulated_meter(backend: Any, spec: MeterSpec | None, seed: int,
                    log: Callable[[str], None] | None) -> tuple[RunnerMeter, list[Callable[[], None]], str]:
    """The PowerMon 2 emulator on a pty driven by the real driver and recorder; the schedule meter only if the
    powermon package cannot provide that (said in every row)."""
    device = backend.device
    try:
        from archline.bench.runner_powermon import open_emulated_powermon
    except ImportError as e:  # pragma: no cover - powermon's recorder not installed
        reason = f"PowerMon 2 emulator unavailable ({e}); power read from the model schedule"
        return ScheduleMeter(device.power_w_array, time_compression=device.time_compression), [], reason
    meter, closer = open_emulated_powermon(device, backend.meter, seed=seed)
    return meter, [closer], ""


def _real_meter(prof: BenchProfile, name: str | None,
                raw_dir: Path | None = None) -> tuple[RunnerMeter, list[Callable[[], None]]]:
    if not prof.meters:
        reason = prof.detected_note or f"platform '{prof.name}' configures no meter"
        return TimeOnlyMeter(reason), []
    spec = prof.meter(name) if name else prof.meters[0]
    try:
        from archline.bench.runner_powermon import open_real_meter
    except ImportError as e:
        raise MeterMissing(f"meter '{spec.name}' ({spec.kind}) is configured but the powermon package cannot "
                           f"open it: {e}") from None
    from archline.powermon.errors import MeterError

    try:
        meter, closer = open_real_meter(spec, raw_dir=raw_dir)
    except MeterError as e:
        raise MeterMissing(f"meter '{spec.name}' ({spec.kind}) is configured for platform '{prof.name}' but "
                           f"cannot be opened: {e}") from None
    return meter, [closer]


def open_session(platform: str, *, emulate: bool = False, backend: str | None = None,
                 kernels: Sequence[str] | None = None, precisions: Sequence[str] | None = None,
                 quick: bool = False, power_caps_w: Sequence[float] | None = None,
                 dvfs_settings: Sequence[str] | None = None, time_compression: float | None = None,
                 seed: int = 0, meter: str | None = None, trace_dir: Path | None = None,
                 config_hasher: Callable[[dict[str, Any]], str] | None = None,
                 log: Callable[[str], None] | None = None, device: str | None = None,
                 restore_file: Path | None = None) -> Session:
    prof = load_bench_profile(platform)
    settings = RunSettings.from_section(prof.bench, quick=quick, kernels=kernels, precisions=precisions)
    caps: tuple[float, ...] = tuple(prof.bench.power_caps_w if power_caps_w is None else power_caps_w)
    dvfs_ids = tuple(prof.bench.dvfs_settings if dvfs_settings is None else dvfs_settings)
    for sid in dvfs_ids:
        prof.dvfs_setting(sid)
    closers: list[Callable[[], None]] = []
    set_point: Callable[[Point], dict[str, Any]] | None = None
    idle: Callable[[float], None] | None = None
    note = ""
    if emulate:
        from archline.bench.emulated import EmulatedBackend

        if backend not in (None, "emulated"):
            raise ProfileSectionError(f"--emulate runs the emulated back end, not '{backend}'")
        if dvfs_ids:
            raise ProfileSectionError("DVFS settings are not modelled by the emulated device (use power caps)")
        be = EmulatedBackend(prof, time_compression=time_compression, seed=seed,
                             meter=prof.meter(meter) if meter else None)
        for c in caps:
            be.model.with_cap(c)  # raises with the allowed range
        rec_per_s = be.meter.rate_hz * len(be.meter.channels) * be.device.time_compression
        if rec_per_s > MAX_EMULATED_RECORDS_PER_S:
            from archline.bench.emulated import EmulationError

            raise EmulationError(
                f"time compression {be.device.time_compression:g}x would stream {rec_per_s:.0f} PowerMon records "
                f"per second over the pty (limit {MAX_EMULATED_RECORDS_PER_S}); lower --time-compression to "
                f"{MAX_EMULATED_RECORDS_PER_S / (be.meter.rate_hz * len(be.meter.channels)):.0f} or less")
        rmeter, cl, why = _emulated_meter(be, be.meter, seed, log)
        closers += cl
        note = "; ".join(x for x in (f"emulated {prof.name}: time compression {be.device.time_compression:g}x, "
                                     f"idle {be.model.idle_w:g} W ({be.model.idle_source})", why) if x)

        def emu_set_point(p: Point) -> dict[str, Any]:
            be.device.set_cap(p.power_cap_w)
            return {"power_cap_w": p.power_cap_w, "power_cap_requested_w": p.power_cap_w}

        set_point, idle = emu_set_point, be.device.idle
        backend_obj: Backend = be
        dev_name = f"emulated {prof.platform.title}"
        backend_name = "emulated"
    else:
        from archline.bench.registry import get_backend

        bname = backend or prof.bench.backend
        if bname is None:
            raise ProfileSectionError(f"platform '{prof.name}' names no [bench] backend; pass --backend")
        backend_obj = get_backend(bname)
        ok, why = backend_obj.availability()
        if not ok:
            raise BenchError(f"backend '{bname}' is not usable here: {why}")
        from archline.bench.controls import DEFAULT_RESTORE, apply_pending_restore

        apply_pending_restore(restore_file or DEFAULT_RESTORE, log=log)  # what a crashed run left changed
        # the raw meter captures go next to the traces: <trace_dir>/<run_id>/powermon-NNNN.raw (+ .json)
        pending_ctx = RunContext.new(prof.name, device or prof.bench.device or why, backend_obj.name, False)
        raw_dir = None if trace_dir is None else trace_dir / pending_ctx.run_id
        rmeter, cl = _real_meter(prof, meter, raw_dir)
        closers += cl
        if caps or dvfs_ids:
            from archline.bench.controls import open_controls

            ctl = open_controls(prof, caps, dvfs_ids, restore_file=restore_file, log=log)
            closers.append(ctl.restore)
            set_point = ctl.apply_point
        dev_name = device or prof.bench.device or why
        backend_name = backend_obj.name
    ctx = RunContext.new(prof.name, dev_name, backend_name, emulate, note=note)
    if not emulate:
        ctx.run_id, ctx.started_at = pending_ctx.run_id, pending_ctx.started_at
    if config_hasher is not None:
        ctx.config_hash = config_hasher(prof.platform.raw)
    if trace_dir is not None:
        trace_dir = trace_dir / ctx.run_id
    points, notes = default_points(backend_obj, settings, prof, power_caps_w=caps or (None,),
                                   dvfs_ids=dvfs_ids or (None,))
    if not points:
        raise BenchError(f"nothing to run on '{prof.name}': " + ("; ".join(notes) or "no points"))
    return Session(profile=prof, backend=backend_obj, meter=rmeter, ctx=ctx, settings=settings, points=points,
                   notes=notes, set_point=set_point, idle=idle, trace_dir=trace_dir, closers=closers,
                   emulated=emulate)


@dataclass
class RunOutcome:
    results: Path
    rows: int
    failed: int
    wall_s: float
    session_note: str


def run_once(platform: str, out: Path, *, stream: TextIO | None = None, tty: bool | None = None,
             **kw: Any) -> RunOutcome:
    """``archline bench run``: all points into ``<out>/<run_id>.csv`` (``.partial`` until complete)."""
    t0 = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    session = open_session(platform, trace_dir=out, **kw)
    try:
        partial = out / f"{session.ctx.run_id}.csv.partial"
        ensure_header(partial)
        stream = stream or sys.stderr
        for n in session.notes:
            stream.write(f"note: {n}\n")
        stream.write(f"{session.profile.name}: {len(session.points)} points; {session.describe()}\n")
        written, failed = session.run_indexed(list(enumerate(session.points)), partial, stream=stream, tty=tty)
        final = out / f"{session.ctx.run_id}.csv"
        if written:
            partial.replace(final)
        else:
            partial.unlink()
        note = session.meter.reason if session.meter.sample_hz is None else session.describe()
        return RunOutcome(final, written, failed, time.monotonic() - t0, note)
    finally:
        session.close()
