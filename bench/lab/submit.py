"""``archline lab submit``: every machine's sweep as one task, through submitit: a Slurm job array (one task per
machine) or, with the local scheduler, the same tasks on this machine one after another.

* Before anything is submitted, each machine's ``[sweep]`` table is written to ``<results>/<machine>/sweep.toml``
  and checked as the sweep itself will check it (config keys, profile, options that do not apply), so a mistake
  is one line now instead of a failed task later.
* A job array has one set of ``sbatch`` options, so machines are grouped by their Slurm placement: one array
  per distinct placement (a fleet of nodes that share a constraint is one array; machines pinned to different
  nodes are one array each).
* A machine whose task is still queued or running is not submitted again; every other one is (its sweep
  resumes, and does nothing when every point is in).
* Submissions are recorded in ``<results>/.lab/<lab>/submissions.json``, the tasks' stdout/stderr go to
  ``<results>/.lab/<lab>/logs/`` (submitit's folder, which must be on the shared filesystem too).
* A state file it cannot read (damaged, wrong types, a newer archline's) is an error before anything is
  submitted (:mod:`archline.formats.lab_state`).
* With the local scheduler, SIGTERM or Ctrl-C stops the running task (DECISION): submitit's local controller is
  started in its own session, so a terminal's Ctrl-C reaches archline only (the controller would otherwise
  SIGKILL the task one second later, before it records anything); archline then sends the controller SIGTERM,
  which it forwards to the task, whose sweep stops as ``bench sweep`` does (rows kept, emulators stopped, record
  ``failed``, exit 130, ``interrupted``). A task still there after :data:`STOP_GRACE_S` is killed with its
  controller's process group and recorded as interrupted here; archline exits 130.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from archline.bench.errors import BenchError
from archline.bench.lab.status import (
    LabError,
    Submission,
    TaskStatus,
    job_name,
    lab_status,
    read_submissions,
    write_submissions,
)
from archline.bench.lab.task import RECORD_NAME, SWEEP_NAME, read_record, run_task
from archline.common.outputs import make_dirs
from archline.common.stamps import utc_iso
from archline.formats.lab_file import Lab, Machine
from archline.formats.lab_state import LabStateError
from archline.formats.sweep_config import SweepConfigFile
from archline.model.errors import ArchlineFitError

#: the local executor's time limit when the machine names none (submitit's own default is 2 minutes)
LOCAL_TIMEOUT_MIN = 7 * 24 * 60
POLL_S = 1.0
#: how long a local task stopped by SIGTERM may take to record itself before it is killed
STOP_GRACE_S = 20.0


def check_results(lab: Lab) -> None:
    """The shared results directory must exist (or be creatable) and be writable from here."""
    import os

    try:
        make_dirs(lab.results)
        make_dirs(lab.state_dir)
    except OSError as e:
        raise LabError(f"results directory {lab.results} is not reachable: {e.strerror or e}; [lab] results must "
                       "be a directory every node can write (docs/lab.md)") from None
    if not os.access(lab.results, os.W_OK | os.X_OK):
        raise LabError(f"results directory {lab.results} is not writable by this user")


def check_scheduler(scheduler: str) -> None:
    if scheduler == "slurm" and (shutil.which("sbatch") is None or shutil.which("srun") is None):
        raise LabError("Slurm is not available here (no sbatch/srun on PATH): run `archline lab submit` on a Slurm "
                       "login node, or pass --scheduler local to run the lab's sweeps on this machine")


def check_python(lab: Lab, scheduler: str) -> None:
    """With the local scheduler, ``[lab] python`` must be an executable file here (a path) or on PATH (a bare
    name, unless ``setup`` lines may provide it): submitit's controller could not start the task otherwise.
    With Slurm it names the Python on the nodes, which need not exist on this login node."""
    if scheduler != "local" or lab.python is None:
        return
    if "/" not in lab.python and lab.setup:
        return
    if shutil.which(lab.python) is None:
        why = "does not exist" if not os.path.lexists(lab.python) else "is not an executable file"
        where = "" if "/" in lab.python else " on PATH"
        raise LabError(f"{lab.path}: [lab] python {lab.python!r} {why}{where}: the local scheduler could not "
                       "start the tasks; name an executable Python (or leave python out to use this one)")


def prepare(lab: Lab, machines: Sequence[Machine]) -> None:
    """Write each machine's sweep.toml (when it changed) and check it as the sweep will."""
    from archline.bench.config.options import check_applies
    from archline.bench.config.profile import load_bench_profile
    from archline.bench.config.sweep import load_config

    for m in machines:
        path = lab.results / m.name / SWEEP_NAME
        try:
            SweepConfigFile.write(path, {**m.sweep, "out": "."},
                                  comment=f"written by `archline lab submit {lab.path}`; edit the lab file, not this")
        except OSError as e:
            raise LabError(f"cannot write {path}: {e.strerror or e}") from None
        try:
            cfg = load_config(path)
            prof = load_bench_profile(cfg.options.platform)
            opts = cfg.options
            route = "emulated" if opts.emulate else "metered" if prof.meters else "time-only"
            backend = opts.backend or prof.bench.backend or ""   # --emulate's route runs its own back end
            check_applies(opts, path=route, backend=backend, platform=prof.name)
        except (BenchError, ArchlineFitError) as e:
            raise LabError(f"{lab.path}: machine '{m.name}': {e}") from None


