"""One lab task, on its node: the machine's locked, resumable sweep (exactly what cron runs, ``archline bench
sweep <results>/<machine>/sweep.toml``), with a task record beside its results that ``lab status`` and ``lab
collect`` read::

    <results>/<machine>/sweep.toml    the [sweep] table the lab wrote for this machine
    <results>/<machine>/results.csv   the sweep's rows (archline.results/1)
    <results>/<machine>/sweep.log     the sweep's log
    <results>/<machine>/task.json     this task's record: running (job, node, pid, planned points), then done
                                      or failed with the sweep's exit code and message

The record is written (atomically) only by the task holding the sweep's lock: a second task of the same machine
exits at once (the sweep's exit 75) and leaves the first one's record alone.
"""

from __future__ import annotations

import json
import os
import socket
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from archline.common.atomic import write_atomic
from archline.common.stamps import utc_iso

SWEEP_NAME = "sweep.toml"
RECORD_NAME = "task.json"


@dataclass
class TaskRecord:
    machine: str
    state: str                       #: running | done | failed
    job_id: str = ""
    node: str = ""
    pid: int = 0
    started_at: str = ""
    ended_at: str = ""
    config_hash: str = ""
    point_ids: list[str] = field(default_factory=list)
    exit_code: int | None = None
    message: str = ""
    written: int = 0
    failed: int = 0

    def write(self, path: Path) -> None:
        write_atomic(path, json.dumps(asdict(self), indent=1) + "\n")


def read_record(path: Path) -> TaskRecord | None:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return None           # being replaced, or damaged: no record (status says so)
    known = TaskRecord.__dataclass_fields__
    return TaskRecord(**{k: v for k, v in data.items() if k in known})


def current_job_id() -> str:
    """The scheduler's id of this task: ``<array>_<index>`` in a Slurm array, the job id otherwise, the
    controller's pid under submitit's local executor."""
    env = os.environ
    if env.get("SLURM_ARRAY_JOB_ID") and env.get("SLURM_ARRAY_TASK_ID"):
        return f"{env['SLURM_ARRAY_JOB_ID']}_{env['SLURM_ARRAY_TASK_ID']}"
    return env.get("SLURM_JOB_ID") or env.get("SUBMITIT_LOCAL_JOB_ID") or ""


def run_task(machine: str, directory: str) -> dict[str, Any]:
    """The function each Slurm (or local) task runs: the machine's sweep, recorded. Returns the record as a
    dict (submitit keeps it as the job's result)."""
    from archline.bench.errors import BenchError
    from archline.bench.run.sweep import (
        EXIT_INTERNAL,
        EXIT_INTERRUPTED,
        EXIT_METER_MISSING,
        SweepLockedError,
        run_sweep,
    )
    from archline.common.logs import configure
    from archline.fit.errors import ArchlineFitError
    from archline.powermon.errors import MeterError

    configure()
    d = Path(directory)
    path = d / RECORD_NAME
    rec = TaskRecord(machine=machine, state="running", job_id=current_job_id(), node=socket.gethostname(),
                     pid=os.getpid(), started_at=utc_iso())
    started = False

    def on_start(chash: str, point_ids: list[str]) -> None:
        nonlocal started
        started = True
        rec.config_hash, rec.point_ids = chash, point_ids
        rec.write(path)

    try:
        out = run_sweep(d / SWEEP_NAME, on_start=on_start)
        rec.exit_code, rec.message, rec.written, rec.failed = out.exit_code, out.message, out.written, out.failed
    except SweepLockedError as e:
        # another task of this machine holds the lock: its record is the truth, leave it alone
        return {**asdict(rec), "state": "skipped", "exit_code": e.exit_code, "message": str(e)}
    except BenchError as e:
        rec.exit_code, rec.message = int(getattr(e, "exit_code", 2)), str(e)
    except ArchlineFitError as e:
        rec.exit_code, rec.message = 2, str(e)
    except MeterError as e:
        rec.exit_code, rec.message = EXIT_METER_MISSING, str(e)
    except Exception as e:
        if type(e).__name__ == "UncompletedJobError":   # submitit: Slurm's warning signal before the time limit
            rec.exit_code, rec.message = EXIT_INTERRUPTED, ("stopped at the Slurm time limit; finished rows are "
                                                            "kept: resubmit to resume, or raise slurm.time")
        else:  # a bug: the traceback is in the sweep log and the task's stderr
            traceback.print_exc()
            rec.exit_code, rec.message = EXIT_INTERNAL, f"internal error: {type(e).__name__}: {e}"
    rec.state = "done" if rec.exit_code == 0 else "failed"
    rec.ended_at = utc_iso()
    if not started:
        rec.message = f"the sweep did not start: {rec.message}"
    rec.write(path)
    return asdict(rec)
