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
import math
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archline.bench.errors import BenchError
from archline.bench.measure import result
from archline.common.outputs import make_dirs, safe_component
from archline.common.stamps import utc_compact, utc_iso
from archline.powermon.errors import MeterError
from archline.powermon.marks import Mark, MarksReader, pair_marks
from archline.powermon.monitor import MARKS_ENV, Measurement, Monitor

#: signals passed on to the command
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
#: before the baseline window, let the meter's first samples settle (host seconds)
SETTLE_S = 0.1
#: after a forwarded signal, how long the command may take to exit before its process group is killed (a second
#: signal kills it at once): a command that ignores signals must not keep archline (and its FIFO) alive
GRACE_S = 5.0


@dataclass
class MeasureOptions:
    command: Sequence[str]
    platform: str = "localhost"
    emulate: bool = False
    meter: str | None = None
    out: Path | None = None
    repeat: int = 1
    baseline_s: float = 0.0
    subtract_idle: bool = False
    busy_w: float | None = None          #: emulated device's power inside a phase (default: the model's peak)
    idle_w: float | None = None          #: ... and outside (default: the profile's idle power)
    #: hook for counters (perf stat, likwid-perfctr): given the command, the argv to run instead (the command
    #: wrapped by the collector) and a function that reads the counts once it has exited (a dict, or a reason)
    counters: Callable[[Sequence[str]], tuple[Sequence[str], Callable[[], Any]]] | None = None
    place: Callable[[dict[str, Any]], dict[str, Any]] | None = None  #: hook: the program on its roofline
    #: the command's stdout goes to archline's stderr (``--format json``: stdout holds the report alone)
    child_stdout_to_stderr: bool = False


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


def _devices(spec: Any) -> set[str]:
    """The devices a [[meters]] entry measures (its channels' devices, else its kind's whole device)."""
    from archline.powermon.spec import WHOLE_DEVICE

    got = {c.device for c in spec.channels}
    if not got:
        got = {WHOLE_DEVICE.get(spec.kind) or {"rapl": "cpu", "nvml": "gpu"}.get(spec.kind, spec.kind)}
    return got


def _overlaps(a: set[str], b: set[str]) -> bool:
    """Two meters count the same power: a device in common, or one of them measures the whole node."""
    return bool(a & b) or "node" in a or "node" in b


def _unwrapped(e: MeterError, spec: Any) -> str:
    text = str(e)
    head = f"meter '{spec.name}' ({spec.kind}) of platform "
    return text.split(" cannot be opened: ", 1)[1] if text.startswith(head) and " cannot be opened: " in text \
        else text


def _open(prof: Any, opts: MeasureOptions, run_dir: Path | None) -> tuple[Monitor, list[str]]:
    """The monitor: ``--meter``'s meter; under ``--emulate`` one emulated meter (the emulated device is one power
    schedule: the profile's PowerMon 2, else its first meter with an emulator); else every meter of the profile
    that opens here, in profile order, except one that measures a device a meter before it already measures (the
    energies of a monitor's meters are added: it would be counted twice). A meter that cannot be opened here is
    left out with a warning; none at all is the first one's error."""
    from archline.bench.monitor import open_monitor

    def one(meter: str | None) -> Monitor:
        return open_monitor(prof, emulate=opts.emulate, meter=meter, raw_dir=run_dir, busy_w=opts.busy_w,
                            idle_w=opts.idle_w)

    if opts.emulate or opts.meter is not None or len(prof.meters) <= 1:
        return one(opts.meter), []
    notes: list[str] = []
    meters: list[Any] = []
    taken: list[tuple[str, set[str]]] = []
    first_error: MeterError | None = None
    for spec in prof.meters:
        devs = _devices(spec)
        same = next((n for n, d in taken if _overlaps(d, devs)), None)
        if same is not None:
            notes.append(f"meter '{spec.name}' left out: it measures {', '.join(sorted(devs))} as meter '{same}' "
                         f"does, and the meters' energies are added (--meter {spec.name} measures with it instead)")
            continue
        try:
            with open_monitor(prof, meter=spec.name):    # a serial meter finds out it is missing when started
                pass
            meters += one(spec.name).meters
        except MeterError as e:
            first_error = first_error or e
            notes.append(f"meter '{spec.name}' ({spec.kind}) left out: it cannot be opened here: {_unwrapped(e, spec)}")
            continue
        taken.append((spec.name, devs))
    if not meters:
        assert first_error is not None
        raise first_error
    return Monitor(meters, settle_timeout_s=5.0), notes


