"""Python references for every cpu_asm kernel, computed from the kernel's parameters (seed, sizes, knob) alone.

The native code fills buffers with ``splitmix64(seed + i % PERIOD)`` mapped to values that make the references
reproducible: intensity data are exact in their precision in [0.5, 1); cache data are multiples of 2^-12 (every
partial sum is exact in double, so those checksums compare exactly); int data are odd uint32 (products stay odd).
The buffer repeats with period PERIOD (a multiple of every trip), so a reference sums one period and scales.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from archline.bench.cpu_asm.variants import PERIOD

_M64 = (1 << 64) - 1


def splitmix64(seed: int, idx: np.ndarray) -> np.ndarray:
    z = (np.uint64(seed & _M64) + idx.astype(np.uint64)) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def data(kind: str, seed: int, n: int) -> np.ndarray:
    """The first n elements the native init writes for kind 'dp', 'sp', 'int32' or 'cache'."""
    with np.errstate(over="ignore"):
        z = splitmix64(seed, np.arange(n, dtype=np.uint64) % np.uint64(PERIOD))
    if kind == "dp":
        return 0.5 + (z >> np.uint64(12)).astype(np.float64) * 2.0**-53
    if kind == "sp":
        return (0.5 + (z >> np.uint64(41)).astype(np.float64) * 2.0**-24).astype(np.float32)
    if kind == "int32":
        return ((z >> np.uint64(32)).astype(np.uint32)) | np.uint32(1)
    if kind == "cache":
        return 0.5 + (z >> np.uint64(53)).astype(np.float64) * 2.0**-12
    raise ValueError(kind)


def _over_periods(kind: str, seed: int, n: int, block: Callable[[np.ndarray], Any]) -> Any:
    """The native init repeats every PERIOD elements, so a sum over n elements is ``full`` copies of one
    period's term plus the remainder's."""
    full, rest = divmod(n, PERIOD)
    total = 0
    if full:
        total += full * block(data(kind, seed, PERIOD))
    if rest:
        total += block(data(kind, seed, rest))
    return total


def _fsum(x: np.ndarray) -> float:
    """Correctly rounded sum of float64 terms (math.fsum): the reference adds no summation error of its own."""
    return math.fsum(x.ravel().tolist())


def _intensity_block(x: np.ndarray, g: int, lanes: int, fma_per_trip: int) -> float:
    x3 = x.astype(np.float64).reshape(-1, g, lanes)
    if fma_per_trip < g:
        p = g - fma_per_trip
        return _fsum(x3[:, 0:2 * p:2, :] * x3[:, 1:2 * p:2, :]) + _fsum(x3[:, 2 * p:, :] ** 2)
    q, r = divmod(fma_per_trip, g)
    y = x3.copy()
    for _ in range(q - 1):
        y -= y * y
    if r:
        y[:, :r, :] -= y[:, :r, :] * y[:, :r, :]
    return _fsum(y * y)


def intensity_checksum(precision: str, seed: int, n: int, g: int, lanes: int, fma_per_trip: int) -> float:
    """Sum over elements of the kernel's per-element term, for ONE repetition (float64)."""
    return float(_over_periods(precision, seed, n, lambda x: _intensity_block(x, g, lanes, fma_per_trip)))


# ---- tolerances: rigorous first-order rounding bounds, from the operation and element counts --------------------
#: unit roundoff of each precision (round to nearest: half an ulp of 1)
UNIT_ROUNDOFF = {"sp": 2.0**-24, "dp": 2.0**-53}
U64 = 2.0**-53
#: sums::block_sum's bound in units of U64 (src/sums.hpp: 8 lanes x 8 terms 7u, lane tree 3u, Neumaier 2u)
READBACK_ULPS = 12
#: trips between accumulator flushes (kern.hpp BLOCK), at most BLOCK trips per flushed block
BLOCK_TRIPS = 512
#: the first-order bounds below drop O(u^2) products; doubling covers them with room to spare
SAFETY = 2.0


def _horner_steps(fma_per_trip: int, g: int, floor: int) -> int:
    """Most Horner steps y = y - y*y any one vector runs: (F - floor)//G, +1 where the remainder gives it one."""
    q, r = divmod(fma_per_trip - floor, g)
    return q + (1 if r else 0)


