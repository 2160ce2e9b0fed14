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


def _intensity_block(x: np.ndarray, g: int, lanes: int, fma_per_trip: int) -> float:
    x3 = x.astype(np.float64).reshape(-1, g, lanes)
    if fma_per_trip < g:
        p = g - fma_per_trip
        s = float(np.sum(x3[:, 0:2 * p:2, :] * x3[:, 1:2 * p:2, :]))
        return s + float(np.sum(x3[:, 2 * p:, :] ** 2))
    q, r = divmod(fma_per_trip, g)
    y = x3.copy()
    for _ in range(q - 1):
        y -= y * y
    if r:
        y[:, :r, :] -= y[:, :r, :] * y[:, :r, :]
    return float(np.sum(y * y))


def intensity_checksum(precision: str, seed: int, n: int, g: int, lanes: int, fma_per_trip: int) -> float:
    """Sum over elements of the kernel's per-element term, for ONE repetition (float64)."""
    return float(_over_periods(precision, seed, n, lambda x: _intensity_block(x, g, lanes, fma_per_trip)))


def intensity_rel_tol(precision: str, g: int, a: int, fma_per_trip: int) -> float:
    """Relative tolerance: rounding of ~F/G contracting steps per element and of the float accumulators (flushed
    to double every 512 trips: 512*G/A terms per lane), with a safety factor of 8."""
    eps = 2.0**-24 if precision == "sp" else 2.0**-53
    steps = fma_per_trip / g + 2
    return 8 * eps * (steps + math.sqrt(512 * g / a)) + 1e-13


def _intensity_nt_block(x: np.ndarray, g: int, lanes: int, fma_per_trip: int) -> float:
    y = x.astype(np.float64).reshape(-1, g, lanes).copy()
    q, r = divmod(fma_per_trip - g // 2, g)
    for _ in range(q):
        y -= y * y
    if r:
        y[:, :r, :] -= y[:, :r, :] * y[:, :r, :]
    return float(np.sum(y[:, 0::2, :] * y[:, 1::2, :] + y[:, 0::2, :]))


def intensity_nt_checksum(precision: str, seed: int, n: int, g: int, lanes: int, fma_per_trip: int) -> float:
    """Sum of the nt variant's written array (n/2 elements: out = y[2j]*y[2j+1] + y[2j] per trip), float64.

    The array is rewritten identically by every repetition, so this does not scale with reps."""
    return float(_over_periods(precision, seed, n, lambda x: _intensity_nt_block(x, g, lanes, fma_per_trip)))


def intensity_nt_rel_tol(precision: str, g: int, fma_per_trip: int) -> float:
    """Relative tolerance of the nt checksum: every written value is positive, so the sum's relative error is at
    most the worst element's (rounding of ~(F - G/2)/G contracting steps, the final FMA and the store in T) plus
    the double summation, with a safety factor of 8."""
    eps = 2.0**-24 if precision == "sp" else 2.0**-53
    steps = (fma_per_trip - g // 2) / g + 3
    return 8 * eps * steps + 1e-12


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
