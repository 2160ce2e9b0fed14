"""Nsight Compute exports (``ncu --csv``): the default "details" page (one row per kernel launch and metric:
Kernel Name, Metric Name, Metric Unit, Metric Value, in sections), ``--page raw`` (one row per launch, metric
names as columns, a units row under the header) and ``--print-summary per-kernel`` (one row per kernel and metric,
no ID: Invocations, Minimum, Maximum, Average; a count is Average x Invocations). Launches of one kernel are
summed: a launch is its process and ID (IDs restart in each process), a summary row its process and launch shape.

Rules (Nsight Compute metric names; each byte charged once, at the level that served it):

    flops_dp   smsp__sass_thread_inst_executed_op_dadd/dmul_pred_on.sum x 1, ..._dfma_pred_on.sum x 2
    flops_sp   the same with fadd, fmul (x 1) and ffma (x 2)
    int_ops    smsp__sass_thread_inst_executed_op_integer_pred_on.sum
    bytes_mem  dram__bytes_read.sum + dram__bytes_write.sum (or dram__bytes.sum)
    bytes_l2   lts__t_bytes.sum less the DRAM bytes (L2 traffic that L2 served)
    bytes_l1   l1tex__t_bytes.sum less lts__t_bytes.sum (L1 traffic that L1 served)
    bytes_shared l1tex__data_pipe_lsu_wavefronts_mem_shared.sum x 128 B (one warp-wide 4-byte wavefront, the
               convention of the nvprof reader)
    (sectors)  dram__sectors_{read,write}.sum, lts__t_sectors.sum ... x 32 B as their bytes metrics; where only the
               parts are given, lts__t_sectors_op_{read,write,atom,red}.sum, l1tex__t_sectors_pipe_lsu_mem_global_op_
               {ld,st}.sum (global only, noted) and the shared op_{ld,st,atom} wavefronts are summed into the total
    time_s     gpu__time_duration.sum or .avg (or gpu__time_active); else the sections' "Duration" (GPU Speed Of
               Light); else sm__cycles_elapsed.avg / .avg.per_second (NERSC's roofline recipe), per launch

``sm__sass_thread_inst_executed_op_*`` (the NERSC scripts' spelling) is the same count as ``smsp__...`` (both
.sum over the whole GPU); a launch that has both is counted once. Half-precision instructions (hadd, hmul, hfma)
are read but not charged: the model has no fp16 cost.

What real exports hold beside the table, and how it is read: ``==PROF==``/``==ERROR==`` lines and the program's
own output before the header are skipped (an ``==ERROR==`` is named in every kernel's notes: a kernel ncu failed
to profile is missing); newer ncu writes Rule columns (Rule Name, Rule Type, Rule Description, Estimated
Speedup...) that metric rows leave out, so a row may be shorter than the header by those columns; rule rows (a
Rule Name, no Metric Name) are skipped; values may carry thousands separators ("1,024") and any unit ncu prints.
A file with no flop or byte metric at all is refused, saying what it holds.
"""

from __future__ import annotations

import math
from pathlib import Path

from archline.formats.counters.base import (
    CountersFormatError,
    Counts,
    csv_rows,
    number,
    read_lines,
    show_path,
    unit_factor,
)
from archline.formats.counters.kernels import display_names
from archline.formats.counters.ncu_metrics import (
    ACTIVE,
    COLLECT,
    CYCLES,
    DURATION,
    DURATIONS,
    FLOP_METRICS,
    IDENTITY,
    PARTS,
    RATES,
    RULE_COLUMNS,
    RULES,
    SECTION_DURATION,
    SECTOR_B,
    SECTORS,
    TIME_METRICS,
    canonical,
    dimension,
    is_tensor,
    rate_factor,
    scale_of,
    wanted,
)


def _header(rows: list[list[str]]) -> int | None:
    """The table's header: "ID",...,"Kernel Name" (details, raw), or --print-summary per-kernel's "Kernel Name",
    "Invocations", ..."Metric Name" (no ID)."""
    for i, r in enumerate(rows):
        if r and "Kernel Name" in r and (r[0].strip() == "ID" or ("Invocations" in r and "Metric Name" in r)):
            return i
    return None


def _said(lines: list[str], kinds: tuple[str, ...]) -> list[str]:
    """ncu's own ==ERROR==/==WARNING== lines, verbatim (why a kernel or the whole table is missing)."""
    return [ln.strip() for ln in lines if ln.startswith(kinds)]


