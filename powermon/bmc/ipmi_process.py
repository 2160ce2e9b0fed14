"""An emulated BMC in a process of its own (``python -m archline.powermon.bmc.ipmi_serve``), driven from this one:
pyghmi keeps one I/O dispatcher per process, and a server and a client sharing it hung in the login about one run
in ten. Re-exported by :mod:`archline.powermon.bmc.ipmi`."""

from __future__ import annotations

import collections
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence

from archline.powermon.bmc import dcmi
from archline.powermon.errors import DeviceError

log = logging.getLogger("archline.powermon")


class BmcProcess:
    """An emulated BMC in a process of its own (``python -m archline.powermon.bmc.ipmi_serve``): pyghmi's one
    per-process dispatcher then serves only this process's clients. ``options``: the server's reading and fault
    options (``["--power-w", "412"]``, ``["--script", path, "--busy-every", "3"]``); ``reading``: instead, each
    reading is asked of ``reading()`` here (None: busy; ``--ask``). ``.port``, ``.proc``, ``.stop()`` (also on
    ``with``); the process also exits when this one does (its stdin closes)."""

    START_TIMEOUT_S = 30.0     # a Python start and pyghmi's imports, on a loaded machine

    def __init__(self, options: Sequence[str] = (), reading: Callable[[], dcmi.DcmiPowerReading | None] | None = None,
                 user: str = "archline", password: str = "emulated", address: str = "127.0.0.1", port: int = 0) -> None:
        self.reading = reading
        self.error: BaseException | None = None       # what reading() raised last (answered busy)
        self.asked = 0
        self._stderr: collections.deque[str] = collections.deque(maxlen=20)
        self._stdin_lock = threading.Lock()
        self._ready = threading.Event()
        self.port = -1
        env = dict(os.environ, ARCHLINE_IPMI_SERVE_PASSWORD=password)
        args = [sys.executable, "-m", "archline.powermon.bmc.ipmi_serve", "--address", address, "--port", str(port),
                "--user", user, "--password-env", "ARCHLINE_IPMI_SERVE_PASSWORD",
                *(["--ask"] if reading is not None else []), *options]
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=env, text=True, bufsize=1)
        self._threads = [threading.Thread(target=self._read_stdout, name="ipmi server stdout", daemon=True),
                         threading.Thread(target=self._read_stderr, name="ipmi server stderr", daemon=True)]
        for th in self._threads:
            th.start()
        if not self._ready.wait(self.START_TIMEOUT_S) or self.port < 0:
            why = self._stderr[-1] if self._stderr else f"no port within {self.START_TIMEOUT_S:g} s"
            self.stop()
            raise DeviceError(f"ipmi: the emulated BMC did not start ({why})")

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        try:
            for line in self.proc.stdout:
                if not self._ready.is_set():
                    if line.strip().isdigit():
                        self.port = int(line)
                    self._ready.set()
                elif line.startswith("? "):
                    self._answer(line[2:].strip())
        finally:
            self._ready.set()

    def _answer(self, seq: str) -> None:
        self.asked += 1
        try:
            r = self.reading() if self.reading is not None else None
        except Exception as e:        # the emulated power failed: the BMC answers busy, the error is kept
            self.error, r = e, None
        reply = f"{seq} {'busy' if r is None else dcmi.encode(r).hex()}\n"
        try:
            with self._stdin_lock:
                assert self.proc.stdin is not None
                self.proc.stdin.write(reply)
                self.proc.stdin.flush()
        except (BrokenPipeError, ValueError, OSError):   # stopping
            pass

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._stderr.append(line.rstrip())
            log.debug("ipmi server: %s", line.rstrip())

    def stderr_tail(self) -> list[str]:
        return list(self._stderr)

    def stop(self, timeout_s: float = 5.0) -> int:
        """Close its stdin (it exits), SIGTERM then SIGKILL if it does not; its exit status (0: a clean stop)."""
        with self._stdin_lock:
            try:
                if self.proc.stdin is not None:
                    self.proc.stdin.close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.terminate()
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for th in self._threads:
            if th is not threading.current_thread():
                th.join(timeout_s)
        for f in (self.proc.stdout, self.proc.stderr):
            if f is not None:
                f.close()
        return int(self.proc.returncode)

    def __enter__(self) -> BmcProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def dcmi_bmc(reading: Callable[[], dcmi.DcmiPowerReading | None], credentials: dict[str, str]) -> BmcProcess:
    """An emulated BMC on 127.0.0.1 (a free UDP port, ``.port``) answering DCMI Get Power Reading with ``reading()``
    (called in this process; None: completion code 0xC0, busy), in a process of its own; ``.stop()``.
    ``credentials``: its one {user: password}. Other commands: pyghmi's defaults (0xC1 where none)."""
    if len(credentials) != 1:
        raise ValueError("the emulated BMC takes one user")
    ((user, password),) = credentials.items()
    return BmcProcess(reading=reading, user=user, password=password)
