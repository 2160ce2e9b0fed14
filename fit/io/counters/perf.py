"""``perf stat -x,`` output (perf-stat(1), "CSV FORMAT"): one line per event,

    [interval time,] [aggregation id, [cpu count,]] counter value, unit, event name, [cgroup,] [variance %,]
    counter run time, % of measurement time, [metric value, metric unit]

The separator is what ``-x`` named (a comma; a tab: a line with a tab is split on tabs; a semicolon, ``-x";"``).
``-x`` output never groups thousands, so a comma inside a number is a decimal comma (a locale such as de_DE):
refused, never read as two fields. perf's ``-j`` JSON is refused (naming it). A raw encoding with commas
(``cpu/event=0xc7,umask=0x01/``, which perf prints unquoted) is joined back into one event name. The leading columns:
``-I`` puts the interval's end time first; ``-A`` (``--no-aggr``) a ``CPUn`` id; ``--per-core``/``--per-die``/
``--per-socket``/``--per-node`` an ``S0-D0-C0``/``S0-D0``/``S0``/``N0`` id and the number of CPUs in it;
``--per-cache``/``--per-cluster`` an ``S0-D0-L3-ID0``/``S0-D0-CLS0`` id and its CPU count; ``--per-thread`` the
thread's ``comm-pid``; ``-G`` the cgroup's name after the event (a numeric name too: the run time is an integer
and the percentage has two decimals, so the field before them is the cgroup). A line with neither value
nor event (a second metric of the line above) is skipped. Every line of an event is summed: over the intervals
(each interval's count covers only that interval), the CPUs, cores, sockets, threads and cgroups. An event the
model uses that is missing from some intervals (a capture cut off) leaves those intervals out: only the intervals
every such event has are read, and said so. Several runs in one file (``-I`` stamps starting again, or an event's
line seen again for the same CPU and cgroup: ``perf stat`` run several times, its outputs concatenated) are
averaged: a count is the mean over the runs, the time the mean of theirs; an event listed twice in one interval
is the mean of its lines. Files of perf
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
               AMD Zen 3/4 fp_ret_sse_avx_ops.all has no precision: charged as flops_dp, and said so; with its
               dp_*/sp_* parts in the file the parts are read and .all is not added (it is their sum)
               Intel's newer fp_arith_inst_retired.scalar (no precision) x 1, charged as flops_dp and said so;
               fp_arith_inst_retired.vector (every width, 2 to 16 flops each) cannot be turned into flops: a
               file with a non-zero .vector and no width events is refused
    bytes_mem  uncore_imc*/cas_count_read/ + cas_count_write/ or client uncore_imc/data_reads/ + data_writes/
               (perf prints MiB; with no unit they are 64-byte lines), unc_m_cas_count.rd/.wr x 64 B; else
               LLC-load-misses + LLC-store-misses x 64 B (a line each; prefetches are not seen)
    bytes_l3   LLC-loads + LLC-stores less the LLC misses, x 64 B (more misses than accesses is refused unless
               the events were multiplexed: then 0, and said so)
    bytes_l2   L1-dcache-load-misses less LLC-loads, x 64 B (lines L2 served)
    time_s     duration_time (wall time, ns); else task-clock (or cpu-clock) over its "CPUs utilized" metric
               (perf's own ratio of CPU time to wall time; per interval, the largest over CPUs/cgroups); else
               task-clock itself, which is CPU time (wall time only for one busy thread), and said so
    energy_j   power/energy-pkg/ (+ power/energy-ram/) in Joules: RAPL's measured energy of the whole
               package(s), every process on them; energy-cores/-gpu lie inside the package and are not added;
               energy-psys (the platform) is used only without energy-pkg, energy-ram alone (DRAM only) never.
               An energy event not in Joules, or a mean power above MAX_POWER_W, is refused.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from archline.fit.io.counters.base import (
    MIN_RUNNING_PCT,
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
AMD_ALL = "fp_ret_sse_avx_ops.all"                      # Zen 3/4: every precision, the sum of the parts above
INTEL_SCALAR = "fp_arith_inst_retired.scalar"           # newer Intel: scalar of both precisions (x 1)
INTEL_VECTOR = "fp_arith_inst_retired.vector"           # newer Intel: vector of every width (lanes unknown)
NO_PRECISION = (AMD_ALL, INTEL_SCALAR, INTEL_VECTOR)
IMC_EVENTS = ("cas_count_read", "cas_count_write", "data_reads", "data_writes", "unc_m_cas_count.rd",
              "unc_m_cas_count.wr", "unc_m_cas_count.all")
CACHE_EVENTS = ("llc-load-misses", "llc-store-misses", "llc-loads", "llc-stores", "l1-dcache-load-misses")
TIME_EVENT = "duration_time"
CLOCK_EVENTS = ("task-clock", "cpu-clock")
ENERGY_EVENTS = ("energy-pkg", "energy-ram")            # summed: package + DRAM
ENERGY_INSIDE = ("energy-cores", "energy-gpu")          # parts of the package: never added to it
ENERGY_PSYS = "energy-psys"                             # the whole platform: used only without energy-pkg
ALL_ENERGY = (*ENERGY_EVENTS, *ENERGY_INSIDE, ENERGY_PSYS)
COUNT_EVENTS = (*FLOP_EVENTS, *NO_PRECISION, *IMC_EVENTS, *CACHE_EVENTS)
KNOWN = (*COUNT_EVENTS, TIME_EVENT, *CLOCK_EVENTS, *ALL_ENERGY)
NOT_COUNTED = ("<not counted>", "<not supported>")
#: RAPL's energy over the measured time above this (W) is not one machine's: 8 sockets x 400 W plus their DRAM
#: stay under it, so more is a wrong unit or a wrong time.
MAX_POWER_W = 5000.0
_AGGR = re.compile(r"CPU\d+|S\d+(?:-D\d+)?(?:-C\d+|-L\d+-ID\d+|-CLS\d+)?|N\d+")
_PCT = re.compile(r"\d+\.\d+")                          # perf prints the percentage with %.2f
_INT = re.compile(r"\d+")
_COMMA_NUMBER = re.compile(r"\d+,\d+")
_COMMA_PCT = re.compile(r"(?:^|,)\d+,\d+,\d{2}(?:,|$)")   # run time, then "100,00": the percentage split


@dataclass
class _Rec:
    """One event line: where it was counted and its value in base units (None: not counted)."""

    run: int
    stamp: str                                  # -I's interval end, "" without -I
    ident: str                                  # -A's CPU, --per-* id, --per-thread's comm-pid; "" for none
    cgroup: str
    key: str
    value: float | None
    why: str = ""                               # "not counted", "not supported"
    pct: float = 100.0
    wall_s: float | None = None                 # a clock over its CPUs utilized


@dataclass
class _Seen:
    """What the file says, line by line (the sums are made in :func:`_combine`)."""

    recs: list[_Rec] = field(default_factory=list)
    units: dict[str, str] = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)
    aggregated: str = ""                                             # "-A", "--per-core" ... "" for none
    cgroups: list[str] = field(default_factory=list)
    no_percentage: bool = False
    run: int = 0
    last_stamp: float = -math.inf
    in_run: set[tuple[str, str, str, str]] = field(default_factory=set)
    stamps: dict[int, list[str]] = field(default_factory=dict)      # run -> its intervals, every line's


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


def _data(ln: str) -> bool:
    return bool(ln.strip()) and not ln.lstrip().startswith("#")


def _separator(lines: list[str], where: str) -> str:
    first = next((ln for ln in lines if _data(ln)), "")
    if first.lstrip().startswith("{"):
        raise CountersFormatError(f"{where}: line {lines.index(first) + 1}: perf stat -j's JSON output; archline "
                                  "reads the CSV form: re-run with perf stat -x,")
    if any("\t" in ln for ln in lines if _data(ln)):
        return "\t"
    return ";" if first.count(";") > first.count(",") else ","


def _decimal_comma(lines: list[str], sep: str, where: str) -> None:
    """-x never groups thousands: a comma inside a number is the locale's decimal comma; with -x, its fields
    split, so the values would be read wrong (1000,50 ms as 1000 ms and a unit '50')."""
    for k, ln in enumerate(lines, start=1):
        if not _data(ln):
            continue
        if sep == ",":
            bad = "." not in ln and _COMMA_PCT.search(ln.strip()) is not None
        else:
            bad = any(_COMMA_NUMBER.fullmatch(x.strip()) for x in ln.split(sep))
        if bad:
            raise CountersFormatError(f"{where}: line {k}: numbers with a decimal comma (a locale such as de_DE): "
                                      "with -x, they cannot be split from the fields; re-run perf stat with LC_ALL=C")


def _join_encodings(f: list[str]) -> list[str]:
    """``cpu/event=0xc7``, ``umask=0x01/`` -> ``cpu/event=0xc7,umask=0x01/``: perf prints a raw encoding's commas
    unquoted in -x, output."""
    out: list[str] = []
    i = 0
    while i < len(f):
        x = f[i]
        if x.count("/") == 1 and "=" in x and not x.endswith("/"):
            j = i + 1
            while j < len(f) and "/" not in f[j] and "=" in f[j]:
                j += 1
            if j < len(f) and "/" in f[j]:
                out.append(",".join(f[i:j + 1]))
                i = j + 1
                continue
        out.append(x)
        i += 1
    return out


def read(path: Path) -> list[Counts]:
    where = str(path)
    lines = read_lines(path, "perf stat output", lines=True)
    sep = _separator(lines, where)
    _decimal_comma(lines, sep, where)
    seen = _Seen()
    for k, (ln, f) in enumerate(zip(lines, csv_rows(lines, sep), strict=True), start=1):
        if not _data(ln):
            continue
        if "Performance counter stats for" in ln or "seconds time elapsed" in ln:
            raise CountersFormatError(f"{where}: line {k}: perf stat's table output, not its CSV: re-run with "
                                      "perf stat -x, (archline reads the -x, form)")
        f = [x.strip() for x in f]
        _line(seen, _join_encodings(f) if sep == "," else f, k, where)
    return [_counts(seen, path)]


def _is_cgroup(rest: list[str]) -> bool:
    """After the event: [cgroup,] [variance %,] run time, percentage. A cgroup may be named by a number (-G 1000):
    then the run time (an integer) and the percentage (two decimals) follow it."""
    if not rest or rest[0].endswith("%"):
        return False
    if not is_number(rest[0]):
        return True
    nxt = rest[1:]
    if nxt and nxt[0].endswith("%"):
        return True
    return len(nxt) >= 2 and bool(_INT.fullmatch(nxt[0])) and bool(_PCT.fullmatch(nxt[1]))


def _line(seen: _Seen, f: list[str], k: int, where: str) -> None:
    """One event line into ``seen`` (the leading -I/-A/--per-* columns and -G's cgroup taken off)."""
    stamp = ""
    ident = ""
    if len(f) >= 4 and is_number(f[0]) and (is_number(f[1]) or f[1] in NOT_COUNTED or _AGGR.fullmatch(f[1])):
        stamp, f = f[0], f[1:]                             # -I: the interval's time stamp first
        if float(stamp) < seen.last_stamp:                 # the stamps start again: the next run of perf stat
            seen.run += 1
            seen.in_run.clear()
        seen.last_stamp = float(stamp)
        if stamp not in seen.stamps.setdefault(seen.run, []):
            seen.stamps[seen.run].append(stamp)
    if f and _AGGR.fullmatch(f[0]):
        seen.aggregated = "-A" if f[0].startswith("CPU") else "--per-core/--per-socket"
        ident = f[0]
        f = f[1:] if f[0].startswith("CPU") else f[2:]     # --per-*: the id, then the number of CPUs in it
    elif len(f) >= 5 and f[0] and not is_number(f[0]) and f[0] not in NOT_COUNTED:
        if is_number(f[1]) or f[1] in NOT_COUNTED:
            seen.aggregated = "--per-thread"               # comm-pid first
            ident, f = f[0], f[1:]
        elif not any(f[1:-2]):
            return                                         # --per-thread: a metric's continuation line
    if len(f) >= 3 and not f[0] and not f[2]:
        return                                             # a metric's continuation line: no value, no event
    cgroup = ""
    if len(f) in (2, 3) and not any(is_number(x) for x in f[1:]):
        # perf 3.x: value,event or value,unit,event; no run time, no percentage
        value, unit, event = f[0], (f[1] if len(f) == 3 else ""), f[-1]
        rest: list[str] = []
        seen.no_percentage = True
    elif len(f) >= 5:
        value, unit, event = f[0], f[1], f[2]
        rest = f[3:]
        if _is_cgroup(rest):
            cgroup = rest[0]                               # -G: the cgroup's name after the event
            if cgroup not in seen.cgroups:
                seen.cgroups.append(cgroup)
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
    slot = (stamp, ident, cgroup, key)
    if not stamp and slot in seen.in_run:                  # an event's line again: the next run of perf stat
        seen.run += 1
        seen.in_run.clear()
    seen.in_run.add(slot)
    if value in NOT_COUNTED:
        seen.recs.append(_Rec(seen.run, stamp, ident, cgroup, key, None, why=value.strip("<>")))
        return
    v = number(value, f"{where}: line {k}: {event}")
    pct = 100.0
    if rest and rest[1]:
        pct = number(rest[1], f"{where}: line {k}: percentage of {event}")
        if pct > 100.0:
            raise CountersFormatError(f"{where}: line {k}: {event} ran {rest[1]}% of the time: a share of the run "
                                      "is 0 to 100% (a damaged or edited file?)")
    if key in CLOCK_EVENTS:
        unit = unit or "msec"                              # perf 3.x printed no unit: its clocks are in msec
    elif key == TIME_EVENT:
        unit = unit or "ns"
    elif key in ALL_ENERGY and unit.lower() != "joules":
        raise CountersFormatError(f"{where}: line {k}: {event} in '{unit}', not Joules: perf prints RAPL energy in "
                                  "Joules (a raw count is in the counter's own energy units): re-run perf stat")
    seen.units[key] = unit
    scale = 1.0 if not unit else unit_factor(unit, f"{where}: line {k}: unit of {event}")
    wall = None
    if key in CLOCK_EVENTS:
        util = rest[3] if len(rest) >= 4 and rest[3].lower().startswith("cpus utilized") else ""
        if util and is_number(rest[2]) and float(rest[2]) > 0:
            wall = v * scale / float(rest[2])              # perf's own ratio: clock / wall = CPUs utilized
    seen.recs.append(_Rec(seen.run, stamp, ident, cgroup, key, v * scale, pct=pct, wall_s=wall))


@dataclass
class _Sums:
    """The file's events combined: summed over intervals, CPUs and cgroups, averaged over runs."""

    values: dict[str, float] = field(default_factory=dict)          # in base units (bytes, s, J, counts)
    missing: dict[str, str] = field(default_factory=dict)           # never counted: why
    gaps: list[str] = field(default_factory=list)                   # not counted in some places
    partial: dict[str, float] = field(default_factory=dict)         # least percentage seen below 100
    wall_s: dict[str, float] = field(default_factory=dict)          # clock -> its wall time (CPUs utilized)
    runs: int = 1
    intervals: int = 0
    notes: list[str] = field(default_factory=list)


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def _combine(seen: _Seen, path: Path) -> _Sums:
    out = _Sums()
    by_run: dict[int, list[_Rec]] = {}
    for r in seen.recs:
        by_run.setdefault(r.run, []).append(r)
    out.runs = len(by_run)
    per_run: list[dict[str, float]] = []
    walls: list[dict[str, float]] = []
    repeated: set[str] = set()
    for run, recs in by_run.items():
        stamps = seen.stamps.get(run, [""])
        if stamps != [""]:
            recs = _common_intervals(recs, stamps, out, path)
            out.intervals = max(out.intervals, len({r.stamp for r in recs}))
        slots: dict[tuple[str, str, str, str], list[_Rec]] = {}
        for r in recs:
            slots.setdefault((r.stamp, r.ident, r.cgroup, r.key), []).append(r)
        sums: dict[str, float] = {}
        wall: dict[str, dict[str, float]] = {}
        for (stamp, _ident, _cg, key), rs in slots.items():
            got = [r for r in rs if r.value is not None]
            if len(rs) > 1:
                repeated.add(key)
            for r in rs:
                if r.value is None:
                    out.missing.setdefault(key, r.why)
                elif r.pct < 100.0:
                    out.partial[key] = min(out.partial.get(key, 100.0), r.pct)
            if not got:
                continue
            sums[key] = sums.get(key, 0.0) + _mean([r.value for r in got if r.value is not None])
            ws = [r.wall_s for r in got if r.wall_s is not None]
            if ws:                                       # per interval the widest of the CPUs or cgroups
                per = wall.setdefault(key, {})
                per[stamp] = max(per.get(stamp, 0.0), _mean(ws))
        per_run.append(sums)
        walls.append({k: sum(v.values()) for k, v in wall.items()})
    for key in dict.fromkeys(k for s in per_run for k in s):
        out.values[key] = _mean([s[key] for s in per_run if key in s])
    for key in dict.fromkeys(k for w in walls for k in w):
        out.wall_s[key] = _mean([w[key] for w in walls if key in w])
    out.gaps = [k for k in out.missing if k in out.values]
    out.missing = {k: why for k, why in out.missing.items() if k not in out.values}
    if out.runs > 1:
        out.notes.append(f"{out.runs} runs of perf stat in the file (-I stamps starting again, or an event's line "
                         "seen again): each count is the mean over the runs that counted it, the time the mean "
                         "of their times")
    if repeated:
        out.notes.append(f"{', '.join(sorted(repeated))}: printed more than once for the same interval, CPU and "
                         "cgroup (listed twice?): the mean of its lines is taken")
    return out


def _common_intervals(recs: list[_Rec], stamps: list[str], out: _Sums, path: Path) -> list[_Rec]:
    """Only the intervals every event of the model's appears in (counted or not): one missing from the last
    intervals is a capture cut off, and summing it there would count it for less time than the others."""
    has: dict[str, set[str]] = {}
    for r in recs:
        if r.key in KNOWN:
            has.setdefault(r.key, set()).add(r.stamp)
    common = set(stamps)
    for s in has.values():
        common &= s
    if common == set(stamps):
        return recs
    short = {k: len(s) for k, s in has.items() if len(s) < len(stamps)}
    if not common:
        which = ", ".join(f"{k} in {n}" for k, n in short.items())
        raise CountersFormatError(f"{path}: -I: no interval has every event ({which} of {len(stamps)} "
                                  "intervals): a capture cut off? count them together")
    out.notes.append(f"-I: {', '.join(f'{k} in only {n}' for k, n in short.items())} of {len(stamps)} intervals "
                     f"(a capture cut off?): only the {len(common)} intervals every event has are read")
    return [r for r in recs if r.stamp in common]


def _counts(seen: _Seen, path: Path) -> Counts:
    s = _combine(seen, path)
    ev = s.values
    missing = s.missing
    used = [k for k in ev if k in COUNT_EVENTS]
    energy, energy_label, energy_notes = _energy(ev)
    timed = [k for k in ev if k in (TIME_EVENT, *CLOCK_EVENTS)]
    if not used and not energy and not timed:      # time alone is read: a VM's perf counts duration_time only
        what = "; ".join(f"{k}: {why}" for k, why in missing.items())
        has = [k for k in ev if k in ALL_ENERGY]
        others = f"; {len(seen.ignored)} other events are not used by the model ({', '.join(seen.ignored[:4])}" \
                 f"{' ...' if len(seen.ignored) > 4 else ''})" if seen.ignored else ""
        raise CountersFormatError(
            f"{path}: no flop, memory, energy or time event has a count ("
            + (what or (f"only {', '.join(has)}" if has else "none of them was measured")) + others
            + "); count e.g. fp_arith_inst_retired.scalar_double, LLC-load-misses, power/energy-pkg/, "
            "duration_time")
    thin = {k: p for k, p in s.partial.items() if k in used or k in energy}
    too_thin = {k: p for k, p in thin.items() if p < MIN_RUNNING_PCT}
    if too_thin:
        k, p = min(too_thin.items(), key=lambda kv: kv[1])
        raise CountersFormatError(f"{path}: {k} ran {p:.2f}% of the time (multiplexed): more than "
                                  f"{100 - MIN_RUNNING_PCT:.0f}% of its count would be perf's extrapolation; "
                                  "count fewer events at once (below "
                                  f"{MIN_RUNNING_PCT:g}% running archline refuses, docs/counters.md)")
    c = Counts("program", {}, source=f"perf stat {path}", raw=dict(ev))
    _derive(c, ev, seen.units, s.partial, path)
    if energy:
        c.energy_j = sum(ev[k] for k in energy)
        names = " + ".join(f"power/{k}/" for k in energy)
        c.energy_source = f"perf {names} (RAPL)"
        c.note(f"measured energy {c.energy_j:.6g} J from {names} (RAPL: {energy_label}, every process on them, "
               "not the program alone)")
    for n in energy_notes:
        c.note(n)
    _time(c, ev, s.wall_s)
    if c.energy_j is not None and c.time_s and c.energy_j / c.time_s > MAX_POWER_W:
        raise CountersFormatError(f"{path}: {c.energy_j:.6g} J in {c.time_s:.6g} s is {c.energy_j / c.time_s:.4g} W "
                                  f"(more than {MAX_POWER_W:g} W, not one machine's RAPL): check the energy's unit "
                                  "and the time events")
    for n in s.notes:
        c.note(n)
    for k, why in missing.items():
        c.note(f"{k}: {why} (its term is left out)")
    for k in s.gaps:
        c.note(f"{k}: not counted in some intervals or on some CPUs (those add nothing)")
    if thin:
        c.scaled = True
        c.count_rel_err = max(1.0 - p / 100.0 for p in thin.values())
        c.note("multiplexed, counts scaled by perf: " + ", ".join(f"{k} ran {p:.2f}% of the time"
                                                                 for k, p in thin.items())
               + f"; each count +-{100 * c.count_rel_err:.0f}% (1 - the share it ran)")
    if seen.no_percentage:
        c.note("no run-time and percentage columns (perf 3.x): whether perf multiplexed cannot be told")
    if s.intervals > 1:
        c.note(f"-I: {s.intervals} intervals summed" + (" in each run" if s.runs > 1 else ""))
    if seen.aggregated:
        c.note(f"{seen.aggregated}: the CPUs' (cores', sockets', threads') counts summed")
    if seen.cgroups:
        c.note(f"-G: cgroup {', '.join(seen.cgroups)} (counts summed over them)")
    if used and not any(k.startswith("flops") for k in c.counts):
        c.note("no flop event counted: flops not counted")
    if used and "bytes_mem" not in c.counts:
        c.note("no memory event (uncore_imc cas_count, LLC-load-misses): DRAM bytes not counted, so a prediction "
               "leaves out the DRAM term and the intensity is inf")
    uncounted = [k for k in missing if k in COUNT_EVENTS]
    if not used and uncounted:
        c.note(f"the flop and memory events were not counted ({', '.join(uncounted)}): only the "
               + ("time and energy are read" if energy else "time is read"))
    elif not used and not energy:
        c.note("no flop, memory or energy event: only the time is read")
    if seen.ignored:
        c.note(f"not used by the model: {', '.join(seen.ignored)}")
    return c


def _energy(ev: dict[str, float]) -> tuple[list[str], str, list[str]]:
    """The RAPL domains taken as the measured energy, what they cover, and notes on those left out."""
    notes = [f"power/{k}/ ({ev[k]:.6g} J) lies inside the package's energy: not added"
             for k in ENERGY_INSIDE if k in ev]
    if "energy-pkg" in ev:
        used = [k for k in ENERGY_EVENTS if k in ev]
        if ENERGY_PSYS in ev:
            notes.append(f"power/energy-psys/ ({ev[ENERGY_PSYS]:.6g} J), the platform's, holds the package's: "
                         "not added (the package's is used)")
        return used, "the whole package(s)" + (" and their DRAM" if "energy-ram" in ev else ""), notes
    if ENERGY_PSYS in ev:
        if "energy-ram" in ev:
            notes.append(f"power/energy-ram/ ({ev['energy-ram']:.6g} J) lies inside the platform's (psys): not added")
        return [ENERGY_PSYS], "the platform (psys: packages, DRAM and more)", notes
    if "energy-ram" in ev:
        notes.append(f"power/energy-ram/ alone ({ev['energy-ram']:.6g} J) is the DRAM's energy, not the package's: "
                     "not used as the measured energy (count power/energy-pkg/ with it)")
    return [], "", notes


def _derive(c: Counts, ev: dict[str, float], units: dict[str, str], partial: dict[str, float], path: Path) -> None:
    amd_parts = [k for k in ev if k.startswith("fp_ret_sse_avx_ops.") and k in FLOP_EVENTS]
    intel_widths = [k for k in ev if k.startswith("fp_arith_inst_retired.") and k in FLOP_EVENTS]
    for name, v in ev.items():
        if name in FLOP_EVENTS:
            col, per = FLOP_EVENTS[name]
            c.add(col, v * per)
    if AMD_ALL in ev and amd_parts:
        c.note(f"{AMD_ALL} ({ev[AMD_ALL]:.6g}) is the sum of its dp/sp parts, read instead: not added")
    elif AMD_ALL in ev:
        c.add("flops_dp", ev[AMD_ALL])
        c.note(f"{AMD_ALL} gives no precision: its flops are charged as double precision")
    scalar_parts = [k for k in intel_widths if k.startswith("fp_arith_inst_retired.scalar_")]
    if INTEL_SCALAR in ev and scalar_parts:
        c.note(f"{INTEL_SCALAR} is the sum of {', '.join(scalar_parts)}, read instead: not added")
    elif INTEL_SCALAR in ev:
        c.add("flops_dp", ev[INTEL_SCALAR])
        c.note(f"{INTEL_SCALAR} gives no precision: its flops (1 per instruction) are charged as double precision")
    vector_parts = [k for k in intel_widths if not k.startswith("fp_arith_inst_retired.scalar_")]
    if INTEL_VECTOR in ev and vector_parts:
        c.note(f"{INTEL_VECTOR} is the sum of the width events, read instead: not added")
    elif ev.get(INTEL_VECTOR, 0.0) > 0:
        raise CountersFormatError(f"{path}: {INTEL_VECTOR} ({ev[INTEL_VECTOR]:.6g}) counts vector instructions of "
                                  "every width (2 to 16 flops each): its flops cannot be told; count "
                                  "fp_arith_inst_retired.128b_packed_double, .256b_packed_double ... (and _single)")
    imc = [k for k in IMC_EVENTS if k in ev]
    misses = ev.get("llc-load-misses", 0.0) + ev.get("llc-store-misses", 0.0)
    if imc:
        # unc_m_* count 64-byte lines; uncore_imc's cas_count_* and data_* are in MiB as perf prints them, in
        # lines where perf printed no unit (no scale in sysfs)
        lines = sum(ev[k] for k in imc if k.startswith("unc_m_") or not units.get(k))
        scaled_bytes = sum(ev[k] for k in imc if not k.startswith("unc_m_") and units.get(k))
        c.add("bytes_mem", lines * LINE_BYTES + scaled_bytes)
        c.note("bytes_mem from the memory controllers' CAS counts"
               + (" (no unit: 64-byte lines)" if any(not units.get(k) and not k.startswith("unc_m_") for k in imc)
                  else ""))
    elif "llc-load-misses" in ev or "llc-store-misses" in ev:
        c.add("bytes_mem", misses * LINE_BYTES)
        c.note("bytes_mem = LLC misses x 64 B (demand lines; hardware prefetches are not seen)")
    if "llc-loads" in ev or "llc-stores" in ev:
        for acc, miss in (("llc-loads", "llc-load-misses"), ("llc-stores", "llc-store-misses")):
            if acc in ev and ev.get(miss, 0.0) > ev[acc]:
                if acc not in partial and miss not in partial:
                    raise CountersFormatError(f"{path}: {miss} ({ev[miss]:.6g}) exceed {acc} ({ev[acc]:.6g}): a miss "
                                              "is an access, so this is not physical (events of different runs "
                                              "or CPUs?)")
                c.note(f"{miss} ({ev[miss]:.6g}) exceed {acc} ({ev[acc]:.6g}), estimates of different slices "
                       "(multiplexed): bytes_l3 from them is 0")
        hits = ev.get("llc-loads", 0.0) + ev.get("llc-stores", 0.0) - misses
        c.add("bytes_l3", max(hits, 0.0) * LINE_BYTES)
        c.note("bytes_l3 = (LLC accesses - LLC misses) x 64 B")
    if "l1-dcache-load-misses" in ev and "llc-loads" in ev:
        c.add("bytes_l2", max(ev["l1-dcache-load-misses"] - ev["llc-loads"], 0.0) * LINE_BYTES)
        c.note("bytes_l2 = (L1-dcache-load-misses - LLC-loads) x 64 B")


def _time(c: Counts, ev: dict[str, float], wall_s: dict[str, float]) -> None:
    clock = next((k for k in CLOCK_EVENTS if k in ev), "")      # task-clock first: the counted tasks' own
    if TIME_EVENT in ev:
        c.time_s = ev[TIME_EVENT]
    elif clock and wall_s.get(clock):
        c.time_s = wall_s[clock]
        c.note(f"time_s = {clock} / its 'CPUs utilized' (perf's ratio): wall time, no duration_time event")
    elif clock:
        c.time_s = ev[clock]
        c.note(f"time_s = {clock}, CPU time (wall time only for one busy thread): no duration_time event")
    else:
        c.note("no duration_time, task-clock or cpu-clock event: no measured time (archline predict uses the "
               "model's time)")
