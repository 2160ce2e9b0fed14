"""Configuration keys: the key columns' bit patterns (NaN and -0.0 made canonical), hashed, and rows factorized
into configurations; a hash collision falls back to an exact sort, so two rows share a configuration exactly when
every key is equal."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def canonical_bits(values: np.ndarray) -> np.ndarray:
    """uint64 bit patterns of float64 values with every NaN one NaN and -0.0 equal to 0.0."""
    v = np.asarray(values, dtype=np.float64) + 0.0
    nan = np.isnan(v)
    if nan.any():
        v[nan] = np.nan
    return v.view(np.uint64)


def key_bits(values: np.ndarray) -> np.ndarray:
    """Key column as uint64 bits; a constant column (the common case: unused counts, unmeasured settings) as a
    length-1 array, which the grouping treats as the same value on every row."""
    v = np.asarray(values, dtype=np.float64)
    if v.size:
        lo, hi = v.min(), v.max()
        if lo == hi or (np.isnan(lo) and np.isnan(v).all()):
            return canonical_bits(v[:1])
    return canonical_bits(v)


_K = np.uint64(0x9E3779B97F4A7C15)


def _hash(columns: Sequence[np.ndarray]) -> np.ndarray:
    """A multiply-add combination of uint64 columns: a hash (equal keys give equal hashes; the caller checks
    that unequal keys did not collide)."""
    h = np.zeros(columns[0].size, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for c in columns:
            h += c
            h *= _K
    return h


def factorize_rows(columns: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Codes (0..U-1, in order of first appearance) and the index of each code's first row, for the row keys
    formed by uint64 ``columns`` (each of the rows' length, or of length 1 for a constant)."""
    import pyarrow.compute as pc

    from archline.common.arrow import arrow_of, numpy_of

    n = max((c.size for c in columns), default=0)
    varying = [c for c in columns if c.size == n and n and c.min() != c.max()]
    if not varying:
        return np.zeros(n, dtype=np.int64), np.zeros(1 if n else 0, dtype=np.int64)
    enc = pc.dictionary_encode(arrow_of(_hash(varying)))
    codes = numpy_of(enc.indices).astype(np.int64)
    first = np.full(len(enc.dictionary), n, dtype=np.int64)
    np.minimum.at(first, codes, np.arange(n, dtype=np.int64))
    if all(bool((c == c[first][codes]).all()) for c in varying):
        return codes, first
    # a hash collision (never seen; kept exact): sort the keys
    _, first_sorted, inverse = np.unique(np.column_stack(varying), axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first_sorted, kind="stable")      # renumber in order of first appearance
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return rank[inverse.reshape(-1)], first_sorted[order]
