"""The one result type of every counter reader: :class:`Counts` (the counts `archline predict` takes, keyed by the
archline.results/1 column names) and the helpers the readers share (numbers, units, where-strings)."""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archline.common.files import read_text
from archline.model.errors import ArchlineFitError
from archline.model.hierarchy import COUNT_TO_COST


class CountersFormatError(ArchlineFitError):
    """A profiler export archline cannot read: names the file, the line and what is missing."""


@dataclass
class Counts:
    """One program, kernel or region, as counted by a profiler.

    ``counts`` is keyed by result columns (flops_sp, flops_dp, int_ops, bytes_mem, bytes_l3, bytes_l2, bytes_l1,
    bytes_shared, rand_accesses): flops by precision, bytes per level (each byte charged once, at the level that
    served it), random accesses, integer ops. ``raw`` keeps the tool's own events and totals; ``notes`` say how
    the counts were derived (multipliers, multiplexing, what was not counted). ``energy_j`` is energy the tool
    measured itself (perf's ``power/energy-*`` RAPL events), ``energy_source`` says which; ``count_rel_err`` is the
    relative uncertainty of the scaled counts (0 when every event ran all the time; docs/counters.md)."""

    name: str
    counts: dict[str, float]
    time_s: float | None = None
    source: str = ""                                   # "ncu FILE", "perf stat FILE" ...
    raw: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    scaled: bool = False                               # a count is an estimate (multiplexed or extrapolated)
    energy_j: float | None = None                      # measured by the tool (RAPL through perf), not modelled
    energy_source: str = ""
    count_rel_err: float = 0.0                         # +- fraction of each scaled count (multiplexing)

    @property
    def flops(self) -> float:
        return self.counts.get("flops_sp", 0.0) + self.counts.get("flops_dp", 0.0)

    @property
    def intensity_flop_per_byte(self) -> float:
        """Flops per DRAM byte (the roofline's x axis); inf with no DRAM traffic, NaN with neither."""
        q = self.counts.get("bytes_mem", 0.0)
        w = self.flops
        if q > 0:
            return w / q
        return math.inf if w > 0 else math.nan

    def add(self, column: str, n: float) -> None:
        if column not in COUNT_TO_COST:
            raise ValueError(column)
        self.counts[column] = self.counts.get(column, 0.0) + n

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "counts": dict(self.counts), "time_s": self.time_s, "source": self.source,
                "raw": dict(self.raw), "notes": list(self.notes), "scaled": self.scaled,
                "energy_j": self.energy_j, "energy_source": self.energy_source,
                "count_rel_err": self.count_rel_err}


#: a number with thousands separators as ncu prints them ("1,024", "34,359,738,368,000.00")
_GROUPED = re.compile(r"[+-]?\d{1,3}(,\d{3})+(\.\d*)?([eE][+-]?\d+)?")


def number(text: str, where: str) -> float:
    """A counter value: thousands separators (ncu prints "1,024") and spaces dropped; finite and >= 0. A comma
    that does not group three digits ("117,34") is a decimal comma (a German or French locale): refused, never
    read as 11734."""
    t = text.strip().replace(" ", "")
    if re.fullmatch(r"\d{1,3}(\.\d{3}){2,}(,\d*)?", t):    # "27.595.520": '.' groups thousands (de_DE)
        raise CountersFormatError(f"{where}: '{text.strip()}' groups thousands with '.' (a non-English locale): "
                                  "re-export with a C/English locale (LC_ALL=C)")
    if "," in t:
        if not _GROUPED.fullmatch(t):
            raise CountersFormatError(f"{where}: '{text.strip()}' has a decimal comma (a non-English locale): "
                                      "re-export with a C/English locale (LC_ALL=C)")
        t = t.replace(",", "")
    try:
        v = float(t)
    except ValueError:
        raise CountersFormatError(f"{where}: expected a number, got '{text.strip()}'") from None
    if not math.isfinite(v) or v < 0:
        raise CountersFormatError(f"{where}: expected a finite non-negative number, got '{text.strip()}'")
    return v


def is_number(text: str) -> bool:
    try:
        float(text.strip().replace(",", ""))
    except ValueError:
        return False
    return True


