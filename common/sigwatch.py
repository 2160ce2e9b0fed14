"""SIGTERM and Ctrl-C are answered within a second, whatever the command is doing.

Python runs a signal handler only between two bytecodes of the main thread, so a main thread inside one long C
call (a BLAS routine that never gets its buffer, a huge Arrow read, a library's retry loop) never ran archline's
handler: ``archline fit`` under ``ulimit -v 600000`` spun for 11 CPU-minutes, deaf to SIGTERM.

:func:`install` (the console script only) starts one small daemon thread and points Python's signal wake-up fd
at it: the C-level handler writes the signal's number there at once, whatever the main thread does. When the
handler in force stops the command by raising KeyboardInterrupt (archline's own, marked with :func:`raising`, or
Python's Ctrl-C handler), the main thread must run Python again within :data:`ANSWER_S` (its top frame changes
as it unwinds). If it does not, it is stuck in C: the thread removes the temporary files being written
(:data:`archline.common.atomic.PENDING`), says ``archline: interrupted`` and ends the process with 130, as the
documented stop does. A handler that defers the stop on purpose (a sweep closing its session, measure's grace
for its child, a capture being renamed) is left to do so. A main thread that holds the GIL in C blocks every
thread; nothing in Python can help there.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from types import FrameType
from typing import Any

from archline.common.exits import EXIT_INTERRUPTED

#: how long the main thread has to run Python again after the signal (its handler) before it counts as stuck
ANSWER_S = 0.6
#: the signals that stop a command, all alike: Ctrl-C, SIGTERM, and SIGHUP (its terminal or ssh session closed)
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_WATCHED = STOP_SIGNALS
_STACK_B = 256 * 1024       # the thread's stack: small, so it starts under a tight ulimit -v too


def _early_stop(signum: int, frame: FrameType | None) -> None:
    """A stop signal before the command has been set up (imports, click): nothing is written yet, so 130 and the
    line an interrupt says, at once, without a traceback from whatever was being imported (the exit functions run:
    matplotlib's private config directory, where one was made, is removed)."""
    import atexit

    with contextlib.suppress(Exception):
        atexit._run_exitfuncs()
    with contextlib.suppress(OSError):
        os.write(2, b"archline: interrupted\n")
    os._exit(EXIT_INTERRUPTED)


def early() -> None:
    """The console script, first thing (``archline/__init__.py``, before click, numpy or the rest is imported):
    a stop signal from now on ends the process with 130 and ``archline: interrupted``, until the entry point puts
    its own handlers in. A signal this process was started ignoring (``nohup``: SIGHUP) stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in STOP_SIGNALS:
        with contextlib.suppress(ValueError, OSError):
            if signal.getsignal(sig) is not signal.SIG_IGN:
                signal.signal(sig, _early_stop)


def raising(handler: Any) -> Any:
    """Mark a signal handler that stops the command by raising KeyboardInterrupt (the watcher may then end a
    process whose main thread does not get to run it); returns it."""
    handler._archline_raises = True
    return handler


def _stops(signum: int) -> bool:
    h = signal.getsignal(signum)
    return h is signal.default_int_handler or bool(getattr(h, "_archline_raises", False))


def _where(ident: int) -> tuple[int, int] | None:
    """The main thread's top Python frame and its instruction offset (None when it runs no Python)."""
    frame: FrameType | None = sys._current_frames().get(ident)
    return None if frame is None else (id(frame), frame.f_lasti)


def _stop_now() -> None:
    from archline.common.atomic import PENDING

    for tmp in list(PENDING):
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    with contextlib.suppress(OSError):
        os.write(2, b"archline: interrupted\n")
    os._exit(EXIT_INTERRUPTED)


def _watch(read_fd: int, main_ident: int) -> None:
    while True:
        try:
            data = os.read(read_fd, 64)
        except InterruptedError:
            continue
        except OSError:
            return
        if not data:
            return
        if not any(b in {int(s) for s in _WATCHED} and _stops(b) for b in data):
            continue
        before = _where(main_ident)
        deadline = time.monotonic() + ANSWER_S
        answered = False
        while time.monotonic() < deadline:
            time.sleep(0.05)
            if _where(main_ident) != before:
                answered = True
                break
        if not answered:
            _stop_now()


def install() -> bool:
    """Start the watcher (once, from the main thread); False where it cannot be (another wake-up fd in use,
    not the main thread, no room for a thread)."""
    if threading.current_thread() is not threading.main_thread():
        return False
    r, w = os.pipe()
    os.set_blocking(w, False)
    try:
        old = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    except (ValueError, OSError):
        os.close(r)
        os.close(w)
        return False
    if old != -1:                   # someone else's (an event loop): theirs, not ours
        signal.set_wakeup_fd(old)
        os.close(r)
        os.close(w)
        return False
    size = threading.stack_size()
    try:
        threading.stack_size(_STACK_B)
        threading.Thread(target=_watch, args=(r, threading.get_ident()), name="archline-sigwatch",
                         daemon=True).start()
    except (RuntimeError, MemoryError):
        signal.set_wakeup_fd(-1)
        os.close(r)
        os.close(w)
        return False
    finally:
        threading.stack_size(size)
    return True
