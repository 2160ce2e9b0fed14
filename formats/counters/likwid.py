"""likwid-perfctr output, both forms:

* CSV (``likwid-perfctr -O``, optionally ``-o FILE.csv``): a ``STRUCT,Info`` block, then per group (and per region
  with the marker API) a ``TABLE,Group N Raw,GROUP,ROWS`` table (header ``Event,Counter,HWThread 0,...``),
  optionally its ``Raw STAT`` table, and a ``TABLE,Group N Metric,GROUP,ROWS`` table (header ``Metric,HWThread
  0,...``); a marker region's Raw table starts with its ``Region Info`` block (RDTSC Runtime [s], call count).
* the plain text tables (what likwid-perfctr prints, and what people paste in issues and logs): ``Group N: GROUP``
  or ``Region R, Group N: GROUP``, then ``| Region Info |``, ``| Event | Counter | HWThread 0 |`` and ``| Metric |
  HWThread 0 |`` tables drawn with ``+---+`` rules; the ``STAT`` tables (Sum, Min, Max, Avg) are skipped.

Columns may be named ``HWThread N`` (likwid 5), ``Core N`` (likwid 4) or ``GPU N`` (NVIDIA groups: no event
archline reads, so such a region is left out and said so). Events are summed over the columns; ``Runtime (RDTSC)
[s]`` (the largest over the threads) is the time, from the place that prints it with the most digits (a marker
region's Region Info, the Event table's row or the Metric table's: each rounds it its own way).

Rules (likwid's own group formulas):

    flops_dp   FP_ARITH_INST_RETIRED_SCALAR_DOUBLE x 1, _128B_PACKED_DOUBLE x 2, _256B_ x 4, _512B_ x 8 (Intel)
    flops_sp   _SCALAR_SINGLE x 1, _128B_PACKED_SINGLE x 4, _256B_ x 8, _512B_ x 16
               AMD RETIRED_SSE_AVX_FLOPS_ALL: flops of the group's precision (FLOPS_DP/MEM_DP or FLOPS_SP/MEM_SP)
    bytes_mem  CAS_COUNT_RD + CAS_COUNT_WR (Intel MBOX*) or DRAM_CHANNEL_* (AMD DFC*) x 64 B; else the Metric
               table's "Memory data volume [GBytes]" x 1e9
    time_s     "Runtime (RDTSC) [s]" / "RDTSC Runtime [s]" (the largest over the threads; see above)
    energy_j   PWR_PKG_ENERGY (+ PWR_DRAM_ENERGY), Joules (RAPL, the ENERGY group): the whole package(s), every
               process on them; PWR_PLATFORM_ENERGY only without PWR_PKG_ENERGY; PWR_DRAM_ENERGY alone is not
               the package's and is not used (said so); PWR_PP0/PP1_ENERGY lie inside the package

Several groups in one run are measured one after the other (likwid multiplexes groups): each group's counts
cover only its own runtime and are scaled by (sum of the groups' runtimes) / (its runtime), and flagged as
estimates: as perf's multiplexed counts, a group that ran a share f of the time gives its counts an uncertainty
of +-(1 - f), and one that ran under MIN_RUNNING_PCT % of the time is refused.
Several runs in one file (a group number of a region seen again: ``likwid-perfctr`` run once per group, its
outputs concatenated) each measured the whole region: a count is the mean over the runs that counted it, the time
(and energy) the mean of theirs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from archline.formats.counters.base import (
    FP_ARITH_WIDTHS,
    LINE_BYTES,
    MIN_RUNNING_PCT,
    CountersFormatError,
    Counts,
    csv_rows,
    number,
    read_lines,
)

FLOP_EVENTS: dict[str, tuple[str, float]] = {}
for _w, _dp, _sp in FP_ARITH_WIDTHS:
    FLOP_EVENTS[f"FP_ARITH_INST_RETIRED_{_w.upper()}_DOUBLE"] = ("flops_dp", _dp)
    FLOP_EVENTS[f"FP_ARITH_INST_RETIRED_{_w.upper()}_SINGLE"] = ("flops_sp", _sp)
AMD_FLOPS = "RETIRED_SSE_AVX_FLOPS_ALL"
DRAM = re.compile(r"CAS_COUNT_(RD|WR)|DRAM_CHANNEL_\d+|DRAM_(READS|WRITES)")
RUNTIME = "Runtime (RDTSC) [s]"
ENERGY_PKG, ENERGY_DRAM, ENERGY_PLATFORM = "PWR_PKG_ENERGY", "PWR_DRAM_ENERGY", "PWR_PLATFORM_ENERGY"
_MANTISSA = re.compile(r"[-+]?0*\.?0*(?P<d>[\d.]*)")
VOLUME = "Memory data volume [GBytes]"
_TABLE = re.compile(r"TABLE,(?:Region (?P<region>[^,]*),)?Group (?P<g>\d+) (?P<kind>Raw STAT|Raw|Metric STAT|Metric),"
                    r"(?P<group>[^,]*),(?P<rows>\d+)")


class _NothingRead(CountersFormatError):
    """A region or run with no event archline reads (left out while another one has some)."""


@dataclass
class _Group:
    region: str
    number: int
    name: str
    events: dict[str, float] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    runtime_s: float | None = None
    runtime_digits: int = -1                         # significant digits of the runtime given (-1: none yet)
    run: int = 0                                     # which likwid-perfctr run of the file
    unmeasured: list[str] = field(default_factory=list)   # '-' cells: likwid could not read that counter

    def runtime(self, vals: list[float], cells: list[str]) -> None:
        """The group's runtime, kept from the place that printed it with the most digits: likwid prints it in the
        Region Info, the Event table and the Metric table, each rounded its own way (0.0014 beside 1.400006e-03)."""
        m = (_MANTISSA.match(c.lower().split("e")[0]) for c in cells)
        digits = max((len(x["d"].replace(".", "")) for x in m if x), default=0)
        if digits > self.runtime_digits:
            self.runtime_s, self.runtime_digits = max(vals, default=0.0), digits


#: the columns of one measured unit: likwid 5 "HWThread N", likwid 4 "Core N", NVIDIA groups "GPU N"
_COLUMN = ("HWThread", "Core ", "GPU ")
_PLAIN_GROUP = re.compile(r"(?:Region (?P<region>.*), )?Group (?P<g>\d+): (?P<group>\S+)")


def _columns(head: list[str]) -> list[int]:
    return [j for j, h in enumerate(head) if h.startswith(_COLUMN)]


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
    if any(_TABLE.match(ln.strip()) for ln in lines):
        groups = _read_csv(lines, where)
    else:
        groups = _read_plain(lines, where)
    if not groups:
        raise CountersFormatError(f"{where}: no likwid-perfctr table: neither -O's 'TABLE,Group N Raw,...' nor "
                                  "the text form's 'Group N: GROUP' with its '| Event | Counter |' table")
    by_region: dict[str, list[_Group]] = {}
    for g in groups:
        by_region.setdefault(g.region, []).append(g)
    found: list[Counts] = []
    left_out: dict[str, str] = {}
    for region, gs in by_region.items():
        try:
            found.append(_runs(region or "program", gs, path))
        except _NothingRead:
            left_out[region or "program"] = _what_it_had(gs)
    if not found:
        regions = ", ".join(f"'{r}'" for r in left_out)
        raise CountersFormatError(f"{path}: no event archline reads in {'region' if len(left_out) == 1 else 'regions'}"
                                  f" {regions} (they have {'; '.join(dict.fromkeys(left_out.values()))}); "
                                  "measure FLOPS_DP, FLOPS_SP, MEM_DP or MEM")
    for c in found:
        for r, had in left_out.items():
            c.note(f"region '{r}' left out: no event archline reads ({had})")
    return found


def _what_it_had(groups: list[_Group]) -> str:
    names = list(dict.fromkeys(e for g in groups for e in g.events))
    if not names:
        return f"group {', '.join(dict.fromkeys(g.name for g in groups))}: no event rows (cut off?)"
    return (f"group {', '.join(dict.fromkeys(g.name for g in groups))}: " + ", ".join(names[:3])
            + (" ..." if len(names) > 3 else ""))


def _numbers(r: list[str], cols: list[int], where: str, strict: bool,
             g: _Group | None = None) -> list[float] | None:
    """The row's values in the thread columns; a metric likwid could not compute ('nan', '-') is None. An event
    cell '-' (likwid >= 4.3: the counter was not measured) is left out and named in the group's ``unmeasured``."""
    out = []
    for j in cols:
        if j >= len(r) or not r[j]:
            continue
        if r[j] == "-" and strict and g is not None:
            if r[0] not in g.unmeasured:
                g.unmeasured.append(r[0])
            continue
        try:
            out.append(number(r[j], where))
        except CountersFormatError:
            if strict:
                raise
            return None
    return out


