"""What ``archline measure`` is asked to do (:class:`MeasureOptions`), apart from how it does it
(:mod:`archline.bench.measure.run`), so that the modules that open its meters read the options without importing
the run."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class MeasureOptions:
    command: Sequence[str]
    platform: str = "localhost"
    emulate: bool = False
    meter: str | None = None
    out: Path | None = None
    repeat: int = 1
    baseline_s: float = 0.0
    subtract_idle: bool = False
    busy_w: float | None = None          #: emulated device's power inside a phase (default: the model's peak)
    idle_w: float | None = None          #: ... and outside (default: the profile's idle power)
    #: hook for counters (perf stat, likwid-perfctr): given the command, the argv to run instead (the command
    #: wrapped by the collector) and a function that reads the counts once it has exited (a dict, or a reason)
    counters: Callable[[Sequence[str]], tuple[Sequence[str], Callable[[], Any]]] | None = None
    place: Callable[[dict[str, Any]], dict[str, Any]] | None = None  #: hook: the program on its roofline
    #: the command's stdout goes to archline's stderr (``--format json``: stdout holds the report alone)
    child_stdout_to_stderr: bool = False
