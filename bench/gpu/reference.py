"""The numpy references the GPU kernels' outputs are checked against (float64 replay of the same sequence)."""

from __future__ import annotations

from typing import Any

import numpy as np

from archline.bench.errors import BenchError
from archline.bench.gpu.shape import CONST_C, INT_C, INT_SEED, SEED, KernelShape


def _stream_reference(d: KernelShape, x: np.ndarray) -> np.ndarray:
    """Each round applies an affine map acc -> M*acc + B per lane; build them for all rounds at once (fma_num
    vectorised passes), then compose them in order with a pairwise tree (log2(rounds) passes).

    int32: exact modulo 2**32 (numpy uint32 wraps). sp/dp: float64, within a few ulps of the device because the
    recurrence is contractive (|x| <= 0.95)."""
    rounds, _, g, w = x.shape
    n, e = d.fma_num, d.elems
    is_int = d.precision == "int32"
    ct = np.uint32 if is_int else np.float64
    if not is_int and rounds > 64:
        x = x[_first_round_that_matters(x, n, e, d.chains):]
        rounds = x.shape[0]
    xr: Any = x.reshape(rounds, d.chains, e, g, w).astype(ct, copy=False)
    m: Any
    b: Any
    pm: Any
    pb: Any
    c: Any = np.uint32(INT_C) if is_int else CONST_C
    one = ct(1)
    if n < e:   # every FMA is distinct: acc*x_j + x_{n+j}
        m, b = np.ones((rounds, d.chains, g, w), dtype=ct), np.zeros((rounds, d.chains, g, w), dtype=ct)
        for j in range(n):
            mult = xr[:, :, j]
            m, b = m * mult, b * mult + (xr[:, :, n + j] if n + j < e else c)
    else:       # n = q*e + r: the period (x_0..x_{e-1}, addend c) applied q times, then x_0..x_{r-1}
        q, rem = divmod(n, e)
        pm, pb = xr[:, :, 0].copy(), np.full(xr.shape[:2] + xr.shape[3:], c, dtype=ct)
        for j in range(1, e):
            mult = xr[:, :, j]
            pm, pb = pm * mult, pb * mult + c
        m, b = np.full_like(pm, one), np.zeros_like(pb)
        while q:    # powers of one map commute: plain square-and-multiply
            if q & 1:
                m, b = pm * m, pm * b + pb
            q >>= 1
            if q:
                pm, pb = pm * pm, pm * pb + pb
        for j in range(rem):
            mult = xr[:, :, j]
            m, b = m * mult, b * mult + c
    while m.shape[0] > 1:
        if m.shape[0] % 2:
            m = np.concatenate([m, np.ones_like(m[:1])])
            b = np.concatenate([b, np.zeros_like(b[:1])])
        m1, b1, m2, b2 = m[0::2], b[0::2], m[1::2], b[1::2]
        m, b = m2 * m1, m2 * b1 + b2
    seed = np.uint32(INT_SEED) if is_int else SEED
    acc = m[0] * seed + b[0]
    return acc.astype(d.dtype)