def _new_run(seen: set[tuple[str, int]], key: tuple[str, int], run: int) -> int:
    """A (region, group number) seen again starts the next run of likwid-perfctr in the file."""
    if key in seen:
        seen.clear()
        run += 1
    seen.add(key)
    return run


def _read_csv(lines: list[str], where: str) -> list[_Group]:
    rows = csv_rows(lines)
    groups: list[_Group] = []
    current: dict[tuple[str, int], _Group] = {}
    seen: set[tuple[str, int]] = set()
    run = 0
    for i, ln in enumerate(lines):
        m = _TABLE.match(ln.strip())
        if not m or m["kind"].endswith("STAT"):
            continue
        key = (m["region"] or "", int(m["g"]))
        if m["kind"] == "Raw":
            run = _new_run(seen, key, run)
            current[key] = _Group(key[0], key[1], m["group"], run=run)
            groups.append(current[key])
        g = current.get(key)
        if g is None:
            raise CountersFormatError(f"{where}: line {i + 1}: a Metric table before its group's Raw table")
        if m["kind"] == "Raw" and i + 3 < len(rows) and rows[i + 1][:1] == ["Region Info"]:
            # marker API: a region's info block (Region Info / RDTSC Runtime [s] / call count) before the events
            info = [x.strip() for x in rows[i + 2]]
            g.runtime([number(v, f"{where}: line {i + 3}: {info[0]}") for v in info[1:] if v], info[1:])
            i += 3
        head = [x.strip() for x in rows[i + 1]] if i + 1 < len(rows) else []
        threads = _columns(head)
        first = "Event" if m["kind"] == "Raw" else "Metric"
        if not head or head[0] != first or not threads:
            raise CountersFormatError(f"{where}: line {i + 2}: expected the header '{first},"
                                      f"{'Counter,' if first == 'Event' else ''}HWThread 0,...' under the TABLE line")
        for k, r in _table(rows, i, int(m["rows"]), where, m["kind"]):
            vals = _numbers(r, threads, f"{where}: line {k}: {r[0]}", strict=m["kind"] == "Raw", g=g)
            if vals is None:
                continue
            if r[0] == RUNTIME:
                g.runtime(vals, [r[j] for j in threads if j < len(r)])
            elif m["kind"] == "Raw":
                g.events[r[0]] = g.events.get(r[0], 0.0) + sum(vals)
            else:
                g.metrics[r[0]] = sum(vals)
    return groups


