"""SIGINT and SIGTERM while a bench session measures (remembered, so that a swallowed KeyboardInterrupt still
stops the run) and while it closes (held until every closer has run): see :mod:`archline.bench.run.session`."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

from archline.common.sigwatch import STOP_SIGNALS


def _live_signals() -> list[int]:
    """SIGINT, SIGTERM and SIGHUP, less one this process was started ignoring (``archline ... &`` from a script
    ignores Ctrl-C, by the shell's rule; ``nohup`` SIGHUP)."""
    return [sig for sig in STOP_SIGNALS if signal.getsignal(sig) is not signal.SIG_IGN]


@contextlib.contextmanager
def _interrupts_remembered() -> Iterator[list[int]]:
    """While points run, SIGINT and SIGTERM raise KeyboardInterrupt as usual and are also remembered (the list
    yielded): a KeyboardInterrupt raised inside a ``__del__`` or a callback that swallows it still stops the run
    before the next point."""
    hit: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield hit
        return

    def stop(signum: int, frame: Any) -> None:
        hit.append(signum)
        raise KeyboardInterrupt

    old = {sig: signal.signal(sig, stop) for sig in _live_signals()}
    try:
        yield hit
    finally:
        for sig, h in old.items():
            signal.signal(sig, h)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM are noted, not acted on, inside the block; one noted is a KeyboardInterrupt after it
    (outside the main thread, where handlers cannot be set, the block runs as it is)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []

    def note(signum: int, frame: Any) -> None:
        held.append(signum)

    old = {sig: signal.signal(sig, note) for sig in _live_signals()}
    try:
        yield
    finally:
        for sig, h in old.items():
            signal.signal(sig, h)
    if held:      # (raised from a ``finally`` that a KeyboardInterrupt runs, it replaces that one: same outcome)
        raise KeyboardInterrupt
