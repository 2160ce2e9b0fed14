"""archline.results/1 rows (DESIGN.md §3): the column contract, row construction and the atomic CSV writer.

Reusable by every runner: ``make_row`` fills the contract columns from a spec and a RunResult, ``write_rows``
writes a CSV through a temp file in the same directory and renames it into place, so a crash never leaves a
partial file that looks complete.
"""

from __future__ import annotations

import csv
import datetime as _dt
import os
import socket
import tempfile
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from archline.bench.kernels import Counts, KernelSpec, RunResult

SCHEMA = "archline.results/1"

#: The contract columns, in order. Extra columns follow them.
COLUMNS: tuple[str, ...] = (
    "schema", "run_id", "started_at", "platform", "host", "device", "backend",
    "kernel", "precision", "level", "reps", "time_s", "energy_j", "energy_err_j",
    "flops_sp", "flops_dp", "int_ops", "bytes_mem", "bytes_l1", "bytes_l2", "bytes_l3", "bytes_shared",
    "rand_accesses", "power_cap_w", "core_mhz", "mem_mhz", "core_v", "mem_v",
    "meter", "sample_hz", "n_samples", "checksum_ok",
)

#: Extra columns the bench layer writes after the contract ones (readers must ignore unknown columns).
EXTRA_COLUMNS: tuple[str, ...] = (
    "bus_bytes", "intensity_flop_per_byte", "isa", "threads", "effective_clock_hz", "ns_per_access",
    "cycles_per_access", "pages", "driver_version", "compiler", "params", "note", "clock_method", "clock_check",
)

NO_METER_NOTE = "time only: no meter attached (energy columns empty until a meter records this region)"


def new_run_id() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + uuid.uuid4().hex[:8]


def utc_now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def make_row(spec: KernelSpec, result: RunResult, *, run_id: str, started_at: str, platform: str,
             device: str = "", host: str | None = None, note: str = NO_METER_NOTE,
             energy: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One archline.results/1 row; ``energy`` may carry energy_j, energy_err_j, meter, sample_hz, n_samples."""
    row: dict[str, Any] = {c: "" for c in COLUMNS + EXTRA_COLUMNS}
    row.update(schema=SCHEMA, run_id=run_id, started_at=started_at, platform=platform,
               host=host if host is not None else socket.gethostname(), device=device, backend=spec.backend,
               kernel=spec.kernel, precision=spec.precision, level=spec.level, reps=result.reps,
               time_s=repr(float(result.time_s)), checksum_ok=bool(result.checksum_ok))
    counts: Counts = result.counts
    row.update(counts.as_row())
    if not counts.bus_bytes:
        row["bus_bytes"] = ""
    ex = result.extra
    for key in ("intensity_flop_per_byte", "isa", "threads", "effective_clock_hz", "ns_per_access",
                "cycles_per_access", "pages", "driver_version", "compiler", "mem_mhz", "clock_method", "clock_check"):
        if key in ex:
            row[key] = ex[key]
    if not device and ex.get("device"):  # the back end names its device (OpenCL, CUDA)
        row["device"] = ex["device"]
    if ex.get("core_mhz"):  # measured during the run (NVML) beats the clock estimate
        row["core_mhz"] = round(float(ex["core_mhz"]), 1)
    elif ex.get("effective_clock_hz"):
        row["core_mhz"] = round(float(ex["effective_clock_hz"]) / 1e6, 1)
    row["params"] = ";".join(f"{k}={v}" for k, v in sorted(spec.params.items()))
    if energy:
        row.update({k: v for k, v in energy.items() if k in row})
    row["note"] = "; ".join([note, *ex.get("notes", ())]) if note else "; ".join(ex.get("notes", ()))
    return row


def write_rows(path: str | os.PathLike[str], rows: Iterable[Mapping[str, Any]],
               columns: Sequence[str] | None = None) -> Path:
    """Write rows as CSV atomically (temp file in the same directory + fsync + rename)."""
    rows = list(rows)
    cols = list(columns) if columns is not None else list(COLUMNS + EXTRA_COLUMNS)
    for r in rows:
        cols.extend(k for k in r if k not in cols)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    try:
        with os.fdopen(fd, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=cols, extrasaction="ignore")
            w.writeheader()
            for r in rows:
                w.writerow({k: ("true" if v is True else "false" if v is False else v) for k, v in r.items()})
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, out)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return out
