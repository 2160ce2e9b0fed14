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

The rules (which events, their multipliers, the time and the energy) are in
:mod:`archline.formats.counters.perf_events`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from archline.formats.counters.base import (
    MIN_RUNNING_PCT,
    CountersFormatError,
    Counts,
    csv_rows,
    is_number,
    number,
    read_lines,
    unit_factor,
)
from archline.formats.counters.perf_events import (
    AGGR_ID,
    ALL_ENERGY,
    CLOCK_EVENTS,
    COUNT_EVENTS,
    KNOWN,
    MAX_POWER_W,
    NOT_COUNTED,
    TIME_EVENT,
    Rec,
    combine,
    derive,
    energy_domains,
    event_key,
    wall_time,
)

_PCT = re.compile(r"\d+\.\d+")                          # perf prints the percentage with %.2f
_INT = re.compile(r"\d+")
_COMMA_NUMBER = re.compile(r"\d+,\d+")
_COMMA_PCT = re.compile(r"(?:^|,)\d+,\d+,\d{2}(?:,|$)")   # run time, then "100,00": the percentage split


@dataclass
class _Seen:
    """What the file says, line by line (the sums are made in :func:`combine`)."""

    recs: list[Rec] = field(default_factory=list)
    units: dict[str, str] = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)
    aggregated: str = ""                                             # "-A", "--per-core" ... "" for none
    cgroups: list[str] = field(default_factory=list)
    no_percentage: bool = False
    run: int = 0
    last_stamp: float = -math.inf
    in_run: set[tuple[str, str, str, str]] = field(default_factory=set)
    stamps: dict[int, list[str]] = field(default_factory=dict)      # run -> its intervals, every line's


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
    if len(f) >= 4 and is_number(f[0]) and (is_number(f[1]) or f[1] in NOT_COUNTED or AGGR_ID.fullmatch(f[1])):
        stamp, f = f[0], f[1:]                             # -I: the interval's time stamp first
        if float(stamp) < seen.last_stamp:                 # the stamps start again: the next run of perf stat
            seen.run += 1
            seen.in_run.clear()
        seen.last_stamp = float(stamp)
        if stamp not in seen.stamps.setdefault(seen.run, []):
            seen.stamps[seen.run].append(stamp)
    if f and AGGR_ID.fullmatch(f[0]):
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
        seen.recs.append(Rec(seen.run, stamp, ident, cgroup, key, None, why=value.strip("<>")))
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
    seen.recs.append(Rec(seen.run, stamp, ident, cgroup, key, v * scale, pct=pct, wall_s=wall))


def _counts(seen: _Seen, path: Path) -> Counts:
    s = combine(seen.recs, seen.stamps, path)
    ev = s.values
    missing = s.missing
    used = [k for k in ev if k in COUNT_EVENTS]
    energy, energy_label, energy_notes = energy_domains(ev)
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
    derive(c, ev, seen.units, s.partial, path)
    if energy:
        c.energy_j = sum(ev[k] for k in energy)
        names = " + ".join(f"power/{k}/" for k in energy)
        c.energy_source = f"perf {names} (RAPL)"
        c.note(f"measured energy {c.energy_j:.6g} J from {names} (RAPL: {energy_label}, every process on them, "
               "not the program alone)")
    for n in energy_notes:
        c.note(n)
    wall_time(c, ev, s.wall_s)
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
