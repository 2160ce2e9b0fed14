"""Intensity kernel: exact flop/byte counts and checksums for every x86-64 variant this CPU can run."""

from __future__ import annotations

import math

import pytest

from archline.bench.cpu_asm import reference as ref
from archline.bench.cpu_asm.backend import best_isa, intensity_targets
from archline.bench.cpu_asm.variants import (
    ELEM_BYTES,
    ISAS,
    fma_per_trip_for,
    fma_per_trip_for_nt,
    intensity_of,
    intensity_of_nt,
)
from archline.bench.kernels import KernelSpec

#: the sweep's top intensity: DP's 64 flop/B, and the same FMAs per loaded vector in SP
TOP = {"dp": 64.0, "sp": 128.0}


def _fs(g: int) -> list[int]:
    # every pairs-mode P (F = G/2 .. G-1), chains mode with every remainder R once, and a deep chain
    return [*range((g + 1) // 2, g), *[g + r for r in range(g)], 3 * g + 1, 16 * g + 5]


@pytest.mark.parametrize("precision", ["dp", "sp"])
def test_counts_and_checksum_every_f(cpu_backend, x86_isa: str, precision: str) -> None:
    v = ISAS[x86_isa]
    lanes = v.lanes(precision)
    threads = 2
    n = v.g_fp * lanes * threads * 7           # 7 trips per thread
    for f in _fs(v.g_fp):
        spec = KernelSpec("cpu_asm", "intensity", precision, "mem",
                          {"isa": x86_isa, "fma_per_trip": f, "working_set_bytes": n * ELEM_BYTES[precision],
                           "threads": min(threads, len(cpu_backend_cores()))})
        p = cpu_backend.prepare(spec)
        try:
            res = p.run(3)
            n_run = p.n_elems
            flops = n_run * 2 * f // v.g_fp
            key = "flops_dp" if precision == "dp" else "flops_sp"
            assert getattr(res.counts, key) == 3 * flops
            assert res.counts.bytes_mem == 3 * n_run * ELEM_BYTES[precision]
            assert res.counts.as_row()["flops_sp" if key == "flops_dp" else "flops_dp"] == 0
            assert res.extra["intensity_flop_per_byte"] == pytest.approx(2 * f / (v.g_fp * ELEM_BYTES[precision]))
            exp = 3 * ref.intensity_checksum(precision, 1, n_run, v.g_fp, lanes, f)
            tol = ref.intensity_rel_tol(precision, v.g_fp, v.a_fp, lanes, f, n_run)
            assert res.checksum_ok, (x86_isa, precision, f, res.extra["checksum"], exp)
            assert res.extra["checksum"] == pytest.approx(exp, rel=tol)
        finally:
            p.close()


def cpu_backend_cores() -> list[int]:
    from archline.bench.cpu_asm.topology import one_cpu_per_core

    return one_cpu_per_core()


def test_checksum_detects_wrong_work(cpu_backend) -> None:
    """The tolerance is tight enough that one Horner step more or less per element is a mismatch."""
    v = ISAS["avx2"] if ISAS["avx2"] else None
    assert v is not None
    for precision in ("dp", "sp"):
        n = 786432 + v.g_fp * v.lanes(precision) * 4   # one full period plus a tail
        for f in (v.g_fp * 8, v.g_fp * 200):
            a = ref.intensity_checksum(precision, 1, n, v.g_fp, v.lanes(precision), f)
            b = ref.intensity_checksum(precision, 1, n, v.g_fp, v.lanes(precision), f + v.g_fp)
            tol = ref.intensity_rel_tol(precision, v.g_fp, v.a_fp, v.lanes(precision), f, n)
            assert abs(a - b) > 10 * tol * abs(a)


def test_big_buffer_uses_period(cpu_backend) -> None:
    """Above one data period the reference scales one period's sum; the kernel must agree."""
    v = ISAS[str(best_isa())]
    n = ref.PERIOD * 2 + v.g_fp * v.lanes("dp") * 2
    spec = KernelSpec("cpu_asm", "intensity", "dp", "mem",
                      {"fma_per_trip": v.g_fp + 1, "working_set_bytes": n * 8, "threads": 1})
    p = cpu_backend.prepare(spec)
    try:
        assert p.n_elems == n
        assert p.run(1).checksum_ok
    finally:
        p.close()


@pytest.mark.parametrize("isa", ["avx512", "avx2", "sse2", "neon"])
@pytest.mark.parametrize("precision", ["dp", "sp"])
def test_sweep_points_cover_range_four_per_doubling(isa: str, precision: str) -> None:
    v = ISAS[isa]
    fs = sorted({fma_per_trip_for(v, precision, i) for i in intensity_targets(precision)})
    ints = [intensity_of(v, precision, f) for f in fs]
    top = TOP[precision]
    assert ints[0] == pytest.approx(0.25)
    assert ints[-1] == pytest.approx(top)
    assert fs[-1] == 256 * v.g_fp           # the same FMAs per loaded vector in SP as in DP
    for lo in range(round(math.log2(top / 0.25))):  # each doubling holds >= 4 points besides its start
        a, b = 0.25 * 2**lo, 0.25 * 2 ** (lo + 1)
        inside = [x for x in ints if a < x <= b * (1 + 1e-12)]
        assert len(inside) >= 4, (isa, precision, a, inside)
    # intensities are exact rationals of the declared F and G
    for f, i in zip(fs, ints, strict=True):
        assert math.isclose(i * v.g_fp * ELEM_BYTES[precision], 2 * f)


def test_backend_sweep_matches_descriptor(cpu_backend) -> None:
    """Default: the nt stream from its floor F = G/2; store='none': the read-only stream from 0.25 flop/B."""
    specs = cpu_backend.sweep("intensity", "dp", quick=True)
    g = ISAS[specs[0].params["isa"]].g_fp
    assert len(specs) >= 34
    assert all(s.level == "mem" and s.kernel == "intensity" and s.params["store"] == "nt" for s in specs)
    assert specs[0].params["fma_per_trip"] == g // 2
    assert specs[1].params["fma_per_trip"] == round(0.25 * 3 * g * 8 / 4)
    ro = cpu_backend.sweep("intensity", "dp", quick=True, store="none")
    assert len(ro) >= 33 and all(s.params["store"] == "none" for s in ro)
    assert ro[0].params["fma_per_trip"] * 2 == g * 8 // 4


@pytest.mark.parametrize("isa", ["avx512", "avx2", "sse2", "neon"])
@pytest.mark.parametrize("precision", ["dp", "sp"])
def test_nt_sweep_points_cover_range_four_per_doubling(isa: str, precision: str) -> None:
    v = ISAS[isa]
    fs = sorted({v.g_fp // 2} | {fma_per_trip_for_nt(v, precision, i) for i in intensity_targets(precision)})
    ints = [intensity_of_nt(v, precision, f) for f in fs]
    top = TOP[precision]
    assert ints[0] == pytest.approx(4 * (v.g_fp // 2) / (3 * v.g_fp * ELEM_BYTES[precision]))  # the triad's I
    assert ints[1] == pytest.approx(0.25, rel=0.05) and ints[-1] == pytest.approx(top)
    assert fs[-1] == 384 * v.g_fp           # the same FMAs per trip in SP as in DP
    for lo in range(round(math.log2(top / 0.25))):
        a, b = 0.25 * 2**lo, 0.25 * 2 ** (lo + 1)
        inside = [x for x in ints if a < x <= b * (1 + 1e-12)]
        assert len(inside) >= 4, (isa, precision, a, inside)


@pytest.mark.parametrize("precision", ["dp", "sp"])
def test_many_reps_checksum_stays_within_tolerance(cpu_backend, precision: str) -> None:
    """Summing the same per-rep checksum 10^5..10^6 times must not drift out of the tolerance (compensated sum)."""
    v = ISAS[str(best_isa())]
    n = v.g_fp * v.lanes(precision)
    for f in (v.g_fp + 1, 7 * v.g_fp + 3):
        spec = KernelSpec("cpu_asm", "intensity", precision, "mem",
                          {"fma_per_trip": f, "working_set_bytes": n * ELEM_BYTES[precision], "threads": 1})
        p = cpu_backend.prepare(spec)
        try:
            res = p.run(300_000)
            assert res.checksum_ok, (res.extra["checksum"], res.extra["checksum_expected"])
        finally:
            p.close()
