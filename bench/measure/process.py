"""The measured command's process: started in its own process group with ``$ARCHLINE_MARKS`` set, the signals
archline gets passed on to it, waited for with a grace period after a signal, its group killed when it overstays
(see :mod:`archline.bench.measure.run`); and the one rule that turns the command's phase marks into a run's
phases (:func:`phases_of_run`)."""

from __future__ import annotations

import contextlib
import math
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from archline.bench.errors import BenchError
from archline.common.limits import user_env
from archline.powermon.marks import MARKS_ENV, Mark, pair_marks

#: signals passed on to the command
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
#: after a forwarded signal, how long the command may take to exit before its process group is killed (a second
#: signal kills it at once): a command that ignores signals must not keep archline (and its FIFO) alive
GRACE_S = 5.0


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

    with _handling(forward):
        yield


#: after a stop signal (forwarded to the command, or got once it had exited), how long archline goes on measuring
#: the command's phases before it reports what it has: a signal is answered within a second
STOP_PHASES_S = 0.5


@contextlib.contextmanager
def _noting(late: list[int]) -> Iterator[None]:
    """Once the command has exited, a stop signal is noted in ``late`` (not raised): the phases measured so far
    are reported (:data:`STOP_PHASES_S`), with the rest said not measured, and archline exits 128 + N."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def note(signum: int, frame: Any) -> None:
        late.append(signum)

    with _handling(note):
        yield


@contextlib.contextmanager
def _handling(handler: Any) -> Iterator[None]:
    """``handler`` for every stop signal not ignored (nohup's SIGHUP stays so), the old handlers back after."""
    old = {s: signal.signal(s, handler) for s in FORWARDED if signal.getsignal(s) is not signal.SIG_IGN}
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
    env = {**user_env(), MARKS_ENV: str(marks_path)}   # not the thread limits archline set for itself
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




def phases_of_run(marks: Sequence[Mark], t_start_s: float, t_end_s: float
                  ) -> tuple[list[tuple[str, float, float]], list[str]]:
    """The run's phases (name, t0_s, t1_s) and problems in words, by one rule for every mark however it came.

    Ordered: by their stamps, arrival order for equal ones (a line stamped on reading shares its chunk's stamp;
    one from the API carries its own, and lines from several writers can arrive out of order), then paired
    (:func:`archline.powermon.marks.pair_marks`), so no phase ends before it begins. Clipped: into the run, since
    the command wrote every mark before it exited; a mark read after the exit (under load) is stamped late, and a
    phase wholly after the run is one of no length at its end. A mark never discards the measurement."""
    bad = [m for m in marks if not math.isfinite(m.t_s)]  # a NaN would unsort every mark beside it
    ordered = sorted((m for m in marks if math.isfinite(m.t_s)), key=lambda m: m.t_s)   # stable: begin, then end
    phases, problems = pair_marks(ordered)
    if bad:
        problems.insert(0, f"{len(bad)} mark(s) with a time that is not a finite number ignored (first: "
                           f"{bad[0].kind} {bad[0].name!r} at {bad[0].t_s!r})")
    out = []
    for name, t0, t1 in phases:
        lo = min(max(t0, t_start_s), t_end_s)
        out.append((name, lo, max(min(t1, t_end_s), lo)))
    return out, problems
