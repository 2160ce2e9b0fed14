"""Tidy traces on disk: samples CSV (``t_s, channel, voltage_v, current_a, power_w``), csv.gz and parquet.

Writes are atomic (temp file + rename). The plain CSV writer formats numbers with numpy, not per row: each
column becomes fixed-point digits in a byte matrix, and the padding is squeezed out in one pass.
A JSON sidecar ``PATH.json`` carries what the columns cannot: meter, emulated label, decode counts.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from archline.powermon.errors import MeterError
from archline.powermon.samples import COLUMNS, Samples

_PAD = 0


def _fixed_point(x: npt.NDArray[np.float64], decimals: int) -> tuple[npt.NDArray[np.uint8], bool]:
    """Digits of |x| with ``decimals`` decimals as an (n, width) byte matrix; leading zeros are padding."""
    scaled = np.rint(np.abs(x) * 10.0**decimals).astype(np.int64)
    neg = bool(np.any(x < 0))
    top = int(scaled.max()) if scaled.size else 0
    n_int = max(1, len(str(top // 10**decimals)))
    width = n_int + 1 + decimals + (1 if neg else 0)
    out = np.empty((x.size, width), dtype=np.uint8)
    col = width - 1
    v = scaled.copy()
    for _ in range(decimals):
        out[:, col] = (v % 10 + 48).astype(np.uint8)
        v //= 10
        col -= 1
    out[:, col] = ord(".")
    col -= 1
    lead = np.ones(x.size, dtype=bool)   # still in the leading zeros (the units digit is always written)
    for k in range(n_int):
        d = (v % 10).astype(np.uint8)
        v //= 10
        if k == 0:
            out[:, col] = d + 48
        else:
            out[:, col] = np.where((d == 0) & (v == 0), _PAD, d + 48)
        col -= 1
    if neg:
        out[:, 0] = _PAD
        # put the minus sign just before the first digit
        first = np.argmax(out[:, 1:] != _PAD, axis=1) + 1
        rows = np.flatnonzero(x < 0)
        out[rows, first[rows] - 1] = ord("-")
    del lead
    return out, neg


def _int_col(x: npt.NDArray[Any]) -> npt.NDArray[np.uint8]:
    v = np.asarray(x, dtype=np.int64)
    top = int(v.max()) if v.size else 0
    width = max(1, len(str(top)))
    out = np.empty((v.size, width), dtype=np.uint8)
    w = v.copy()
    for k in range(width):
        d = (w % 10).astype(np.uint8)
        w //= 10
        out[:, width - 1 - k] = d + 48 if k == 0 else np.where((d == 0) & (w == 0), _PAD, d + 48)
    return out


def csv_bytes(samples: Samples, chunk_rows: int = 1 << 20) -> list[bytes]:
    """The samples CSV as byte chunks (header first)."""
    parts = [(",".join(COLUMNS) + "\n").encode()]
    n = len(samples)
    if n and int(samples.channel.min()) < 0:
        raise MeterError("negative channel id in samples")
    for lo in range(0, n, chunk_rows):
        hi = min(n, lo + chunk_rows)
        cols = [
            _fixed_point(samples.t_s[lo:hi], 7)[0],
            _int_col(samples.channel[lo:hi]),
            _fixed_point(samples.voltage_v[lo:hi], 6)[0],
            _fixed_point(samples.current_a[lo:hi], 6)[0],
            _fixed_point(samples.power_w[lo:hi], 6)[0],
        ]
        m = hi - lo
        pieces: list[npt.NDArray[np.uint8]] = []
        for k, c in enumerate(cols):
            pieces.append(c)
            pieces.append(np.full((m, 1), ord("," if k < len(cols) - 1 else "\n"), dtype=np.uint8))
        mat = np.hstack(pieces)
        parts.append(mat[mat != _PAD].tobytes())
    return parts


def _atomic(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def write_samples(samples: Samples, path: str | Path, meta: dict[str, Any] | None = None) -> Path:
    """Write samples as ``.csv``, ``.csv.gz`` or ``.parquet`` (by suffix), plus ``PATH.json`` metadata."""
    p = Path(path)
    tmp = _atomic(p)
    name = p.name.lower()
    try:
        if name.endswith(".parquet"):
            import pyarrow as pa
            import pyarrow.parquet as pq

            meter = pa.array([samples.meter] * len(samples)).dictionary_encode()
            table = pa.table({**samples.columns(), "meter": meter,
                              "emulated": np.full(len(samples), samples.emulated)})
            table = table.replace_schema_metadata({"archline": json.dumps(_meta(samples, meta))})
            pq.write_table(table, tmp)
        elif name.endswith(".csv.gz"):
            with gzip.open(tmp, "wb", compresslevel=1) as f:
                for chunk in csv_bytes(samples):
                    f.write(chunk)
        elif name.endswith(".csv"):
            with open(tmp, "wb") as f:
                for chunk in csv_bytes(samples):
                    f.write(chunk)
        else:
            raise MeterError(f"unknown samples format for {p} (use .csv, .csv.gz or .parquet)")
        os.replace(tmp, p)
    finally:
        if tmp.exists():
            tmp.unlink()
    side = p.with_name(p.name + ".json")
    side.write_text(json.dumps(_meta(samples, meta), indent=1, default=str))
    return p


def _meta(samples: Samples, meta: dict[str, Any] | None) -> dict[str, Any]:
    out: dict[str, Any] = {"meter": samples.meter, "emulated": samples.emulated, "clock": samples.clock,
                           "columns": list(COLUMNS)}
    out.update(meta or {})
    return out


def read_samples(path: str | Path) -> tuple[Samples, dict[str, Any]]:
    """Read a samples file written by :func:`write_samples` (or any CSV with the same columns)."""
    p = Path(path)
    if not p.exists():
        raise MeterError(f"samples file {p} does not exist")
    side = p.with_name(p.name + ".json")
    meta: dict[str, Any] = {}
    if side.exists():
        try:
            meta = json.loads(side.read_text())
        except json.JSONDecodeError:
            meta = {}
    try:
        if p.name.lower().endswith(".parquet"):
            import pyarrow.parquet as pq

            t = pq.read_table(p)
            cols = {c: t.column(c).to_numpy() for c in COLUMNS}
        else:
            import pyarrow.csv as pcsv

            t = pcsv.read_csv(p)
            missing = [c for c in COLUMNS if c not in t.column_names]
            if missing:
                raise MeterError(f"{p} lacks column(s) {missing} (expected {', '.join(COLUMNS)})")
            cols = {c: t.column(c).to_numpy() for c in COLUMNS}
    except MeterError:
        raise
    except Exception as e:  # pyarrow raises several types for malformed files
        raise MeterError(f"cannot read samples from {p}: {str(e).splitlines()[0]}") from None
    s = Samples(cols["t_s"].astype(np.float64), cols["channel"].astype(np.int16),
                cols["voltage_v"].astype(np.float64), cols["current_a"].astype(np.float64),
                cols["power_w"].astype(np.float64), None, str(meta.get("meter", "")),
                bool(meta.get("emulated", False)), str(meta.get("clock", "unknown")))
    return s, meta
