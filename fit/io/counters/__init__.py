"""Hardware counters from today's profilers, read into the counts `archline predict` takes (:class:`Counts`):
Nsight Compute (``ncu``), rocprof (``rocprof``), ``perf stat -x,`` (``perf``) and likwid-perfctr CSV (``likwid``).
One reader module per tool; :func:`read_counters` picks it by the tool's name."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from archline.fit.io.counters import likwid, ncu, perf, rocprof
from archline.fit.io.counters.base import CountersFormatError, Counts

READERS: dict[str, Callable[[Path], list[Counts]]] = {
    "ncu": ncu.read, "rocprof": rocprof.read, "perf": perf.read, "likwid": likwid.read,
}
TOOLS = tuple(READERS)


def read_counters(tool: str, path: str | Path) -> list[Counts]:
    """The programs, kernels or regions counted in ``path``, an export of ``tool`` (one of :data:`TOOLS`)."""
    if tool not in READERS:
        raise CountersFormatError(f"unknown counter tool '{tool}' (known: {', '.join(TOOLS)})")
    return READERS[tool](Path(path))


__all__ = ["READERS", "TOOLS", "CountersFormatError", "Counts", "read_counters"]