#: two spellings of one count in one launch (sm__/smsp__, sectors x 32 B and bytes, two sections) agree within
#: ncu's printed precision (3-4 digits of an auto-scaled unit); more apart, they are a conflict, refused
AGREE_REL = 1e-2


class _Launches:
    """Metric values per (kernel, launch), already in base units; a metric is taken once per launch. A kernel is
    keyed by its full name as ncu prints it (overloads k(float*) and k(double*) are two kernels); a launch by
    its process and ID (IDs restart in each process), or, in a per-kernel summary, by its identity columns."""

    def __init__(self) -> None:
        self.values: dict[tuple[str, str], dict[str, float]] = {}
        self.spelled: dict[tuple[str, str, str], str] = {}
        self.order: list[str] = []
        self.seen: set[str] = set()            # every metric name the file holds (for a refusal)
        self.valued: set[str] = set()          # ... and those with a value in some launch
        self.sections: set[str] = set()
        self.invocations: dict[tuple[str, str], int] = {}   # --print-summary per-kernel: launches behind a row
        self.processes: dict[str, set[str]] = {}
        self.missing: dict[str, dict[str, int]] = {}        # kernel -> metric -> launches with no value
        self.notes: dict[str, None] = {}        # said of every kernel (in order, once)
        self.kernel_notes: dict[str, dict[str, None]] = {}

    def launch(self, kernel: str, launch: str, process: str = "") -> dict[str, float]:
        if kernel not in self.order:
            self.order.append(kernel)
        self.processes.setdefault(kernel, set()).add(process)
        return self.values.setdefault((kernel, launch), {})

    def put(self, kernel: str, launch: str, metric: str, value: float, where: str) -> None:
        got = self.launch(kernel, launch)
        key = canonical(metric)
        v = value * scale_of(metric)
        self.valued.add(metric)
        if key not in got:
            got[key] = v
            self.spelled[(kernel, launch, key)] = metric
            if metric in SECTORS:
                self.notes[f"{key} = {metric} x 32 B"] = None
            return
        first, old = self.spelled[(kernel, launch, key)], got[key]
        if not math.isclose(old, v, rel_tol=AGREE_REL):
            also = "twice" if first == metric else f"beside {first}"
            raise CountersFormatError(f"{where} = {v:.6g} given {also} ({old:.6g}) for one launch ({_shown(launch)}) "
                                      f"of kernel '{kernel}': conflicting values; give each launch's metric once "
                                      "(one export per run)")
        if first != metric:
            note = self.kernel_notes.setdefault(kernel, {})
            note[f"{first} and {metric} both given, equal: counted once"] = None
            if metric == key:                  # the exact spelling (bytes, not sectors x 32 B) kept
                got[key], self.spelled[(kernel, launch, key)] = v, metric


def _shown(launch: str) -> str:
    pid, _, ident = launch.partition("\x1f")
    if ident.startswith("summary"):
        return f"process {pid}, " + ident.removeprefix("summary ") if pid else ident
    return f"ID {ident}, process {pid}" if pid else f"ID {ident}"


def read(path: Path) -> list[Counts]:
    where = show_path(path)
    lines = read_lines(path, "ncu export")
    rows = csv_rows(lines)
    h = _header(rows)
    if h is None:
        said = _said(lines, ("==ERROR==", "==WARNING=="))
        because = f"; ncu said: {' / '.join(said[:3])}" if said else ""
        raise CountersFormatError(f"{where}: no ncu --csv header (a line starting \"ID\",...,\"Kernel Name\")"
                                  f"{because}; export with ncu --csv [--page raw]")
    head = [c.strip() for c in rows[h]]
    got = _Launches()
    rules: list[str] = []
    if "Metric Name" in head:
        _details(rows, lines, head, h, where, got, rules)
    else:
        _raw(rows, lines, head, h, where, got)
    if not got.order:
        raise CountersFormatError(f"{where}: no kernel rows after the ncu header (line {h + 1})")
    errors = _said(lines, ("==ERROR==",))
    if not any(canonical(m) in RULES or m in PARTS for m in got.valued):
        raise CountersFormatError(f"{where}: no flop or byte metric in this file ({_holds(got, rules)}); collect "
                                  f"with {COLLECT}")
    got.notes.update((f"ncu reported {e!r}: a kernel it could not profile is not in this file", None)
                     for e in errors[:2])
    shown = display_names(got.order)
    return [_counts(k, shown[k], got, path) for k in got.order]


