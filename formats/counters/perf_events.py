"""What perf stat's events mean for the model, and how an event's lines add up (the perf reader's rules;
the lines themselves are parsed in :mod:`archline.formats.counters.perf`).

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

import re
from dataclasses import dataclass, field
from pathlib import Path

from archline.formats.counters.base import FP_ARITH_WIDTHS, LINE_BYTES, CountersFormatError, Counts

FLOP_EVENTS: dict[str, tuple[str, float]] = {}
for _w, _dp, _sp in FP_ARITH_WIDTHS:
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
AGGR_ID = re.compile(r"CPU\d+|S\d+(?:-D\d+)?(?:-C\d+|-L\d+-ID\d+|-CLS\d+)?|N\d+")


@dataclass
class Rec:
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


@dataclass
class Sums:
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


def combine(recs_in: list[Rec], stamps_by_run: dict[int, list[str]], path: Path) -> Sums:
    """The lines summed over intervals, CPUs and cgroups per run, then averaged over runs (see the perf module)."""
    out = Sums()
    by_run: dict[int, list[Rec]] = {}
    for r in recs_in:
        by_run.setdefault(r.run, []).append(r)
    out.runs = len(by_run)
    per_run: list[dict[str, float]] = []
    walls: list[dict[str, float]] = []
    repeated: set[str] = set()
    for run, recs in by_run.items():
        stamps = stamps_by_run.get(run, [""])
        if stamps != [""]:
            recs = _common_intervals(recs, stamps, out, path)
            out.intervals = max(out.intervals, len({r.stamp for r in recs}))
        slots: dict[tuple[str, str, str, str], list[Rec]] = {}
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


def _common_intervals(recs: list[Rec], stamps: list[str], out: Sums, path: Path) -> list[Rec]:
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


def energy_domains(ev: dict[str, float]) -> tuple[list[str], str, list[str]]:
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


def derive(c: Counts, ev: dict[str, float], units: dict[str, str], partial: dict[str, float], path: Path) -> None:
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


def wall_time(c: Counts, ev: dict[str, float], wall_s: dict[str, float]) -> None:
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
