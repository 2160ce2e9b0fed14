"""Helpers of the results reader's batch loop (:mod:`archline.fit.io.results`): text columns as codes with a
one-value column as one code, checks made once per distinct value or with one min and max, and
the next batch read in a thread while this one is reduced."""

from __future__ import annotations

import math
import queue
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from archline.fit.io.sources import text_codes

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

T = TypeVar("T")


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


def ahead(items: Iterator[T]) -> Iterator[T]:
    """``items``, each produced in a thread while the consumer works on the one before: pyarrow decodes the
    next batch (without the GIL, on the other core) while numpy reduces this one; at most two are alive at
    once. An exception in the producer is raised here, where its item would have come; when the consumer stops
    early the producer stops at its next item and closes ``items`` in its own thread (its open files with
    it)."""
    q: queue.Queue[tuple[int, object]] = queue.Queue(maxsize=1)
    stop = threading.Event()

    def put(kind: int, x: object) -> bool:
        while not stop.is_set():
            try:
                q.put((kind, x), timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    taken = threading.Semaphore(0)

    def run() -> None:
        try:
            for x in items:
                if not put(0, x):
                    return
                del x
                while not taken.acquire(timeout=0.05):   # the next one is decoded once this one is taken:
                    if stop.is_set():                    # two alive at most, not three
                        return
            put(1, None)
        except BaseException as e:
            put(2, e)
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()

    th = threading.Thread(target=run, name="archline-read-ahead", daemon=True)
    th.start()
    try:
        while True:
            kind, x = q.get()
            taken.release()
            if kind == 1:
                return
            if kind == 2:
                assert isinstance(x, BaseException)
                raise x
            yield x  # type: ignore[misc]
            del x               # the consumer's reference goes before the next item is waited for
    finally:
        stop.set()
        th.join()
