"""Serve an emulated meter (a PowerMon 2's core, a stream kind's :class:`~archline.powermon.stream.core.StreamCore`)
on the master end of a real pseudo-terminal, from a thread.

The slave end (``server.port``, e.g. ``/dev/pts/7``) is an ordinary serial device: the driver opens it
exactly as it would open ``/dev/ttyUSB0``.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
import time
import tty
from types import TracebackType
from typing import Protocol

from archline.powermon.errors import MeterError

#: the core's output is taken only while less than this waits for the pty (a device's queue is bounded: an
#: emulator that keeps one, as the PowerSensor3's does, loses frames when the reader stops reading)
PULL_BELOW_BYTES = 4096


class ServedCore(Protocol):
    """What the server needs of an emulated device: the bytes the host sends in, the bytes it produced by now out,
    when its next bytes are due (None: nothing scheduled), and whether it vanished."""

    disconnected: bool

    def write(self, data: bytes) -> None: ...

    def read_available(self) -> bytes: ...

    def next_due_s(self) -> float | None: ...


class PtyServer:
    def __init__(self, core: ServedCore, batch_s: float = 0.002) -> None:
        import pty

        self.core = core
        self.batch_s = batch_s
        try:
            self._master, self._slave = pty.openpty()
        except OSError as e:
            raise MeterError(f"cannot open a pseudo-terminal: {e.strerror}") from None
        tty.setraw(self._slave)
        os.set_blocking(self._master, False)
        self.port = os.ttyname(self._slave)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pending = bytearray()
        self.closed = False

    def start(self) -> PtyServer:
        self._thread = threading.Thread(target=self._run, name=f"powermon-emulator {self.port}", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        core = self.core
        while not self._stop.is_set():
            due = core.next_due_s()
            timeout = self.batch_s if due is None else min(max(due - time.monotonic(), 0.0), self.batch_s)
            if self._pending:
                timeout = min(timeout, 0.001)
            try:
                r, _, _ = select.select([self._master], [], [], max(timeout, self.batch_s / 4))
            except (OSError, ValueError):
                break
            if r:
                try:
                    data = os.read(self._master, 4096)
                except BlockingIOError:
                    data = b""
                except OSError:
                    break
                if data:
                    core.write(data)
            if len(self._pending) < PULL_BELOW_BYTES:      # a reader that does not read fills the core's own queue
                self._pending += core.read_available()
            if self._pending:
                try:
                    n = os.write(self._master, self._pending)
                    del self._pending[:n]
                except BlockingIOError:
                    pass
                except OSError:
                    break
            if core.disconnected:
                self._close_fds()
                break

    def _close_fds(self) -> None:
        if not self.closed:
            self.closed = True
            for fd in (self._master, self._slave):
                with contextlib.suppress(OSError):
                    os.close(fd)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=2)
        self._close_fds()

    def __enter__(self) -> PtyServer:
        return self.start()

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
