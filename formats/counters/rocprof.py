"""rocprof output: ``rocprof -i input.txt`` results.csv and rocprofv2's counter CSV (one row per dispatch,
counters as columns; KernelName or Kernel_Name), and rocprofv3's counter_collection.csv (one row per dispatch and
counter: Counter_Name, Counter_Value). Dispatches of one kernel are summed; a dispatch is its process and id.

Rules (AMD's counter definitions, as omniperf/rocprof-compute turns them into flops and bytes):

    flops_dp   wave x (SQ_INSTS_VALU_ADD_F64 + MUL_F64 + TRANS_F64 + 2 x FMA_F64) + 512 x SQ_INSTS_VALU_MFMA_MOPS_F64
    flops_sp   the same with F32
    int_ops    wave x (SQ_INSTS_VALU_INT32 + SQ_INSTS_VALU_INT64)
    bytes_mem  FETCH_SIZE + WRITE_SIZE (kilobytes, x 1024), or TCC_EA_RDREQ_sum x 64 B (less 32 B for each
               TCC_EA_RDREQ_32B_sum; 128 B for each TCC_BUBBLE_sum, MI300's 128-byte reads) + TCC_EA_WRREQ_64B_sum
               x 64 B + the rest of TCC_EA_WRREQ_sum x 32 B (rocprof-compute's rule; every write 64 B where
               TCC_EA_WRREQ_64B is not given, noted); MI300's TCC_EA0_* are the same counters
    bytes_l2   TCC_HIT_sum x 128 B (an L2 line; hits are what L2 served)
    time_s     EndNs - BeginNs (v1), End_Timestamp - Start_Timestamp (v2/v3), nanoseconds

A counter given per instance (``TCC_EA_RDREQ[0]`` ... ``[31]``, rocprof v1 without omniperf's ``_sum``) is summed
over its instances. omniperf/rocprof-compute's pmc_perf.csv (rocprof's columns renamed: Kernel_Name,
Start_Timestamp ...) reads as v2. A file with no flop or byte counter (a kernel trace, or other counters) is
refused, naming what it holds.

VALU counters count wave instructions: ``wave`` is the dispatch's wave_size (Wave_Size) column, else 64 (CDNA),
and assumes every lane active (the counters do not see the execution mask).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from archline.formats.counters.base import CountersFormatError, Counts, csv_rows, number, read_lines, show_path
from archline.formats.counters.kernels import display_names

VALU: dict[str, tuple[str, float]] = {}
for _p, _col in (("F64", "flops_dp"), ("F32", "flops_sp")):
    for _op, _n in (("ADD", 1.0), ("MUL", 1.0), ("TRANS", 1.0), ("FMA", 2.0)):
        VALU[f"SQ_INSTS_VALU_{_op}_{_p}"] = (_col, _n)
VALU["SQ_INSTS_VALU_INT32"] = ("int_ops", 1.0)
VALU["SQ_INSTS_VALU_INT64"] = ("int_ops", 1.0)
MFMA = {"SQ_INSTS_VALU_MFMA_MOPS_F64": ("flops_dp", 512.0), "SQ_INSTS_VALU_MFMA_MOPS_F32": ("flops_sp", 512.0)}
#: read and named, not charged: half-precision and int8 work (the model has no cost for them)
UNCHARGED = {**{f"SQ_INSTS_VALU_MFMA_MOPS_{p}": 512.0 for p in ("F16", "BF16", "I8")},
             **{f"SQ_INSTS_VALU_{op}_F16": (2.0 if op == "FMA" else 1.0) for op in ("ADD", "MUL", "FMA", "TRANS")}}
BYTES = ("FETCH_SIZE", "WRITE_SIZE", "TCC_EA_RDREQ_sum", "TCC_EA_RDREQ_32B_sum", "TCC_EA_WRREQ_sum",
         "TCC_EA_WRREQ_64B_sum", "TCC_HIT_sum", "TCC_BUBBLE_sum")
#: MI300 (gfx94x) names of the same L2-to-fabric request counters
ALIASES = {f"TCC_EA0_{n}_sum": f"TCC_EA_{n}_sum" for n in ("RDREQ", "RDREQ_32B", "WRREQ", "WRREQ_64B")}
KNOWN = (*VALU, *MFMA, *BYTES, *UNCHARGED)
#: columns that describe a dispatch, not a counter (v1, v2/v3 and omniperf's renamed spellings)
IDENTITY = {"Index", "KernelName", "Kernel_Name", "Kernel-Name", "gpu-id", "GPU_ID", "queue-id", "queue-index",
            "pid", "tid", "grd", "wgr", "lds", "scr", "vgpr", "arch_vgpr", "accum_vgpr", "sgpr", "fbar", "sig", "obj",
            "wave_size", "Wave_Size", "DispatchNs", "BeginNs", "EndNs", "CompleteNs", "Dispatch_Id", "Dispatch_ID",
            "Correlation_Id", "Correlation_ID", "Agent_Id", "Queue_Id", "Process_Id", "Thread_Id", "Grid_Size",
            "Kernel_Id", "Workgroup_Size", "LDS_Block_Size", "LDS_Per_Workgroup", "Scratch_Size",
            "Scratch_Per_Workitem", "VGPR_Count", "Accum_VGPR_Count", "SGPR_Count", "Arch_VGPR", "Accum_VGPR", "SGPR",
            "Start_Timestamp", "End_Timestamp", "Counter_Name", "Counter_Value", "XCC_Index", "Node_Id",
            "Stream_Id", "Private_Segment_Size", "Group_Segment_Size", "Workgroup_Size_X", "Workgroup_Size_Y",
            "Workgroup_Size_Z", "Grid_Size_X", "Grid_Size_Y", "Grid_Size_Z", "Kind"}
NAME_COLS = ("KernelName", "Kernel_Name", "Kernel-Name")
TIME_COLS = (("BeginNs", "EndNs"), ("Start_Timestamp", "End_Timestamp"))
WAVE_COLS = ("wave_size", "Wave_Size")


_INSTANCE = re.compile(r"(\w+)\[\d+\]")


def counter_key(name: str) -> tuple[str | None, bool]:
    """The counter archline reads under ``name`` (KNOWN's spelling) and whether it is one instance of it:
    ``TCC_EA0_RDREQ_sum`` (MI300) is ``TCC_EA_RDREQ_sum``; ``TCC_EA_RDREQ[3]`` is an instance of
    ``TCC_EA_RDREQ_sum``; rocprofv3's ``TCC_HIT`` is the sum over instances already."""
    name = name.strip()
    m = _INSTANCE.fullmatch(name)
    base = m.group(1) if m else name
    total = base if base in KNOWN or base in ALIASES else f"{base}_sum"
    total = ALIASES.get(total, total)
    if total not in KNOWN:
        return None, False
    return total, m is not None


def _stamp_ns(text: str, where: str) -> float:
    """A time stamp in ns, as an int where it is one: stamps since boot pass 2**53 (1.2e16 ns on a real MI100),
    past which a float drops nanoseconds from the difference."""
    t = text.strip()
    return int(t) if t.isdigit() else number(t, where)


class _Dispatches:
    """Counter values per (kernel, dispatch) as the file gives them (a dispatch is its process and dispatch id:
    ids restart in each process), and what each dispatch's time is."""

    def __init__(self) -> None:
        self.values: dict[tuple[str, str], dict[str, float]] = {}
        self.first_line: dict[tuple[str, str, str], int] = {}
        self.times: dict[tuple[str, str], float] = {}
        self.order: list[str] = []
        self.processes: dict[str, set[str]] = {}
        self.missing: dict[str, dict[str, int]] = {}
        self.notes: dict[str, dict[str, None]] = {}

    def put(self, kernel: str, dispatch: str, name: str, text: str, where: str, k: int) -> None:
        got = self.values.setdefault((kernel, dispatch), {})
        if not text.strip():                     # an empty value: missing, never 0
            per = self.missing.setdefault(kernel, {})
            per[name] = per.get(name, 0) + 1
            return
        v = number(text, f"{where}: line {k}: {name}")
        if name in got:
            if not math.isclose(got[name], v, rel_tol=1e-9):
                raise CountersFormatError(f"{where}: line {k}: {name} = {v:.6g} given twice for one dispatch "
                                          f"({_shown(dispatch)}) of kernel '{kernel}' (line "
                                          f"{self.first_line[(kernel, dispatch, name)]}: {got[name]:.6g}): "
                                          "conflicting values; give each dispatch once (one run per file)")
            self.notes.setdefault(kernel, {})[f"{name} listed twice for a dispatch, equal: counted once"] = None
            return
        got[name] = v
        self.first_line[(kernel, dispatch, name)] = k


def _shown(dispatch: str) -> str:
    pid, _, ident = dispatch.partition("\x1f")
    return f"dispatch {ident}, process {pid}" if pid else f"dispatch {ident}"


def read(path: Path) -> list[Counts]:
    where = show_path(path)
    lines = read_lines(path, "rocprof output")
    rows = csv_rows(lines)
    h = next((i for i, r in enumerate(rows) if any(c.strip() in NAME_COLS for c in r)), None)
    if h is None:
        raise CountersFormatError(f"{where}: no rocprof header (a column {' or '.join(NAME_COLS)}); give "
                                  "rocprof's results.csv or rocprofv3's counter_collection.csv")
    head = [c.strip() for c in rows[h]]
    name_i = next(head.index(c) for c in NAME_COLS if c in head)
    long_form = "Counter_Name" in head and "Counter_Value" in head
    got = _Dispatches()
    waves: dict[str, set[float]] = {}
    t_cols = next(((head.index(a), head.index(b)) for a, b in TIME_COLS if a in head and b in head), None)
    wave_i = next((head.index(c) for c in WAVE_COLS if c in head), None)
    disp_i = next((head.index(c) for c in ("Dispatch_Id", "Dispatch_ID", "Index") if c in head), None)
    pid_i = next((head.index(c) for c in ("Process_Id", "pid") if c in head), None)
    seen: dict[str, None] = {}                   # the counters the file holds, in order (for a refusal)
    counters = [] if long_form else [i for i, c in enumerate(head) if counter_key(c)[0] is not None]
    if not long_form:
        seen.update((c, None) for c in head if c not in IDENTITY and not re.fullmatch(r".+_\d+", c))
    for k, r in enumerate(rows[h + 1:], start=h + 2):
        if not r or not "".join(r).strip():
            continue
        if len(r) != len(head):
            raise CountersFormatError(f"{where}: line {k}: {len(r)} fields, the header has {len(head)}")
        kernel = r[name_i].strip().strip('"').strip()
        if kernel not in got.order:
            got.order.append(kernel)
        pid = r[pid_i].strip() if pid_i is not None else ""
        got.processes.setdefault(kernel, set()).add(pid)
        dispatch = pid + "\x1f" + (r[disp_i].strip() if disp_i is not None else str(k))
        got.values.setdefault((kernel, dispatch), {})
        if wave_i is not None and r[wave_i].strip():
            wave = number(r[wave_i], f"{where}: line {k}: {head[wave_i]}")
            if wave <= 0:
                raise CountersFormatError(f"{where}: line {k}: {head[wave_i]} is {wave:g}; a wave has 32 or 64 "
                                          "lanes (the flops would be counted as 0)")
            waves.setdefault(kernel, set()).add(wave)
        if t_cols is not None and (kernel, dispatch) not in got.times:
            b = _stamp_ns(r[t_cols[0]], f"{where}: line {k}: {head[t_cols[0]]}")
            e = _stamp_ns(r[t_cols[1]], f"{where}: line {k}: {head[t_cols[1]]}")
            if e < b:
                raise CountersFormatError(f"{where}: line {k}: {head[t_cols[1]]} before {head[t_cols[0]]}")
            got.times[(kernel, dispatch)] = (e - b) * 1e-9
        if long_form:
            name = r[head.index("Counter_Name")].strip()
            seen[name] = None
            if counter_key(name)[0] is not None:
                got.put(kernel, dispatch, name, r[head.index("Counter_Value")], where, k)
        else:
            for i in counters:
                got.put(kernel, dispatch, head[i], r[i], where, k)
    if not got.order:
        raise CountersFormatError(f"{where}: no dispatch rows after the rocprof header (line {h + 1})")
    totals = {kn: _resolve(kn, [v for (n, _), v in got.values.items() if n == kn], got, where) for kn in got.order}
    if not any(totals.values()):
        names = list(seen)
        held = (f"counters: {', '.join(names[:4])}" + (f" and {len(names) - 4} more" if len(names) > 4 else "")
                if names else "no counter columns: a kernel trace, time only")
        raise CountersFormatError(f"{where}: no flop or byte counter in this file ({held}); collect with rocprof "
                                  "--pmc SQ_INSTS_VALU_FMA_F64 SQ_INSTS_VALU_FMA_F32 ... FETCH_SIZE WRITE_SIZE (or "
                                  "TCC_EA_RDREQ_sum TCC_EA_WRREQ_sum)")
    shown = display_names(got.order)
    unused = [c for c in seen if counter_key(c)[0] is None]
    return [_counts(shown[kn], totals[kn], got, kn, waves.get(kn, set()), unused, path) for kn in got.order]


def _resolve(kernel: str, dispatches: list[dict[str, float]], got: _Dispatches, where: str) -> dict[str, float]:
    """Each known counter summed over the kernel's dispatches; in one dispatch, a counter given whole
    (``TCC_HIT``, ``TCC_HIT_sum``, ``TCC_EA0_..._sum``) is taken once, and its instances ``[i]`` only where no
    whole value is given. Two spellings that disagree are refused."""
    out: dict[str, float] = {}
    for d in dispatches:
        whole: dict[str, dict[str, float]] = {}
        parts: dict[str, float] = {}
        for name, v in d.items():
            key, instance = counter_key(name)
            if key is None:
                continue
            if instance:
                parts[key] = parts.get(key, 0.0) + v
            else:
                whole.setdefault(key, {})[name] = v
        for key in {*whole, *parts}:
            given = whole.get(key, {})
            if given:
                (first, v), *rest = given.items()
                for other, w in rest:
                    if not math.isclose(v, w, rel_tol=1e-9):
                        raise CountersFormatError(f"{where}: kernel '{kernel}': {first} = {v:.6g} and {other} = "
                                                  f"{w:.6g} in one dispatch: conflicting values; give one")
                    got.notes.setdefault(kernel, {})[f"{first} and {other} both given, equal: counted once"] = None
            else:
                v = parts[key]
            out[key] = out.get(key, 0.0) + v
    return out


def _counts(kernel: str, raw: dict[str, float], got: _Dispatches, key: str, wave: set[float], unused: list[str],
            path: Path) -> Counts:
    where = f"{show_path(path)}: kernel '{kernel}'"
    if not raw:
        raise CountersFormatError(f"{where}: no flop or byte counter with a value for this kernel (other kernels "
                                  "have them); list them in rocprof's input file (pmc: ...)")
    if len(wave) > 1:
        raise CountersFormatError(f"{where}: dispatches with different wave sizes {sorted(wave)}: give one per file")
    w = next(iter(wave), 64.0)
    stamps = [t for (kn, _), t in got.times.items() if kn == key]
    n = sum(1 for kn, _ in got.values if kn == key)
    time_s = sum(stamps) if stamps else None
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
    for name in (n for n in UNCHARGED if raw.get(n)):
        scale = UNCHARGED[name] * (1.0 if "MFMA" in name else w)
        what = "int8 ops" if name.endswith("I8") else "half-precision flops"
        c.note(f"{name} = {raw[name]:.6g} ({raw[name] * scale:.6g} {what}) read but not charged (no such cost in "
               "the model): the flops are low")
    if "FETCH_SIZE" in raw or "WRITE_SIZE" in raw:
        c.add("bytes_mem", (raw.get("FETCH_SIZE", 0.0) + raw.get("WRITE_SIZE", 0.0)) * 1024.0)
        c.note("bytes_mem = (FETCH_SIZE + WRITE_SIZE) x 1024 (rocprof's kilobytes)")
        for have, lack, what in (("FETCH_SIZE", "WRITE_SIZE", "writes"), ("WRITE_SIZE", "FETCH_SIZE", "reads")):
            if have in raw and lack not in raw:
                c.note(f"{lack} not in this file: DRAM {what} not counted")
    elif "TCC_EA_RDREQ_sum" in raw or "TCC_EA_WRREQ_sum" in raw:
        rd = raw.get("TCC_EA_RDREQ_sum", 0.0)
        rd32 = raw.get("TCC_EA_RDREQ_32B_sum", 0.0)
        rd128 = raw.get("TCC_BUBBLE_sum", 0.0)          # MI300: 128-byte reads (rocprof-compute's HBM read bytes)
        wr = raw.get("TCC_EA_WRREQ_sum", 0.0)
        # rocprof-compute: 64 B per TCC_EA_WRREQ_64B, 32 B for the other writes; without the 64B counter every
        # write is taken as 64 B (CDNA's usual size; an upper bound where some were 32 B), said in a note
        wr64 = raw.get("TCC_EA_WRREQ_64B_sum", wr)
        if rd32 + rd128 > rd or wr64 > wr:
            raise CountersFormatError(f"{where}: a 32B/64B/128B request count exceeds its total (TCC_EA_*REQ_sum)")
        c.add("bytes_mem", 128.0 * rd128 + 64.0 * (rd - rd32 - rd128) + 32.0 * rd32 + 64.0 * wr64
              + 32.0 * (wr - wr64))
        c.note("bytes_mem from TCC_EA read/write requests (64 B; 32 B and 128 B where TCC_EA_RDREQ_32B, "
               "TCC_BUBBLE and TCC_EA_WRREQ_64B say so)")
        if wr and "TCC_EA_WRREQ_64B_sum" not in raw:
            c.note("TCC_EA_WRREQ_64B not in this file: each write request taken as 64 B (an upper bound where some "
                   "were 32 B)")
        for have, lack, what in (("TCC_EA_RDREQ_sum", "TCC_EA_WRREQ_sum", "writes"),
                                 ("TCC_EA_WRREQ_sum", "TCC_EA_RDREQ_sum", "reads")):
            if have in raw and lack not in raw:
                c.note(f"{lack.removesuffix('_sum')} not in this file: DRAM {what} not counted")
    if "TCC_HIT_sum" in raw:
        c.add("bytes_l2", raw["TCC_HIT_sum"] * 128.0)
        c.note("bytes_l2 = TCC_HIT_sum x 128 B (an L2 line)")
    if not any(k.startswith("flops") for k in c.counts):
        c.note("no flop counter (SQ_INSTS_VALU_{ADD,MUL,FMA,TRANS}_F32/F64): flops not counted")
    if time_s is None:
        c.note("no BeginNs/EndNs or Start_Timestamp/End_Timestamp columns: no measured time")
    for name, m in got.missing.get(key, {}).items():
        c.note(f"{name} has no value in {m} dispatch(es): not counted there, so its total is low")
    for note in got.notes.get(key, {}):
        c.note(note)
    other_l2 = [u for u in unused if re.match(r"GL2C_\w*(REQ|BYTES|HIT)", u)]   # RDNA's L2 (GL2C), not read
    if other_l2:
        c.note(f"RDNA L2 counters not used by the model (it reads CDNA's TCC_*): {', '.join(other_l2[:6])}"
               + (f" and {len(other_l2) - 6} more" if len(other_l2) > 6 else "") + ": their bytes not counted")
    procs = len(got.processes.get(key, set()) - {""})
    c.note(f"{n} dispatch(es){f' of {procs} processes' if procs > 1 else ''} summed")
    return c
