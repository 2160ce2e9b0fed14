"""Nsight Compute exports (``ncu --csv``): the default "details" page (one row per kernel launch and metric:
Kernel Name, Metric Name, Metric Unit, Metric Value) and ``--page raw`` (one row per launch, metric names as
columns, a units row under the header). Launches of one kernel are summed.

Rules (Nsight Compute metric names; each byte charged once, at the level that served it):

    flops_dp   smsp__sass_thread_inst_executed_op_dadd/dmul_pred_on.sum x 1, ..._dfma_pred_on.sum x 2
    flops_sp   the same with fadd, fmul (x 1) and ffma (x 2)
    int_ops    smsp__sass_thread_inst_executed_op_integer_pred_on.sum
    bytes_mem  dram__bytes_read.sum + dram__bytes_write.sum (or dram__bytes.sum)
    bytes_l2   lts__t_bytes.sum less the DRAM bytes (L2 traffic that L2 served)
    bytes_l1   l1tex__t_bytes.sum less lts__t_bytes.sum (L1 traffic that L1 served)
    bytes_shared l1tex__data_pipe_lsu_wavefronts_mem_shared.sum x 128 B (one warp-wide 4-byte wavefront, the
               convention of the nvprof reader)
    time_s     gpu__time_duration.sum

Half-precision instructions (hadd, hmul, hfma) are read but not charged: the model has no fp16 cost.
"""

from __future__ import annotations

from pathlib import Path

from archline.fit.io.counters.base import CountersFormatError, Counts, csv_rows, number, read_lines, unit_factor

_OP = "smsp__sass_thread_inst_executed_op_{}_pred_on.sum"
#: metric -> (count column or a pseudo column, units per count)
RULES: dict[str, tuple[str, float]] = {
    _OP.format("dadd"): ("flops_dp", 1.0), _OP.format("dmul"): ("flops_dp", 1.0),
    _OP.format("dfma"): ("flops_dp", 2.0),
    _OP.format("fadd"): ("flops_sp", 1.0), _OP.format("fmul"): ("flops_sp", 1.0),
    _OP.format("ffma"): ("flops_sp", 2.0),
    _OP.format("hadd"): ("flops_hp", 1.0), _OP.format("hmul"): ("flops_hp", 1.0),
    _OP.format("hfma"): ("flops_hp", 2.0),
    _OP.format("integer"): ("int_ops", 1.0),
    "dram__bytes_read.sum": ("dram", 1.0), "dram__bytes_write.sum": ("dram", 1.0),
    "dram__bytes.sum": ("dram_total", 1.0),
    "lts__t_bytes.sum": ("l2_traffic", 1.0),
    "l1tex__t_bytes.sum": ("l1_traffic", 1.0),
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum": ("bytes_shared", 128.0),
    "gpu__time_duration.sum": ("time", 1.0),
}
IDENTITY = ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
            "Grid Size", "Device", "CC", "Section Name", "Kernel Time")


def _kernel(name: str) -> str:
    return name.split("(", 1)[0].strip() or name.strip()


def _header(rows: list[list[str]], where: str) -> int:
    for i, r in enumerate(rows):
        if r and r[0].strip() == "ID" and "Kernel Name" in r:
            return i
    raise CountersFormatError(f"{where}: no ncu --csv header (a line starting \"ID\",...,\"Kernel Name\"); "
                              "export with ncu --csv [--page raw]")