def _details(rows: list[list[str]], lines: list[str], head: list[str], h: int, where: str, got: _Launches,
             rules: list[str]) -> None:
    col = {c: head.index(c) for c in ("Kernel Name", "Metric Name", "Metric Unit", "Metric Value", "ID",
                                      "Process ID", "Section Name", "Rule Name", "Invocations", "Average")
           if c in head}
    summary = "Metric Value" not in col and "Invocations" in col and "Average" in col
    if summary:                                  # per-kernel summary: the mean of Invocations launches
        col["Metric Value"] = col["Average"]
    missing = [c for c in ("Metric Unit", "Metric Value") if c not in col]
    if missing:
        raise CountersFormatError(f"{where}: line {h + 1}: no column '{missing[0]}' in the ncu header")
    # a summary row's launches: every identity column but the kernel's name (launch shape, device, process)
    shape = [i for i, c in enumerate(head) if c in IDENTITY and c not in ("Kernel Name", "Section Name",
                                                                          "Process ID", "Process Name")]
    # newer ncu: Rule columns close the header, and metric rows leave them out (a 20-column header over 16-field
    # rows); the shortest valid row ends at the first Rule column
    shortest = min([head.index(c) for c in RULE_COLUMNS if c in head] or [len(head)])
    shortest = max(shortest, col["Metric Value"] + 1)
    for k, r in enumerate(rows[h + 1:], start=h + 2):
        if not r or lines[k - 1].startswith("=="):
            continue
        if [c.strip() for c in r] == head:       # two exports joined: the header again
            got.notes[f"the header repeats at line {k} (two exports joined): read as one file"] = None
            continue
        if not shortest <= len(r) <= len(head):
            span = f"{shortest} to {len(head)}" if shortest < len(head) else f"{len(head)}"
            raise CountersFormatError(f"{where}: line {k}: {len(r)} fields, the header has {len(head)} (rows "
                                      f"have {span})")
        kernel, metric = r[col["Kernel Name"]].strip(), r[col["Metric Name"]].strip()
        pid = r[col["Process ID"]].strip() if "Process ID" in col else ""
        if summary:
            launch = pid + "\x1f" + "summary " + "; ".join(f"{head[i]} {r[i].strip()}" for i in shape if i < len(r))
        else:
            launch = pid + "\x1f" + (r[col["ID"]].strip() if "ID" in col else str(k))
        n = 1.0
        if summary:
            n = number(r[col["Invocations"]], f"{where}: line {k}: Invocations")
            got.invocations[(kernel, launch)] = int(n)
        if not metric:
            rule = r[col["Rule Name"]].strip() if "Rule Name" in col and len(r) > col["Rule Name"] else ""
            if rule:                             # a rule's verdict, no value
                section = r[col["Section Name"]].strip() if "Section Name" in col else ""
                rules.append(f"{rule} ({section})" if section else rule)
                got.launch(kernel, launch, pid)
                continue
            raise CountersFormatError(f"{where}: line {k}: no Metric Name and no Rule Name")
        got.launch(kernel, launch, pid)
        got.seen.add(metric)
        if "Section Name" in col:
            got.sections.add(r[col["Section Name"]].strip())
        if not wanted(metric) and metric not in RATES:
            continue
        value = r[col["Metric Value"]].strip()
        if value in ("", "n/a"):
            _no_value(got, kernel, metric)
            continue
        unit = r[col["Metric Unit"]]
        at = f"{where}: line {k}: {metric}"
        if metric in RATES:                      # a rate is not summed over launches
            got.put(kernel, launch, metric, number(value, at) * rate_factor(unit, at), at)
        else:
            got.put(kernel, launch, metric, number(value, at) * unit_factor(unit, at, dimension(metric)) * n, at)


def _no_value(got: _Launches, kernel: str, metric: str) -> None:
    """An "n/a" or empty value: counted as missing (named in the notes), never as 0."""
    per = got.missing.setdefault(kernel, {})
    per[metric] = per.get(metric, 0) + 1


