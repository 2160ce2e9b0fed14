"""``perf stat -x,`` output (perf-stat(1), "CSV FORMAT"): one line per event,

    [interval time,] [aggregation id, [cpu count,]] counter value, unit, event name, [cgroup,] [variance %,]
    counter run time, % of measurement time, [metric value, metric unit]

The separator is what ``-x`` named (a comma, or a tab: a line with a tab is split on tabs). The leading columns:
``-I`` puts the interval's end time first; ``-A`` (``--no-aggr``) a ``CPUn`` id; ``--per-core``/``--per-die``/
``--per-socket``/``--per-node`` an ``S0-D0-C0``/``S0-D0``/``S0``/``N0`` id and the number of CPUs in it;
``--per-thread`` the thread's ``comm-pid``; ``-G`` the cgroup's name after the event. A line with neither value
nor event (a second metric of the line above) is skipped. Every line of an event is summed: over the intervals
(each interval's count covers only that interval), the CPUs, cores, sockets, threads and cgroups. Files of perf
3.x (``value,event`` or ``value,unit,event``, no run time or percentage) are read too; whether those were
multiplexed cannot be told.

``<not counted>`` and ``<not supported>`` values are events without a count (their term is left out and said so).

Multiplexing: a percentage below 100 means the event ran that fraction f of the time and perf scaled its count
by 1/f. The count is kept as perf scaled it, flagged (``scaled``) and given a relative uncertainty of 1 - f (the
count is exact if the program's rate was the same in the slices perf saw and those it did not; the bound holds
while the unseen rate stays within 0..2x the seen one). An event the model uses that ran under
:data:`MIN_RUNNING_PCT` % of the time is refused: more than 90% of its count would be perf's extrapolation.

Rules (the vendors' event definitions):

    flops_dp   Intel fp_arith_inst_retired.scalar_double x 1, .128b_packed_double x 2, .256b_ x 4, .512b_ x 8
               (an FMA counts twice in these events); AMD fp_ret_sse_avx_ops.dp_{add_sub,mult,div,mult_add}_flops
               (flops already; mult_add counts 2)
    flops_sp   the same with single: x 1, 4, 8, 16; AMD sp_*_flops
               AMD Zen 3/4 fp_ret_sse_avx_ops.all has no precision: charged as flops_dp, and said so
    bytes_mem  uncore_imc*/cas_count_read/ + cas_count_write/ or client uncore_imc/data_reads/ + data_writes/
               (perf prints MiB), unc_m_cas_count.rd/.wr x 64 B; else LLC-load-misses + LLC-store-misses x 64 B
               (a line each; prefetches are not seen)
    bytes_l3   LLC-loads + LLC-stores less the LLC misses, x 64 B
    bytes_l2   L1-dcache-load-misses less LLC-loads, x 64 B (lines L2 served)
    time_s     duration_time (wall time, ns); else task-clock (or cpu-clock) over its "CPUs utilized" metric
               (perf's own ratio of CPU time to wall time; per interval, the largest over CPUs/cgroups); else
               task-clock itself, which is CPU time (wall time only for one busy thread), and said so
    energy_j   power/energy-pkg/ (+ power/energy-ram/) in Joules: RAPL's measured energy of the whole
               package(s), every process on them; energy-cores/-gpu lie inside the package and are not added
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from archline.fit.io.counters.base import (
    CountersFormatError,
    Counts,
    csv_rows,
    is_number,
    number,
    read_lines,
    unit_factor,
)

LINE_BYTES = 64.0
FLOP_EVENTS: dict[str, tuple[str, float]] = {}
for _w, _dp, _sp in (("scalar", 1.0, 1.0), ("128b_packed", 2.0, 4.0), ("256b_packed", 4.0, 8.0),
                     ("512b_packed", 8.0, 16.0)):
    FLOP_EVENTS[f"fp_arith_inst_retired.{_w}_double"] = ("flops_dp", _dp)
    FLOP_EVENTS[f"fp_arith_inst_retired.{_w}_single"] = ("flops_sp", _sp)
for _p in ("dp", "sp"):
    for _op in ("add_sub", "mult", "div", "mult_add"):
        FLOP_EVENTS[f"fp_ret_sse_avx_ops.{_p}_{_op}_flops"] = (f"flops_{_p}", 1.0)
FLOP_EVENTS["fp_ret_sse_avx_ops.all"] = ("flops_dp", 1.0)
IMC_EVENTS = ("cas_count_read", "cas_count_write", "data_reads", "data_writes", "unc_m_cas_count.rd",
              "unc_m_cas_count.wr", "unc_m_cas_count.all")
CACHE_EVENTS = ("llc-load-misses", "llc-store-misses", "llc-loads", "llc-stores", "l1-dcache-load-misses")
TIME_EVENT = "duration_time"
CLOCK_EVENTS = ("task-clock", "cpu-clock")
ENERGY_EVENTS = ("energy-pkg", "energy-ram")            # summed: package + DRAM
ENERGY_INSIDE = ("energy-cores", "energy-gpu")          # parts of the package: never added to it
ENERGY_PSYS = "energy-psys"                             # the whole platform: used only alone
COUNT_EVENTS = (*FLOP_EVENTS, *IMC_EVENTS, *CACHE_EVENTS)
KNOWN = (*COUNT_EVENTS, TIME_EVENT, *CLOCK_EVENTS, *ENERGY_EVENTS, *ENERGY_INSIDE, ENERGY_PSYS)
NOT_COUNTED = ("<not counted>", "<not supported>")
#: An event the model uses that ran less than this share of the time (percent) is refused (module docstring).
MIN_RUNNING_PCT = 10.0
_AGGR = re.compile(r"CPU\d+|S\d+(?:-D\d+)?(?:-C\d+)?|N\d+")


@dataclass
class _Seen:
    """What the file says, summed per event (bare lower-case name)."""

    values: dict[str, float] = field(default_factory=dict)          # in base units (bytes, s, J, counts)
    missing: dict[str, str] = field(default_factory=dict)
    partial: dict[str, float] = field(default_factory=dict)         # least percentage seen below 100
    ignored: list[str] = field(default_factory=list)
    wall_s: dict[str, dict[str, float]] = field(default_factory=dict)   # clock -> interval -> clock / utilized
    aggregated: str = ""                                             # "-A", "--per-core" ... "" for none
    cgroups: list[str] = field(default_factory=list)
    intervals: set[str] = field(default_factory=set)
    no_percentage: bool = False


def event_key(name: str) -> str:
    """``cpu_core/fp_arith_inst_retired.scalar_double/u`` or ``LLC-loads:u`` -> the bare lower-case name;
    ``uncore_imc_0/cas_count_read/`` -> ``cas_count_read``; ``power/energy-pkg/`` -> ``energy-pkg``."""
    n = name.strip()
    if "/" in n and "=" in n:
        return n.lower()                                   # a raw encoding (cha/event=0x34,umask=0x1/): kept whole
    if "/" in n:
        parts = [p for p in n.split("/") if p]
        n = parts[1] if len(parts) > 1 else parts[0]
        n = n.split(",", 1)[0]
    return n.split(":", 1)[0].lower()


def read(path: Path) -> list[Counts]:
    where = str(path)
    lines = read_lines(path, "perf stat output")
    seen = _Seen()
    tab = any("\t" in ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#"))
    for k, (ln, f) in enumerate(zip(lines, csv_rows(lines, "\t" if tab else ","), strict=True), start=1):
        if not ln.strip() or ln.lstrip().startswith("#"):
            continue
        if "Performance counter stats for" in ln or "seconds time elapsed" in ln:
            raise CountersFormatError(f"{where}: line {k}: perf stat's table output, not its CSV: re-run with "
                                      "perf stat -x, (archline reads the -x, form)")
        _line(seen, [x.strip() for x in f], k, where)
    return [_counts(seen, path)]


def _line(seen: _Seen, f: list[str], k: int, where: str) -> None:
    """One event line into ``seen`` (the leading -I/-A/--per-* columns and -G's cgroup taken off)."""
    stamp = ""
    if len(f) >= 4 and is_number(f[0]) and (is_number(f[1]) or f[1] in NOT_COUNTED or _AGGR.fullmatch(f[1])):
        stamp, f = f[0], f[1:]                             # -I: the interval's time stamp first
        seen.intervals.add(stamp)
    if f and _AGGR.fullmatch(f[0]):
        seen.aggregated = "-A" if f[0].startswith("CPU") else "--per-core/--per-socket"
        f = f[1:] if f[0].startswith("CPU") else f[2:]     # --per-*: the id, then the number of CPUs in it
    elif len(f) >= 5 and f[0] and not is_number(f[0]) and f[0] not in NOT_COUNTED:
        if is_number(f[1]) or f[1] in NOT_COUNTED:
            seen.aggregated = "--per-thread"               # comm-pid first
            f = f[1:]
        elif not any(f[1:-2]):
            return                                         # --per-thread: a metric's continuation line
    if len(f) >= 3 and not f[0] and not f[2]:
        return                                             # a metric's continuation line: no value, no event
    if len(f) in (2, 3) and not any(is_number(x) for x in f[1:]):
        # perf 3.x: value,event or value,unit,event; no run time, no percentage
        value, unit, event = f[0], (f[1] if len(f) == 3 else ""), f[-1]
        rest: list[str] = []
        seen.no_percentage = True
    elif len(f) >= 5:
        value, unit, event = f[0], f[1], f[2]
        rest = f[3:]
        if rest and not is_number(rest[0]) and not rest[0].endswith("%"):
            if rest[0] not in seen.cgroups:                # -G: the cgroup's name after the event
                seen.cgroups.append(rest[0])
            rest = rest[1:]
        if rest and rest[0].endswith("%"):
            rest = rest[1:]                                # -r: the variance
        if len(rest) < 2:
            raise CountersFormatError(f"{where}: line {k}: no run time and percentage after the event '{event}'")
    else:
        raise CountersFormatError(f"{where}: line {k}: {len(f)} fields; perf stat -x, gives value,unit,event,"
                                  "run time,percentage (did the file come from perf stat -x, ?)")
    if not event:
        raise CountersFormatError(f"{where}: line {k}: no event name (third field)")
    key = event_key(event)
    if key not in KNOWN:
        if key not in seen.ignored:
            seen.ignored.append(key)
        return
    if value in NOT_COUNTED:
        seen.missing[key] = value.strip("<>")
        return
    v = number(value, f"{where}: line {k}: {event}")
    pct = 100.0
    if rest and rest[1]:
        pct = number(rest[1], f"{where}: line {k}: percentage of {event}")
    if pct < 100.0:
        seen.partial[key] = min(seen.partial.get(key, 100.0), pct)
    if key in CLOCK_EVENTS:
        unit = unit or "msec"                              # perf 3.x printed no unit: its clocks are in msec
    elif key == TIME_EVENT:
        unit = unit or "ns"
    scale = 1.0 if not unit else unit_factor(unit, f"{where}: line {k}: unit of {event}")
    seen.values[key] = seen.values.get(key, 0.0) + v * scale
    if key in CLOCK_EVENTS:
        util = rest[3] if len(rest) >= 4 and rest[3].lower().startswith("cpus utilized") else ""
        if util and is_number(rest[2]) and float(rest[2]) > 0:
            # perf's own ratio: clock / wall = CPUs utilized; per interval the widest of the CPUs or cgroups
            per = seen.wall_s.setdefault(key, {})
            per[stamp] = max(per.get(stamp, 0.0), v * scale / float(rest[2]))


def _counts(seen: _Seen, path: Path) -> Counts:
    ev = seen.values
    gaps = [k for k in seen.missing if k in ev]
    missing = {k: why for k, why in seen.missing.items() if k not in ev}
    used = [k for k in ev if k in COUNT_EVENTS]
    energy = [k for k in ENERGY_EVENTS if k in ev] or ([ENERGY_PSYS] if ENERGY_PSYS in ev else [])
    timed = [k for k in ev if k in (TIME_EVENT, *CLOCK_EVENTS)]
    if not used and not energy and not timed:      # time alone is read: a VM's perf counts duration_time only
        what = "; ".join(f"{k}: {why}" for k, why in missing.items())
        has = [k for k in ev if k in ENERGY_INSIDE]
        others = f"; {len(seen.ignored)} other events are not used by the model ({', '.join(seen.ignored[:4])}" \
                 f"{' ...' if len(seen.ignored) > 4 else ''})" if seen.ignored else ""
        raise CountersFormatError(
            f"{path}: no flop, memory, energy or time event has a count ("
            + (what or (f"only {', '.join(has)}" if has else "none of them was measured")) + others
            + "); count e.g. fp_arith_inst_retired.scalar_double, LLC-load-misses, power/energy-pkg/, "
            "duration_time")
    thin = {k: p for k, p in seen.partial.items() if k in used or k in energy}
    too_thin = {k: p for k, p in thin.items() if p < MIN_RUNNING_PCT}
    if too_thin:
        k, p = min(too_thin.items(), key=lambda kv: kv[1])
        raise CountersFormatError(f"{path}: {k} ran {p:.2f}% of the time (multiplexed): more than "
                                  f"{100 - MIN_RUNNING_PCT:.0f}% of its count would be perf's extrapolation; "
                                  "count fewer events at once (below "
                                  f"{MIN_RUNNING_PCT:g}% running archline refuses, docs/counters.md)")
    c = Counts("program", {}, source=f"perf stat {path}", raw=dict(ev))
    _derive(c, ev)
    if energy:
        c.energy_j = sum(ev[k] for k in energy)
        c.energy_source = "perf " + " + ".join(f"power/{k}/" for k in energy) + " (RAPL)"
        c.note(f"measured energy {c.energy_j:.6g} J from {' + '.join(f'power/{k}/' for k in energy)} (RAPL: "
               "the whole package(s), every process on them, not the program alone)")
    for k in ENERGY_INSIDE:
        if k in ev:
            c.note(f"power/{k}/ ({ev[k]:.6g} J) lies inside the package's energy: not added")
    _time(c, seen)
    for k, why in missing.items():
        c.note(f"{k}: {why} (its term is left out)")
    for k in gaps:
        c.note(f"{k}: not counted in some intervals or on some CPUs (those add nothing)")
    if thin:
        c.scaled = True
        c.count_rel_err = max(1.0 - p / 100.0 for p in thin.values())
        c.note("multiplexed, counts scaled by perf: " + ", ".join(f"{k} ran {p:.2f}% of the time"
                                                                 for k, p in thin.items())
               + f"; each count +-{100 * c.count_rel_err:.0f}% (1 - the share it ran)")
    if seen.no_percentage:
        c.note("no run-time and percentage columns (perf 3.x): whether perf multiplexed cannot be told")
    if len(seen.intervals) > 1:
        c.note(f"-I: {len(seen.intervals)} intervals summed")
    if seen.aggregated:
        c.note(f"{seen.aggregated}: the CPUs' (cores', sockets', threads') counts summed")
    if seen.cgroups:
        c.note(f"-G: cgroup {', '.join(seen.cgroups)} (counts summed over them)")
    if used and not any(k.startswith("flops") for k in c.counts):
        c.note("no flop event counted: flops not counted")
    if not used and not energy:
        c.note("no flop, memory or energy event: only the time is read")
    if seen.ignored:
        c.note(f"not used by the model: {', '.join(seen.ignored)}")
    return c


def _derive(c: Counts, ev: dict[str, float]) -> None:
    for name, v in ev.items():
        if name in FLOP_EVENTS:
            col, per = FLOP_EVENTS[name]
            c.add(col, v * per)
    if "fp_ret_sse_avx_ops.all" in ev:
        c.note("fp_ret_sse_avx_ops.all gives no precision: its flops are charged as double precision")
    imc = [k for k in IMC_EVENTS if k in ev]
    misses = ev.get("llc-load-misses", 0.0) + ev.get("llc-store-misses", 0.0)
    if imc:
        raw_lines = sum(ev[k] for k in imc if k.startswith("unc_m_"))
        mib_as_bytes = sum(ev[k] for k in imc if not k.startswith("unc_m_"))   # MiB already scaled to bytes
        c.add("bytes_mem", raw_lines * LINE_BYTES + mib_as_bytes)
        c.note("bytes_mem from the memory controllers' CAS counts")
    elif "llc-load-misses" in ev or "llc-store-misses" in ev:
        c.add("bytes_mem", misses * LINE_BYTES)
        c.note("bytes_mem = LLC misses x 64 B (demand lines; hardware prefetches are not seen)")
    if "llc-loads" in ev or "llc-stores" in ev:
        hits = ev.get("llc-loads", 0.0) + ev.get("llc-stores", 0.0) - misses
        c.add("bytes_l3", max(hits, 0.0) * LINE_BYTES)
        c.note("bytes_l3 = (LLC accesses - LLC misses) x 64 B")
    if "l1-dcache-load-misses" in ev and "llc-loads" in ev:
        c.add("bytes_l2", max(ev["l1-dcache-load-misses"] - ev["llc-loads"], 0.0) * LINE_BYTES)
        c.note("bytes_l2 = (L1-dcache-load-misses - LLC-loads) x 64 B")


def _time(c: Counts, seen: _Seen) -> None:
    ev = seen.values
    clock = next((k for k in CLOCK_EVENTS if k in ev), "")      # task-clock first: the counted tasks' own
    if TIME_EVENT in ev:
        c.time_s = ev[TIME_EVENT]
    elif clock and seen.wall_s.get(clock):
        c.time_s = sum(seen.wall_s[clock].values())
        c.note(f"time_s = {clock} / its 'CPUs utilized' (perf's ratio): wall time, no duration_time event")
    elif clock:
        c.time_s = ev[clock]
        c.note(f"time_s = {clock}, CPU time (wall time only for one busy thread): no duration_time event")
    else:
        c.note("no duration_time, task-clock or cpu-clock event: no measured time")
