"""The one owner of the ``archline.results/1`` contract (docs/formats.md lists it for users): columns in order,
the extra columns, units,
kinds, the CSV cell format and the checks a row must pass. The bench writer and every fit reader use it.

Kinds: ``text`` (strings), ``bool`` (``true``/``false``), ``count`` (work and traffic: an empty cell means 0),
``setting`` (settings in force: an empty cell means not measured), ``measure`` (a measured number; empty = not
measured). Readers must ignore columns they do not know; a writer adds a new extra column by listing it in
:data:`EXTRA` (the row builder then passes through a back end's value of that name).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

SCHEMA = "archline.results/1"


@dataclass(frozen=True)
class Column:
    name: str
    kind: str          #: text | bool | count | setting | measure
    unit: str = ""
    doc: str = ""


#: The contract columns, in order (docs/formats.md, generated from these).
CONTRACT: tuple[Column, ...] = (
    Column("schema", "text", doc="archline.results/1"),
    Column("run_id", "text", doc="unique id of the run or sweep"),
    Column("started_at", "text", doc="ISO-8601 UTC start time"),
    Column("platform", "text", doc="profile name"),
    Column("host", "text", doc="hostname"),
    Column("device", "text", doc="device string"),
    Column("backend", "text", doc="cpu_asm, opencl, cuda or emulated"),
    Column("kernel", "text", doc="intensity, cache, chase, int, idle"),
    Column("precision", "text", doc="sp, dp, int32"),
    Column("level", "text", doc="mem, l1, l2, l3, shared"),
    Column("reps", "measure", doc="repetitions inside the timed region"),
    Column("time_s", "measure", "s", "wall time of the timed region"),
    Column("energy_j", "measure", "J", "energy of the timed region from the meter"),
    Column("energy_err_j", "measure", "J", "bound on energy_j"),
    Column("flops_sp", "count", "flop", "single-precision flops (FMA = 2)"),
    Column("flops_dp", "count", "flop", "double-precision flops (FMA = 2)"),
    Column("int_ops", "count", "op", "integer operations"),
    Column("bytes_mem", "count", "byte", "traffic served from memory"),
    Column("bytes_l1", "count", "byte", "traffic served from L1"),
    Column("bytes_l2", "count", "byte", "traffic served from L2"),
    Column("bytes_l3", "count", "byte", "traffic served from L3"),
    Column("bytes_shared", "count", "byte", "traffic served from shared memory"),
    Column("rand_accesses", "count", "access", "dependent random accesses"),
    Column("power_cap_w", "setting", "W", "power cap in force"),
    Column("core_mhz", "setting", "MHz", "core clock (measured where possible)"),
    Column("mem_mhz", "setting", "MHz", "memory clock"),
    Column("core_v", "setting", "V", "core voltage (from the DVFS table)"),
    Column("mem_v", "setting", "V", "memory voltage (from the DVFS table)"),
    Column("meter", "text", doc="meter name"),
    Column("sample_hz", "measure", "Hz", "meter sample rate"),
    Column("n_samples", "measure", doc="meter samples inside the region"),
    Column("checksum_ok", "bool", doc="the kernel's output matched the reference"),
)

#: Extra columns the bench writes after the contract ones, in order.
EXTRA: tuple[Column, ...] = (
    Column("bus_bytes", "count", "byte", "bytes the hardware moves where write-allocate adds traffic"),
    Column("intensity_flop_per_byte", "measure", "flop/byte"),
    Column("isa", "text"), Column("threads", "measure"),
    Column("effective_clock_hz", "measure", "Hz", "clock measured while the kernel ran"),
    Column("ns_per_access", "measure", "ns"), Column("cycles_per_access", "measure", "cycle"),
    Column("pages", "text"), Column("driver_version", "text"), Column("compiler", "text"),
    Column("params", "text", doc="kernel parameters k=v;..."), Column("note", "text"),
    Column("clock_method", "text", doc="how effective_clock_hz was measured"),
    Column("clock_check", "text", doc="the clock cross-check's verdict"),
    Column("emulated", "bool", doc="true when anything in the row did not come from real hardware"),
    Column("point_id", "text"), Column("config_hash", "text"), Column("n_regions", "measure"),
    Column("time_spread_rel", "measure"), Column("energy_spread_rel", "measure"),
    Column("power_w", "measure", "W", "energy_j / time_s"),
    Column("idle_w_before", "measure", "W"), Column("idle_w_after", "measure", "W"),
    Column("throttled", "bool"), Column("clock_drift_rel", "measure"),
    Column("power_cap_requested_w", "setting", "W"), Column("core_mhz_requested", "setting", "MHz"),
    Column("mem_mhz_requested", "setting", "MHz"),
    Column("energy_by_device", "text", "J", "device=J;..."), Column("trace", "text", doc="raw trace, relative path"),
    Column("lost_samples", "measure", "sample", "meter samples the regions should hold that never arrived"),
    Column("lost_s", "measure", "s", "stretches of the regions a meter channel saw nothing (device seconds)"),
    Column("meter_gaps", "measure", doc="holes in the meter's sample cadence over the regions"),
    Column("meter_overflows", "measure", doc="meter buffer overflows over the regions"),
    Column("raw_capture", "text", doc="the meter's raw capture of this point, relative path"),
    # issue 26 (bench provenance): the archline that wrote the row
    Column("archline_version", "text", doc="archline.__version__ of the writer"),
    # issue 24: a meter entry with a calibration (meter calibrate) corrects the energy; the row says by what
    Column("calibration", "text", doc="the calibration applied to the meter's energy ('calibrated: gain ..., "
           "offset ... W, lag ... s'); empty when none"),
)

BY_NAME: dict[str, Column] = {c.name: c for c in CONTRACT + EXTRA}
COLUMNS: tuple[str, ...] = tuple(c.name for c in CONTRACT)
EXTRA_COLUMNS: tuple[str, ...] = tuple(c.name for c in EXTRA)
ALL_COLUMNS: tuple[str, ...] = COLUMNS + EXTRA_COLUMNS
UNITS: dict[str, str] = {c.name: c.unit for c in CONTRACT + EXTRA if c.unit}

#: Work and traffic counts of the contract; an empty cell means 0 (not applicable).
COUNT_COLUMNS: tuple[str, ...] = tuple(c.name for c in CONTRACT if c.kind == "count")
#: Settings in force (contract); an empty cell stays NaN (not measured).
SETTING_COLUMNS: tuple[str, ...] = tuple(c.name for c in CONTRACT if c.kind == "setting")
#: Strings (and booleans spelled as text) a reader must not turn into numbers.
TEXT_COLUMNS: tuple[str, ...] = (*(c.name for c in CONTRACT if c.kind in ("text", "bool")), "emulated")
#: Columns a file needs for any fit: a count column absent from the header is not an empty cell (0), it is a file
#: that does not follow the contract (a fit would take every row's traffic or work as 0).
REQUIRED_FOR_FIT: tuple[str, ...] = ("schema", "platform", "kernel", "precision", "time_s", "energy_j",
                                     *COUNT_COLUMNS)
#: The values the contract defines for these text columns (docs/formats.md); empty is allowed for precision
#: and level (a kernel without one, e.g. chase). A fit refuses another precision or level (it would be counted
#: as if it meant something) and warns of another kernel (the counts, not the name, enter the model).
KERNELS: tuple[str, ...] = ("intensity", "cache", "chase", "int", "ceil_flop", "ceil_mem", "idle")
PRECISIONS: tuple[str, ...] = ("sp", "dp", "int32")
LEVELS: tuple[str, ...] = ("mem", "l1", "l2", "l3", "shared")
#: Columns a time-only row (no meter) still needs.
REQUIRED: tuple[str, ...] = ("schema", "platform", "kernel", "precision", "time_s")

TRUE_WORDS = frozenset({"1", "true", "yes", "y", "t"})
FALSE_WORDS = frozenset({"0", "false", "no", "n", "f"})


def cell(v: Any) -> str:
    """One CSV cell: empty for None/NaN, ``true``/``false``, full-precision floats (repr)."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "" if math.isnan(v) else repr(v)
    return str(v)


