"""Nsight Compute's metric names as archline reads them (formats/counters/ncu.py reads the files): which metric
makes which count, sectors and parts of a total, the time metrics, and the unit each metric must carry."""

from __future__ import annotations

import re

from archline.formats.counters.base import CountersFormatError, unit_factor

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
}
SECTOR_B = 32.0                                  # an L2/DRAM sector
#: the same quantities counted in 32-byte sectors
SECTORS = {"dram__sectors_read.sum": "dram__bytes_read.sum", "dram__sectors_write.sum": "dram__bytes_write.sum",
           "dram__sectors.sum": "dram__bytes.sum", "lts__t_sectors.sum": "lts__t_bytes.sum",
           "l1tex__t_sectors.sum": "l1tex__t_bytes.sum"}
#: parts of a total, summed (x factor) where the file has the parts and not the total
PARTS: dict[str, tuple[str, float]] = {
    **{f"lts__t_sectors_op_{op}.sum": ("lts__t_bytes.sum", SECTOR_B) for op in ("read", "write", "atom", "red")},
    **{f"l1tex__t_sectors_pipe_lsu_mem_global_op_{op}.sum": ("l1tex__t_bytes.sum", SECTOR_B) for op in ("ld", "st")},
    **{f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum": ("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
                                                                  1.0) for op in ("ld", "st", "atom")},
}
#: time metrics, by preference: one launch's duration (.sum and .avg are the same over one launch), or cycles
#: over cycles per second
DURATIONS = ("gpu__time_duration.sum", "gpu__time_duration.avg")
DURATION = DURATIONS[0]
ACTIVE = ("gpu__time_active.sum", "gpu__time_active.avg")    # the GPU's active time: one kernel's, serialized
SECTION_DURATION = "Duration"
CYCLES = (("sm__cycles_elapsed.avg", "sm__cycles_elapsed.avg.per_second"),
          ("smsp__cycles_elapsed.avg", "smsp__cycles_elapsed.avg.per_second"))
RATES = {rate for _, rate in CYCLES}
TIME_METRICS = (*DURATIONS, *ACTIVE, SECTION_DURATION, *(m for pair in CYCLES for m in pair))
SECONDS = (*DURATIONS, *ACTIVE, SECTION_DURATION)              # in a unit of time
#: tensor-core (MMA) instructions: their flops depend on the shape and type of each MMA, which the counter does
#: not say; read and named, not charged
TENSOR = re.compile(r"(sm|smsp)__(sass_)?inst_executed_pipe_tensor\w*\.sum")
IDENTITY = ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
            "Grid Size", "Device", "CC", "Section Name", "Kernel Time")
RULE_COLUMNS = ("Rule Name", "Rule Type", "Rule Description", "Estimated Speedup Type", "Estimated Speedup")
#: what to collect, named in a refusal
COLLECT = ("ncu --csv --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,"
           + ",".join(_OP.format(p + op) for p in "df" for op in ("add", "mul", "fma")))
FLOP_METRICS = "smsp__sass_thread_inst_executed_op_{d,f}{add,mul,fma}_pred_on.sum"


def canonical(metric: str) -> str:
    """NERSC's ``sm__sass_thread_inst_executed_op_*`` spelling as the ``smsp__`` one (the same .sum); a sector
    count as its bytes metric (x 32 B, :func:`scale_of`)."""
    if metric.startswith("sm__sass_thread_inst_executed_op_"):
        return "smsp__" + metric[len("sm__"):]
    return SECTORS.get(metric, metric)


def scale_of(metric: str) -> float:
    return SECTOR_B if metric in SECTORS else 1.0


def is_tensor(metric: str) -> bool:
    return TENSOR.fullmatch(metric) is not None


def wanted(metric: str) -> bool:
    """A metric the counts or the time are made of (or one named in the notes: tensor-core instructions)."""
    return canonical(metric) in RULES or metric in PARTS or metric in TIME_METRICS or is_tensor(metric)


def dimension(metric: str) -> str:
    """What a wanted metric's unit must measure: a time, bytes, or a plain count (instructions, sectors, cycles)."""
    if metric in SECONDS:
        return "time"
    return "bytes" if "bytes" in metric else "count"


def rate_factor(unit: str, where: str) -> float:
    """Cycles per second from a rate's unit: "cycle/second", ncu's scaled "cycle/nsecond", or "Ghz"/"Mhz"."""
    u = unit.strip().lower()
    hz = {"hz": 1.0, "khz": 1e3, "mhz": 1e6, "ghz": 1e9}
    if u in hz:
        return hz[u]
    if "/" not in u:
        shown = f"unit '{unit.strip()}' is not a unit of frequency" if u else "no unit (a frequency needs one)"
        raise CountersFormatError(f"{where}: {shown} (cycle/second, cycle/nsecond, Ghz): check the export's units")
    top, bottom = u.split("/", 1)
    return unit_factor(top, where, "count") / unit_factor(bottom, where, "time")