def _placement_key(m: Machine) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(m.slurm.sbatch().items()))


def slurm_parameters(lab: Lab, m: Machine, n_tasks: int) -> dict[str, Any]:
    """The parameters of submitit's Slurm executor for ``m``'s array (what becomes the sbatch script's
    ``#SBATCH`` lines). Every value was checked by the lab file's loader (no control characters, Slurm's own
    characters only); submitit quotes each with ``shlex.quote``."""
    opts = m.slurm.sbatch()
    extra = {k: opts.pop(k) for k in ("time", "mem") if k in opts}   # Slurm's own spelling, passed through
    params: dict[str, Any] = {"job_name": job_name(lab), "array_parallelism": lab.parallel or max(n_tasks, 1),
                              "time": None, "additional_parameters": extra, **opts}
    if lab.setup:
        params["setup"] = list(lab.setup)
    return params


def _python(lab: Lab) -> str:
    """The command word that starts Python in the job script: quoted (submitit pastes it in unquoted)."""
    return shlex.quote(lab.python if lab.python is not None else sys.executable)


def _check_slurm_paths(lab: Lab) -> None:
    """Slurm expands ``%`` patterns in the --output/--error paths that submitit builds from the results
    directory: a ``%`` there would send the logs elsewhere."""
    if "%" in str(lab.state_dir):
        raise LabError(f"{lab.path}: [lab] results {str(lab.results)!r} holds '%', which Slurm expands in log "
                       "file names; choose a directory without it")


def _executor(lab: Lab, scheduler: str, m: Machine, n_tasks: int) -> Any:
    import submitit

    folder = lab.state_dir / "logs" / "%j"
    if scheduler == "local":
        local = _new_session_local_executor()(folder=folder, python=_python(lab))
        local.update_parameters(timeout_min=LOCAL_TIMEOUT_MIN, **({"setup": list(lab.setup)} if lab.setup else {}))
        return local
    _check_slurm_paths(lab)
    ex = submitit.SlurmExecutor(folder=folder, python=_python(lab))
    ex.update_parameters(**slurm_parameters(lab, m, n_tasks))
    return ex


def _new_session_local_executor() -> Any:
    """submitit's LocalExecutor whose controller starts in its own session (see the module's DECISION): a
    terminal's Ctrl-C then reaches archline alone, which stops the task in order."""
    import subprocess
    import types

    import submitit
    import submitit.local.local as local_mod

    class NewSessionLocalExecutor(submitit.LocalExecutor):  # type: ignore[misc]
        def _submit_command(self, command: str) -> Any:
            real = local_mod.subprocess
            popen = subprocess.Popen

            def new_session_popen(*args: Any, **kwargs: Any) -> Any:
                return popen(*args, start_new_session=True, **kwargs)

            local_mod.subprocess = types.SimpleNamespace(Popen=new_session_popen)  # type: ignore[assignment]
            try:
                return super()._submit_command(command)
            finally:
                local_mod.subprocess = real

    return NewSessionLocalExecutor