def _read_plain(lines: list[str], where: str) -> list[_Group]:
    groups: list[_Group] = []
    seen: set[tuple[str, int]] = set()
    run = 0
    g: _Group | None = None
    head: list[str] = []
    for k, ln in enumerate(lines, start=1):
        s = ln.strip()
        m = _PLAIN_GROUP.fullmatch(s)
        if m:
            key = (m["region"] or "", int(m["g"]))
            run = _new_run(seen, key, run)
            g = _Group(key[0], key[1], m["group"], run=run)
            groups.append(g)
            head = []
            continue
        if g is None or not s.startswith("|"):
            continue
        cells = [c.strip() for c in s.strip("|").split("|")]
        if cells[0] in ("Region Info", "Event", "Metric"):
            head = cells                                   # a STAT table's header has no thread column
            continue
        threads = _columns(head)
        if not threads:
            continue
        vals = _numbers(cells, threads, f"{where}: line {k}: {cells[0]}", strict=head[0] == "Event", g=g)
        if vals is None:
            continue
        if head[0] == "Region Info":
            if cells[0] == "RDTSC Runtime [s]":
                g.runtime(vals, [cells[j] for j in threads if j < len(cells)])
        elif cells[0] == RUNTIME:
            g.runtime(vals, [cells[j] for j in threads if j < len(cells)])
        elif head[0] == "Event":
            g.events[cells[0]] = g.events.get(cells[0], 0.0) + sum(vals)
        else:
            g.metrics[cells[0]] = sum(vals)
    return groups


