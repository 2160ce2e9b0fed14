"""Run a command under a platform's meters: ``archline measure [--platform P] [--emulate] -- CMD ARGS...``.

Protocol (S0 §IV-A's idle reading, around the command): an optional idle baseline window first (``baseline_s``),
then ``repeat`` runs of the command, each one window ``run`` (``run-K`` when repeated), and inside it each phase
the command marked through ``$ARCHLINE_MARKS`` (powermon.marks; the Python API does it: ``Monitor.from_env()``).
The idle power can be subtracted from each window (``energy_above_idle_j``, with both bounds added); both numbers
are kept. With ``--emulate`` the platform's emulated device draws its busy power while a phase is open and its idle
power otherwise, so each window also carries the true energy it is compared with.

The command runs in its own process group; SIGINT, SIGTERM and SIGHUP sent to archline are passed to it, the
repetitions stop, the windows so far are reported, and archline exits as the command did: its exit code, or
128 + N when signal N ended it. A command still running GRACE_S after the signal (or at a second one) has its
process group killed, and archline exits 128 + the signal it got; processes left in the group when the command
exits are noted in ``problems`` (and killed when it was interrupted). Hooks left for the coordinator: ``counters``
(given the command, the argv that runs it under a counter collector such as ``perf stat -x,`` or
``likwid-perfctr``, and a function that reads the counts after it exited: they go into the run as ``counters``)
and ``place`` (given the finished document, e.g. the program placed on a cost table's roofline: it goes in
as ``placement``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archline.bench.errors import BenchError
from archline.bench.measure import schedule
from archline.bench.measure.meters import open_meters
from archline.bench.measure.options import MeasureOptions
from archline.bench.measure.process import (
    GRACE_S,
    STOP_PHASES_S,
    _forwarding,
    _group_alive,
    _kill_group,
    _noting,
    _spawn,
    _wait,
    phases_of_run,
)
from archline.common.outputs import make_dirs, safe_component
from archline.common.stamps import utc_compact, utc_iso
from archline.formats import measure_result as result
from archline.powermon.errors import DeviceError, MeterError
from archline.powermon.marks import Mark, MarksReader
from archline.powermon.monitor import Monitor, open_windows
from archline.powermon.record.windows import Measurement
from archline.powermon.sensor.windows import Sensor, between, end_run, round_up, strictest_sensor, widened_note

__all__ = ["GRACE_S", "MeasureOptions", "MeasureOutcome", "_wait", "measure", "profile_name"]
#: before the baseline window, let the meter's first samples settle (host seconds)
SETTLE_S = 0.1


@dataclass
class MeasureOutcome:
    doc: dict[str, Any]
    exit_status: int                      #: what archline exits with: the command's code, or 128 + signal
    result_path: Path | None = None
    problems: list[str] = field(default_factory=list)


def _run_dir(out: Path, name: str) -> Path:
    """A new directory under ``out`` for this measurement (never an existing one: -2, -3 ... on a clash)."""
    make_dirs(out)
    base = safe_component(f"measure-{name}-{utc_compact()}")
    for k in range(1, 1000):
        d = out / (base if k == 1 else f"{base}-{k}")
        try:
            d.mkdir()
            return d
        except FileExistsError:
            continue
    raise BenchError(f"{out}: too many measurements named {base}; use another --out")


def profile_name(prof: Any) -> str:
    """The profile's own name (its ``name`` field), else its file's stem: what names the output and ``platform``."""
    return str(prof.name or Path(prof.platform.origin).stem)


def _is_path(platform: str) -> bool:
    return "/" in platform or platform.endswith((".toml", ".json"))


def _window(m: Measurement, asked: tuple[float, float] | None = None, *, idle: Measurement | None, mon: Monitor,
            sensor: Sensor | None = None) -> dict[str, Any]:
    w = m.as_dict()
    if idle is not None and idle.has_energy and m.has_energy:
        d = m.duration_s
        w["energy_above_idle_j"] = m.energy_j - idle.mean_power_w * d
        w["energy_above_idle_err_j"] = m.energy_err_j + idle.mean_power_err_w * d
    power = getattr(mon, "power", None)
    if power is not None:             # an emulated device: what it really drew (the truth to compare with)
        w["truth_energy_j"] = power.energy_j(m.t_start_s, m.t_end_s)
    if asked is not None and sensor is not None:    # measured over a widened window (see _end_run)
        t0, t1 = asked
        w["widened_from"] = {"t_start_s": t0, "t_end_s": t1, "time_s": t1 - t0}
        w["warnings"] = [*w["warnings"], widened_note(m.name, t1 - t0, m.time_s, sensor)]
    return w


def measure(opts: MeasureOptions, *, on_monitor: Callable[[Monitor], None] | None = None) -> MeasureOutcome:
    """Measure ``opts.command``; writes ``<out>/<run_id>/measure.json`` (+ trace, raw captures) when ``out``."""
    from archline.bench.config.profile import load_bench_profile

    if not opts.command:
        raise BenchError("no command to measure: give it after '--' (archline measure -- ./my_program args)")
    prof = load_bench_profile(opts.platform)
    scheduled = schedule.needs_schedule(prof, opts.emulate)
    if scheduled:          # no device to emulate: the busy/idle schedule x measured time (bench/measure/schedule)
        schedule.check(prof, opts.busy_w, opts.idle_w, opts.meter)
    busy_w, idle_w = opts.busy_w or 0.0, opts.idle_w or 0.0      # (the schedule's; checked given when used)
    name = profile_name(prof)
    run_dir = _run_dir(opts.out, name) if opts.out is not None else None
    try:
        if scheduled:
            mon, notes = open_windows(reason=schedule.NOTE), []
        else:
            mon, notes = open_meters(prof, opts, run_dir)
        sensor = strictest_sensor(mon.meters)
        if sensor is not None and 0 < opts.baseline_s * sensor.speed < sensor.limits.min_window_s * (1 - 1e-9):
            # archline's own window, known now: refused before the command runs (nothing measured, nothing run)
            raise BenchError(f"--baseline-s {opts.baseline_s:g} is shorter than meter '{sensor.meter}' allows "
                             f"({sensor.limits.why()}): give --baseline-s {round_up(sensor.need_s)} or more")
    except BaseException:
        if run_dir is not None:
            shutil.rmtree(run_dir, ignore_errors=True)
        raise
    on_mark: Callable[[Mark], float | None] | None = None
    power = getattr(mon, "power", None)
    if power is not None:          # emulated: the child's phase marks, not archline's windows, drive the device
        mon.hooks.clear()
        on_mark = lambda mk: power.edge(mk.kind, mk.name)  # noqa: E731
    if on_monitor is not None:
        on_monitor(mon)
    reader = MarksReader(on_mark)
    doc: dict[str, Any] = {"command": list(opts.command), "platform": name,
                           "platform_path": prof.platform.origin if _is_path(opts.platform) else None,
                           "emulated": mon.emulated or scheduled,
                           "meter": schedule.describe(busy_w, idle_w) if scheduled else mon.describe(),
                           "reason": None if scheduled else mon.reason or None, "exit_code": None, "signal": None,
                           "anchor": {"monotonic_s": time.monotonic(), "unix_s": time.time(), "utc": utc_iso()},
                           "baseline": None, "idle_power_w": None, "idle_power_err_w": None,
                           "subtract_idle": opts.subtract_idle, "runs": [], "problems": [], "warnings": list(notes),
                           "files": {}}
    status = 0
    done = False
    try:
        with contextlib.ExitStack() as stack:   # (a stop signal noted once the command exits: _noting)
            with mon:
                idle: Measurement | None = None
                if opts.baseline_s > 0:
                    time.sleep(SETTLE_S)
                    mon.begin_window("baseline")
                    time.sleep(opts.baseline_s)
                    idle = mon.end_window("baseline")
                    doc["baseline"] = _window(idle, idle=None, mon=mon)
                    if scheduled:
                        schedule.fill(doc["baseline"], idle_w, None)
                        doc["idle_power_w"], doc["idle_power_err_w"] = idle_w, 0.0
                    if idle.has_energy:
                        doc["idle_power_w"], doc["idle_power_err_w"] = idle.mean_power_w, idle.mean_power_err_w
                sub = idle if opts.subtract_idle else None
                # a widened window begins no earlier than the meters' data (the baseline's start, else the first run's)
                # and a run's no earlier than the end of the run before it
                data_from: float | None = idle.t_start_s if idle is not None else None
                floor = data_from
                late: list[int] = []        # a stop signal once the command had exited (see process._noting)
                stack.enter_context(_noting(late))
                for k in range(opts.repeat):
                    name = "run" if opts.repeat == 1 else f"run-{k + 1}"
                    got: list[int] = []
                    t_begin = mon.begin_window(name)
                    data_from = t_begin if data_from is None else data_from
                    floor = t_begin if floor is None else floor
                    procs: list[subprocess.Popen[bytes]] = []
                    argv, read_counters = (opts.command, None) if opts.counters is None else opts.counters(opts.command)
                    with _forwarding(procs, got):
                        procs.append(_spawn(argv, reader.path, opts.child_stdout_to_stderr))
                        for sig in got:               # arrived while it was starting
                            with contextlib.suppress(ProcessLookupError, PermissionError):
                                os.killpg(procs[0].pid, sig)
                        rc, killed = _wait(procs[0], got, GRACE_S)
                    stop_at = time.monotonic() + STOP_PHASES_S if got else None
                    pgid = procs[0].pid
                    if not killed and _group_alive(pgid):     # the leader is gone, some of its children are not
                        if got:
                            _kill_group(pgid)
                            doc["problems"].append(f"{name}: processes left in the command's process group were "
                                                   "killed (it was interrupted)")
                        else:
                            doc["problems"].append(f"{name}: processes were still running in the command's process "
                                                   f"group {pgid} when it exited (left running, not measured)")
                    if killed:
                        doc["problems"].append(f"{name}: the command did not exit after the signal; its process "
                                               "group was killed (SIGKILL)")
                    if power is not None:        # the emulated device goes idle at the end of each run
                        power.idle()
                    counters = read_counters() if read_counters is not None else None
                    run, asked = end_run(mon, name, t_begin, sensor, floor)
                    floor = run.t_end_s
                    phases, problems = phases_of_run(reader.take(), run.t_start_s, run.t_end_s)
                    problems += reader.take_malformed()
                    w = _window(run, asked, idle=sub, mon=mon, sensor=sensor)
                    above = idle_w if scheduled and opts.subtract_idle else None
                    if scheduled:
                        schedule.fill(w, busy_w, above)
                    w["exit_code"] = rc if rc >= 0 else None
                    w["signal"] = -rc if rc < 0 else None
                    w["interrupted"] = bool(got)
                    if counters is not None:
                        w["counters"] = counters
                    w["phases"] = []
                    for j, (p, t0, t1) in enumerate(phases):  # a phase that cannot be measured is said, never lost
                        if late and stop_at is None:
                            stop_at = time.monotonic()
                        if stop_at is not None and time.monotonic() >= stop_at:
                            problems.append(f"interrupted: {len(phases) - j} of {len(phases)} phase(s) not measured "
                                            f"(from {p!r} on)")
                            break
                        try:
                            w["phases"].append(_window(*between(mon, p if opts.repeat == 1 else f"{name}/{p}", t0,
                                                                 t1, sensor, data_from),
                                                       idle=sub, mon=mon, sensor=sensor))
                        except DeviceError:         # the meter itself failed: its own exit code, as for the run
                            raise
                        except MeterError as e:
                            problems.append(f"phase {p!r} not measured: {e}")
                    if scheduled:
                        w["phases"] = [schedule.fill(p, busy_w, above) for p in w["phases"]]
                    doc["problems"] += [f"{name}: {p}" for p in problems]
                    doc["runs"].append(w)
                    doc["exit_code"], doc["signal"] = w["exit_code"], w["signal"]
                    status = rc if rc >= 0 else 128 - rc
                    if killed:                   # exits as the signal it was sent would have ended it
                        status = 128 + got[0]
                    if late:                     # stopped after the command exited: the signal's code, report kept
                        status = 128 + late[0]
                        doc["problems"].append(f"{name}: archline was interrupted after the command exited; the report "
                                               "holds what was measured until then")
                    if rc != 0 or got or late:
                        if opts.repeat > k + 1:
                            doc["problems"].append(f"stopped after {name}: the command "
                                                   + (f"exited {rc}" if rc > 0 else "was interrupted"))
                        break
                doc["summary"] = result.summary(doc["runs"])
                if scheduled:
                    doc["energy_source"] = schedule.NOTE
                if opts.place is not None:
                    doc["placement"] = opts.place(doc)
                if run_dir is not None and not mon.reason:      # the null meter has no trace to keep
                    doc["files"]["traces"] = [p.name for p in mon.write_traces(run_dir, "csv.gz")]
            path = None
            if run_dir is not None:
                doc["files"]["raw"] = sorted(p.name for p in run_dir.glob("*.raw*"))
                path = run_dir / result.FILE_NAME
                doc["files"]["result"] = str(path)
                result.write(doc, path)
            done = True
    finally:
        reader.close()
        if not done and run_dir is not None:     # no result: nothing half-written stays (the directory is ours)
            shutil.rmtree(run_dir, ignore_errors=True)
    return MeasureOutcome(doc, status, path, doc["problems"])