def _compensated(terms: int) -> float:
    """Neumaier/Kahan sum of ``terms`` values (relative): 2u + 4 terms u^2 (Higham, Accuracy and Stability §4.3)."""
    return 2 * U64 + 4 * terms * U64 * U64


def _reference_error(n: int) -> float:
    """The reference: math.fsum of one period (correctly rounded, u), times the period count (u), plus the rest (u)."""
    return 3 * U64 if n else 0.0


def intensity_rel_tol(precision: str, g: int, a: int, lanes: int, fma_per_trip: int, n: int) -> float:
    """Relative tolerance of the read-only intensity checksum, a bound on every rounding between the data and the two
    sums (all terms are positive, so relative bounds add). With u_T the unit roundoff of the precision, u = 2^-53:

    * per element, kernel: s Horner steps y = y - y*y (one fused rounding each; the map's derivative 1-2y keeps a
      relative error from growing on [0, 1)), then y*y doubles it: (2s+1) u_T. Pairs mode (F < G) multiplies two
      exact loads: u_T.
    * per element, reference (float64, separate multiply and subtract): 2 roundings a step, y*y: (4s+1) u.
    * register accumulators in T: each lane adds at most BLOCK_TRIPS * ceil(G/A) terms between flushes (m u_T);
      their L lanes are summed in double ((L-1) u); the blocks x A partials, the threads' partials and the reps are
      compensated sums (3 x (2u + 4 n u^2), n bounding every term count).
    * the reference sum: _reference_error.

    Times SAFETY for the dropped second-order terms. A single Horner step more or less changes the checksum by about
    2/s relative, orders of magnitude outside this bound (tests/bench_cpu/test_cpu_intensity.py)."""
    ut = UNIT_ROUNDOFF[precision]
    s = _horner_steps(fma_per_trip, g, g) if fma_per_trip >= g else 0
    kernel = (2 * s + 1) * ut
    reference = (4 * s + 1) * U64
    m = BLOCK_TRIPS * -(-g // a)
    sums = m * ut + (lanes - 1) * U64 + 3 * _compensated(n)
    return SAFETY * (kernel + reference + sums + _reference_error(n))


def _intensity_nt_block(x: np.ndarray, g: int, lanes: int, fma_per_trip: int) -> float:
    y = x.astype(np.float64).reshape(-1, g, lanes).copy()
    q, r = divmod(fma_per_trip - g // 2, g)
    for _ in range(q):
        y -= y * y
    if r:
        y[:, :r, :] -= y[:, :r, :] * y[:, :r, :]
    return _fsum(y[:, 0::2, :] * y[:, 1::2, :] + y[:, 0::2, :])


def intensity_nt_checksum(precision: str, seed: int, n: int, g: int, lanes: int, fma_per_trip: int) -> float:
    """Sum of the nt variant's written array (n/2 elements: out = y[2j]*y[2j+1] + y[2j] per trip), float64.

    The array is rewritten identically by every repetition, so this does not scale with reps."""
    return float(_over_periods(precision, seed, n, lambda x: _intensity_nt_block(x, g, lanes, fma_per_trip)))


def intensity_nt_rel_tol(precision: str, g: int, fma_per_trip: int, n: int) -> float:
    """Relative tolerance of the nt checksum (the sum of the n/2 written values, all positive), derived like
    :func:`intensity_rel_tol`:

    * per element, kernel: h = most Horner steps a vector runs ((F - G/2)/G, rounded up) leave y[2j] and y[2j+1]
      within h u_T each; out = y0*y1 + y0 = y0 (1 + y1) in one fused rounding: (2h + 1) u_T.
    * per element, reference (float64): 2h u on each y, then a multiply and an add: (4h + 2) u.
    * the read-back: sums::block_sum over each thread's range plus the compensated total of the threads:
      READBACK_ULPS u + 2 x 4 (n/2) u^2 — no longer growing with n, which a plain sequential sum did ((n/2 - 1) u
      worst case; at 3.75 GiB its rounding alone exceeded the old fixed 1e-12 floor).
    * the reference sum: _reference_error.

    Times SAFETY for the dropped second-order terms."""
    ut = UNIT_ROUNDOFF[precision]
    h = _horner_steps(fma_per_trip, g, g // 2)
    kernel = (2 * h + 1) * ut
    reference = (4 * h + 2) * U64
    readback = READBACK_ULPS * U64 + 2 * _compensated(n // 2)
    return SAFETY * (kernel + reference + readback + _reference_error(n))


def _int_block(x: np.ndarray, g: int, lanes: int, steps: int, op: str) -> int:
    y = x.reshape(-1, g, lanes).copy()
    with np.errstate(over="ignore"):
        for _ in range(steps):
            for j in range(g):
                if op == "add":
                    y[:, j, :] = y[:, j, :] + y[:, (j + 1) % g, :]
                else:
                    y[:, j, :] = y[:, j, :] * y[:, (j + 1) % g, :]
    return int(np.sum(y, dtype=np.uint64)) & 0xFFFFFFFF


def int_checksum(op: str, seed: int, n: int, g: int, lanes: int, steps: int) -> int:
    """Sum mod 2^32 of the chains' final values, for ONE repetition."""
    return int(_over_periods("int32", seed, n, lambda x: _int_block(x, g, lanes, steps, op))) & 0xFFFFFFFF


def thread_bounds(trips: int, threads: int) -> list[int]:
    """First trip of each thread's contiguous range, and the end (module.cpp: trips * t / nt)."""
    return [trips * t // threads for t in range(threads + 1)]


def load_xor_checksum(seed: int, n: int, g: int, lanes: int, threads: int, *, chunk_trips: int = 1 << 14) -> int:
    """One repetition of the load kernel (kern::load_xor) over n raw 64-bit words that do not repeat inside the
    buffer (the back end fills it with period n): per thread, the XOR of the words each accumulator lane sees (pair
    j = vector // 2 of every trip, lane = word % lanes), summed over lanes, accumulators and threads mod 2^64.
    The kernel reports reps x this, mod 2^64."""
    trip = g * lanes
    bounds = thread_bounds(n // trip, threads)
    total = 0
    for t in range(threads):
        acc = np.zeros((g // 2, lanes), dtype=np.uint64)
        for c0 in range(bounds[t], bounds[t + 1], chunk_trips):
            c1 = min(c0 + chunk_trips, bounds[t + 1])
            with np.errstate(over="ignore"):
                z = splitmix64(seed, np.arange(c0 * trip, c1 * trip, dtype=np.uint64))
            acc ^= np.bitwise_xor.reduce(z.reshape(-1, g // 2, 2, lanes), axis=(0, 2))
        total += sum(int(v) for v in acc.ravel())
    return total & _M64


def cache_sum(seed: int, n: int) -> float:
    """Exact sum of the initial cache-kernel buffer (every value a multiple of 2^-12)."""
    return float(_over_periods("cache", seed, n, lambda x: float(np.sum(x))))


def chase_order(seed: int, nodes: int, *, page_local: bool = False, nodes_per_page: int = 64) -> np.ndarray:
    """Visiting order of a random single cycle over ``nodes`` cache-line nodes.

    Linking a uniformly random permutation end to end gives exactly the distribution of Sattolo's algorithm
    (uniform over the (n-1)! cyclic permutations: each cycle arises from its n rotations), built vectorised. The
    page-local variant visits the lines of one page in random order before moving to the next random page, so a
    chase step almost never misses the TLB.
    """
    rng = np.random.default_rng(seed)
    if not page_local or nodes <= nodes_per_page:
        return rng.permutation(nodes).astype(np.uint64)
    if nodes % nodes_per_page:
        raise ValueError("nodes must be a multiple of nodes per page")
    pages = rng.permutation(nodes // nodes_per_page)
    within = rng.permuted(np.tile(np.arange(nodes_per_page), (pages.size, 1)), axis=1)
    return (pages[:, None] * nodes_per_page + within).ravel().astype(np.uint64)


def chase_positions(order: np.ndarray, chains: int, total_steps: int) -> list[int]:
    """Node where each chain stands after ``total_steps`` steps (chain c starts at position c*n/chains)."""
    n = order.size
    return [int(order[(c * (n // chains) + total_steps) % n]) for c in range(chains)]