def read(path: Path) -> list[Counts]:
    where = str(path)
    lines = read_lines(path, "ncu export")
    rows = csv_rows(lines)
    h = _header(rows, where)
    head = [c.strip() for c in rows[h]]
    totals: dict[str, dict[str, float]] = {}
    launches: dict[str, int] = {}
    order: list[str] = []

    def put(kernel: str, metric: str, value: float) -> None:
        if kernel not in totals:
            totals[kernel], launches[kernel] = {}, 0
            order.append(kernel)
        totals[kernel][metric] = totals[kernel].get(metric, 0.0) + value

    if "Metric Name" in head:                       # the details page
        col = {c: head.index(c) for c in ("Kernel Name", "Metric Name", "Metric Unit", "Metric Value", "ID")
               if c in head}
        missing = [c for c in ("Metric Unit", "Metric Value") if c not in col]
        if missing:
            raise CountersFormatError(f"{where}: line {h + 1}: no column '{missing[0]}' in the ncu header")
        seen: set[tuple[str, str]] = set()
        for k, r in enumerate(rows[h + 1:], start=h + 2):
            if not r or lines[k - 1].startswith("=="):
                continue
            if len(r) != len(head):
                raise CountersFormatError(f"{where}: line {k}: {len(r)} fields, the header has {len(head)}")
            kernel, metric = _kernel(r[col["Kernel Name"]]), r[col["Metric Name"]].strip()
            launch = r[col["ID"]] if "ID" in col else str(k)
            if (launch, kernel) not in seen:
                seen.add((launch, kernel))
                put(kernel, "", 0.0)
                launches[kernel] += 1
            value = r[col["Metric Value"]].strip()
            if metric in RULES and value not in ("", "n/a"):
                f = unit_factor(r[col["Metric Unit"]], f"{where}: line {k}: {metric}")
                put(kernel, metric, number(value, f"{where}: line {k}: {metric}") * f)
    else:                                           # --page raw: a units row under the header
        if len(rows) <= h + 1:
            raise CountersFormatError(f"{where}: line {h + 2}: missing the units row under the ncu --page raw header")
        units = rows[h + 1]
        if len(units) != len(head) or units[head.index("Kernel Name")].strip():
            raise CountersFormatError(f"{where}: line {h + 2}: expected the units row (empty identity columns, "
                                      "then one unit per metric) under the ncu --page raw header")
        known = [i for i, c in enumerate(head) if c in RULES]
        for k, r in enumerate(rows[h + 2:], start=h + 3):
            if not r or lines[k - 1].startswith("=="):
                continue
            if len(r) != len(head):
                raise CountersFormatError(f"{where}: line {k}: {len(r)} fields, the header has {len(head)}")
            kernel = _kernel(r[head.index("Kernel Name")])
            put(kernel, "", 0.0)
            launches[kernel] += 1
            for i in known:
                if r[i].strip() in ("", "n/a"):
                    continue
                f = unit_factor(units[i], f"{where}: line {h + 2}: unit of {head[i]}")
                put(kernel, head[i], number(r[i], f"{where}: line {k}: {head[i]}") * f)
    if not order:
        raise CountersFormatError(f"{where}: no kernel rows after the ncu header (line {h + 1})")
    return [_counts(kernel, totals[kernel], launches[kernel], path) for kernel in order]


def _counts(kernel: str, metrics: dict[str, float], n_launches: int, path: Path) -> Counts:
    metrics = {m: v for m, v in metrics.items() if m}
    where = f"{path}: kernel '{kernel}'"
    if not metrics:
        raise CountersFormatError(f"{where}: none of the metrics archline reads ({', '.join(RULES)}); profile "
                                  "with ncu --metrics naming them")
    c = Counts(kernel, {}, source=f"ncu {path}", raw=dict(metrics))
    part: dict[str, float] = {}
    for m, v in metrics.items():
        column, scale = RULES[m]
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
    if "l1_traffic" in part:
        c.add("bytes_l1", max(part["l1_traffic"] - part.get("l2_traffic", 0.0), 0.0))
        c.note("bytes_l1 = l1tex__t_bytes.sum - lts__t_bytes.sum (L1 traffic that L1 served)")
    if "bytes_shared" in part:
        c.note("bytes_shared = shared-memory wavefronts x 128 B")
    if part.get("flops_hp"):
        c.note(f"{part['flops_hp']:.6g} half-precision flops read but not charged (no fp16 cost in the model)")
    if not flops_seen:
        c.note("no flop metric (smsp__sass_thread_inst_executed_op_{d,f}{add,mul,fma}_pred_on.sum): flops not counted")
    if "time" in part:
        c.time_s = part["time"]
    c.note(f"{n_launches} launch(es) summed")
    return c