#: Unit prefixes as profilers print them: ncu's SI "Kbyte", "Mbyte" ("Kibyte" binary), perf's "MiB", likwid's
#: "[GBytes]" (SI: 1.0E-09*bytes in its formulas); times to seconds.
UNIT_FACTOR: dict[str, float] = {
    "": 1.0, "byte": 1.0, "bytes": 1.0, "b": 1.0,
    "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9, "tbyte": 1e12,
    "kibyte": 2.0**10, "mibyte": 2.0**20, "gibyte": 2.0**30, "tibyte": 2.0**40,
    "kib": 2.0**10, "mib": 2.0**20, "gib": 2.0**30, "kb": 1e3, "mb": 1e6, "gb": 1e9,
    "nsecond": 1e-9, "usecond": 1e-6, "msecond": 1e-3, "second": 1.0, "ns": 1e-9, "us": 1e-6, "msec": 1e-3,
    "nanosecond": 1e-9, "microsecond": 1e-6, "millisecond": 1e-3, "usec": 1e-6, "nsec": 1e-9, "\u00b5s": 1e-6,
    "\u03bcs": 1e-6,
    "ms": 1e-3, "s": 1.0, "sec": 1.0, "cycle": 1.0, "inst": 1.0, "warp": 1.0, "sector": 1.0, "request": 1.0,
    "kinst": 1e3, "minst": 1e6, "ginst": 1e9, "joules": 1.0, "j": 1.0,
}


#: what each unit measures, for a metric whose dimension is known (a time given in cycles or bytes is refused)
UNIT_DIMENSION: dict[str, str] = {
    **{u: "time" for u in ("nsecond", "usecond", "msecond", "second", "ns", "us", "msec", "ms", "s", "sec",
                           "nanosecond", "microsecond", "millisecond", "usec", "nsec", "\u00b5s", "\u03bcs")},
    **{u: "bytes" for u in ("byte", "bytes", "b", "kbyte", "mbyte", "gbyte", "tbyte", "kibyte", "mibyte",
                            "gibyte", "tibyte", "kib", "mib", "gib", "kb", "mb", "gb")},
    **{u: "count" for u in ("cycle", "inst", "warp", "sector", "request", "kinst", "minst", "ginst")},
    "joules": "energy", "j": "energy",
}


def unit_factor(unit: str, where: str, dimension: str | None = None) -> float:
    """The factor to base units (bytes, seconds, counts); with ``dimension`` ("time", "bytes", "count"), a unit
    of another dimension is refused (a blank unit passes as a plain count only)."""
    u = unit.strip().strip('"').lower()
    if u not in UNIT_FACTOR:
        known = ", ".join(k for k in UNIT_FACTOR if k)
        raise CountersFormatError(f"{where}: unknown unit '{unit.strip()}' (known: {known})")
    if dimension is not None and UNIT_DIMENSION.get(u, "count" if u == "" else None) != dimension:
        noun = {"time": "a time", "bytes": "a byte count", "count": "a count"}.get(dimension, dimension)
        shown = f"unit '{unit.strip()}' is not a unit of {dimension}" if u else f"no unit ({noun} needs one)"
        raise CountersFormatError(f"{where}: {shown}: check the export's units (its units row or Metric Unit "
                                  "column)")
    return UNIT_FACTOR[u]


#: A multiplexed event the model uses that ran less than this share (percent) of the run is refused: more than
#: 90% of its count would be the tool's extrapolation (perf's scaled counts, likwid's groups; docs/counters.md).
MIN_RUNNING_PCT = 10.0

#: bytes per cache line, for counters that count lines (LLC misses, CAS commands)
LINE_BYTES = 64.0
#: Intel's FP_ARITH_INST_RETIRED widths: (width, DP flops, SP flops per instruction), as perf and likwid name them
FP_ARITH_WIDTHS = (("scalar", 1.0, 1.0), ("128b_packed", 2.0, 4.0), ("256b_packed", 4.0, 8.0),
                   ("512b_packed", 8.0, 16.0))


def read_lines(path: Path, what: str, lines: bool = False) -> list[str]:
    """The file's lines (through the one input boundary), kept with their numbers by the callers; ``lines``: a
    line-oriented export must end with a newline, else its last line was cut off."""
    try:
        text = read_text(path, error=CountersFormatError, what=what, lines=lines)
    except CountersFormatError:
        try:
            with open(path, "rb") as f:
                utf16 = f.read(2) in (b"\xff\xfe", b"\xfe\xff")
        except OSError:
            utf16 = False
        if utf16:                # Windows' "Unicode" save: not binary, but not what the readers take
            raise CountersFormatError(f"{what} {show_path(path)} is UTF-16 text (its byte-order mark says so): "
                                      "re-save it as UTF-8") from None
        raise
    return text.splitlines()


def csv_rows(lines: list[str], delimiter: str = ",") -> list[list[str]]:
    """Each line parsed as one CSV record (quotes honoured), so that row k is line k + 1 of the file."""
    return [next(csv.reader([ln], delimiter=delimiter), []) for ln in lines]


def show_path(path: Path) -> str:
    from archline.common.outputs import show

    return show(path)
