"""Helpers of the results reader's batch loop (:mod:`archline.fit.io.results`): text columns as codes with a
one-value column as one code, and checks made once per distinct value or with one min and max."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from archline.fit.io.sources import text_codes

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa


def column_codes(col: pa.ChunkedArray) -> tuple[np.ndarray, list[str | None]]:
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


def rows_with(codes: np.ndarray, values: list[str | None], hit: Callable[[str | None], bool]) -> np.ndarray:
    """Rows (a mask; one element for a one-code column) whose value satisfies ``hit``, tested once per value."""
    which = [i for i, v in enumerate(values) if hit(v)]
    if not which:
        return np.zeros(1 if codes.size == 1 else codes.size, dtype=bool)
    if len(which) == len(values):
        return np.ones(1 if codes.size == 1 else codes.size, dtype=bool)
    return np.isin(codes, which)


def check_range(x: np.ndarray, lowest: float, above: bool) -> tuple[bool, float, float]:
    """(every value finite and >= ``lowest`` (> when ``above``), min, max): one min and one max, no temporaries;
    the caller looks for the offending row only when this fails."""
    if not x.size:
        return True, math.nan, math.nan
    lo, hi = float(x.min()), float(x.max())       # a NaN propagates into both
    return (lo > lowest if above else lo >= lowest) and hi < math.inf, lo, hi
