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


__all__ = ["READERS", "TOOLS", "CountersFormatError", "Counts", "read_collected", "read_counters"]


def read_collected(tool: str, path: str | Path) -> Counts:
    """What ``archline measure --counters TOOL`` collected (bench/measure_counters.wrap_command's output), as one
    program: several regions or kernels are summed (their times too)."""
    got = read_counters(tool, path)
    if len(got) == 1:
        return got[0]
    total = Counts("program", {}, source=got[0].source, scaled=any(c.scaled for c in got))
    times = [c.time_s for c in got]
    total.time_s = sum(t for t in times if t is not None) if all(t is not None for t in times) else None
    for c in got:
        for k, v in c.counts.items():
            total.add(k, v)
        for k, v in c.raw.items():
            total.raw[f"{c.name}:{k}"] = v
        for n in c.notes:
            total.note(n)
    total.note(f"{len(got)} parts summed: {', '.join(c.name for c in got)}")
    return total
