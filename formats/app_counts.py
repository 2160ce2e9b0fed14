"""The application counts file of ``archline predict`` (S0 §V, S1 Ch. 6; docs/formats.md): one reader for its
three forms, each row a program's operation and byte counts (:class:`CountsRow`):

* a counts CSV: the result columns' count names (``flops_sp``, ``bytes_mem``, ...), with optional ``name``,
  ``time_s`` and DVFS setting columns (``core_mhz``, ``mem_mhz``, ``core_v``, ``mem_v``);
* an ``nvprof --csv --metrics`` export (one row per kernel and metric; counts = Avg x Invocations);
* hardware counters for the thesis recipe (an ``nvprof --events`` export, or counter names as columns), turned into
  counts by :mod:`archline.formats.counters.recipe`.

The file has no version of its own; every problem is one line naming the file and the line."""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path

from archline.common.files import read_text
from archline.formats.counters import recipe as cr
from archline.model.errors import ArchlineFitError
from archline.model.hierarchy import COUNT_TO_COST


class CountsFormatError(ArchlineFitError):
    pass


#: Columns that describe a row rather than count work.
META_COLUMNS = ("name", "kernel", "setting", "time_s", "core_mhz", "mem_mhz", "core_v", "mem_v", "precision")

#: nvprof ``--metrics`` names (long-form CSV export) -> (result column, bytes or ops per unit).
#: Transactions are 32 B (DRAM/L2 sectors on Kepler/Maxwell); shared-memory transactions are taken as 128 B
#: (one warp-wide 4-byte access). The thesis does not state its multipliers (model.md §13 item 11).
NVPROF_METRICS: dict[str, tuple[str, float]] = {
    "flop_count_sp": ("flops_sp", 1.0), "flop_count_dp": ("flops_dp", 1.0),
    "inst_integer": ("int_ops", 1.0),
    "dram_read_transactions": ("bytes_mem", 32.0), "dram_write_transactions": ("bytes_mem", 32.0),
    "dram_read_bytes": ("bytes_mem", 1.0), "dram_write_bytes": ("bytes_mem", 1.0),
    "l2_read_transactions": ("bytes_l2", 32.0), "l2_write_transactions": ("bytes_l2", 32.0),
    "shared_load_transactions": ("bytes_shared", 128.0), "shared_store_transactions": ("bytes_shared", 128.0),
    "l1_cache_global_hit_rate": ("", 0.0),
}


@dataclass
class CountsRow:
    name: str
    counts: dict[str, float]
    time_s: float | None = None
    setting: dict[str, float] = field(default_factory=dict)   # core_mhz, mem_mhz, core_v, mem_v (any subset)
    notes: list[str] = field(default_factory=list)            # how the counts were derived (counter recipe)


def _float(x: str, where: str) -> float:
    try:
        v = float(x)
    except ValueError:
        raise CountsFormatError(f"{where}: expected a number, got '{x}'") from None
    if not math.isfinite(v) or v < 0:
        raise CountsFormatError(f"{where}: expected a finite non-negative number, got '{x}'")
    return v


def _time(x: str, where: str) -> float:
    """A measured time_s: a positive number (a program takes time; 0 would make its power infinite)."""
    v = _float(x, where)
    if v <= 0:
        raise CountsFormatError(f"{where}: must be positive (a measured time), got '{x}'")
    return v


def _read_nvprof(rows: list[dict[str, str]], path: Path) -> list[CountsRow]:
    """nvprof --csv --metrics ... export: one row per (kernel, metric); counts = Avg * Invocations."""
    out: dict[str, CountsRow] = {}
    for k, r in enumerate(rows, start=2):
        metric = (r.get("Metric Name") or "").strip()
        kernel = (r.get("Kernel") or "kernel").strip()
        if metric not in NVPROF_METRICS:
            raise CountsFormatError(f"{path}: line {k}: unknown nvprof metric '{metric}' "
                                    f"(known: {', '.join(sorted(NVPROF_METRICS))})")
        column, scale = NVPROF_METRICS[metric]
        if not column:
            continue
        calls = _float(r.get("Invocations") or "1", f"{path}: line {k}: Invocations")
        avg = _float((r.get("Avg") or "").replace(",", ""), f"{path}: line {k}: Avg")
        row = out.setdefault(kernel, CountsRow(kernel, {}))
        row.counts[column] = row.counts.get(column, 0.0) + avg * calls * scale
    return list(out.values())


