"""likwid-perfctr CSV output (``likwid-perfctr -O``, optionally ``-o FILE.csv``): a ``STRUCT,Info`` block, then per
group (and per region with the marker API) a ``TABLE,Group N Raw,GROUP,ROWS`` table (header ``Event,Counter,
HWThread 0,...``), optionally its ``Raw STAT`` table, and a ``TABLE,Group N Metric,GROUP,ROWS`` table (header
``Metric,HWThread 0,...``); a marker region's Raw table starts with its ``Region Info`` block (RDTSC Runtime [s],
call count). Events are summed over the hardware threads; ``Runtime (RDTSC) [s]`` is the time.

Rules (likwid's own group formulas):

    flops_dp   FP_ARITH_INST_RETIRED_SCALAR_DOUBLE x 1, _128B_PACKED_DOUBLE x 2, _256B_ x 4, _512B_ x 8 (Intel)
    flops_sp   _SCALAR_SINGLE x 1, _128B_PACKED_SINGLE x 4, _256B_ x 8, _512B_ x 16
               AMD RETIRED_SSE_AVX_FLOPS_ALL: flops of the group's precision (FLOPS_DP or FLOPS_SP)
    bytes_mem  CAS_COUNT_RD + CAS_COUNT_WR (Intel MBOX*) or DRAM_CHANNEL_* (AMD DFC*) x 64 B; else the Metric
               table's "Memory data volume [GBytes]" x 1e9
    time_s     the Metric table's "Runtime (RDTSC) [s]" (the largest over the threads)

Several groups are measured one after the other (likwid multiplexes groups): each group's counts cover only its
own runtime and are scaled by (sum of the groups' runtimes) / (its runtime), and flagged as estimates.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from archline.fit.io.counters.base import CountersFormatError, Counts, csv_rows, number, read_lines

LINE_BYTES = 64.0
FLOP_EVENTS: dict[str, tuple[str, float]] = {}
for _w, _dp, _sp in (("SCALAR", 1.0, 1.0), ("128B_PACKED", 2.0, 4.0), ("256B_PACKED", 4.0, 8.0),
                     ("512B_PACKED", 8.0, 16.0)):
    FLOP_EVENTS[f"FP_ARITH_INST_RETIRED_{_w}_DOUBLE"] = ("flops_dp", _dp)
    FLOP_EVENTS[f"FP_ARITH_INST_RETIRED_{_w}_SINGLE"] = ("flops_sp", _sp)
AMD_FLOPS = "RETIRED_SSE_AVX_FLOPS_ALL"
DRAM = re.compile(r"CAS_COUNT_(RD|WR)|DRAM_CHANNEL_\d+")
RUNTIME = "Runtime (RDTSC) [s]"
VOLUME = "Memory data volume [GBytes]"
_TABLE = re.compile(r"TABLE,(?:Region (?P<region>[^,]*),)?Group (?P<g>\d+) (?P<kind>Raw STAT|Raw|Metric STAT|Metric),"
                    r"(?P<group>[^,]*),(?P<rows>\d+)")


@dataclass
class _Group:
    region: str
    number: int
    name: str
    events: dict[str, float] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    runtime_s: float | None = None


def _table(rows: list[list[str]], start: int, n: int, where: str, what: str) -> list[tuple[int, list[str]]]:
    """The ``n`` data rows after a TABLE line and its header, with their line numbers."""
    out = []
    for k in range(start + 2, start + 2 + n):
        if k >= len(rows) or not rows[k] or rows[k][0].startswith(("TABLE", "STRUCT")):
            raise CountersFormatError(f"{where}: line {start + 1}: the {what} table announces {n} rows, the file "
                                      f"has {k - start - 2} (cut off?)")
        out.append((k + 1, [x.strip() for x in rows[k]]))
    return out


def read(path: Path) -> list[Counts]:
    where = str(path)
    lines = read_lines(path, "likwid-perfctr output")
    rows = csv_rows(lines)
    groups: dict[tuple[str, int], _Group] = {}
    for i, ln in enumerate(lines):
        m = _TABLE.match(ln.strip())
        if not m or m["kind"].endswith("STAT"):
            continue
        key = (m["region"] or "", int(m["g"]))
        g = groups.setdefault(key, _Group(key[0], key[1], m["group"]))
        if m["kind"] == "Raw" and i + 3 < len(rows) and rows[i + 1][:1] == ["Region Info"]:
            # marker API: a region's info block (Region Info / RDTSC Runtime [s] / call count) before the events
            info = [x.strip() for x in rows[i + 2]]
            g.runtime_s = max((number(v, f"{where}: line {i + 3}: {info[0]}") for v in info[1:] if v), default=None)
            i += 3
        head = [x.strip() for x in rows[i + 1]] if i + 1 < len(rows) else []
        threads = [j for j, h in enumerate(head) if h.startswith("HWThread")]
        first = "Event" if m["kind"] == "Raw" else "Metric"
        if not head or head[0] != first or not threads:
            raise CountersFormatError(f"{where}: line {i + 2}: expected the header '{first},"
                                      f"{'Counter,' if first == 'Event' else ''}HWThread 0,...' under the TABLE line")
        for k, r in _table(rows, i, int(m["rows"]), where, m["kind"]):
            vals = [number(r[j], f"{where}: line {k}: {r[0]}, {head[j]}") for j in threads if j < len(r) and r[j]]
            if m["kind"] == "Raw":
                if r[0] == RUNTIME:
                    g.runtime_s = max(vals, default=0.0)
                else:
                    g.events[r[0]] = g.events.get(r[0], 0.0) + sum(vals)
            elif r[0] == RUNTIME:
                g.runtime_s = max(vals, default=0.0)
            else:
                g.metrics[r[0]] = sum(vals)
    if not groups:
        raise CountersFormatError(f"{where}: no 'TABLE,Group N Raw,...' table: give likwid-perfctr -O output "
                                  "(CSV), not its text tables")
    by_region: dict[str, list[_Group]] = {}
    for g in groups.values():
        by_region.setdefault(g.region, []).append(g)
    return [_counts(region or "program", gs, path) for region, gs in by_region.items()]


def _counts(name: str, groups: list[_Group], path: Path) -> Counts:
    c = Counts(name, {}, source=f"likwid-perfctr {path}")
    times = [g.runtime_s for g in groups if g.runtime_s is not None]
    total_s = sum(times) if len(groups) > 1 and len(times) == len(groups) else None
    for g in groups:
        scale = 1.0
        if total_s is not None and g.runtime_s:
            scale = total_s / g.runtime_s
            c.scaled = True
            c.note(f"group {g.name} ran {g.runtime_s:.6g} s of {total_s:.6g} s: its counts scaled by {scale:.4g}")
        elif len(groups) > 1:
            c.note(f"group {g.name}: no runtime, so its counts cover only the part of the run it was measured")
        for ev, v in g.events.items():
            c.raw[f"{g.name}:{ev}"] = v
            if ev in FLOP_EVENTS:
                col, per = FLOP_EVENTS[ev]
                c.add(col, v * per * scale)
            elif ev == AMD_FLOPS:
                col = "flops_sp" if g.name.upper().endswith("_SP") else "flops_dp"
                c.add(col, v * scale)
                c.note(f"{AMD_FLOPS} counted as {col} (the precision of group {g.name})")
        dram = [v for ev, v in g.events.items() if DRAM.fullmatch(ev)]
        if dram:
            c.add("bytes_mem", sum(dram) * LINE_BYTES * scale)
            c.note(f"bytes_mem = memory-controller events of group {g.name} x 64 B")
        elif VOLUME in g.metrics:
            c.add("bytes_mem", g.metrics[VOLUME] * 1e9 * scale)
            c.note(f"bytes_mem = '{VOLUME}' of group {g.name} x 1e9")
    c.time_s = total_s if total_s is not None else (times[0] if times else None)
    if c.time_s is None:
        c.note(f"no '{RUNTIME}' row: no measured time")
    if not c.counts:
        raise CountersFormatError(f"{path}: region '{name}': no event archline reads (groups "
                                  f"{', '.join(g.name for g in groups)}); measure FLOPS_DP, FLOPS_SP or MEM")
    if not any(k.startswith("flops") for k in c.counts):
        c.note("no flop event (FLOPS_DP / FLOPS_SP group): flops not counted")
    if "bytes_mem" not in c.counts:
        c.note("no memory event (MEM group): DRAM bytes not counted, so a prediction leaves out the DRAM term")
    return c
