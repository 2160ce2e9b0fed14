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

import os
import signal
import socket
import traceback
from pathlib import Path
from typing import Any

from archline.common.stamps import utc_iso
from archline.formats.lab_state import TaskRecord

SWEEP_NAME = "sweep.toml"
RECORD_NAME = "task.json"

__all__ = ["RECORD_NAME", "SWEEP_NAME", "TaskRecord", "current_job_id", "read_record", "run_task"]


def read_record(path: Path) -> TaskRecord | None:
    """The task's record (:mod:`archline.formats.lab_state`); None when it has none yet. A damaged record, one
    with a wrong type or from a newer archline raises :class:`~archline.formats.lab_state.LabStateError`."""
    return TaskRecord.read(path)


def current_job_id() -> str:
    """The scheduler's id of this task: ``<array>_<index>`` in a Slurm array, the job id otherwise, the
    controller's pid under submitit's local executor."""
    env = os.environ
    if env.get("SLURM_ARRAY_JOB_ID") and env.get("SLURM_ARRAY_TASK_ID"):
        return f"{env['SLURM_ARRAY_JOB_ID']}_{env['SLURM_ARRAY_TASK_ID']}"
    return env.get("SLURM_JOB_ID") or env.get("SUBMITIT_LOCAL_JOB_ID") or ""


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def run_task(machine: str, directory: str) -> dict[str, Any]:
    """The function each Slurm (or local) task runs: the machine's sweep, recorded. Returns the record as a
    dict (submitit keeps it as the job's result).

    SIGTERM (``scancel``, ``archline lab submit`` stopped, the local controller forwarding a stop) and SIGINT
    stop the task wherever it is, as they stop a sweep: the record says failed, exit 130, ``interrupted``, and
    the finished rows are kept (submitit itself ignores SIGTERM in its jobs; the task takes it back)."""
    import threading

    from archline.bench.errors import BenchError
    from archline.bench.run.sweep import (
        EXIT_INTERNAL,
        EXIT_INTERRUPTED,
        EXIT_METER_MISSING,
        SweepLockedError,
        run_sweep,
    )
    from archline.common.errors import CommonError
    from archline.common.logs import configure
    from archline.common.outputs import reset as reset_inputs
    from archline.model.errors import ArchlineFitError
    from archline.powermon.errors import MeterError

    main = threading.current_thread() is threading.main_thread()
    old = signal.signal(signal.SIGTERM, _interrupt) if main else None
    d = Path(directory)
    path = d / RECORD_NAME
    rec = TaskRecord(machine=machine, state="running", job_id=current_job_id(), node=socket.gethostname(),
                     pid=os.getpid(), started_at=utc_iso())
    started = False
    skipped: dict[str, Any] | None = None

    def on_start(chash: str, point_ids: list[str]) -> None:
        nonlocal started
        started = True
        rec.config_hash, rec.point_ids = chash, point_ids
        rec.write(path)

    try:
        configure()
        reset_inputs()      # the task is a command of its own (the output policy's inputs start empty)
        out = run_sweep(d / SWEEP_NAME, on_start=on_start)
        rec.exit_code, rec.message, rec.written, rec.failed = out.exit_code, out.message, out.written, out.failed
    except SweepLockedError as e:
        # another task of this machine holds the lock: its record is the truth, leave it alone
        skipped = {**rec.model_dump(), "state": "skipped", "exit_code": e.exit_code, "message": str(e)}
    except KeyboardInterrupt:
        rec.exit_code, rec.message = EXIT_INTERRUPTED, "interrupted (SIGTERM/SIGINT); finished rows are kept, " \
            "resubmit to resume"
    except BenchError as e:
        rec.exit_code, rec.message = int(getattr(e, "exit_code", 2)), str(e)
    except (ArchlineFitError, CommonError) as e:
        rec.exit_code, rec.message = int(getattr(e, "exit_code", 2)), str(e)
    except MeterError as e:
        rec.exit_code, rec.message = EXIT_METER_MISSING, str(e)
    except Exception as e:
        if type(e).__name__ == "UncompletedJobError":   # submitit: Slurm's warning signal before the time limit
            rec.exit_code, rec.message = EXIT_INTERRUPTED, ("stopped at the Slurm time limit; finished rows are "
                                                            "kept: resubmit to resume, or raise slurm.time")
        else:  # a bug: the traceback is in the sweep log and the task's stderr
            traceback.print_exc()
            rec.exit_code, rec.message = EXIT_INTERNAL, f"internal error: {type(e).__name__}: {e}"
    finally:
        if main:   # the record below is written whatever arrives now: a second signal must not cut it short
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            old_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        if skipped is not None:
            return skipped
        rec.interrupted = rec.exit_code == EXIT_INTERRUPTED
        rec.state = "done" if rec.exit_code == 0 else "failed"
        rec.ended_at = utc_iso()
        if not started:
            rec.message = f"the sweep did not start: {rec.message}"
        rec.write(path)
        return rec.model_dump()
    finally:
        if main:
            signal.signal(signal.SIGTERM, old if old is not None else signal.SIG_DFL)
            signal.signal(signal.SIGINT, old_int)
