"""Pointer chase: single random cycle, chains, page-local order, checksums of where every chain ends."""

from __future__ import annotations

import numpy as np
import pytest

from archline.bench.cpu_asm import reference as ref
from archline.bench.kernels import KernelSpec


def _is_single_cycle(order: np.ndarray) -> bool:
    n = order.size
    nxt = np.empty(n, dtype=np.int64)
    nxt[order] = np.roll(order, -1)
    seen, node = 0, int(order[0])
    for _ in range(n):
        node = int(nxt[node])
        seen += 1
        if node == int(order[0]):
            break
    return seen == n and np.array_equal(np.sort(order), np.arange(n))


@pytest.mark.parametrize("page_local", [False, True])
def test_order_is_one_cycle(page_local: bool) -> None:
    order = ref.chase_order(7, 64 * 32, page_local=page_local)
    assert _is_single_cycle(order)
    if page_local:  # every run of 64 consecutive visits stays in one 4 KiB page
        pages = order.reshape(-1, 64) // 64
        assert (pages == pages[:, :1]).all()


@pytest.mark.parametrize("chains", [1, 2, 8, 32])
@pytest.mark.parametrize("page_local", [False, True])
def test_chase_checksum(cpu_backend, chains: int, page_local: bool) -> None:
    spec = KernelSpec("cpu_asm", "chase", "dp", "l2",
                      {"chains": chains, "page_local": page_local, "working_set_bytes": 64 * 1024, "seed": 3})
    p = cpu_backend.prepare(spec)
    try:
        r1 = p.run(1)
        r2 = p.run(3)
        nodes = 1024
        assert p.nodes == nodes
        assert r2.counts.rand_accesses == 3 * nodes
        assert r2.counts.bytes_total == 0
        order = ref.chase_order(3, nodes, page_local=page_local)
        assert r2.extra["checksum"] == ref.chase_positions(order, chains, 4 * nodes // chains)
        assert r1.checksum_ok and r2.checksum_ok
        assert r2.extra["ns_per_access"] > 0
        # cycles only where a second source confirmed the clock; otherwise the row says why there are none
        if "effective_clock_hz" in r2.extra:
            assert r2.extra["cycles_per_access"] == pytest.approx(
                r2.extra["ns_per_access"] * 1e-9 * r2.extra["effective_clock_hz"])
        else:
            assert "cycles_per_access" not in r2.extra and r2.extra["clock_check"].startswith("no clock")
    finally:
        p.close()


def test_chase_hugetlb_request_falls_back(cpu_backend) -> None:
    spec = KernelSpec("cpu_asm", "chase", "dp", "l3", {"hugetlb": True, "working_set_bytes": 4 << 20})
    p = cpu_backend.prepare(spec)
    try:
        r = p.run(1)
        assert r.checksum_ok
        assert r.extra["pages"] in ("hugetlb-2M", "4k+thp-advised")
    finally:
        p.close()