def _raw(rows: list[list[str]], lines: list[str], head: list[str], h: int, where: str, got: _Launches) -> None:
    """``--page raw``: a units row under the header, then one row per launch."""
    if len(rows) <= h + 1:
        raise CountersFormatError(f"{where}: line {h + 2}: missing the units row under the ncu --page raw header")
    units = rows[h + 1]
    if len(units) != len(head) or units[head.index("Kernel Name")].strip():
        raise CountersFormatError(f"{where}: line {h + 2}: expected the units row (empty identity columns, "
                                  "then one unit per metric) under the ncu --page raw header")
    known = [i for i, c in enumerate(head) if wanted(c)]
    got.seen.update(c for c in head if "__" in c)
    factor: dict[int, float] = {}
    for i in known:
        at = f"{where}: line {h + 2}: unit of {head[i]}"
        factor[i] = rate_factor(units[i], at) if head[i] in RATES else unit_factor(units[i], at, dimension(head[i]))
    skip = 0
    for k, r in enumerate(rows[h + 2:], start=h + 3):
        if k <= skip or not r or lines[k - 1].startswith("=="):
            continue
        if [c.strip() for c in r] == head:      # two exports joined: the header and its units row again
            got.notes[f"the header repeats at line {k} (two exports joined): read as one file"] = None
            skip = k + 1
            continue
        if len(r) != len(head):
            raise CountersFormatError(f"{where}: line {k}: {len(r)} fields, the header has {len(head)}")
        kernel = r[head.index("Kernel Name")].strip()
        pid = r[head.index("Process ID")].strip() if "Process ID" in head else ""
        launch = pid + "\x1f" + (r[head.index("ID")].strip() if "ID" in head else str(k))
        got.launch(kernel, launch, pid)
        for i in known:
            if r[i].strip() in ("", "n/a"):
                _no_value(got, kernel, head[i])
                continue
            at = f"{where}: line {k}: {head[i]}"
            got.put(kernel, launch, head[i], number(r[i], at) * factor[i], at)


def _holds(got: _Launches, rules: list[str]) -> str:
    """What a refused file holds instead, in a few words true of it."""
    metrics = sorted(got.seen)
    sections = f"; sections {', '.join(sorted(got.sections))}" if got.sections else ""
    if not metrics and rules:
        return f"only rule results: {', '.join(dict.fromkeys(rules))}"
    empty = sorted(m for m in metrics if (canonical(m) in RULES or m in PARTS) and m not in got.valued)
    if empty:
        return f"{', '.join(empty)} with no value (n/a or empty) in every launch"
    tensor = [m for m in metrics if is_tensor(m) and m in got.valued]
    if tensor:
        return f"tensor-core instructions only ({', '.join(tensor)}: not charged, their flops unknown){sections}"
    timed = [m for m in metrics if m in TIME_METRICS]
    if timed:
        return f"time ({', '.join(timed)}) among its {len(metrics)} metrics{sections}"
    shown = ", ".join(metrics[:4]) + (f" and {len(metrics) - 4} more" if len(metrics) > 4 else "")
    return f"its {len(metrics)} metrics: {shown}{sections}"


def _launch_time(m: dict[str, float]) -> tuple[float | None, str]:
    for duration in (*DURATIONS, *ACTIVE):
        if duration in m:
            return m[duration], duration
    if SECTION_DURATION in m:
        return m[SECTION_DURATION], "the section metric Duration"
    for cycles, rate in CYCLES:
        if cycles in m and m.get(rate, 0.0) > 0:
            return m[cycles] / m[rate], f"{cycles} / {rate}"
    return None, ""


