"""``archline lab status``: each machine's task is queued, running, done, failed (with its reason) or missing.

Where the states come from (DECISION): the scheduler's queue (``squeue``: queued and running) and the results
themselves (each task's record ``task.json`` beside its rows, and the rows: points done of points planned). Not
``sacct``: accounting needs ``slurmdbd`` and a database, which many clusters restrict and the test cluster does
not run (submitit, which reads ``sacct``, then reports every state as UNKNOWN). A task that left the queue is
done or failed by its own record, which also carries the sweep's message; one that left the queue while its
record still said running was killed (SIGKILL, ``scancel``, the time limit or a node failure).
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from archline.bench.errors import BenchError
from archline.bench.lab.task import RECORD_NAME, TaskRecord, read_record
from archline.bench.run.sweep import RESULTS_NAME, done_points
from archline.formats.lab_file import Lab
from archline.formats.lab_state import LabStateError, Submission, Submissions

log = logging.getLogger("archline.bench")

SUBMISSIONS_NAME = "submissions.json"
STATES = ("queued", "running", "done", "failed", "missing", "unknown")   # unknown: Slurm not reachable here,
#                                                                         or a state file unreadable
EXIT_MEANING = {2: "bad sweep config or profile", 3: "some points failed", 4: "a meter or device is missing",
                5: "stopped after max_points", 130: "interrupted (SIGTERM/SIGINT)", 1: "internal error"}


class LabError(BenchError):
    exit_code = 2


__all__ = ["LabError", "LabStateError", "Submission", "TaskStatus", "lab_status", "read_submissions",
           "write_submissions"]


def submissions_path(lab: Lab) -> Path:
    return lab.state_dir / SUBMISSIONS_NAME


def read_submissions(lab: Lab) -> dict[str, Submission]:
    """Machine -> its last submission; a damaged file, one with wrong types or from a newer archline is a
    :class:`LabStateError` (``lab submit`` refuses to write over it)."""
    return dict(Submissions.read(submissions_path(lab), lab.name).machines)


def write_submissions(lab: Lab, subs: dict[str, Submission]) -> Path:
    return Submissions(lab=lab.name, machines=dict(sorted(subs.items()))).write(submissions_path(lab))


def squeue(job_name: str) -> dict[str, tuple[str, str, str]] | None:
    """job id -> (state, reason, node) of this lab's jobs still in the queue; None when Slurm is not here."""
    if shutil.which("squeue") is None:
        return None
    cmd = ["squeue", "--noheader", "--array", f"--name={job_name}", "--format=%i|%T|%r|%N"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise LabError(f"squeue did not answer: {e}") from None
    if out.returncode != 0:
        lines = [ln for ln in out.stderr.strip().splitlines() if ln.strip()]
        raise LabError(f"squeue failed: {lines[-1] if lines else out.returncode}")
    jobs = {}
    for line in out.stdout.splitlines():
        parts = line.strip().split("|")
        if len(parts) == 4:
            jobs[parts[0]] = (parts[1], parts[2], parts[3])
    return jobs


def job_name(lab: Lab) -> str:
    return f"archline-{lab.name}"


def _alive(pid: int) -> bool:
    """The process exists and has not ended: a zombie (ended, not yet collected by its parent) is not alive."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[-1].split()[:1]
    except OSError:          # no /proc: trust the signal test
        return True
    return state != [b"Z"]


def _tail(path: str, n: int = 1) -> str:
    try:
        lines = [ln for ln in Path(path).read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return " | ".join(lines[-n:])


@dataclass
class TaskStatus:
    machine: str
    state: str
    reason: str = ""
    job_id: str = ""
    node: str = ""
    points_done: int = 0
    points_planned: int | None = None
    exit_code: int | None = None
    failed_points: int = 0           #: points whose measurement failed in the task's last run
    log: str = ""
    missing_points: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def _points(lab: Lab, machine: str, rec: TaskRecord | None) -> tuple[int, int | None, list[str]]:
    if rec is None or not rec.config_hash:
        return 0, None, []
    done = done_points(lab.results / machine / RESULTS_NAME, rec.config_hash)
    missing = [p for p in rec.point_ids if p not in done]
    return len(done & set(rec.point_ids)), len(rec.point_ids), missing


def machine_status(lab: Lab, machine: str, sub: Submission | None, queue: dict[str, tuple[str, str, str]] | None,
                   queue_error: str = "") -> TaskStatus:
    """A task record that cannot be read (damaged, a wrong type, from a newer archline) is a LabStateError: one
    line naming the file (exit 2), never a state guessed from it."""
    d = lab.results / machine
    rec = read_record(d / RECORD_NAME)
    done, planned, missing = _points(lab, machine, rec)
    st = TaskStatus(machine, "missing", points_done=done, points_planned=planned, missing_points=missing,
                    log=str(d / "sweep.log"))
    if sub is not None:
        st.job_id = sub.job_id
        st.log = sub.stderr or st.log
    if sub is None and rec is None:
        st.reason = "never submitted (no task record under the results directory)"
        return st
    ended = rec is not None and rec.state in ("done", "failed") and (sub is None or rec.job_id == sub.job_id)
    # still with the scheduler?
    if sub is not None and not ended:
        if sub.scheduler == "slurm" and queue is not None and sub.job_id in queue:
            state, why, node = queue[sub.job_id]
            st.node = node
            if state in ("PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED"):
                st.state, st.reason = "queued", f"{state.lower()} ({why})" if why not in ("", "None") else ""
            else:
                st.state = "running"
                st.reason = state.lower() if state not in ("RUNNING", "COMPLETING") else ""
            return st
        if sub.scheduler == "local" and sub.job_id.isdigit() and _alive(int(sub.job_id)) and \
                (rec is None or rec.job_id != sub.job_id or rec.state == "running"):
            st.state = "running"
            st.node = rec.node if rec is not None else ""
            return st
    if rec is None or (sub is not None and rec.job_id != sub.job_id):
        if sub is not None and sub.scheduler == "slurm" and queue is None:
            st.state = "unknown"
            st.reason = f"Slurm is not reachable from here ({queue_error or 'no squeue'}); the task has no record yet"
            return st
        st.state = "failed"
        last = _tail(sub.stderr) if sub is not None else ""
        st.reason = "ended before its sweep started" + (f": {last}" if last else "") + \
            (f"; see {sub.stderr}" if sub is not None and sub.stderr else "")
        return st
    st.node, st.exit_code, st.failed_points = rec.node, rec.exit_code, rec.failed
    if rec.state == "running":
        if sub is not None and sub.scheduler == "slurm" and queue is None:
            st.state = "unknown"
            st.reason = f"Slurm is not reachable from here ({queue_error or 'no squeue'}); the record says running"
            return st
        if sub is None and _alive(rec.pid):
            st.state = "running"
            return st
        st.state = "failed"
        st.reason = (f"killed while running (SIGKILL, scancel, the time limit or a node failure): the task record "
                     f"still says running; {done} of {planned} points are in; resubmit to resume")
        return st
    st.state = rec.state
    if rec.state == "failed":
        meaning = EXIT_MEANING.get(rec.exit_code or 0, "")
        st.reason = f"exit {rec.exit_code}" + (f" ({meaning})" if meaning else "") + f": {rec.message}"
    return st


def lab_status(lab: Lab) -> list[TaskStatus]:
    """Every machine's state. A state file that cannot be read is a :class:`LabStateError` (one line, exit 2)."""
    _check_reachable(lab)
    subs = read_submissions(lab)
    uses_slurm = any(s.scheduler == "slurm" for s in subs.values())
    queue: dict[str, tuple[str, str, str]] | None = {}
    error = ""
    if uses_slurm:
        try:
            queue = squeue(job_name(lab))
        except LabError as e:
            queue, error = None, str(e)
    return [machine_status(lab, m.name, subs.get(m.name), queue, error) for m in lab.machines]


def _check_reachable(lab: Lab) -> None:
    """A results directory that does not exist yet is fine (nothing submitted); one that is a file, or lies under
    one, or cannot be read is an error: its tasks' states cannot be known from here."""
    import stat as stat_

    try:
        st = os.stat(lab.results)
    except FileNotFoundError:
        return
    except OSError as e:
        raise LabError(f"results directory {lab.results} is not reachable: {e.strerror or e}") from None
    if not stat_.S_ISDIR(st.st_mode):
        raise LabError(f"results directory {lab.results} is not reachable: it is not a directory")


def status_table(statuses: list[TaskStatus]) -> tuple[list[str], list[list[str]]]:
    head = ["machine", "state", "job", "node", "points", "reason"]
    rows = []
    for s in statuses:
        pts = f"{s.points_done}/{s.points_planned}" if s.points_planned is not None else "-"
        rows.append([s.machine, s.state, s.job_id or "-", s.node or "-", pts, s.reason])
    return head, rows