def header_line(columns: Sequence[str] = ALL_COLUMNS) -> bytes:
    return (",".join(columns) + "\n").encode()


def row_line(row: Mapping[str, Any], columns: Sequence[str] = ALL_COLUMNS) -> bytes:
    """One complete CSV line (with its newline) for ``row`` in ``columns`` order; unknown keys are not written."""
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow([cell(row.get(c)) for c in columns])
    return buf.getvalue().encode()


def check_row(row: Mapping[str, Any]) -> None:
    """A row the writer is about to write: ValueError naming the column when it breaks the contract."""
    if row.get("schema") != SCHEMA:
        raise ValueError(f"schema must be {SCHEMA!r}, got {row.get('schema')!r}")
    for c in REQUIRED:
        if row.get(c) in (None, ""):
            raise ValueError(f"column {c} is empty")
    t = float(row["time_s"])
    if not (math.isfinite(t) and t > 0):
        raise ValueError(f"time_s must be a positive number, got {row['time_s']!r}")
    for c in COUNT_COLUMNS:
        v = row.get(c)
        if v not in (None, "") and not (isinstance(v, (int, float)) and v >= 0):
            raise ValueError(f"{c} must be a count >= 0, got {v!r}")
    e = row.get("energy_j")
    if e not in (None, "") and not (math.isfinite(float(e)) and float(e) >= 0):
        raise ValueError(f"energy_j must be finite and >= 0, got {e!r}")


def arrow_type(name: str) -> pa.DataType:
    """The Arrow type of a results column: its schema kind (unknown columns: text)."""
    import pyarrow as pa

    col = BY_NAME.get(name)
    if col is None or col.kind == "text":
        return pa.string()
    if col.kind == "bool":
        return pa.bool_()
    return pa.float64()


def newer_major(value: str) -> bool:
    """``archline.results/N`` with N above this reader's major version (a file a newer archline wrote)."""
    name, _, version = SCHEMA.partition("/")
    head, _, v = value.partition("/")
    major = v.split(".", 1)[0]
    return head == name and major.isdigit() and int(major) > int(version.split(".", 1)[0])
