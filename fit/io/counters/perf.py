"""``perf stat -x,`` output (perf-stat(1), "CSV FORMAT"): one line per event,

    [interval time,] counter value, unit, event name, [variance %,] counter run time, % of measurement time,
    [metric value, metric unit]

``<not counted>`` and ``<not supported>`` values are events without a count (their term is left out and said so).
A percentage below 100 means perf multiplexed the event and scaled its count to the whole run (an estimate): the
count is kept as perf scaled it and flagged. Interval output (-I) is summed over the intervals.

Rules (the vendors' event definitions):

    flops_dp   Intel fp_arith_inst_retired.scalar_double x 1, .128b_packed_double x 2, .256b_ x 4, .512b_ x 8
               (an FMA counts twice in these events); AMD fp_ret_sse_avx_ops.dp_{add_sub,mult,div,mult_add}_flops
               (flops already; mult_add counts 2)
    flops_sp   the same with single: x 1, 4, 8, 16; AMD sp_*_flops
               AMD Zen 3/4 fp_ret_sse_avx_ops.all has no precision: charged as flops_dp, and said so
    bytes_mem  uncore_imc*/cas_count_read/ + cas_count_write/ (perf prints MiB), unc_m_cas_count.rd/.wr x 64 B;
               else LLC-load-misses + LLC-store-misses x 64 B (a line each; prefetches are not seen)
    bytes_l3   LLC-loads + LLC-stores less the LLC misses, x 64 B
    bytes_l2   L1-dcache-load-misses less LLC-loads, x 64 B (lines L2 served)
    time_s     duration_time (wall time, ns)
"""

from __future__ import annotations

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
IMC_EVENTS = ("cas_count_read", "cas_count_write", "unc_m_cas_count.rd", "unc_m_cas_count.wr",
              "unc_m_cas_count.all")
CACHE_EVENTS = ("llc-load-misses", "llc-store-misses", "llc-loads", "llc-stores", "l1-dcache-load-misses")
TIME_EVENT = "duration_time"
KNOWN = (*FLOP_EVENTS, *IMC_EVENTS, *CACHE_EVENTS, TIME_EVENT)
NOT_COUNTED = ("<not counted>", "<not supported>")


def event_key(name: str) -> str:
    """``cpu_core/fp_arith_inst_retired.scalar_double/u`` or ``LLC-loads:u`` -> the bare lower-case name;
    ``uncore_imc_0/cas_count_read/`` -> ``cas_count_read``."""
    n = name.strip()
    if "/" in n:
        parts = [p for p in n.split("/") if p]
        n = parts[1] if len(parts) > 1 else parts[0]
        n = n.split(",", 1)[0]
    return n.split(":", 1)[0].lower()


def read(path: Path) -> list[Counts]:
    where = str(path)
    lines = read_lines(path, "perf stat output")
    values: dict[str, float] = {}
    units: dict[str, float] = {}
    missing: dict[str, str] = {}
    partial: dict[str, float] = {}
    ignored: list[str] = []
    for k, (ln, f) in enumerate(zip(lines, csv_rows(lines), strict=True), start=1):
        if not ln.strip() or ln.lstrip().startswith("#"):
            continue
        f = [x.strip() for x in f]
        if len(f) >= 4 and is_number(f[0]) and (is_number(f[1]) or f[1] in NOT_COUNTED):
            f = f[1:]                                      # -I: the interval's time stamp first
        if len(f) < 5:
            raise CountersFormatError(f"{where}: line {k}: {len(f)} fields; perf stat -x, gives value,unit,event,"
                                      "run time,percentage (did the file come from perf stat -x, ?)")
        value, unit, event = f[0], f[1], f[2]
        rest = f[3:]
        if rest and rest[0].endswith("%"):
            rest = rest[1:]                                # -r: the variance
        if len(rest) < 2:
            raise CountersFormatError(f"{where}: line {k}: no run time and percentage after the event '{event}'")
        key = event_key(event)
        if not event:
            raise CountersFormatError(f"{where}: line {k}: no event name (third field)")
        if key not in KNOWN:
            if key not in ignored:
                ignored.append(key)
            continue
        if value in NOT_COUNTED:
            missing[key] = value.strip("<>")
            continue
        v = number(value, f"{where}: line {k}: {event}")
        pct = number(rest[1], f"{where}: line {k}: percentage of {event}") if rest[1] else 100.0
        if pct < 100.0:
            partial[key] = min(partial.get(key, 100.0), pct)
        f_unit = 1.0 if key != TIME_EVENT and not unit else unit_factor(unit, f"{where}: line {k}: unit of {event}")
        values[key] = values.get(key, 0.0) + v
        units[key] = f_unit
    scaled = {k: v * units[k] for k, v in values.items()}
    gaps = [k for k in missing if k in scaled]
    missing = {k: why for k, why in missing.items() if k not in scaled}
    if not scaled:
        what = "; ".join(f"{k}: {why}" for k, why in missing.items()) or "none of them was measured"
        raise CountersFormatError(f"{where}: no event archline reads has a count ({what}); count e.g. "
                                  "fp_arith_inst_retired.scalar_double, LLC-load-misses, duration_time")
    c = _counts(scaled, missing, partial, ignored, path)
    for ev in gaps:
        c.note(f"{ev}: not counted in some intervals (those intervals add nothing)")
    return [c]


def _counts(ev: dict[str, float], missing: dict[str, str], partial: dict[str, float], ignored: list[str],
            path: Path) -> Counts:
    c = Counts("program", {}, source=f"perf stat {path}", raw=dict(ev))
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
        mib = sum(ev[k] for k in imc if not k.startswith("unc_m_"))
        c.add("bytes_mem", raw_lines * LINE_BYTES + mib)
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
    if TIME_EVENT in ev:
        c.time_s = ev[TIME_EVENT]
    else:
        c.note("no duration_time event: no measured wall time")
    for k, why in missing.items():
        c.note(f"{k}: {why} (its term is left out)")
    if partial:
        c.scaled = True
        c.note("multiplexed, counts scaled by perf: " + ", ".join(f"{k} ran {p:.2f}% of the time"
                                                                 for k, p in partial.items()))
    if not any(k.startswith("flops") for k in c.counts):
        c.note("no flop event counted: flops not counted")
    if ignored:
        c.note(f"not used by the model: {', '.join(ignored)}")
    return c