def _counts(key: str, kernel: str, got: _Launches, path: Path) -> Counts:
    launches = [v for (kn, _), v in got.values.items() if kn == key]
    metrics: dict[str, float] = {}
    from_parts: set[str] = set()
    for launch in launches:                      # a total made of its parts where the file has only those
        made = {total: 0.0 for p, (total, _) in PARTS.items() if p in launch and total not in launch}
        for p, v in launch.items():
            if p in PARTS and PARTS[p][0] in made:
                made[PARTS[p][0]] += v * PARTS[p][1]
        launch.update(made)
        from_parts.update(made)
    for launch in launches:
        for name, v in launch.items():
            metrics[name] = metrics.get(name, 0.0) + v
    counted = {m: v for m, v in metrics.items() if m in RULES}
    where = f"{show_path(path)}: kernel '{kernel}'"
    if not counted:
        raise CountersFormatError(f"{where}: no flop or byte metric with a value for this kernel (other kernels "
                                  f"have them); collect with {COLLECT}")
    c = Counts(kernel, {}, source=f"ncu {path}", raw=dict(metrics))
    part: dict[str, float] = {}
    for name, v in counted.items():
        column, scale = RULES[name]
        part[column] = part.get(column, 0.0) + v * scale
    if "dram_total" in part and "dram" in part:
        raise CountersFormatError(f"{where}: dram__bytes.sum and dram__bytes_read/write.sum both given: the DRAM "
                                  "bytes would be counted twice; give one or the other")
    dram = part.get("dram", part.get("dram_total", 0.0))
    flops_seen = False
    for column in ("flops_sp", "flops_dp", "int_ops", "bytes_shared"):
        if column in part:
            c.add(column, part[column])
            flops_seen = flops_seen or column.startswith("flops")
    if "dram" in part or "dram_total" in part:
        c.add("bytes_mem", dram)
    if "l2_traffic" in part:
        c.add("bytes_l2", max(part["l2_traffic"] - dram, 0.0))
        c.note("bytes_l2 = lts__t_bytes.sum - DRAM bytes (L2 traffic that L2 served)")
        if part["l2_traffic"] < dram:
            c.note("lts__t_bytes.sum is below the DRAM bytes: bytes_l2 taken as 0")
    if "l1_traffic" in part:
        c.add("bytes_l1", max(part["l1_traffic"] - part.get("l2_traffic", 0.0), 0.0))
        c.note("bytes_l1 = l1tex__t_bytes.sum - lts__t_bytes.sum (L1 traffic that L1 served)")
        if part["l1_traffic"] < part.get("l2_traffic", 0.0):
            c.note("l1tex__t_bytes.sum is below lts__t_bytes.sum: bytes_l1 taken as 0")
    if "bytes_shared" in part:
        c.note("bytes_shared = shared-memory wavefronts x 128 B")
    if part.get("flops_hp"):
        c.note(f"{part['flops_hp']:.6g} half-precision flops read but not charged (no fp16 cost in the model)")
    for name in sorted(m for m in metrics if is_tensor(m) and metrics[m] > 0):
        c.note(f"{name} = {metrics[name]:.6g} tensor-core instructions read but not charged (an MMA's flops depend "
               "on its shape and type, which the counter does not give): the flops are low")
    if "dram" in part and not {"dram__bytes_read.sum", "dram__bytes_write.sum"} <= set(metrics):
        lack = "writes" if "dram__bytes_read.sum" in metrics else "reads"
        c.note(f"only DRAM {'reads' if lack == 'writes' else 'writes'} in this file: DRAM {lack} not counted")
    if not flops_seen:
        c.note(f"no flop metric ({FLOP_METRICS}): flops not counted")
    times = [_launch_time(m) for m in launches]
    if all(t is not None for t, _ in times):
        c.time_s = sum(t for t, _ in times if t is not None)
        c.note(f"time_s from {', '.join(dict.fromkeys(s for _, s in times))}")
    else:
        c.note(f"no time metric ({DURATION}, Duration or sm__cycles_elapsed.avg[.per_second]) for every launch: "
               "no measured time")
    for name, m in got.missing.get(key, {}).items():
        c.note(f"{name} has no value (n/a or empty) in {m} launch(es): not counted there, so its total is low"
               if name not in TIME_METRICS else f"{name} has no value (n/a or empty) in {m} launch(es)")
    for n in (*got.notes, *got.kernel_notes.get(key, {})):
        c.note(n)
    for total in sorted(from_parts):
        parts = [p for p, (t, _) in PARTS.items() if t == total and p in metrics]
        c.note(f"{total} = {' + '.join(parts)}" + (" x 32 B" if PARTS[parts[0]][1] == SECTOR_B else "")
               + (" (global loads and stores only)" if "global" in parts[0] else ""))
    procs = len(got.processes.get(key, set()) - {""})
    of = f" of {procs} processes" if procs > 1 else ""
    calls = [n for (kn, _), n in got.invocations.items() if kn == key]
    if calls:
        c.note(f"{sum(calls)} launch(es){of} summed (ncu's per-kernel summary: Average x Invocations"
               + (f", {len(calls)} launch shapes" if len(calls) > 1 else "") + ")")
    else:
        c.note(f"{len(launches)} launch(es){of} summed")
    return c
