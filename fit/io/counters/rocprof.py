"""rocprof output: ``rocprof -i input.txt`` results.csv and rocprofv2's counter CSV (one row per dispatch,
counters as columns; KernelName or Kernel_Name), and rocprofv3's counter_collection.csv (one row per dispatch and
counter: Counter_Name, Counter_Value). Dispatches of one kernel are summed.

Rules (AMD's counter definitions, as omniperf/rocprof-compute turns them into flops and bytes):

    flops_dp   wave x (SQ_INSTS_VALU_ADD_F64 + MUL_F64 + TRANS_F64 + 2 x FMA_F64) + 512 x SQ_INSTS_VALU_MFMA_MOPS_F64
    flops_sp   the same with F32
    int_ops    wave x (SQ_INSTS_VALU_INT32 + SQ_INSTS_VALU_INT64)
    bytes_mem  FETCH_SIZE + WRITE_SIZE (kilobytes, x 1024), or TCC_EA_RDREQ_sum x 64 B (less 32 B for each
               TCC_EA_RDREQ_32B_sum) + TCC_EA_WRREQ_64B_sum x 64 B + the rest of TCC_EA_WRREQ_sum x 32 B
    bytes_l2   TCC_HIT_sum x 128 B (an L2 line; hits are what L2 served)
    time_s     EndNs - BeginNs (v1), End_Timestamp - Start_Timestamp (v2/v3), nanoseconds

VALU counters count wave instructions: ``wave`` is the dispatch's wave_size (Wave_Size) column, else 64 (CDNA),
and assumes every lane active (the counters do not see the execution mask).
"""

from __future__ import annotations

from pathlib import Path

from archline.fit.io.counters.base import CountersFormatError, Counts, csv_rows, number, read_lines

VALU: dict[str, tuple[str, float]] = {}
for _p, _col in (("F64", "flops_dp"), ("F32", "flops_sp")):
    for _op, _n in (("ADD", 1.0), ("MUL", 1.0), ("TRANS", 1.0), ("FMA", 2.0)):
        VALU[f"SQ_INSTS_VALU_{_op}_{_p}"] = (_col, _n)
VALU["SQ_INSTS_VALU_INT32"] = ("int_ops", 1.0)
VALU["SQ_INSTS_VALU_INT64"] = ("int_ops", 1.0)
MFMA = {"SQ_INSTS_VALU_MFMA_MOPS_F64": ("flops_dp", 512.0), "SQ_INSTS_VALU_MFMA_MOPS_F32": ("flops_sp", 512.0)}
BYTES = ("FETCH_SIZE", "WRITE_SIZE", "TCC_EA_RDREQ_sum", "TCC_EA_RDREQ_32B_sum", "TCC_EA_WRREQ_sum",
         "TCC_EA_WRREQ_64B_sum", "TCC_HIT_sum")
KNOWN = (*VALU, *MFMA, *BYTES)
NAME_COLS = ("KernelName", "Kernel_Name", "Kernel-Name")
TIME_COLS = (("BeginNs", "EndNs"), ("Start_Timestamp", "End_Timestamp"))
WAVE_COLS = ("wave_size", "Wave_Size")


def _name(s: str) -> str:
    return s.strip().strip('"').split("(", 1)[0].strip() or s.strip()


