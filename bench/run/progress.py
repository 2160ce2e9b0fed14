"""The progress display: a live line on a terminal (point, ETA, live power) and one log line per finished point
(``logging``, logger ``archline.bench``; a sweep also sends these to its log file)."""

from __future__ import annotations

import logging
import sys
import time
from typing import Any, TextIO

log = logging.getLogger("archline.bench")


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
        log.info(f"point {self.done}/{self.total} {label} time_s={row.get('time_s')} energy_j={row.get('energy_j')} "
                 f"power_w={row.get('power_w')} checksum_ok={row.get('checksum_ok')} ETA {self._fmt_eta()}")

    def message(self, msg: str, level: int = logging.WARNING) -> None:
        self._clear()
        log.log(level, msg)

    def close(self) -> None:
        self._clear()
