"""The progress display: a rich progress bar on a terminal (point, rate, ETA, live power) and one log line per
finished point (``logging``, logger ``archline.bench``; a sweep also sends these to its log file), numbers rounded
to what they carry. Not a terminal: the log lines alone."""

from __future__ import annotations

import logging
import sys
import time
from typing import Any, TextIO

log = logging.getLogger("archline.bench")


def _g(v: Any, digits: int = 4) -> str:
    # Rounded to what the measurement can carry: no 17-digit floats in a log line.
    try:
        return f"{float(v):.{digits}g}"
    except (TypeError, ValueError):
        return str(v)


def _gflop_per_s(row: dict[str, Any]) -> float:
    try:
        return (float(row.get("flops_dp") or 0) + float(row.get("flops_sp") or 0)) / float(row["time_s"]) / 1e9
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return 0.0


def point_numbers(row: dict[str, Any]) -> str:
    """A finished point's numbers for a log line: time, rate, energy and power (or "time only"), checksum."""
    parts = [f"time_s={_g(row.get('time_s'))}"]
    rate = _gflop_per_s(row) if row.get("kernel") in (None, "intensity", "ceil_flop") else 0.0
    if rate > 0:
        parts.append(f"gflop_per_s={_g(rate)}")
    elif row.get("kernel") in ("cache", "ceil_mem"):   # a bandwidth kernel: its adds only consume the data
        moved = sum(float(row.get(c) or 0) for c in ("bytes_mem", "bytes_l1", "bytes_l2", "bytes_l3", "bytes_shared"))
        t = float(row.get("time_s") or 0)
        if moved > 0 and t > 0:
            parts.append(f"gb_per_s={_g(moved / t / 1e9)}")
    if row.get("energy_j") is None:
        parts.append("time only")
    else:
        parts.append(f"energy_j={_g(row.get('energy_j'))}")
        if row.get("power_w") is not None:
            parts.append(f"power_w={_g(row.get('power_w'))}")
    ok = row.get("checksum_ok")
    parts.append("checksum ok" if ok is True else ("checksum FAILED" if ok is False else "checksum not computed"))
    return " ".join(parts)


class Progress:
    """A sweep's progress: on a terminal a rich progress bar (the point, the last point's rate, ETA, live power)
    with the finished points' log lines printed above it; elsewhere (a pipe, a log file, cron) no live display, only
    the plain log lines."""

    def __init__(self, total: int, stream: TextIO | None = None, *, tty: bool | None = None) -> None:
        self.total = total
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.done = 0
        self.t0 = time.monotonic()
        self._bar: Any = None
        self._swapped: list[tuple[logging.StreamHandler[Any], Any]] = []
        self._rate = ""
        if self.tty:
            self._start_bar()

    def _start_bar(self) -> None:
        from rich.console import Console
        from rich.file_proxy import FileProxy
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn
        from rich.progress import Progress as Bar
        from rich.table import Column

        console = Console(file=self.stream, force_terminal=True, highlight=False)
        # no refresh thread: the bar is redrawn on each update (every timed region), nothing is left running
        label = Column(width=40, no_wrap=True, overflow="ellipsis")       # a long point label ends in "…"
        self._bar = Bar(TextColumn("{task.description}", markup=False, table_column=label), BarColumn(bar_width=24),
                        MofNCompleteColumn(),
                        TextColumn("{task.fields[rate]}", markup=False), TextColumn("ETA {task.fields[eta]}"),
                        TextColumn("{task.fields[power]}", markup=False), console=console, auto_refresh=False,
                        transient=True, redirect_stdout=False, redirect_stderr=False)
        self._task = self._bar.add_task("", total=self.total, rate="", eta="--:--", power="")
        self._bar.start()
        # the log lines of finished points go above the bar, not through it
        for h in logging.getLogger("archline").handlers:
            if isinstance(h, logging.StreamHandler) and getattr(h, "stream", None) is self.stream:
                self._swapped.append((h, h.setStream(FileProxy(console, self.stream))))  # type: ignore[arg-type]

    def eta_s(self) -> float | None:
        if self.done == 0:
            return None
        return (time.monotonic() - self.t0) / self.done * (self.total - self.done)

    def _fmt_eta(self) -> str:
        eta = self.eta_s()
        return "--:--" if eta is None else f"{int(eta) // 60}:{int(eta) % 60:02d}"

    def update(self, label: str, power_w: float | None = None) -> None:
        """The live display (terminals only): the point being measured and the meter's live power."""
        if self._bar is not None:
            self._bar.update(self._task, description=label, eta=self._fmt_eta(), rate=self._rate,
                             power="" if power_w is None else f"{power_w:7.1f} W")
            self._bar.refresh()

    def point_done(self, label: str, row: dict[str, Any]) -> None:
        self.done += 1
        rate = _gflop_per_s(row)
        self._rate = f"{_g(rate)} GFLOP/s" if rate > 0 else ""
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, eta=self._fmt_eta(), rate=self._rate)
        log.info(f"point {self.done}/{self.total} {label} {point_numbers(row)} ETA {self._fmt_eta()}")
        if self._bar is not None:
            self._bar.refresh()

    def message(self, msg: str, level: int = logging.WARNING) -> None:
        log.log(level, msg)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        for h, old in self._swapped:
            h.setStream(old)
        self._swapped = []
