"""``archline bench sweep CONFIG.toml``: the cron entry point. Locked, resumable, logged, with exit codes.

The config is one ``[sweep]`` table (:mod:`archline.bench.config.sweep`: any ``bench run`` option, plus ``name``,
``out`` and ``max_points``). Files in ``out``: ``results.csv`` (one ``archline.results/1`` row per point,
appended atomically, never rewritten), ``sweep.log`` (plain timestamped lines), ``.sweep.lock`` (held while
running), traces under ``traces/``. A point is done when ``results.csv`` has a row with its ``point_id`` and the
sweep's ``config_hash`` (a hash of the config and the profile it names); a changed config starts the points
afresh in the same file. Exit codes: :mod:`archline.common.exits` (the one table; docs/cron.md says what cron should
do with each): 0 done, 1 a bug, 2 bad config or profile, 3 some points failed (including points whose meter lost
too many samples: the next run retries them), 4 meter or device missing, 5 stopped at ``max_points``, 7 the out
directory cannot be written (or the disk is full), 75 locked, 130 interrupted.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import signal
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from archline.bench.config.sweep import EXIT_CONFIG, SweepConfigError, config_hash, load_config
from archline.bench.errors import BenchError
from archline.bench.run.rows import ResultsFile, repair_tail
from archline.common.errors import USER_ERRORS as COMMON_ERRORS
from archline.common.exits import (
    EXIT_BUG,
    EXIT_DEVICE,
    EXIT_INTERRUPTED,
    EXIT_LOCKED,
    EXIT_MORE_TO_DO,
    EXIT_OK,
    EXIT_POINTS_FAILED,
    EXIT_WRITE,
    classify,
    os_error_line,
)
from archline.common.logs import LOGGER, configure, file_handler
from archline.common.outputs import check_output, make_dirs, reset
from archline.common.stamps import utc_iso
from archline.model.errors import ArchlineFitError
from archline.powermon.errors import MeterError

log = logging.getLogger("archline.bench")
__all__ = ["EXIT_CONFIG", "EXIT_INTERRUPTED", "EXIT_LOCKED", "EXIT_MORE_TO_DO", "EXIT_OK", "EXIT_POINTS_FAILED",
           "EXIT_WRITE", "SweepConfigError", "load_config"]

EXIT_INTERNAL = EXIT_BUG
EXIT_METER_MISSING = EXIT_DEVICE

RESULTS_NAME = "results.csv"
LOG_NAME = "sweep.log"
LOCK_NAME = ".sweep.lock"
TRACES_NAME = "traces"


def check_outputs(out: Path) -> None:
    """Refuse (OutputError, exit 2) a sweep whose out directory, or a file it writes there (the lock, the log,
    the results, the traces directory), is one of its inputs, such as the config itself: checked before the
    lock is taken, so nothing is written."""
    check_output(out)
    for name in (LOCK_NAME, LOG_NAME, RESULTS_NAME, TRACES_NAME):
        check_output(out / name)


class SweepLockedError(BenchError):
    exit_code = EXIT_LOCKED


# --- the lock ---------------------------------------------------------------------------------------------

class SweepLock:
    """An ``fcntl.flock`` on ``<out>/.sweep.lock``: released by the kernel when the process dies, even by
    SIGKILL, so a stale lock never blocks the next cron run."""

    def __init__(self, path: Path, what: str = "sweep") -> None:
        self.path = path
        self.what = what        # what holds it, in the busy message (lab submit takes one too)
        self.fd: int | None = None

    def acquire(self) -> None:
        make_dirs(self.path.parent)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            holder = ""
            try:
                holder = os.pread(fd, 200, 0).decode(errors="replace").strip()
            except OSError:
                pass
            os.close(fd)
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise SweepLockedError(f"{self.what} is locked: another {self.what} is running on {self.path.parent} "
                                       f"({holder or 'holder unknown'}); exiting without doing anything") from None
            raise
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()} since {utc_iso()}\n".encode(), 0)
        except OSError:      # a full disk: give the lock back before saying so
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
            raise
        self.fd = fd

    def release(self) -> None:
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


# --- log ---------------------------------------------------------------------------------------------------

def done_points(results: Path, chash: str) -> set[str]:
    """point_ids already in ``results`` under this config hash (complete lines only), read by the results file's
    owner; a file that is not an archline results file is refused."""
    try:
        if not results.exists() or results.stat().st_size == 0:
            return set()
    except OSError:
        return set()
    with ResultsFile.open(results, whole_lines=False) as f:
        f.check_ours()
        return f.point_ids(chash)


# --- running ------------------------------------------------------------------------------------------------

@dataclass
class SweepOutcome:
    exit_code: int
    done_before: int
    written: int
    failed: int
    remaining: int
    message: str
    config_hash: str = ""
    n_points: int = 0


def run_sweep(config_path: Path, *, stream: TextIO | None = None, tty: bool | None = None,
              on_start: Callable[[str, list[str]], None] | None = None) -> SweepOutcome:
    """Run (or resume) a sweep. Raises SweepLockedError / SweepConfigError / MeterMissing for the CLI.
    ``on_start(config_hash, point_ids)`` is called once the lock is held and the points are planned (the lab's
    task record)."""
    from archline.bench.run.session import open_session, plan_session

    cfg = load_config(config_path)   # noted as an input (common.files): it can never be one of the outputs
    check_outputs(cfg.out)
    plan_session(cfg.options)     # a bad profile or option fails here: no lock, no directory, no log
    ResultsFile.check_appendable(cfg.out / RESULTS_NAME)   # and a results.csv that is not ours, untouched
    lock = SweepLock(cfg.out / LOCK_NAME)
    lock.acquire()
    handler = file_handler(cfg.out / LOG_NAME)
    logger = logging.getLogger(LOGGER)
    old_level = logger.level
    if logger.getEffectiveLevel() > logging.INFO:
        logger.setLevel(logging.INFO)
    logger.addHandler(handler)

    def on_signal(signum: int, frame: Any) -> None:
        signal.signal(signum, signal.SIG_IGN)   # a second SIGTERM must not cut into the clean-up of the first
        raise KeyboardInterrupt

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGHUP)   # SIGHUP as SIGTERM (nohup's
           if s == signal.SIGTERM or signal.getsignal(s) is not signal.SIG_IGN}            # stays ignored)
    session = None
    try:
        log.info(f"sweep '{cfg.name}' starting: config {cfg.path}, platform {cfg.platform}, out {cfg.out}")
        results_path = cfg.out / RESULTS_NAME
        cut = repair_tail(results_path)
        if cut:
            log.info(f"removed a partial last line ({cut} bytes) from {results_path}")
        stale = list((cfg.out / TRACES_NAME).glob("**/.*.tmp"))
        for f in stale:  # temp files of traces a killed run was writing; never final names
            f.unlink(missing_ok=True)
        if stale:
            log.info(f"removed {len(stale)} unfinished trace temp file(s)")
        try:
            session = open_session(cfg.options, trace_dir=cfg.out / TRACES_NAME,
                                   config_hasher=lambda raw: config_hash(cfg, raw))
        except (BenchError, ArchlineFitError, MeterError) as e:
            _to_file(handler, f"error: {e}")     # the console gets it once, from the CLI
            raise
        if cfg.host:
            session.ctx.host = cfg.host
        chash = session.ctx.config_hash
        points = session.points
        if on_start is not None:
            on_start(chash, [p.point_id for p in points])
        done = done_points(results_path, chash)
        todo = [(i, p) for i, p in enumerate(points) if p.point_id not in done]
        log.info(f"config hash {chash}: {len(points)} points, {len(points) - len(todo)} already done, "
                 f"{len(todo)} to do; {session.describe()}")
        results = ResultsFile(results_path)
        todo_now = todo[: cfg.max_points] if cfg.max_points > 0 else todo
        written, failed = session.run_indexed(todo_now, results, stream=stream, tty=tty)
        remaining = len(todo) - written
        if failed:
            code, msg = EXIT_POINTS_FAILED, f"{failed} point(s) failed (see {cfg.out / LOG_NAME}); rerun to retry"
        elif remaining:
            code, msg = EXIT_MORE_TO_DO, f"{remaining} point(s) left; the next run resumes"
        else:
            code, msg = EXIT_OK, f"sweep complete: {len(points)} points in {results_path}"
        log.info(f"wrote {written} row(s); {msg}")
        return SweepOutcome(code, len(points) - len(todo), written, failed, remaining, msg, chash, len(points))
    except KeyboardInterrupt:
        log.info("interrupted; finished rows are kept, the next run resumes")
        written = session.rows_written if session is not None else 0
        return SweepOutcome(EXIT_INTERRUPTED, 0, written, 0, -1,
                            f"interrupted; {written} finished row(s) kept, the next run resumes")
    except (BenchError, ArchlineFitError, MeterError):
        raise
    except OSError as e:  # an unwritable out, a full disk: the environment, not a bug
        _to_file(handler, f"error: {os_error_line(e)}")
        raise
    except Exception:
        log.info("internal error:\n" + traceback.format_exc())
        raise
    finally:
        if session is not None:
            session.close()
        for s, h in old.items():
            signal.signal(s, h)
        logger.removeHandler(handler)
        handler.close()
        logger.setLevel(old_level)
        lock.release()


def _to_file(handler: logging.Handler, message: str) -> None:
    """A line for the sweep's log file only (the CLI prints the error itself, once)."""
    try:
        handler.handle(logging.LogRecord(LOGGER, logging.INFO, __file__, 0, message, None, None))
    except OSError:       # a full disk must not hide the error being logged
        pass


def main(argv: Sequence[str] | None = None, *, stream: TextIO | None = None,
         echo: Callable[[str], None] | None = None) -> int:
    """``python -m archline.bench.run.sweep CONFIG.toml``: the same as ``archline bench sweep``."""
    args = list(sys.argv[1:] if argv is None else argv)
    out = echo or (lambda s: print(s, file=sys.stderr))
    if len(args) != 1:
        out("usage: python -m archline.bench.run.sweep CONFIG.toml")
        return EXIT_CONFIG
    reset()     # a command of its own: the inputs of an earlier one (its results.csv, read to resume) are not its
    try:
        res = run_sweep(Path(args[0]), stream=stream)
    except Exception as e:
        # the CLI's one rule (common.exits)
        known = classify(e, (BenchError, ArchlineFitError, MeterError, *COMMON_ERRORS))
        if known is None:
            raise
        out(f"archline: error: {known[0]}")
        return known[1]
    out(res.message)
    return res.exit_code


if __name__ == "__main__":
    configure()
    sys.exit(main())
