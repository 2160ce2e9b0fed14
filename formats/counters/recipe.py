"""The thesis's counter recipe (S1 §6.2; seed_tables T14): hardware counter events -> the operation and byte
counts of `archline predict` (flops_sp, int_ops, bytes_l1, bytes_shared, bytes_l2, bytes_mem).

    bytes from L1              l1_global_load_hit x 128 B (the L1 line)
    bytes from shared memory   l1_shared_load_transactions x 128 B ("calculated similarly")
    bytes hit in L2            sum of l2_subpN_read_l1_hit_sectors x 32 B (a sector)
    bytes read from DRAM       sum of fb_subpN_read_sectors x 32 B
    L2 requests (L1 misses)    l2_subpN_total_read_sector_queries x 32 B: served by L2 or DRAM, so a check on
                               the two lines above, not charged again (each byte is charged once, at the level
                               that served it, S1 §4.4.2)
    instructions               read directly: flop_count_sp_fma (x 2 flops), flop_count_sp_add, _mul, or
                               flop_count_sp; inst_integer

The thesis names the write counters (gst_request, l2_subp0_total_write_sector_queries,
l1_shared_store_transactions) but not how it turns them into bytes (model.md §13 item 11). archline charges
l2_subpN_total_write_sector_queries x 32 B to DRAM (eps_mem averages reads and writes) and
l1_shared_store_transactions x 128 B to shared memory, and reads gst_request without charging it (it counts
warp requests, whose bytes the L2 write sectors already hold). Two forms are read: an ``nvprof --csv --events``
export (one row per kernel and event; ``--metrics`` sections in the same file are read too), or a CSV with one
row per kernel and the counter names as columns (with name, time_s and clock columns as for `predict`).
"""

from __future__ import annotations

import csv
import re
from collections.abc import Sequence

from archline.model.errors import ArchlineFitError

LINE_BYTES = 128.0          # L1 line (S1 §6.2)
SECTOR_BYTES = 32.0         # L2 / DRAM sector (S1 §6.2)

#: counter (regex, full match) -> (count column it adds to, units per count); "" = read, not charged.
RECIPE: list[tuple[str, str, float]] = [
    (r"l1_global_load_hit", "bytes_l1", LINE_BYTES),
    (r"l1_shared_load_transactions", "bytes_shared", LINE_BYTES),
    (r"l1_shared_store_transactions", "bytes_shared", LINE_BYTES),
    (r"l2_subp\d+_read_l1_hit_sectors", "bytes_l2", SECTOR_BYTES),
    (r"fb_subp\d+_read_sectors", "bytes_mem", SECTOR_BYTES),
    (r"l2_subp\d+_total_write_sector_queries", "bytes_mem", SECTOR_BYTES),
    (r"l2_subp\d+_total_read_sector_queries", "", SECTOR_BYTES),
    (r"gst_request", "", 0.0),
    (r"flop_count_sp_fma", "flops_sp", 2.0),
    (r"flop_count_sp_add", "flops_sp", 1.0),
    (r"flop_count_sp_mul", "flops_sp", 1.0),
    (r"flop_count_sp", "flops_sp", 1.0),
    (r"flop_count_dp_fma", "flops_dp", 2.0),
    (r"flop_count_dp_add", "flops_dp", 1.0),
    (r"flop_count_dp_mul", "flops_dp", 1.0),
    (r"flop_count_dp", "flops_dp", 1.0),
    (r"inst_integer", "int_ops", 1.0),
]
_COMPILED = [(re.compile(p), col, scale) for p, col, scale in RECIPE]
_SPLIT = {"flops_sp": ("flop_count_sp_fma", "flop_count_sp_add", "flop_count_sp_mul"),
          "flops_dp": ("flop_count_dp_fma", "flop_count_dp_add", "flop_count_dp_mul")}


class CounterRecipeError(ArchlineFitError):
    pass


def rule(counter: str) -> tuple[str, float] | None:
    """(column, units per count) of a recipe counter, or None if the recipe does not know it."""
    for pat, col, scale in _COMPILED:
        if pat.fullmatch(counter):
            return col, scale
    return None


def is_recipe_counter(name: str) -> bool:
    return rule(name) is not None


def counts_from_counters(counters: dict[str, float], where: str) -> tuple[dict[str, float], list[str]]:
    """Apply the recipe to one kernel's counter totals. Returns (counts, notes); the notes carry the L2 check."""
    for col, parts in _SPLIT.items():
        total = col.replace("flops", "flop_count")
        if total in counters and any(p in counters for p in parts):
            raise CounterRecipeError(f"{where}: {total} and its parts ({', '.join(parts)}) both given: the flops "
                                     "would be counted twice; give one or the other")
    out: dict[str, float] = {}
    requested = 0.0
    notes: list[str] = []
    for name, n in counters.items():
        r = rule(name)
        if r is None:
            raise CounterRecipeError(f"{where}: unknown counter '{name}' (the thesis recipe reads: "
                                     f"{', '.join(p.replace(chr(92) + 'd+', 'N') for p, _, _ in RECIPE)})")
        col, scale = r
        if col:
            out[col] = out.get(col, 0.0) + n * scale
        elif name.endswith("total_read_sector_queries"):
            requested += n * scale
    if requested:
        served = out.get("bytes_l2", 0.0) + sum(n * SECTOR_BYTES for k, n in counters.items()
                                                if re.fullmatch(r"fb_subp\d+_read_sectors", k))
        notes.append(f"L1 misses requested {requested:.6g} B from L2; L2 hits + DRAM reads served {served:.6g} B")
    return out, notes


def read_events_export(lines: Sequence[str], where: str) -> dict[str, dict[str, float]]:
    """nvprof --csv --events / --metrics export (possibly both sections): kernel -> counter -> total."""
    out: dict[str, dict[str, float]] = {}
    header: list[str] | None = None
    for k, row in enumerate(csv.reader(lines), start=1):
        if not row:
            continue
        if "Event Name" in row or "Metric Name" in row:
            header = [c.strip() for c in row]
            continue
        if header is None:
            raise CounterRecipeError(f"{where}: line {k}: data before an nvprof header (Event Name or Metric Name)")
        rec = dict(zip(header, (c.strip() for c in row), strict=False))
        name = rec.get("Event Name") or rec.get("Metric Name") or ""
        kernel = rec.get("Kernel") or "kernel"
        try:
            if rec.get("Total"):
                total = float(rec["Total"].replace(",", ""))
            else:
                total = float((rec.get("Avg") or "").replace(",", "")) * float(rec.get("Invocations") or "1")
        except ValueError:
            raise CounterRecipeError(f"{where}: line {k}: counter '{name}' has no number in Total or Avg "
                                     "x Invocations") from None
        if total < 0:
            raise CounterRecipeError(f"{where}: line {k}: counter '{name}' is negative ({total:g})")
        if rule(name) is None:
            if "Metric Name" in header:
                continue      # metrics the recipe does not read (rates, efficiencies) are left out
            raise CounterRecipeError(f"{where}: line {k}: unknown counter '{name}' for the thesis recipe")
        counters = out.setdefault(kernel, {})
        counters[name] = counters.get(name, 0.0) + total
    if not out:
        raise CounterRecipeError(f"{where}: no counter rows")
    return out
