"""The one GPU kernel catalogue: every family a GPU driver runs (intensity, int, cache, chase and S4's ceilings),
its sweep points, its `archline bench list` rows, a sweep point -> launch plan, and each kernel's arguments.

A driver says only what its devices offer (:class:`Offer`: cache levels, walkers per chase point); everything
else is the same for every driver.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from archline.bench.errors import BenchError
from archline.bench.gpu.ceilings import (
    CEILING_KERNELS,
    CEILING_SWEEPS,
    CeilingKernelDesc,
    ceiling_describe,
    ceiling_points,
    parse_ceiling_spec,
)
from archline.bench.gpu.desc import GpuKernelDesc
from archline.bench.gpu.points import Geometry, cache_points, describe_counts, intensity_points, parse_spec
from archline.bench.gpu.reference import cache_strides, chase_starts
from archline.bench.gpu.shape import CONST_C, INT_C, INT_SEED, SEED
from archline.bench.kernels import KernelSpec

#: every name `archline bench run --kernel` accepts on a GPU driver
FAMILIES = ("intensity", "int", "cache", "chase", *CEILING_SWEEPS)
#: the precisions each family runs at (the chase walks int32 indices whatever the run's default precision says)
PRECISIONS: dict[str, tuple[str, ...]] = {"intensity": ("sp", "dp"), "int": ("int32",), "cache": ("sp", "dp"),
                                          "chase": ("int32",), **{k: ("sp", "dp") for k in CEILING_SWEEPS}}


@dataclass(frozen=True)
class Offer:
    """What a driver's devices run of the catalogue."""

    cache_levels: tuple[str, ...] = ("shared", "l1", "l2", "mem")
    chase_walkers: tuple[int, ...] = (1, 32)        # walkers of the full chase sweep (quick: the first)


def describe(backend: str, offer: Offer, ok: bool, why: str, fp64: bool) -> list[dict[str, Any]]:
    """`archline bench list` rows: every variant, available or the reason it is not."""
    variants = [("intensity", "sp", "mem"), ("intensity", "dp", "mem"), ("int", "int32", "mem")]
    variants += [("cache", p, lv) for p in ("sp", "dp") for lv in offer.cache_levels]
    variants += [("chase", "int32", lv) for lv in ("l2", "mem")]
    rows: list[dict[str, Any]] = []
    for kernel, prec, level in variants:
        avail, reason = ok, why
        if ok and prec == "dp" and not fp64:
            avail, reason = False, "unsupported: the device has no fp64"
        rows.append({"name": kernel, "precision": prec, "level": level, "available": avail, "reason": reason,
                     "backend": backend, **describe_counts(kernel, prec, level)})
    return rows + ceiling_describe(backend, ok, why, fp64)


def sweep(backend: str, offer: Offer, kernel: str, precision: str, quick: bool = False) -> list[KernelSpec]:
    if kernel in CEILING_SWEEPS:
        return ceiling_points(backend, kernel, precision, quick)
    if kernel in ("intensity", "int"):
        return [KernelSpec(backend, kernel, precision, "mem", p) for p in intensity_points(precision, quick)]
    if kernel == "cache":
        return [KernelSpec(backend, "cache", precision, lv, p) for lv, p in cache_points(quick)
                if lv in offer.cache_levels]
    if kernel == "chase":
        walkers = offer.chase_walkers[:1] if quick else offer.chase_walkers
        return [KernelSpec(backend, "chase", "int32", lv, {"chains": c}) for lv in ("l2", "mem") for c in walkers]
    raise BenchError(f"unknown kernel '{kernel}' for backend {backend} (known: {', '.join(FAMILIES)})")


@dataclass(frozen=True)
class Plan:
    """A sweep point resolved on one device: the description, the launch shape and the input's size."""

    desc: GpuKernelDesc
    global_size: int
    local_size: int
    rounds: int
    n_elems: int            # scalars in the input buffer


def plan(spec: KernelSpec, geo: Geometry, ws_bytes: Callable[[str], int], local_mem_bytes: int) -> Plan:
    params = dict(spec.params)
    if spec.kernel in CEILING_KERNELS:
        return Plan(*parse_ceiling_spec(spec.kernel, spec.precision, params, geo, ws_bytes))
    return Plan(*parse_spec(spec.kernel, spec.precision, spec.level, params, geo, ws_bytes, local_mem_bytes))


def kernel_args(p: Plan) -> list[Any]:
    """The kernel's arguments after (input, output): numpy scalars, and arrays the driver uploads as buffers."""
    d = p.desc
    if isinstance(d, CeilingKernelDesc):
        return d.scalar_args(p.global_size, p.rounds, p.n_elems)
    if d.kernel in ("intensity", "int"):
        if d.precision == "int32":
            return [np.uint32(INT_C), np.uint32(INT_SEED), np.uint32(p.rounds)]
        return [d.dtype.type(CONST_C), d.dtype.type(SEED), np.uint32(p.rounds)]
    if d.kernel == "cache":
        if d.level == "shared":
            return [np.uint32(d.local_elems - 1), np.uint32(p.rounds), np.uint32(0), np.uint32(0)]
        nvec = p.n_elems // d.vector_width
        s1, s2 = cache_strides(d, p.global_size, nvec)
        return [np.uint32(nvec - 1), np.uint32(p.rounds), np.uint32(s1), np.uint32(s2)]
    return [chase_starts(p.n_elems, p.global_size * d.chains), np.uint32(p.rounds)]


def output_like(p: Plan) -> np.ndarray:
    """The host copy of the output buffer: one value per chain, work-item and lane (chase: per walker)."""
    d = p.desc
    if d.kernel == "chase":
        return np.zeros(d.chains * p.global_size, dtype=np.uint32)
    return np.zeros(d.chains * p.global_size * d.vector_width, dtype=d.dtype)


def check(desc: GpuKernelDesc, got: np.ndarray, exp: np.ndarray) -> tuple[bool, dict[str, Any]]:
    """Verification against the numpy reference, with each family's tolerance stated once.

    Ceilings, int32 and the chase are exact. The intensity recurrence is contractive, so rounding differences stay
    within a few ulps of its bound 1/(1-0.95): 64*20 eps. The cache sums repeat the device's order of additions:
    bit-exact unless a denormal was flushed, 4 eps."""
    if getattr(desc, "exact_checksum", False) or desc.precision == "int32" or desc.kernel == "chase":
        wide = np.float64 if getattr(desc, "exact_checksum", False) else np.uint64
        conv: Callable[[Any], Any] = float if wide is np.float64 else int
        return bool(np.array_equal(got, exp)), {
            "checksum": conv(got.astype(wide).sum()), "checksum_ref": conv(exp.astype(wide).sum()),
            "mismatches": int(np.count_nonzero(got != exp))}
    g64, e64 = got.astype(np.float64), exp.astype(np.float64)
    tol = (64 * 20.0 if desc.kernel == "intensity" else 4.0) * float(np.finfo(desc.dtype).eps)
    err = np.abs(g64 - e64)
    return bool(np.all(err <= tol * (1.0 + np.abs(e64)))), {
        "checksum": float(g64.sum()), "checksum_ref": float(e64.sum()),
        "max_abs_err": float(err.max()) if err.size else 0.0}