def _stop_local(lab: Lab, m: Machine, job: Any, echo: Callable[[str], None]) -> None:
    """Stop a local task (SIGTERM through its controller, which forwards it), wait for it to record itself,
    kill what is left after :data:`STOP_GRACE_S`, and make sure its record says interrupted."""
    old = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}  # in order
    try:
        pid = int(job.job_id)
        proc = getattr(job, "_process", None)
        echo(f"{m.name}: stopping the task (pid {pid}): finished rows are kept")
        try:
            os.kill(_controller(pid), signal.SIGTERM)
        except ProcessLookupError:
            pass
        killed = False
        try:
            if proc is not None:
                proc.wait(timeout=STOP_GRACE_S)
            else:
                _wait_gone(pid, STOP_GRACE_S)
        except Exception:   # subprocess.TimeoutExpired: the task did not stop in time
            killed = True
            try:
                os.killpg(pid, signal.SIGKILL)      # the controller leads its session: it and its task
            except (ProcessLookupError, PermissionError):
                pass
            if proc is not None:
                proc.wait()
        path = lab.results / m.name / RECORD_NAME
        try:
            rec = read_record(path)
        except LabStateError:
            rec = None
        if rec is not None and rec.job_id == str(pid) and rec.state == "running":
            from archline.bench.run.sweep import EXIT_INTERRUPTED

            rec.state, rec.exit_code, rec.interrupted, rec.ended_at = "failed", EXIT_INTERRUPTED, True, utc_iso()
            rec.message = "interrupted (archline lab submit stopped" + \
                (f"; killed after {STOP_GRACE_S:g} s" if killed else "") + "); finished rows are kept, resubmit " \
                "to resume"
            rec.write(path)
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _controller(pid: int) -> int:
    """The controller's pid: ``pid`` itself, or its child when ``pid`` is the shell that runs the lab's ``setup``
    lines first (a shell killed by SIGTERM would leave the controller and its task running)."""
    marker = "submitit.local._local"
    if marker in _cmdline(pid):
        return pid
    try:
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as f:
                    fields = f.read().decode(errors="replace").rsplit(")", 1)[-1].split()
            except OSError:
                continue
            if len(fields) > 1 and fields[1] == str(pid) and marker in _cmdline(int(entry.name)):
                return int(entry.name)
    except OSError:           # no /proc: signal the process we started
        pass
    return pid


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _wait_gone(pid: int, timeout_s: float) -> None:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    raise TimeoutError(pid)


def _record(job: Any, scheduler: str) -> Submission:
    return Submission(job_id=str(job.job_id), scheduler=scheduler, submitted_at=utc_iso(),
                      stdout=str(job.paths.stdout), stderr=str(job.paths.stderr))


@dataclass
class SubmitReport:
    submitted: dict[str, str]          #: machine -> job id
    skipped: dict[str, str]            #: machine -> why not submitted
    arrays: int
    statuses: list[TaskStatus] | None = None


def submit(lab: Lab, *, scheduler: str | None = None, only: Sequence[str] = (), wait: bool = False,
           echo: Callable[[str], None] = print) -> SubmitReport:
    sched = scheduler or lab.scheduler
    check_scheduler(sched)
    check_python(lab, sched)
    machines = [lab.machine(n) for n in only] if only else list(lab.machines)   # before anything is created
    check_results(lab)
    from archline.bench.run.sweep import SweepLock
    lock = SweepLock(lab.state_dir / "submit.lock", what="lab submit")   # one submit at a time; a second: 75
    lock.acquire()
    try:
        return _submit(lab, sched, machines, wait, echo)
    finally:
        lock.release()


