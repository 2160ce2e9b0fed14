"""Intensity kernel with a non-temporal store stream (store="nt"): exact counts (read + written bytes, flops) and
the checksum of the written array, for every x86-64 variant this CPU can run."""

from __future__ import annotations

import pytest

from archline.bench.cpu_asm import reference as ref
from archline.bench.cpu_asm.topology import one_cpu_per_core
from archline.bench.cpu_asm.variants import ELEM_BYTES, ISAS, fma_per_trip_for_nt, intensity_of_nt
from archline.bench.errors import BenchError
from archline.bench.kernels import KernelSpec


def _fs(g: int) -> list[int]:
    # the floor F = G/2 (stream's triad), every Horner remainder once, and deeper chains
    return [g // 2, *[g // 2 + r for r in range(1, g)], g // 2 + g, 3 * g + 1, 16 * g + 5]


@pytest.mark.parametrize("precision", ["dp", "sp"])
def test_nt_counts_and_checksum_every_f(cpu_backend, x86_isa: str, precision: str) -> None:
    v = ISAS[x86_isa]
    lanes, esize = v.lanes(precision), ELEM_BYTES[precision]
    threads = min(2, len(one_cpu_per_core()))
    n = v.g_fp * lanes * threads * 7                       # 7 trips per thread (several streams and a tail)
    for f in _fs(v.g_fp):
        spec = KernelSpec("cpu_asm", "intensity", precision, "mem",
                          {"isa": x86_isa, "store": "nt", "fma_per_trip": f, "threads": threads,
                           "working_set_bytes": n * esize * 3 // 2})
        p = cpu_backend.prepare(spec)
        try:
            assert p.n_elems == n
            res = p.run(3)
            key = "flops_dp" if precision == "dp" else "flops_sp"
            assert getattr(res.counts, key) == 3 * n * 2 * f // v.g_fp
            read, written = n * esize, n // 2 * esize
            assert res.counts.bytes_mem == 3 * (read + written)
            assert res.counts.bus_bytes == 3 * (read + written)   # streaming stores: no write-allocate
            assert res.extra["working_set_bytes"] == read + written
            assert res.extra["intensity_flop_per_byte"] == pytest.approx(
                (n * 2 * f / v.g_fp) / (read + written))
            exp = ref.intensity_nt_checksum(precision, 1, n, v.g_fp, lanes, f)
            assert res.checksum_ok, (x86_isa, precision, f, res.extra["checksum"], exp)
            assert res.extra["checksum"] == pytest.approx(exp, rel=ref.intensity_nt_rel_tol(precision, v.g_fp, f, n))
        finally:
            p.close()


def test_nt_checksum_detects_wrong_work() -> None:
    """One Horner step more or less on every vector, or a different final FMA, falls far outside the tolerance."""
    v = ISAS["avx2"]
    for precision in ("dp", "sp"):
        n = ref.PERIOD + v.g_fp * v.lanes(precision) * 4
        for f in (v.g_fp // 2, v.g_fp * 3, v.g_fp * 50):
            a = ref.intensity_nt_checksum(precision, 1, n, v.g_fp, v.lanes(precision), f)
            b = ref.intensity_nt_checksum(precision, 1, n, v.g_fp, v.lanes(precision), f + v.g_fp)
            assert abs(a - b) > 10 * ref.intensity_nt_rel_tol(precision, v.g_fp, f, n) * abs(a)


def test_nt_big_buffer_and_intensity_param(cpu_backend, x86_isa: str) -> None:
    """Above one data period the reference scales one period; 'intensity' maps to the nt formula 4F/(3 G s)."""
    v = ISAS[x86_isa]
    n = ref.PERIOD * 2 + v.g_fp * v.lanes("dp") * 2
    spec = KernelSpec("cpu_asm", "intensity", "dp", "mem",
                      {"isa": x86_isa, "store": "nt", "intensity": 0.25, "working_set_bytes": n * 12,
                       "threads": 1})
    p = cpu_backend.prepare(spec)
    try:
        f = fma_per_trip_for_nt(v, "dp", 0.25)
        assert p.knob == f and p.n_elems == n
        assert p.extra["intensity_flop_per_byte"] == pytest.approx(intensity_of_nt(v, "dp", f))
        assert intensity_of_nt(v, "dp", f) == pytest.approx(0.25)
        assert p.run(2).checksum_ok
    finally:
        p.close()


def test_nt_bad_params(cpu_backend) -> None:
    v = ISAS["sse2"]
    with pytest.raises(BenchError, match="store"):
        cpu_backend.prepare(KernelSpec("cpu_asm", "intensity", "dp", "mem",
                                       {"isa": "sse2", "store": "wb", "fma_per_trip": 8, "working_set_bytes": 2**16}))
    with pytest.raises(BenchError, match="floor"):
        cpu_backend.prepare(KernelSpec("cpu_asm", "intensity", "dp", "mem",
                                       {"isa": "sse2", "store": "nt", "fma_per_trip": v.g_fp // 2 - 1,
                                        "working_set_bytes": 2**16}))


def test_nt_sweep_covers_the_intensity_range_and_runs() -> None:
    from archline.bench.cpu_asm.backend import CpuAsmBackend
    from archline.bench.kernels import KernelSpec

    be = CpuAsmBackend()
    specs = be.sweep("intensity", "dp", quick=True, store="nt")
    assert all(s.params["store"] == "nt" for s in specs)
    v = ISAS[specs[0].params["isa"]]
    ints = [intensity_of_nt(v, "dp", s.params["fma_per_trip"]) for s in specs]
    assert ints[0] == pytest.approx(1 / 12) and ints[1] == pytest.approx(0.25) and ints[-1] == pytest.approx(64.0)
    assert be.sweep("intensity", "dp", quick=True) == specs  # nt is the default
    first = specs[1]
    small = KernelSpec(first.backend, first.kernel, first.precision, first.level,
                       {**first.params, "working_set_bytes": 1 << 20})
    prepared = be.prepare(small)
    try:
        res = prepared.run(2)
    finally:
        prepared.close()
    assert res.checksum_ok
    c = res.counts
    # reads + streamed writes, exactly; intensity from the total (0.25 flop/B is exact for AVX2/SSE2 dp)
    assert c.flops_dp / c.bytes_mem == pytest.approx(res.extra["intensity_flop_per_byte"])
    assert c.bus_bytes == c.bytes_mem
    with pytest.raises(Exception, match="intensity kernel only"):
        be.sweep("cache", "dp", store="nt")


def test_a_kept_buffer_serves_the_next_f_with_its_own_checksum(cpu_backend) -> None:
    """keep_buffer (the quick roofline's DRAM points): the next point of the same stream takes the buffer over,
    every F still gets its exact checksum and counts, and the point without the flag frees it."""
    best = cpu_backend.roofline(("dp",))[0].params["isa"]
    v = ISAS[best]
    n = v.g_fp * v.lanes("dp") * 7
    sizes = {"threads": 1, "working_set_bytes": n * 8 * 3 // 2, "isa": best, "store": "nt"}
    fs = [v.g_fp // 2, v.g_fp, 3 * v.g_fp + 1]
    natives = []
    for i, f in enumerate(fs):
        keep = {"keep_buffer": True} if i < len(fs) - 1 else {}
        p = cpu_backend.prepare(KernelSpec("cpu_asm", "intensity", "dp", "mem", {**sizes, "fma_per_trip": f, **keep}))
        natives.append(p._native)
        r = p.run(3)
        assert r.checksum_ok and r.counts.flops_dp == 3 * n * 2 * f // v.g_fp
        p.close()
        assert (cpu_backend._kept is not None) == bool(keep)
    assert natives[0] is natives[1] is natives[2]
    other = cpu_backend.prepare(KernelSpec("cpu_asm", "intensity", "dp", "mem", {**sizes, "fma_per_trip": fs[0]}))
    assert other._native is not natives[0] and other.run(1).checksum_ok
    other.close()


def test_the_quick_roofline_spreads_its_dram_points_and_keeps_one_buffer(cpu_backend) -> None:
    """Issue 34: the three DRAM points run at three moments (after the peaks, after L1, last), so a phase of other
    guests' memory traffic weighs on one of them; only cache points (which take no stream) lie between them, so the
    one memory buffer is kept across them, and a cache point prepared in between leaves it kept."""
    specs = cpu_backend.roofline(("sp", "dp"))
    mem = [i for i, s in enumerate(specs) if s.level == "mem"]
    assert len(mem) == 3 and mem[-1] == len(specs) - 1 and mem[1] - mem[0] > 1 and mem[2] - mem[1] > 1
    assert all(specs[i].kernel == "cache" for i in range(mem[0] + 1, mem[2]) if i not in mem)
    assert all(s.kernel == "intensity" and s.level == "l1" for s in specs[:mem[0]])
    assert [bool(specs[i].params.get("keep_buffer")) for i in mem] == [True, True, False]
    assert [specs[i].params["fma_per_trip"] for i in mem] == sorted(specs[i].params["fma_per_trip"] for i in mem)
    # kept across a cache point: the same native stream serves the next DRAM point
    best = specs[0].params["isa"]
    v = ISAS[best]
    n = v.g_fp * v.lanes("dp") * 7
    small = {"threads": 1, "working_set_bytes": n * 8 * 3 // 2, "isa": best, "store": "nt"}
    p = cpu_backend.prepare(KernelSpec("cpu_asm", "intensity", "dp", "mem",
                                       {**small, "fma_per_trip": v.g_fp // 2, "keep_buffer": True}))
    first = p._native
    assert p.run(1).checksum_ok
    p.close()
    c = cpu_backend.prepare(KernelSpec("cpu_asm", "cache", "dp", "l1",
                                       {"isa": best, "mode": "load", "working_set_bytes": 16384, "threads": 1}))
    assert c.run(1).checksum_ok
    c.close()
    assert cpu_backend._kept is not None
    q = cpu_backend.prepare(KernelSpec("cpu_asm", "intensity", "dp", "mem", {**small, "fma_per_trip": v.g_fp}))
    assert q._native is first and q.run(1).checksum_ok
    q.close()
    assert cpu_backend._kept is None
