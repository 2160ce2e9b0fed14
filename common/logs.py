"""Logging for the command line: one handler on the ``archline`` logger, plain lines on stderr (INFO; DEBUG with
``--verbose``), and a timestamped file handler a cron sweep attaches for its own log file."""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path
from typing import TextIO

from archline.common.outputs import make_dirs

LOGGER = "archline"


def _drop_console(log: logging.Logger) -> None:
    for h in list(log.handlers):
        if getattr(h, "_archline_console", False):
            log.removeHandler(h)


def configure(verbose: bool = False, stream: TextIO | None = None) -> logging.Logger:
    """Messages of every room on ``stream`` (stderr), ``--verbose`` adding the DEBUG ones. Idempotent."""
    log = logging.getLogger(LOGGER)
    log.setLevel(logging.DEBUG if verbose else logging.INFO)
    _drop_console(log)
    h = logging.StreamHandler(stream or sys.stderr)
    h.setFormatter(logging.Formatter("%(message)s"))
    h._archline_console = True  # type: ignore[attr-defined]
    log.addHandler(h)
    log.propagate = False
    return log


def reset() -> None:
    """Undo :func:`configure`: no console handler, Python's default level and propagation (for code that runs the
    CLI in-process, such as the tests)."""
    log = logging.getLogger(LOGGER)
    _drop_console(log)
    log.setLevel(logging.NOTSET)
    log.propagate = True


class _UtcFormatter(logging.Formatter):
    converter = time.gmtime  # type: ignore[assignment]

    def format(self, record: logging.LogRecord) -> str:
        stamp = self.formatTime(record, "%Y-%m-%dT%H:%M:%SZ")
        return "\n".join(f"{stamp} [{os.getpid()}] {line}" for line in (record.getMessage().splitlines() or [""]))


def file_handler(path: Path) -> logging.Handler:
    """Plain timestamped UTC lines appended to ``path`` (every level from INFO)."""
    make_dirs(path.parent)
    h = logging.FileHandler(path, mode="a", encoding="utf-8")
    h.setFormatter(_UtcFormatter())
    h.setLevel(logging.INFO)
    return h