def _submit(lab: Lab, sched: str, machines: list[Machine], wait: bool, echo: Callable[[str], None]) -> SubmitReport:
    try:    # a damaged or newer state file: an error before anything changes
        before = {s.machine: s for s in lab_status(lab)}
    except LabStateError as e:
        raise LabStateError(f"{e}; nothing submitted") from None
    prepare(lab, machines)
    skipped = {m.name: f"still {before[m.name].state} as job {before[m.name].job_id}" for m in machines
               if before[m.name].state in ("queued", "running")}
    todo = [m for m in machines if m.name not in skipped]
    subs = read_submissions(lab)
    submitted: dict[str, str] = {}
    for name, why in skipped.items():
        echo(f"{name}: not submitted: {why}")
    if sched == "local":
        for m in todo:       # one after another: a second sweep would disturb the first one's measurements
            job = _executor(lab, "local", m, 1).submit(run_task, m.name, str(lab.results / m.name))
            try:
                subs[m.name] = _record(job, "local")
                write_submissions(lab, subs)
                submitted[m.name] = subs[m.name].job_id
                echo(f"{m.name}: running locally (pid {job.job_id})")
                _wait(lab, [m.name], echo, poll=_reaper(job))
            except BaseException:      # SIGTERM (KeyboardInterrupt), Ctrl-C, or an error: no orphaned task
                _stop_local(lab, m, job, echo)
                raise
        names = {m.name for m in machines}
        return SubmitReport(submitted, skipped, 0, [s for s in lab_status(lab) if s.machine in names])
    groups: dict[tuple[tuple[str, Any], ...], list[Machine]] = {}
    for m in todo:
        groups.setdefault(_placement_key(m), []).append(m)
    for ms in groups.values():
        ex = _executor(lab, "slurm", ms[0], len(ms))
        try:
            with ex.batch():
                jobs = [ex.submit(run_task, m.name, str(lab.results / m.name)) for m in ms]
        except Exception as e:   # sbatch refused it (bad partition, time limit, ...): its own words
            msg = str(e).strip().splitlines()
            raise LabError(f"sbatch refused the job for {', '.join(m.name for m in ms)}: "
                           f"{msg[-1] if msg else type(e).__name__}") from None
        for m, job in zip(ms, jobs, strict=True):
            subs[m.name] = _record(job, "slurm")
            submitted[m.name] = subs[m.name].job_id
            echo(f"{m.name}: submitted as job {job.job_id}")
        write_submissions(lab, subs)
    report = SubmitReport(submitted, skipped, len(groups))
    if wait and submitted:
        report.statuses = _wait(lab, list(submitted), echo)
    return report


def _reaper(job: Any) -> Callable[[], None]:
    """Collect a local task's controller once it exits (its exit status), so that a controller which ended
    without starting the task (a Python that cannot run) is not left a zombie that looks alive: the task is
    then recorded failed, never waited on forever."""
    proc = getattr(job, "_process", None)

    def poll() -> None:
        if proc is not None:
            proc.poll()

    return poll


def _wait(lab: Lab, names: Sequence[str], echo: Callable[[str], None], timeout_s: float | None = None,
          poll: Callable[[], None] | None = None) -> list[TaskStatus]:
    """Block until every task in ``names`` has ended, printing a line whenever one changes (``poll`` is called
    before each look: a local controller is reaped)."""
    seen: dict[str, tuple[str, int]] = {}
    t0 = time.monotonic()
    while True:
        if poll is not None:
            poll()
        statuses = [s for s in lab_status(lab) if s.machine in names]
        for s in statuses:
            key = (s.state, s.points_done)
            if seen.get(s.machine) != key:
                seen[s.machine] = key
                pts = f" {s.points_done}/{s.points_planned} points" if s.points_planned is not None else ""
                ended = sum(x.state in ("done", "failed", "missing") for x in statuses)
                echo(f"[{ended}/{len(statuses)} ended] {s.machine}: {s.state}{pts}"
                     + (f" ({s.reason})" if s.reason and s.state != "running" else ""))
        if all(s.state in ("done", "failed", "missing") for s in statuses):
            return statuses
        if timeout_s is not None and time.monotonic() - t0 > timeout_s:
            return statuses
        time.sleep(POLL_S)


def wait(lab: Lab, echo: Callable[[str], None] = print, timeout_s: float | None = None) -> list[TaskStatus]:
    return _wait(lab, [m.name for m in lab.machines], echo, timeout_s)


def results_path(lab: Lab, machine: str) -> Path:
    return lab.results / machine