def _runs(name: str, groups: list[_Group], path: Path) -> Counts:
    """One region: each run of likwid-perfctr read on its own, then a count is the mean over the runs."""
    runs: dict[int, list[_Group]] = {}
    for g in groups:
        runs.setdefault(g.run, []).append(g)
    if len(runs) == 1:
        return _counts(name, groups, path)
    parts = []
    for gs in runs.values():
        try:
            parts.append(_counts(name, gs, path))
        except _NothingRead:
            continue                                        # a run of a group archline does not read
    if not parts:
        return _counts(name, groups, path)                  # raises, naming every group
    c = Counts(name, {}, source=parts[0].source, scaled=any(p.scaled for p in parts))
    for col in dict.fromkeys(k for p in parts for k in p.counts):
        have = [p.counts[col] for p in parts if col in p.counts]
        c.add(col, sum(have) / len(have))
    times = [p.time_s for p in parts if p.time_s is not None]
    c.time_s = sum(times) / len(times) if times else None
    c.count_rel_err = max(p.count_rel_err for p in parts)
    energies = [p for p in parts if p.energy_j is not None]
    if energies:
        c.energy_j = sum(p.energy_j for p in energies if p.energy_j is not None) / len(energies)
        c.energy_source = energies[0].energy_source
    for i, p in enumerate(parts):
        c.raw.update({f"run {i + 1}:{k}": v for k, v in p.raw.items()})
        for n in p.notes:
            c.note(n)
    c.note(f"{len(parts)} likwid-perfctr runs in the file: each count is the mean over the runs that counted it, "
           "the time the mean of their times")
    # a run of FLOPS_DP said "no memory event", one of MEM_DP counted it: only what the merge still lacks is said
    stale: tuple[str, ...] = ("no flop event",) if any(k.startswith("flops") for k in c.counts) else ()
    stale += ("no memory event",) if "bytes_mem" in c.counts else ()
    c.notes = [n for n in c.notes if not n.startswith(stale)] if stale else c.notes
    return c


