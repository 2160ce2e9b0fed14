"""Hardware counters from today's profilers, read into the counts `archline predict` takes (:class:`Counts`):
Nsight Compute (``ncu``), rocprof (``rocprof``), ``perf stat -x,`` (``perf``) and likwid-perfctr CSV (``likwid``).
One reader module per tool; :func:`read_counters` picks it by the tool's name."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from archline.formats.counters import likwid, ncu, perf, rocprof
from archline.formats.counters.base import CountersFormatError, Counts

READERS: dict[str, Callable[[Path], list[Counts]]] = {
    "ncu": ncu.read, "rocprof": rocprof.read, "perf": perf.read, "likwid": likwid.read,
}
TOOLS = tuple(READERS)
#: a profiled program or kernel longer than a year is a wrong unit or a corrupt value, not a measurement
MAX_TIME_S = 365.25 * 86400.0


def read_counters(tool: str, path: str | Path) -> list[Counts]:
    """The programs, kernels or regions counted in ``path``, an export of ``tool`` (one of :data:`TOOLS`)."""
    if tool not in READERS:
        raise CountersFormatError(f"unknown counter tool '{tool}' (known: {', '.join(TOOLS)})")
    other = _looks_like(Path(path))
    if other is not None and other[0] != tool:
        from archline.formats.counters.base import show_path

        article = "an" if other[0] == "ncu" else "a"             # "an en-see-you"
        raise CountersFormatError(f"{show_path(Path(path))}: this looks like {article} {other[0]} export "
                                  f"({other[1]}), not {tool}'s: give --tool {other[0]}")
    found = READERS[tool](Path(path))
    for c in found:
        _check_physical(c, Path(path))
    return found


def _looks_like(path: Path) -> tuple[str, str] | None:
    """The tool whose export this plainly is, by its header (ncu's "Kernel Name" table, rocprof's KernelName
    column, likwid -O's TABLE lines), and why; None when it is none of them or cannot be read (the reader says)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            head = [f.readline() for _ in range(400)]
    except OSError:
        return None
    for line in head:
        if '"Kernel Name"' in line and ('"Metric Name"' in line or line.startswith('"ID"')):
            return "ncu", 'a "Kernel Name" table'
        cells = {c.strip().strip('"') for c in line.split(",")}
        if cells & {"KernelName", "Kernel_Name", "Kernel-Name"}:
            return "rocprof", "a KernelName column"
        if line.startswith(("TABLE,Group", "STRUCT,Info")):
            return "likwid", "likwid-perfctr -O tables"
    return None


def _check_physical(c: Counts, path: Path) -> None:
    """A count that overflowed (inf) or a kernel that took no time is an error, never an inf or NaN downstream."""
    import math

    from archline.formats.counters.base import show_path

    for column, n in c.counts.items():
        if not math.isfinite(n) or n < 0:
            raise CountersFormatError(f"{show_path(path)}: {c.name}: {column} = {n:g} after unit scaling (an "
                                      "overflow or a negative count): check the export's units")
    if c.time_s is not None and not (math.isfinite(c.time_s) and c.time_s > 0):
        raise CountersFormatError(f"{show_path(path)}: {c.name}: its time is {c.time_s:g} s; a kernel that ran "
                                  "takes time > 0 (re-export with the duration metric)")
    if c.time_s is not None and c.time_s > MAX_TIME_S:
        raise CountersFormatError(f"{show_path(path)}: {c.name}: its time is {c.time_s:g} s, more than a year: "
                                  "check the export's time unit")


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
    energies = [c.energy_j for c in got]
    if all(e is not None for e in energies):
        total.energy_j = sum(e for e in energies if e is not None)
        total.energy_source = got[0].energy_source
    total.count_rel_err = max(c.count_rel_err for c in got)
    total.note(f"{len(got)} parts summed: {', '.join(c.name for c in got)}")
    return total