RECIPE_NOTE = "counts from hardware counters by the thesis recipe (S1 §6.2)"


def _read_recipe_events(lines: list[str], path: Path) -> list[CountsRow]:
    out = []
    for kernel, counters in cr.read_events_export(lines, str(path)).items():
        counts, notes = cr.counts_from_counters(counters, f"{path}: kernel '{kernel}'")
        out.append(CountsRow(kernel, counts, notes=[RECIPE_NOTE, *notes]))
    return out


def _read_recipe_wide(fields: list[str], rows: list[dict[str, str]], path: Path) -> list[CountsRow]:
    """One row per kernel, counter names as columns, with the meta columns of a counts file."""
    unknown = [f for f in fields if not cr.is_recipe_counter(f) and f not in META_COLUMNS]
    if unknown:
        raise CountsFormatError(f"{path}: column '{unknown[0]}' is neither a counter of the thesis recipe nor one "
                                f"of {', '.join(META_COLUMNS)}")
    out: list[CountsRow] = []
    for k, raw in enumerate(rows, start=2):
        r = {(a or "").strip(): (b or "").strip() for a, b in raw.items()}
        name = r.get("name") or r.get("kernel") or f"row{k - 1}"
        counters = {c: _float(r[c], f"{path}: line {k}: {c}") for c in fields if cr.is_recipe_counter(c) and r.get(c)}
        counts, notes = cr.counts_from_counters(counters, f"{path}: line {k}")
        t = _time(r["time_s"], f"{path}: line {k}: time_s") if r.get("time_s") else None
        setting = {c: _float(r[c], f"{path}: line {k}: {c}")
                   for c in ("core_mhz", "mem_mhz", "core_v", "mem_v") if r.get(c)}
        out.append(CountsRow(name, counts, t, setting, [RECIPE_NOTE, *notes]))
    if not out:
        raise CountsFormatError(f"{path}: no data rows")
    return out


def read_counts(path: Path) -> list[CountsRow]:
    """A counts CSV (result-column names; optional name, time_s and DVFS setting columns), an nvprof --metrics
    export, or hardware counters for the thesis recipe (an nvprof --events export, or counter-name columns)."""
    text = read_text(path, error=CountsFormatError, what="counts file", lines=True)
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith(("#", "=="))]
    reader = csv.DictReader(lines)
    fields = [f.strip() for f in (reader.fieldnames or [])]
    if not fields:
        raise CountsFormatError(f"{path}: empty counts file")
    twice = sorted({f for f in fields if fields.count(f) > 1})
    if twice:
        raise CountsFormatError(f"{path}: column '{twice[0]}' appears more than once: which one is meant?")
    rows = list(reader)
    if "Event Name" in text:
        return _read_recipe_events(lines, path)
    if "Metric Name" in fields:
        return _read_nvprof(rows, path)
    if any(cr.is_recipe_counter(f) for f in fields):
        return _read_recipe_wide(fields, rows, path)
    unknown = [f for f in fields if f not in COUNT_TO_COST and f not in META_COLUMNS]
    if unknown:
        raise CountsFormatError(
            f"{path}: unknown column(s) {', '.join(unknown)} (counts: {', '.join(COUNT_TO_COST)}; "
            f"others: {', '.join(META_COLUMNS)})")
    if not any(f in COUNT_TO_COST for f in fields):
        raise CountsFormatError(f"{path}: no count column (need one of {', '.join(COUNT_TO_COST)})")
    out: list[CountsRow] = []
    for k, raw in enumerate(rows, start=2):
        r = {(a or "").strip(): (b or "").strip() for a, b in raw.items()}
        name = r.get("name") or r.get("kernel") or r.get("setting") or f"row{k - 1}"
        counts = {c: _float(r[c], f"{path}: line {k}: {c}") for c in COUNT_TO_COST if r.get(c)}
        t = _time(r["time_s"], f"{path}: line {k}: time_s") if r.get("time_s") else None
        setting = {c: _float(r[c], f"{path}: line {k}: {c}")
                   for c in ("core_mhz", "mem_mhz", "core_v", "mem_v") if r.get(c)}
        out.append(CountsRow(name, counts, t, setting))
    if not out:
        raise CountsFormatError(f"{path}: no data rows")
    return out
