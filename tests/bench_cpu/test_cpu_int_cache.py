"""int32 chains and cache kernels: exact counts and exact checksums for every x86-64 variant this CPU can run."""

from __future__ import annotations

import pytest

from archline.bench.cpu_asm import reference as ref
from archline.bench.cpu_asm.variants import ISAS
from archline.bench.errors import UnsupportedError
from archline.bench.kernels import KernelSpec


@pytest.mark.parametrize("op", ["add", "mul"])
def test_int_chains(cpu_backend, x86_isa: str, op: str) -> None:
    v = ISAS[x86_isa]
    lanes = v.lanes("int32")
    n = v.g_int * lanes * 2 * 5
    for steps in (0, 1, 2, 7, 33):
        spec = KernelSpec("cpu_asm", "int", "int32", "mem",
                          {"isa": x86_isa, "op": op, "steps": steps, "working_set_bytes": n * 4})
        if op == "mul" and not v.int_mul:
            with pytest.raises(UnsupportedError):
                cpu_backend.prepare(spec)
            return
        p = cpu_backend.prepare(spec)
        try:
            res = p.run(3)
            assert res.counts.int_ops == 3 * p.n_elems * (steps + 1)
            assert res.counts.bytes_mem == 3 * p.n_elems * 4
            assert res.counts.flops == 0
            exp = (3 * ref.int_checksum(op, 1, p.n_elems, v.g_int, lanes, steps)) & 0xFFFFFFFF
            assert res.extra["checksum"] == exp
            assert res.checksum_ok
        finally:
            p.close()


@pytest.mark.parametrize("level", ["l1", "l2", "l3"])
@pytest.mark.parametrize("mode", ["load", "rmw", "store"])
def test_cache_kernels(cpu_backend, x86_isa: str, level: str, mode: str) -> None:
    spec = KernelSpec("cpu_asm", "cache", "dp", level, {"isa": x86_isa, "mode": mode,
                                                        **({"working_set_bytes": 1 << 20} if level == "l3" else {})})
    p = cpu_backend.prepare(spec)
    try:
        n = p.n_elems
        s0 = ref.cache_sum(1, n)
        r1 = p.run(2)
        r2 = p.run(5)
        per = {"load": 8, "rmw": 16, "store": 8}[mode]
        assert getattr(r2.counts, f"bytes_{level}") == 5 * per * n
        assert r2.counts.bytes_mem == 0
        bus = 16 * n if (mode == "store" and level != "l1") else per * n
        assert r2.counts.bus_bytes == 5 * bus
        if mode == "load":   # reps x the XOR-pair checksum, mod 2^64 (exact)
            x0 = ref.load_xor_checksum(1, n, ISAS[x86_isa].g_ld, ISAS[x86_isa].lanes("dp"), len(p.cpus))
            assert r1.extra["checksum"] == (2 * x0) % 2**64 and r2.extra["checksum"] == (5 * x0) % 2**64
        elif mode == "rmw":
            assert r1.extra["checksum"] == s0 + 2 * n and r2.extra["checksum"] == s0 + 7 * n
        else:
            assert r2.extra["checksum"] == 5.0 * n
        assert r1.checksum_ok and r2.checksum_ok
    finally:
        p.close()


def test_cache_working_sets_follow_sysfs(cpu_backend) -> None:
    from archline.bench.cpu_asm import topology as topo

    caches = {c.level: c.size_bytes for c in topo.caches()}
    if 1 not in caches:
        pytest.skip("sysfs has no cache description")
    ws = topo.level_working_sets(2)
    assert ws["l1"] == caches[1]                  # half of L1d per thread, 2 threads
    assert ws["l2"] == caches.get(2, 512 * 1024)
    assert ws["l1"] < ws["l2"] < ws.get("l3", 1 << 62) < ws["mem"]
    assert ws["mem"] >= 2**30
    specs = cpu_backend.sweep("cache", "dp", quick=True)
    assert {s.level for s in specs} >= {"l1", "l2", "mem"}
    assert {s.params["mode"] for s in specs} == {"load", "rmw", "store"}
