"""archline.results/1 rows (DESIGN.md §3): the column contract, row construction and the atomic CSV writer.

Reusable by every runner: ``make_row`` fills the contract columns from a spec and a RunResult, ``write_rows``
writes a CSV through a temp file in the same directory and renames it into place, so a crash never leaves a
partial file that looks complete.
"""

from __future__ import annotations

import csv
import os
import socket
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from archline.bench.kernels import Counts, KernelSpec, RunResult
from archline.common.atomic import atomic_path
from archline.common.stamps import utc_compact, utc_iso
from archline.fit.io import schema

SCHEMA = schema.SCHEMA
COLUMNS = schema.COLUMNS
EXTRA_COLUMNS = schema.EXTRA_COLUMNS

NO_METER_NOTE = "time only: no meter attached (energy columns empty until a meter records this region)"


def new_run_id() -> str:
    return utc_compact() + "-" + uuid.uuid4().hex[:8]


utc_now_iso = utc_iso


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
                "cycles_per_access", "pages", "driver_version", "compiler", "mem_mhz"):
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
    row["note"] = note
    return row


def write_rows(path: str | os.PathLike[str], rows: Iterable[Mapping[str, Any]],
               columns: Sequence[str] | None = None) -> Path:
    """Write rows as CSV atomically (temp file in the same directory + fsync + rename)."""
    rows = list(rows)
    cols = list(columns) if columns is not None else list(COLUMNS + EXTRA_COLUMNS)
    for r in rows:
        cols.extend(k for k in r if k not in cols)
    out = Path(path)
    with atomic_path(out) as tmp, open(tmp, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("true" if v is True else "false" if v is False else v) for k, v in r.items()})
    return out
