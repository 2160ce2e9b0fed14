"""The progress display: a live line on a terminal (point, ETA, live power) and one log line per finished point
(``logging``, logger ``archline.bench``; a sweep also sends these to its log file)."""

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


def point_numbers(row: dict[str, Any]) -> str:
    """A finished point's numbers for a log line: time, rate, energy and power (or "time only"), checksum."""
    parts = [f"time_s={_g(row.get('time_s'))}"]
    try:
        rate = (float(row.get("flops_dp") or 0) + float(row.get("flops_sp") or 0)) / float(row["time_s"]) / 1e9
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        rate = 0.0
    if rate > 0:
        parts.append(f"gflop_per_s={_g(rate)}")
    if row.get("energy_j") is None:
        parts.append("time only")
    else:
        parts.append(f"energy_j={_g(row.get('energy_j'))}")
        if row.get("power_w") is not None:
            parts.append(f"power_w={_g(row.get('power_w'))}")
    ok = row.get("checksum_ok")
    parts.append("checksum ok" if ok is True else ("checksum FAILED" if ok is False else "checksum n/a"))
    return " ".join(parts)


class Progress:
    def __init__(self, total: int, stream: TextIO | None = None, *, tty: bool | None = None) -> None:
        self.total = total
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.done = 0
        self.t0 = time.monotonic()

    def eta_s(self) -> float | None:
        if self.done == 0:
            return None
        return (time.monotonic() - self.t0) / self.done * (self.total - self.done)

    def _fmt_eta(self) -> str:
        eta = self.eta_s()
        return "--:--" if eta is None else f"{int(eta) // 60}:{int(eta) % 60:02d}"

    def _clear(self) -> None:
        if self.tty:
            self.stream.write("\r\x1b[K")
            self.stream.flush()

    def update(self, label: str, power_w: float | None = None) -> None:
        """The live line (terminals only)."""
        if self.tty:
            pw = f"  {power_w:7.1f} W" if power_w is not None else ""
            self.stream.write(f"\r[{self.done + 1:>3}/{self.total}] {label[:60]:<60} ETA {self._fmt_eta()}{pw}\x1b[K")
            self.stream.flush()

    def point_done(self, label: str, row: dict[str, Any]) -> None:
        self.done += 1
        self._clear()
        log.info(f"point {self.done}/{self.total} {label} {point_numbers(row)} ETA {self._fmt_eta()}")

    def message(self, msg: str, level: int = logging.WARNING) -> None:
        self._clear()
        log.log(level, msg)

    def close(self) -> None:
        self._clear()