@contextlib.contextmanager
def _forwarding(procs: list[subprocess.Popen[bytes]], got: list[int]) -> Iterator[None]:
    """While the command runs, a forwarded signal goes to its process group (and is noted in ``got``). Installed
    before the command starts: a signal in between is passed on as soon as there is a command to pass it to."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def forward(signum: int, frame: Any) -> None:
        got.append(signum)
        for p in procs:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(p.pid, signum)

    old = {s: signal.signal(s, forward) for s in FORWARDED if signal.getsignal(s) is not signal.SIG_IGN}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _group_alive(pgid: int) -> bool:
    """Whether any process is still in the process group ``pgid`` (the leader already reaped)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _wait(proc: subprocess.Popen[bytes], got: list[int], grace_s: float) -> tuple[int, bool]:
    """The leader's exit status, and whether its group had to be killed: after a forwarded signal the command has
    ``grace_s`` to exit (a second signal ends the grace at once), then its whole process group is SIGKILLed."""
    first: float | None = None
    while True:
        try:
            return proc.wait(timeout=0.05), False
        except subprocess.TimeoutExpired:
            pass
        if got and first is None:
            first = time.monotonic()
        if first is not None and (len(got) > 1 or time.monotonic() - first >= grace_s):
            _kill_group(proc.pid)
            return proc.wait(), True


def _spawn(cmd: Sequence[str], marks_path: Path, stdout_to_stderr: bool = False) -> subprocess.Popen[bytes]:
    env = {**os.environ, MARKS_ENV: str(marks_path)}
    if not cmd or not cmd[0]:
        raise BenchError("no command to measure: give it after '--' (archline measure -- ./my_program args)")
    if os.path.isdir(cmd[0]):
        raise BenchError(f"command {cmd[0]!r} is a directory, not a program")
    try:
        return subprocess.Popen(list(cmd), env=env, process_group=0,
                                stdout=2 if stdout_to_stderr else None)   # fd 2: archline's own stderr
    except FileNotFoundError:
        raise BenchError(f"command not found: {cmd[0]!r} (give the program's path or put it on PATH)") from None
    except PermissionError:
        raise BenchError(f"command {cmd[0]!r} cannot be run (permission denied)") from None
    except OSError as e:
        raise BenchError(f"command {cmd[0]!r} cannot be run: {e.strerror}") from None


def _window(m: Measurement, asked: tuple[float, float] | None = None, *, idle: Measurement | None, mon: Monitor,
            sensor: _Sensor | None = None) -> dict[str, Any]:
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
        w["warnings"] = [*w["warnings"], _widened_note(m.name, t1 - t0, m.time_s, sensor)]
    return w


@dataclass(frozen=True)
class _Sensor:
    """The strictest sensor profile among the monitor's meters: its shortest window in host seconds."""
    meter: str
    limits: Any                 #: powermon.record.integrate.SensorLimits
    speed: float                #: device seconds per host second

    @property
    def need_s(self) -> float:
        return float(self.limits.min_window_s) / self.speed


def _sensor_need(mon: Monitor) -> _Sensor | None:
    """A meter held to a sensor profile (``sensor_profile`` in its [[meters]] entry; a calibrated one passes its
    limits through) refuses a window shorter than the sensor allows: the longest such minimum, or None."""
    from archline.powermon.record.integrate import SensorLimits

    best: _Sensor | None = None
    for m in mon.meters:
        lim = getattr(m, "limits", None)
        if not isinstance(lim, SensorLimits):
            continue
        s = _Sensor(m.name, lim, float(getattr(m, "speed", 1.0) or 1.0))
        if best is None or s.need_s > best.need_s:
            best = s
    return best


def _round_up(x: float) -> str:
    return f"{math.ceil(x * 100) / 100:g}"


def _short(t0: float, t1: float, sensor: _Sensor | None) -> bool:
    return sensor is not None and (t1 - t0) < sensor.need_s * (1 - 1e-9)


def _widen(mon: Monitor, t0: float, t1: float, sensor: _Sensor, floor: float) -> tuple[float, float]:
    """The sensor's shortest window about [t0, t1]'s middle (moved later where it would begin before ``floor``),
    waited for until its end has passed, so that the meter has read all of it."""
    need = sensor.need_s * (1 + 1e-6)
    a = max(0.5 * (t0 + t1) - 0.5 * need, floor)
    b = a + need
    wait = b - time.monotonic()
    if wait > 0:
        time.sleep(wait)
    return a, b


def _end_run(mon: Monitor, name: str, t0: float, sensor: _Sensor | None, floor: float
             ) -> tuple[Measurement, tuple[float, float] | None]:
    """The run's window; a run shorter than a profiled sensor's shortest window (known only once the command has
    run) is measured over a window widened to that length about its middle (the measurement the user paid for
    is kept, said so in its warnings), and the asked edges are returned with it."""
    t1 = time.monotonic()
    if sensor is None or not _short(t0, t1, sensor):
        return mon.end_window(name), None
    a, b = _widen(mon, t0, t1, sensor, floor)
    return mon.end_window(name, t0_s=a, t1_s=b), (t0, t1)    # the trace's marks say the widened edges


