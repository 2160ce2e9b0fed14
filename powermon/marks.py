"""The phase-marks channel of ``archline measure``: a FIFO whose path is in ``$ARCHLINE_MARKS``; the measured
command writes one line per edge of a phase, and each phase becomes a window of the measurement.

    begin NAME            # from a shell:  echo "begin solve" > "$ARCHLINE_MARKS"
    end NAME
    cancel NAME           # the phase is dropped (an exception in an API window): said in problems, not reported
    begin NAME<TAB>T_S    # from archline's Python API: T_S = the edge's time.monotonic() (one clock per machine)

A line without a time is stamped when the parent reads it (well under a millisecond later). Lines are shorter
than PIPE_BUF, so lines from several writers never interleave. The reader holds the FIFO open for writing too,
so a writer never blocks and the reader never sees end-of-file between writers.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from archline.common.processes import process_gone
from archline.powermon.errors import MeterError

#: the environment variable ``archline measure`` sets in its child: the path of the marks FIFO
MARKS_ENV = "ARCHLINE_MARKS"
#: a mark line longer than this is refused (PIPE_BUF is at least 512 on POSIX: one write, never interleaved)
MAX_LINE = 512
#: a stamp this much earlier than the line was read is said when the edge is moved to the reading (an emulated
#: device switches its power when it reads a mark); the API's usual lag is 0.15-3.5 ms
MOVED_S = 0.1


@dataclass(frozen=True)
class Mark:
    kind: str        #: "begin", "end" or "cancel"
    name: str
    t_s: float       #: host monotonic seconds of the edge


def parse_line(line: str, received_s: float) -> Mark | None:
    """A mark from one line (None for a blank or malformed line: a stray write never stops the measurement)."""
    text, _, t = line.rstrip("\r\n").partition("\t")
    kind, _, name = text.strip().partition(" ")
    name = name.strip()
    if kind not in ("begin", "end", "cancel") or not name:
        return None
    try:
        t_s = float(t) if t.strip() else received_s
    except ValueError:
        t_s = received_s
    return Mark(kind, name, t_s)


class MarksWriter:
    """A window hook (powermon.monitor) that sends each edge to the parent's FIFO: ``begin NAME<TAB>T_S``."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        try:   # non-blocking: a FIFO nobody reads is an error here, not a hang
            self._fd = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as e:
            raise MeterError(f"cannot open the marks channel {self.path} (from $ARCHLINE_MARKS): {e.strerror}; "
                             "run under 'archline measure' or unset it") from None
        os.set_blocking(self._fd, True)
        self._closed = False

    def __call__(self, kind: str, name: str) -> float | None:
        if self._closed:
            raise MeterError(f"window {name!r}: the marks channel {self.path} is closed (its monitor stopped)")
        check_phase_name(name)
        t = time.monotonic()
        line = f"{kind} {name}\t{t!r}\n".encode()
        if len(line) > MAX_LINE:
            raise MeterError(f"window name too long for the marks channel ({len(line)} bytes, at most {MAX_LINE})")
        os.write(self._fd, line)
        return t

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            os.close(self._fd)


def check_phase_name(name: str) -> None:
    """A window name the parent reads back as it is: one line of UTF-8 with no control character, no leading,
    trailing or doubled white space (the line's own separators), so that a phase is never renamed on the way."""
    try:
        name.encode()
    except UnicodeEncodeError:
        raise MeterError(f"window name {name!r} is not valid UTF-8 (a lone surrogate): archline measure could not "
                         "read it back; name the window in plain text") from None
    if " ".join(name.split()) != name or not name.isprintable():
        raise MeterError(f"window name {name!r} would not reach archline measure as it is (white space at an end or "
                         "doubled, a tab, a line break or another control character): name the window without them")


