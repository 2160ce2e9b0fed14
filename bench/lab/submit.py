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
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from archline.bench.errors import BenchError
from archline.bench.lab.labfile import Lab, Machine, toml_table
from archline.bench.lab.status import (
    LabError,
    Submission,
    TaskStatus,
    job_name,
    lab_status,
    read_submissions,
    write_submissions,
)
from archline.bench.lab.task import SWEEP_NAME, run_task
from archline.common.atomic import write_atomic
from archline.common.stamps import utc_iso
from archline.fit.errors import ArchlineFitError

#: the local executor's time limit when the machine names none (submitit's own default is 2 minutes)
LOCAL_TIMEOUT_MIN = 7 * 24 * 60
POLL_S = 1.0


def check_results(lab: Lab) -> None:
    """The shared results directory must exist (or be creatable) and be writable from here."""
    import os

    try:
        lab.results.mkdir(parents=True, exist_ok=True)
        lab.state_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise LabError(f"results directory {lab.results} is not reachable: {e.strerror or e}; [lab] results must "
                       "be a directory every node can write (docs/lab.md)") from None
    if not os.access(lab.results, os.W_OK | os.X_OK):
        raise LabError(f"results directory {lab.results} is not writable by this user")


def check_scheduler(scheduler: str) -> None:
    if scheduler == "slurm" and (shutil.which("sbatch") is None or shutil.which("srun") is None):
        raise LabError("Slurm is not available here (no sbatch/srun on PATH): run `archline lab submit` on a Slurm "
                       "login node, or pass --scheduler local to run the lab's sweeps on this machine")


def prepare(lab: Lab, machines: Sequence[Machine]) -> None:
    """Write each machine's sweep.toml (when it changed) and check it as the sweep will."""
    from archline.bench.config.options import check_applies
    from archline.bench.config.profile import load_bench_profile
    from archline.bench.config.sweep import load_config

    for m in machines:
        path = lab.results / m.name / SWEEP_NAME
        text = f"# written by `archline lab submit {lab.path}`; edit the lab file, not this\n" + \
            toml_table("sweep", {**m.sweep, "out": "."})
        try:
            if not path.exists() or path.read_text() != text:
                write_atomic(path, text)
        except OSError as e:
            raise LabError(f"cannot write {path}: {e.strerror or e}") from None
        try:
            cfg = load_config(path)
            prof = load_bench_profile(cfg.options.platform)
            opts = cfg.options
            route = "emulated" if opts.emulate else "metered" if prof.meters else "time-only"
            backend = "emulated" if opts.emulate else (opts.backend or prof.bench.backend or "")
            check_applies(opts, path=route, backend=backend, platform=prof.name)
        except (BenchError, ArchlineFitError) as e:
            raise LabError(f"{lab.path}: machine '{m.name}': {e}") from None


def _placement_key(m: Machine) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(m.slurm.sbatch().items()))


def _executor(lab: Lab, scheduler: str, m: Machine, n_tasks: int) -> Any:
    import submitit

    folder = lab.state_dir / "logs" / "%j"
    python = lab.python or sys.executable
    if scheduler == "local":
        local = submitit.LocalExecutor(folder=folder, python=python)
        local.update_parameters(timeout_min=LOCAL_TIMEOUT_MIN, **({"setup": list(lab.setup)} if lab.setup else {}))
        return local
    ex = submitit.SlurmExecutor(folder=folder, python=python)
    opts = m.slurm.sbatch()
    extra = {k: opts.pop(k) for k in ("time", "mem") if k in opts}   # Slurm's own spelling, passed through
    params: dict[str, Any] = {"job_name": job_name(lab), "array_parallelism": lab.parallel or max(n_tasks, 1),
                              "time": None, "additional_parameters": extra, **opts}
    if lab.setup:
        params["setup"] = list(lab.setup)
    ex.update_parameters(**params)
    return ex


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
    check_results(lab)
    machines = [lab.machine(n) for n in only] if only else list(lab.machines)
    prepare(lab, machines)
    before = {s.machine: s for s in lab_status(lab)}
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
            subs[m.name] = _record(job, "local")
            write_submissions(lab, subs)
            submitted[m.name] = subs[m.name].job_id
            echo(f"{m.name}: running locally (pid {job.job_id})")
            _wait(lab, [m.name], echo)
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


def _wait(lab: Lab, names: Sequence[str], echo: Callable[[str], None], timeout_s: float | None = None
          ) -> list[TaskStatus]:
    """Block until every task in ``names`` has ended, printing a line whenever one changes."""
    seen: dict[str, tuple[str, int]] = {}
    t0 = time.monotonic()
    while True:
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