def _counts(name: str, groups: list[_Group], path: Path) -> Counts:
    c = Counts(name, {}, source=f"likwid-perfctr {path}")
    times = [g.runtime_s for g in groups if g.runtime_s is not None]
    total_s = sum(times) if len(groups) > 1 and len(times) == len(groups) else None
    energy: dict[str, float] = {}
    for g in groups:
        scale = 1.0
        if total_s is not None and g.runtime_s:
            scale = total_s / g.runtime_s
            share = g.runtime_s / total_s
            if share * 100.0 < MIN_RUNNING_PCT and _reads(g):
                raise CountersFormatError(f"{path}: region '{name}': group {g.name} ran {g.runtime_s:.6g} s of "
                                          f"{total_s:.6g} s ({100 * share:.2f}%, multiplexed): more than "
                                          f"{100 - MIN_RUNNING_PCT:.0f}% of its counts would be an extrapolation; "
                                          "measure fewer groups at once (docs/counters.md)")
            c.scaled = True
            if _reads(g):
                c.count_rel_err = max(c.count_rel_err, 1.0 - share)
            c.note(f"group {g.name} ran {g.runtime_s:.6g} s of {total_s:.6g} s: its counts scaled by {scale:.4g} "
                   f"(+-{100 * (1.0 - share):.0f}%, 1 - the share it ran)")
        elif len(groups) > 1:
            c.note(f"group {g.name}: no runtime, so its counts cover only the part of the run it was measured")
        if g.unmeasured:
            c.note(f"group {g.name}: {', '.join(g.unmeasured)} not measured on some threads ('-'): those add nothing")
        for ev, v in g.events.items():
            c.raw[f"{g.name}:{ev}"] = v
            if ev in FLOP_EVENTS:
                col, per = FLOP_EVENTS[ev]
                c.add(col, v * per * scale)
            elif ev == AMD_FLOPS:
                col = "flops_sp" if g.name.upper().endswith("_SP") else "flops_dp"
                c.add(col, v * scale)
                c.note(f"{AMD_FLOPS} counted as {col} (the precision of group {g.name})"
                       if g.name.upper().endswith(("_SP", "_DP")) else
                       f"{AMD_FLOPS} in group {g.name}, which names no precision: counted as flops_dp")
            elif ev in (ENERGY_PKG, ENERGY_DRAM, ENERGY_PLATFORM):
                energy[ev] = energy.get(ev, 0.0) + v * scale
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
    _energy(c, energy)
    if not c.counts:
        raise _NothingRead(f"{path}: region '{name}': no event archline reads (groups "
                                  f"{', '.join(g.name for g in groups)}); measure FLOPS_DP, FLOPS_SP or MEM")
    if not any(k.startswith("flops") for k in c.counts):
        c.note("no flop event (FLOPS_DP / FLOPS_SP group): flops not counted")
    if "bytes_mem" not in c.counts:
        c.note("no memory event (MEM group): DRAM bytes not counted, so a prediction leaves out the DRAM term")
    return c


def _reads(g: _Group) -> bool:
    """The group has an event archline turns into a count or an energy."""
    return any(ev in FLOP_EVENTS or ev == AMD_FLOPS or DRAM.fullmatch(ev) or ev.startswith("PWR_")
               for ev in g.events) or VOLUME in g.metrics


def _energy(c: Counts, energy: dict[str, float]) -> None:
    """likwid's RAPL events as the measured energy, perf's rule (formats/counters/perf.py): package + DRAM."""
    if ENERGY_PKG in energy:
        used = [k for k in (ENERGY_PKG, ENERGY_DRAM) if k in energy]
        what = "the whole package(s)" + (" and their DRAM" if ENERGY_DRAM in energy else "")
        if ENERGY_PLATFORM in energy:
            c.note(f"{ENERGY_PLATFORM} ({energy[ENERGY_PLATFORM]:.6g} J) holds the package's: not added")
    elif ENERGY_PLATFORM in energy:
        used, what = [ENERGY_PLATFORM], "the platform (packages, DRAM and more)"
    else:
        if ENERGY_DRAM in energy:
            c.note(f"{ENERGY_DRAM} alone ({energy[ENERGY_DRAM]:.6g} J) is the DRAM's energy, not the package's: not "
                   f"used as the measured energy (measure {ENERGY_PKG} with it)")
        return
    c.energy_j = sum(energy[k] for k in used)
    c.energy_source = f"likwid {' + '.join(used)} (RAPL)"
    c.note(f"measured energy {c.energy_j:.6g} J from {' + '.join(used)} (RAPL: {what}, every process on them, "
           "not the program alone)")