def marks_base() -> Path | None:
    """Where the marks FIFOs live: ``$XDG_RUNTIME_DIR/archline`` (the per-user run-time directory the XDG spec
    gives FIFOs and sockets: private, in memory, emptied at logout), else ``$XDG_STATE_HOME/archline/run``
    (``~/.local/state/...``), never the shared temp directory; None when neither can be made (a HOME that is
    missing or read-only)."""
    run = os.environ.get("XDG_RUNTIME_DIR") or ""
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    for base in ([Path(run) / "archline"] if os.path.isabs(run) and os.path.isdir(run) else []) + \
            [Path(state) / "archline" / "run"]:
        try:
            base.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError:
            continue
        if os.access(base, os.W_OK | os.X_OK):
            return base
    return None


def _remove_stale(base: Path) -> None:
    """The FIFO directories a killed ``archline measure`` (kill -9) left: ``marks-PID-*`` whose process is gone."""
    for d in base.glob("marks-*-*"):
        pid = d.name.split("-")[1]
        if pid.isdigit() and process_gone(int(pid)):     # else not one of ours, or a live (another user's) process
            shutil.rmtree(d, ignore_errors=True)


class MarksReader:
    """The parent's end: a FIFO in a private directory (:func:`marks_base`; stale ones of killed runs removed
    first), read by a thread; ``on_mark(mark)`` is called for each mark as it arrives (it may return the time the
    edge is to have, e.g. an emulated device's switch)."""

    def __init__(self, on_mark: Callable[[Mark], float | None] | None = None) -> None:
        self.on_mark = on_mark
        self.marks: list[Mark] = []
        base = marks_base()
        if base is not None:
            _remove_stale(base)
        # no base at all (HOME missing or read-only): a private temporary directory, removed at close
        self._dir = Path(tempfile.mkdtemp(prefix=f"marks-{os.getpid()}-" if base else "archline-marks-", dir=base))
        self.path = self._dir / "marks"
        os.mkfifo(self.path, 0o600)
        self._fd = os.open(self.path, os.O_RDWR | os.O_NONBLOCK)
        self._stop_r, self._stop_w = os.pipe()
        self._lock = threading.Lock()
        self._read_lock = threading.Lock()  # the thread and take() both read the FIFO: one at a time
        self._buf = b""
        self._malformed: list[str] = []    # lines that were not "begin NAME" / "end NAME": said, never silent
        self._n_malformed = 0
        self._moved: list[tuple[Mark, float]] = []   # stamped marks whose edge on_mark moved by MOVED_S or more
        self._thread = threading.Thread(target=self._run, name="archline-marks", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            ready, _, _ = select.select([self._fd, self._stop_r], [], [])
            if self._fd in ready:
                self._drain()
            if self._stop_r in ready:
                self._drain()
                return

    def _drain(self, *, final: bool = False) -> None:
        """Read what the FIFO holds; ``final`` (the command has exited): a last line without its newline is a
        line too (``printf 'begin x'`` is a mark, and a phase it begins is said to have never ended)."""
        with self._read_lock:
            self._drain_locked()
            if final and self._buf:
                raw, self._buf = self._buf, b""
                self._line(raw, time.monotonic())

    def _drain_locked(self) -> None:
        while True:
            try:
                chunk = os.read(self._fd, 65536)
            except BlockingIOError:
                return
            if not chunk:
                return
            now = time.monotonic()
            self._buf += chunk
            *lines, self._buf = self._buf.split(b"\n")
            for raw in lines:
                self._line(raw, now)

    def _line(self, raw: bytes, now: float) -> None:
        text = raw.decode(errors="replace")
        mark = parse_line(text, now)
        if mark is None:
            if text.strip():
                with self._lock:
                    self._n_malformed += 1
                    if len(self._malformed) < 3:
                        self._malformed.append(text.strip()[:60])
            return
        t = self.on_mark(mark) if self.on_mark is not None else None
        with self._lock:
            self.marks.append(mark if t is None else Mark(mark.kind, mark.name, t))
            if t is not None and abs(t - mark.t_s) >= MOVED_S:
                self._moved.append((mark, t - mark.t_s))

    def take_malformed(self) -> list[str]:
        """Problems in words since the last call (and forget them): lines that were not marks, and stamped marks
        whose edge ``on_mark`` moved by :data:`MOVED_S` or more (written late: the emulated device switched then)."""
        with self._lock:
            n, first, self._n_malformed, self._malformed = self._n_malformed, self._malformed, 0, []
            moved, self._moved = self._moved, []
        out = [] if not n else [f"{n} line(s) on $ARCHLINE_MARKS were not 'begin NAME' or 'end NAME' and were "
                                f"ignored (first: {', '.join(ascii(s) for s in first)})"]   # escaped for the terminal
        if moved:
            m, d = moved[0]
            out.append(f"{len(moved)} mark(s) carried a time {MOVED_S:g} s or more away from when they were read "
                       f"(first: {m.kind} {m.name!a}, {d:.3g} s): the emulated device switches its power when "
                       "it reads a mark, so those edges are where it switched")
        return out

    def take(self) -> list[Mark]:
        """The marks so far (and forget them): what the FIFO holds is read first, so that a command that has exited
        has every mark it wrote in its own run (not left for the thread, and the next run, to find)."""
        with contextlib.suppress(OSError):      # closed already: what was read is all there is
            self._drain(final=True)
        with self._lock:
            out, self.marks = self.marks, []
        return out

    def close(self) -> None:
        """Read what is left, stop the thread, remove the FIFO and its directory."""
        if self._thread.is_alive():
            os.write(self._stop_w, b"x")
            self._thread.join(5.0)
        for fd in (self._fd, self._stop_r, self._stop_w):
            with contextlib.suppress(OSError):
                os.close(fd)
        shutil.rmtree(self._dir, ignore_errors=True)


def pair_marks(marks: list[Mark]) -> tuple[list[tuple[str, float, float]], list[str]]:
    """(name, t0_s, t1_s) of each phase, in begin order, and problems in words (an end without a begin, a phase
    never ended, a phase cancelled). A name begun again after it ended is a second phase ``NAME#2`` (the next
    number no phase has: a phase the command itself named ``NAME#2`` keeps its name)."""
    open_: dict[str, float] = {}
    seen: dict[str, int] = {}
    taken = {m.name for m in marks}          # names the command gave: never given to another phase
    phases: list[tuple[str, float, float]] = []
    problems: list[str] = []
    for m in marks:
        if m.kind == "begin":
            if m.name in open_:
                problems.append(f"phase {m.name!r} begun twice without an end; the second begin ignored")
                continue
            open_[m.name] = m.t_s
        elif m.name not in open_:
            problems.append(f"phase {m.name!r} {'cancelled' if m.kind == 'cancel' else 'ended'} without a begin; "
                            "ignored")
        elif m.kind == "cancel":
            del open_[m.name]
            problems.append(f"phase {m.name!r} was cancelled by the command (an exception in its window, or its "
                            "monitor stopped with it open); not reported")
        else:
            n = seen[m.name] = seen.get(m.name, 0) + 1
            label = m.name
            if n > 1:
                while (label := f"{m.name}#{n}") in taken:
                    n += 1
                seen[m.name] = n
                taken.add(label)
            phases.append((label, open_.pop(m.name), m.t_s))
    problems += [f"phase {n!r} never ended; not reported" for n in open_]
    phases.sort(key=lambda p: p[1])
    return phases, problems


def recorder_args(env: dict[str, str] | None = None) -> tuple[Any, list[MarksWriter]]:
    """``Recorder.from_env``'s meter and hooks: under ``archline measure`` (``$ARCHLINE_MARKS`` set), the null meter
    that says the parent measures, and the writer that sends each edge to it; elsewhere the null meter saying why."""
    from archline.powermon.record.null import NullMeter

    path = (os.environ if env is None else env).get(MARKS_ENV)
    if not path:
        return NullMeter(f"{MARKS_ENV} is not set: not running under 'archline measure'"), []
    return (NullMeter("measured by the parent 'archline measure': this window is a phase in its output"),
            [MarksWriter(path)])