def read(path: Path) -> list[Counts]:
    where = str(path)
    lines = read_lines(path, "rocprof output")
    rows = csv_rows(lines)
    h = next((i for i, r in enumerate(rows) if any(c.strip() in NAME_COLS for c in r)), None)
    if h is None:
        raise CountersFormatError(f"{where}: no rocprof header (a column {' or '.join(NAME_COLS)}); give rocprof's "
                                  "results.csv or rocprofv3's counter_collection.csv")
    head = [c.strip() for c in rows[h]]
    name_i = next(head.index(c) for c in NAME_COLS if c in head)
    long_form = "Counter_Name" in head and "Counter_Value" in head
    totals: dict[str, dict[str, float]] = {}
    times: dict[str, float] = {}
    dispatches: dict[str, set[str]] = {}
    waves: dict[str, set[float]] = {}
    t_cols = next(((head.index(a), head.index(b)) for a, b in TIME_COLS if a in head and b in head), None)
    wave_i = next((head.index(c) for c in WAVE_COLS if c in head), None)
    disp_i = next((head.index(c) for c in ("Dispatch_Id", "Dispatch_ID", "Index") if c in head), None)
    for k, r in enumerate(rows[h + 1:], start=h + 2):
        if not r or not "".join(r).strip():
            continue
        if len(r) != len(head):
            raise CountersFormatError(f"{where}: line {k}: {len(r)} fields, the header has {len(head)}")
        kernel = _name(r[name_i])
        t = totals.setdefault(kernel, {})
        dispatch = r[disp_i].strip() if disp_i is not None else str(k)
        first = dispatch not in dispatches.setdefault(kernel, set())
        dispatches[kernel].add(dispatch)
        if wave_i is not None and r[wave_i].strip():
            wave = number(r[wave_i], f"{where}: line {k}: {head[wave_i]}")
            if wave <= 0:
                raise CountersFormatError(f"{where}: line {k}: {head[wave_i]} is {wave:g}; a wave has 32 or 64 "
                                          "lanes (the flops would be counted as 0)")
            waves.setdefault(kernel, set()).add(wave)
        if t_cols is not None and first:
            b = number(r[t_cols[0]], f"{where}: line {k}: {head[t_cols[0]]}")
            e = number(r[t_cols[1]], f"{where}: line {k}: {head[t_cols[1]]}")
            if e < b:
                raise CountersFormatError(f"{where}: line {k}: {head[t_cols[1]]} before {head[t_cols[0]]}")
            times[kernel] = times.get(kernel, 0.0) + (e - b) * 1e-9
        if long_form:
            name = r[head.index("Counter_Name")].strip()
            if name in KNOWN:
                v = number(r[head.index("Counter_Value")], f"{where}: line {k}: {name}")
                t[name] = t.get(name, 0.0) + v
        else:
            for i, c in enumerate(head):
                if c in KNOWN and r[i].strip():
                    t[c] = t.get(c, 0.0) + number(r[i], f"{where}: line {k}: {c}")
    if not totals:
        raise CountersFormatError(f"{where}: no dispatch rows after the rocprof header (line {h + 1})")
    return [_counts(kn, totals[kn], times.get(kn), waves.get(kn, set()), len(dispatches[kn]), path)
            for kn in totals]


def _counts(kernel: str, raw: dict[str, float], time_s: float | None, wave: set[float], n: int,
            path: Path) -> Counts:
    where = f"{path}: kernel '{kernel}'"
    if not raw:
        raise CountersFormatError(f"{where}: none of the counters archline reads ({', '.join(KNOWN)}); list them "
                                  "in rocprof's input file (pmc: ...)")
    if len(wave) > 1:
        raise CountersFormatError(f"{where}: dispatches with different wave sizes {sorted(wave)}: give one per file")
    w = next(iter(wave), 64.0)
    c = Counts(kernel, {}, time_s=time_s, source=f"rocprof {path}", raw=dict(raw))
    for name, v in raw.items():
        if name in VALU:
            col, per = VALU[name]
            c.add(col, v * per * w)
        elif name in MFMA:
            col, per = MFMA[name]
            c.add(col, v * per)
    if any(n in raw for n in VALU):
        c.note(f"VALU counters x wave size {w:g}{'' if wave else ' (no wave_size column: CDNA wave64 assumed)'}, "
               "every lane taken as active")
    if "FETCH_SIZE" in raw or "WRITE_SIZE" in raw:
        c.add("bytes_mem", (raw.get("FETCH_SIZE", 0.0) + raw.get("WRITE_SIZE", 0.0)) * 1024.0)
        c.note("bytes_mem = (FETCH_SIZE + WRITE_SIZE) x 1024 (rocprof's kilobytes)")
    elif "TCC_EA_RDREQ_sum" in raw or "TCC_EA_WRREQ_sum" in raw:
        rd = raw.get("TCC_EA_RDREQ_sum", 0.0)
        rd32 = raw.get("TCC_EA_RDREQ_32B_sum", 0.0)
        wr = raw.get("TCC_EA_WRREQ_sum", 0.0)
        wr64 = raw.get("TCC_EA_WRREQ_64B_sum", 0.0)
        if rd32 > rd or wr64 > wr:
            raise CountersFormatError(f"{where}: a 32B/64B request count exceeds its total (TCC_EA_*REQ_sum)")
        c.add("bytes_mem", 64.0 * (rd - rd32) + 32.0 * rd32 + 64.0 * wr64 + 32.0 * (wr - wr64))
        c.note("bytes_mem from TCC_EA read/write requests (64 B, 32 B where the 32B/64B counters say so)")
    if "TCC_HIT_sum" in raw:
        c.add("bytes_l2", raw["TCC_HIT_sum"] * 128.0)
        c.note("bytes_l2 = TCC_HIT_sum x 128 B (an L2 line)")
    if not any(k.startswith("flops") for k in c.counts):
        c.note("no flop counter (SQ_INSTS_VALU_{ADD,MUL,FMA,TRANS}_F32/F64): flops not counted")
    if time_s is None:
        c.note("no BeginNs/EndNs or Start_Timestamp/End_Timestamp columns: no measured time")
    c.note(f"{n} dispatch(es) summed")
    return c