def _between(mon: Monitor, name: str, t0: float, t1: float, sensor: _Sensor | None, floor: float
             ) -> tuple[Measurement, tuple[float, float] | None]:
    """A phase's window (marked by the command), widened as a run's is when the sensor cannot measure it."""
    if sensor is None or not _short(t0, t1, sensor):
        return mon.window_between(name, t0, t1), None
    a, b = _widen(mon, t0, t1, sensor, floor)
    return mon.window_between(name, a, b), (t0, t1)


def _widened_note(name: str, have_s: float, got_s: float, sensor: _Sensor) -> str:
    return (f"{name}: lasted {have_s:.4g} s, shorter than meter '{sensor.meter}' can measure "
            f"({sensor.limits.why()}); measured over a window widened to {got_s:.4g} s about it (its energy_j, "
            f"mean_power_w and truth include {max(got_s - have_s, 0.0):.4g} s before and after it: with "
            "--baseline-s and --subtract-idle, above_idle_j is its energy above idle); make it last at least "
            f"{_round_up(sensor.need_s)} s to measure it alone")


def measure(opts: MeasureOptions, *, on_monitor: Callable[[Monitor], None] | None = None) -> MeasureOutcome:
    """Measure ``opts.command``; writes ``<out>/<run_id>/measure.json`` (+ trace, raw captures) when ``out``."""
    from archline.bench.config.profile import load_bench_profile

    if not opts.command:
        raise BenchError("no command to measure: give it after '--' (archline measure -- ./my_program args)")
    prof = load_bench_profile(opts.platform)
    name = profile_name(prof)
    run_dir = _run_dir(opts.out, name) if opts.out is not None else None
    try:
        mon, notes = _open(prof, opts, run_dir)
        sensor = _sensor_need(mon)
        if sensor is not None and 0 < opts.baseline_s * sensor.speed < sensor.limits.min_window_s * (1 - 1e-9):
            # archline's own window, known now: refused before the command runs (nothing measured, nothing run)
            raise BenchError(f"--baseline-s {opts.baseline_s:g} is shorter than meter '{sensor.meter}' allows "
                             f"({sensor.limits.why()}): give --baseline-s {_round_up(sensor.need_s)} or more")
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
                           "emulated": mon.emulated,
                           "meter": mon.describe(), "reason": mon.reason or None, "exit_code": None, "signal": None,
                           "anchor": {"monotonic_s": time.monotonic(), "unix_s": time.time(), "utc": utc_iso()},
                           "baseline": None, "idle_power_w": None, "idle_power_err_w": None,
                           "subtract_idle": opts.subtract_idle, "runs": [], "problems": [], "warnings": list(notes),
                           "files": {}}
    status = 0
    done = False
    try:
        with mon:
            idle: Measurement | None = None
            if opts.baseline_s > 0:
                time.sleep(SETTLE_S)
                mon.begin_window("baseline")
                time.sleep(opts.baseline_s)
                idle = mon.end_window("baseline")
                doc["baseline"] = _window(idle, idle=None, mon=mon)
                if idle.has_energy:
                    doc["idle_power_w"], doc["idle_power_err_w"] = idle.mean_power_w, idle.mean_power_err_w
            sub = idle if opts.subtract_idle else None
            # a widened window begins no earlier than the meters' data (the baseline's start, else the first run's)
            # and a run's no earlier than the end of the run before it
            data_from: float | None = idle.t_start_s if idle is not None else None
            floor = data_from
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
                run, asked = _end_run(mon, name, t_begin, sensor, floor)
                floor = run.t_end_s
                phases, problems = pair_marks(reader.take())
                problems += reader.take_malformed()
                w = _window(run, asked, idle=sub, mon=mon, sensor=sensor)
                w["exit_code"] = rc if rc >= 0 else None
                w["signal"] = -rc if rc < 0 else None
                w["interrupted"] = bool(got)
                if counters is not None:
                    w["counters"] = counters
                w["phases"] = [_window(*_between(mon, p if opts.repeat == 1 else f"{name}/{p}", t0, t1, sensor,
                                                 data_from),
                                       idle=sub, mon=mon, sensor=sensor) for p, t0, t1 in phases]
                doc["problems"] += [f"{name}: {p}" for p in problems]
                doc["runs"].append(w)
                doc["exit_code"], doc["signal"] = w["exit_code"], w["signal"]
                status = rc if rc >= 0 else 128 - rc
                if killed:                   # exits as the signal it was sent would have ended it
                    status = 128 + got[0]
                if rc != 0 or got:
                    if opts.repeat > k + 1:
                        doc["problems"].append(f"stopped after {name}: the command "
                                               + (f"exited {rc}" if rc > 0 else "was interrupted"))
                    break
            doc["summary"] = result.summary(doc["runs"])
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