def _first_round_that_matters(x: np.ndarray, n: int, e: int, chains: int, chunk_rounds: int = 256) -> int:
    """The recurrence forgets: the state entering round r is multiplied by the product P_r of every later
    multiplier, and |state| <= 19 (= 0.95 / (1 - 0.95)), so starting from the seed at round r errs by at most
    38 * P_r. Return the latest round whose P_r < 1e-40 on every lane (0 if none): float64 cannot see the rest.

    ``x`` is the (rounds, chains * e, g, w) view of the input. Every |multiplier| < 1, so log P_r only falls as r
    falls: walk back from the last round a chunk at a time and stop at the first chunk where every lane is below
    the threshold. Only the rounds that matter (a few hundred) are read, not a copy of the whole buffer."""
    cnt = [(n // e + (1 if i < n % e else 0)) if n >= e else (1 if i < n else 0) for i in range(e)]
    thr = np.log(1e-40 / 38.0)
    rounds = x.shape[0]
    if rounds <= 1:
        return 0
    later: Any = 0.0                                   # log P of the rounds after the current chunk, per lane
    r1 = rounds
    while r1 > 0:
        r0 = max(r1 - chunk_rounds, 0)
        xc = x[r0:r1].reshape(r1 - r0, chains, e, *x.shape[2:])
        with np.errstate(divide="ignore"):
            logm = sum(ci * np.log(np.abs(xc[:, :, i].astype(np.float64))) for i, ci in enumerate(cnt) if ci)
        suffix = np.cumsum(np.asarray(logm)[::-1], axis=0)[::-1] + later   # suffix[k]: log P of r0+k..end
        good = np.all(suffix < thr, axis=tuple(range(1, suffix.ndim)))
        idx = np.nonzero(good)[0]
        if idx.size:   # the latest round safe on every lane, less one round of margin
            return int(max(r0 + idx[-1] - 1, 0))
        later, r1 = suffix[0], r0
    return 0


def _sequential_sums(acc: np.ndarray, rounds: int, gather: Any, chunk_elems: int = 1 << 22) -> np.ndarray:
    """acc + x_0 + x_1 + ... in exactly the device's order and precision, where gather(r0, r1) returns the loads
    of rounds r0..r1-1 shaped (rounds, *acc.shape). Chunks of rounds; np.add.accumulate is strictly sequential."""
    per = max(1, chunk_elems // max(acc.size, 1))
    with np.errstate(over="ignore"):
        for r0 in range(0, rounds, per):
            x = np.array(gather(r0, min(rounds, r0 + per)), dtype=acc.dtype)
            x[0] = acc + x[0]
            acc = np.add.accumulate(x, axis=0, dtype=acc.dtype)[-1]
    return acc


def _cache_reference(d: KernelShape, a: np.ndarray, g: int, rounds: int) -> np.ndarray:
    w = d.vector_width
    nvec = a.size // w
    if nvec & (nvec - 1):
        raise BenchError("cache working set must hold a power-of-two number of vectors")
    av = a.reshape(nvec, w)
    s1, s2 = cache_strides(d, g, nvec)
    lane = (np.arange(d.chains, dtype=np.int64)[:, None] * s1 + np.arange(g, dtype=np.int64)[None, :] * s2)

    def gather(r0: int, r1: int) -> np.ndarray:
        r = np.arange(r0, r1, dtype=np.int64)[:, None, None] * (d.chains * s1)
        return av[(r + lane[None]) & (nvec - 1)]                       # (rounds, chains, g, w)

    return _sequential_sums(np.zeros((d.chains, g, w), dtype=d.dtype), rounds, gather)


def cache_strides(d: KernelShape, global_size: int, nvec: int) -> tuple[int, int]:
    """(s1, s2) of the global cache kernel: vector index = ((r*chains + k)*s1 + g*s2) & (nvec - 1).

    interleaved: neighbouring work-items read neighbouring vectors (coalesced); blocked: every work-item sweeps
    the whole working set sequentially from its own offset (whole cache lines per core on CPUs)."""
    if d.layout == "interleaved":
        return global_size, 1
    return 1, max(nvec // max(global_size, 1), 1)


def _shared_reference(d: KernelShape, a: np.ndarray, g: int, rounds: int, lsz: int) -> np.ndarray:
    w, le = d.vector_width, d.local_elems
    groups = g // lsz
    av = a[: groups * le * w].reshape(groups, le, w)
    lane = np.arange(d.chains, dtype=np.int64)[:, None] * lsz + np.arange(lsz, dtype=np.int64)[None, :]

    def gather(r0: int, r1: int) -> np.ndarray:
        r = np.arange(r0, r1, dtype=np.int64)[:, None, None] * (d.chains * lsz)
        idx = (r + lane[None]) & (le - 1)                               # (rounds, chains, lsz)
        x = av[:, idx]                                                  # (groups, rounds, chains, lsz, w)
        return np.moveaxis(x, 0, 2).reshape(r1 - r0, d.chains, groups * lsz, w)

    return _sequential_sums(np.zeros((d.chains, g, w), dtype=d.dtype), rounds, gather)


def chase_starts(n_elems: int, walkers: int) -> np.ndarray:
    return ((np.arange(walkers, dtype=np.uint64) * n_elems) // max(walkers, 1)).astype(np.uint32)


def _chase_reference(nxt: np.ndarray, walkers: int, steps: int) -> np.ndarray:
    """Where each walker stands after ``steps`` steps.

    Few steps or a big table: walk the walkers themselves (one small gather a step). Otherwise binary powers of the
    permutation (log2(steps) gathers of the whole table)."""
    k = chase_starts(nxt.size, walkers)
    if steps <= 4_000_000 or nxt.size > 16_000_000:
        for _ in range(steps):
            k = nxt[k]
        return k
    p = nxt
    s = steps
    while s:
        if s & 1:
            k = p[k]
        s >>= 1
        if s:
            p = p[p]
    return k


