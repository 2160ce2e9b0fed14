"""numpy <-> pyarrow for flat columns, through the buffers, and text columns as dictionary codes.

pyarrow's own conversions (``pa.array``, ``Array.to_numpy``, ``fill_null``, ``pa.scalar``) go through its
pandas shim, which imports pandas: 0.2-0.4 s, a third of fitting a million rows or of decoding ten minutes of a
meter. These read and build the buffers directly. pyarrow is imported inside the functions.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

_NUMPY_TYPES = {"double": np.float64, "int64": np.int64, "int32": np.int32, "int16": np.int16, "int8": np.int8,
                "uint64": np.uint64, "uint32": np.uint32, "uint16": np.uint16, "uint8": np.uint8}


def numpy_of(col: Any, fill: float | None = None) -> npt.NDArray[Any]:
    """A fixed-width arrow Array or ChunkedArray as one numpy array, nulls replaced by ``fill`` (0 when None);
    other types (bool, float32, decimals) are cast to float64 first."""
    import pyarrow as pa
    import pyarrow.compute as pc

    chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
    parts: list[npt.NDArray[Any]] = []
    for c in chunks:
        if str(c.type) not in _NUMPY_TYPES:
            c = pc.cast(c, pa.float64())
        dt = np.dtype(_NUMPY_TYPES[str(c.type)])
        n = len(c)
        if n == 0:
            continue
        if c.null_count == n:
            parts.append(np.full(n, 0 if fill is None else fill, dtype=dt))
            continue
        v = np.frombuffer(c.buffers()[1], dtype=dt, count=n, offset=c.offset * dt.itemsize)
        if c.null_count:
            bits = np.unpackbits(np.frombuffer(c.buffers()[0], dtype=np.uint8), bitorder="little")
            v = v.copy()
            v[bits[c.offset:c.offset + n] == 0] = 0 if fill is None else fill
        parts.append(v)
    if not parts:
        return np.zeros(0)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def arrow_of(values: npt.NDArray[Any]) -> Any:
    """A 1-D numpy array (numbers or bool) as an arrow array: zero-copy for numbers, bit-packed for bool."""
    import pyarrow as pa

    v = np.ascontiguousarray(values)
    if v.dtype == np.bool_:
        return pa.Array.from_buffers(pa.bool_(), v.size, [None, pa.py_buffer(np.packbits(v, bitorder="little"))])
    return pa.Array.from_buffers(pa.from_numpy_dtype(v.dtype), v.size, [None, pa.py_buffer(v)])


def arrow_strings(values: list[str]) -> Any:
    """A list of strings as an arrow string array."""
    import pyarrow as pa

    blobs = [v.encode() for v in values]
    offsets = np.concatenate([[0], np.cumsum([len(b) for b in blobs])]).astype(np.int32)
    return pa.Array.from_buffers(pa.string(), len(blobs), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(blobs))])


def text_codes(col: Any) -> tuple[npt.NDArray[np.int64], list[str | None]]:
    """Dictionary codes of a text column over all its chunks, and the values they stand for (None = empty)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    values: list[str | None] = []
    index: dict[str | None, int] = {}
    parts: list[npt.NDArray[np.int64]] = []
    for chunk in col.chunks:
        if not pa.types.is_dictionary(chunk.type):
            chunk = pc.cast(chunk, pa.string()).dictionary_encode()
        local = [None if v is None else str(v) for v in chunk.dictionary.to_pylist()] + [None]
        lut = np.array([index.setdefault(v, len(index)) for v in local], dtype=np.int64)
        parts.append(lut[numpy_of(chunk.indices, fill=len(local) - 1)])
    for v, _ in sorted(index.items(), key=lambda kv: kv[1]):
        values.append(v if v is None or v.strip() else None)
    return (np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)), values


def column_codes(col: Any) -> tuple[npt.NDArray[Any], list[str | None]]:
    """:func:`text_codes`, except that a column holding one value (or none) on every row is one code, the usual
    case of the flags and of a partition's text, and that one dictionary chunk without nulls (a Parquet batch)
    gives its own indices, uncopied."""
    import pyarrow as pa

    if col.num_chunks == 1 and pa.types.is_dictionary(col.type):
        chunk = col.chunk(0)
        if chunk.null_count == len(chunk):
            return np.zeros(1, dtype=np.int64), [None]
        if chunk.null_count == 0 and len(chunk.dictionary) == 1:
            v = chunk.dictionary[0].as_py()
            return np.zeros(1, dtype=np.int64), [v if v is not None and str(v).strip() else None]
        idx = chunk.indices
        if chunk.null_count == 0 and str(idx.type) in ("int32", "int64") and len(set(chunk.dictionary.to_pylist()))\
                == len(chunk.dictionary):
            dt = np.dtype(str(idx.type))
            codes = np.frombuffer(idx.buffers()[1], dtype=dt, count=len(idx), offset=idx.offset * dt.itemsize)
            values = [None if v is None else str(v) for v in chunk.dictionary.to_pylist()]
            return codes, [v if v is None or v.strip() else None for v in values]
    return text_codes(col)


def rows_with(codes: npt.NDArray[Any], values: list[str | None], hit: Callable[[str | None], bool]
              ) -> npt.NDArray[np.bool_]:
    """Rows (a mask; one element for a one-code column) whose value satisfies ``hit``, tested once per value."""
    which = [i for i, v in enumerate(values) if hit(v)]
    if not which:
        return np.zeros(1 if codes.size == 1 else codes.size, dtype=bool)
    if len(which) == len(values):
        return np.ones(1 if codes.size == 1 else codes.size, dtype=bool)
    return np.isin(codes, which)


def check_range(x: npt.NDArray[Any], lowest: float, above: bool) -> tuple[bool, float, float]:
    """(every value finite and >= ``lowest`` (> when ``above``), min, max): one min and one max, no temporaries;
    the caller looks for the offending row only when this fails."""
    if not x.size:
        return True, math.nan, math.nan
    lo, hi = float(x.min()), float(x.max())       # a NaN propagates into both
    return (lo > lowest if above else lo >= lowest) and hi < math.inf, lo, hi
