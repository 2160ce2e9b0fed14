"""The shared generator: one description -> OpenCL C and CUDA C with the declared work; no device needed."""

from __future__ import annotations

import re
from fractions import Fraction

import numpy as np
import pytest

from archline.bench.errors import BenchError, UnsupportedError
from archline.bench.gpu import (
    GpuKernelDesc,
    fma_fraction,
    fma_per_elem_points,
)


@pytest.mark.parametrize(("value", "expected"), [(0.5, (1, 2)), (0.625, (5, 8)), ("7/4", (7, 4)), (3, (3, 1)),
                                                  (Fraction(5, 4), (5, 4))])
def test_fma_fraction(value: object, expected: tuple[int, int]) -> None:
    assert fma_fraction(value) == expected


@pytest.mark.parametrize("value", [0.25, 0.3, "x", -1, 0])
def test_fma_fraction_rejects(value: object) -> None:
    with pytest.raises(BenchError):
        fma_fraction(value)


@pytest.mark.parametrize(("n", "e", "w", "c"), [(1, 2, 8, 6), (5, 8, 4, 2), (3, 1, 1, 4), (7, 4, 2, 3)])
def test_source_holds_declared_fmas(n: int, e: int, w: int, c: int) -> None:
    d = GpuKernelDesc("intensity", "sp", fma_num=n, elems=e, vector_width=w, chains=c)
    ocl = d.source("opencl")
    assert len(re.findall(r"\bfma\(", ocl)) == n * c                     # one vector FMA per chain and step
    assert len(re.findall(r"= a\[", ocl)) == e * c                       # loads fixed: elems per chain
    if w <= 4:
        cu = d.source("cuda")
        assert len(re.findall(r"\bfmaf\(", cu)) == n * c * w              # CUDA works per lane
        assert "__global__" in cu and d.name in cu
    # every loaded element feeds an FMA: declared once, used at least once
    for k in range(c):
        for j in range(e):
            assert len(re.findall(rf"\bx{k}_{j}\b", ocl)) >= 2


def test_cuda_has_no_16_wide_loads() -> None:
    with pytest.raises(UnsupportedError):
        GpuKernelDesc("intensity", "dp", vector_width=4).source("cuda")


def test_sweep_points() -> None:
    for prec, s in (("sp", 4), ("dp", 8), ("int32", 4)):
        pts = fma_per_elem_points(prec)
        ints = [2 * float(p) / s for p in pts]
        assert ints[0] == 0.25 and ints[-1] == 64.0
        assert all(p.denominator <= 8 for p in pts)


def test_counts_formula() -> None:
    d = GpuKernelDesc("intensity", "dp", fma_num=5, elems=4, vector_width=2, chains=3)
    c = d.counts(global_size=10, rounds=7)
    n = 7 * 3 * 4 * 10 * 2
    assert c.flops_dp == 2 * 5 * n // 4 and c.bytes_mem == 8 * n + 10 * 3 * 2 * 8
    assert d.intensity_flop_per_byte == pytest.approx(2 * 1.25 / 8)


def test_int_reference_is_exact_mod_2_32() -> None:
    d = GpuKernelDesc("int", "int32", fma_num=3, elems=2, vector_width=1, chains=1)
    a = np.array([3, 5, 7, 11], dtype=np.uint32)            # 2 rounds x 1 chain x 2 elems x 1 lane
    acc = 12345
    for x0, x1 in ((3, 5), (7, 11)):
        for j in range(3):
            mult = (x0, x1)[j % 2]
            add = (x0, x1)[3 + j] if 3 + j < 2 else 0x9E3779B9
            acc = (acc * mult + add) % 2**32
    assert int(d.reference(a, global_size=1, rounds=2).reshape(-1)[0]) == acc


def test_chase_reference_walks_the_cycle() -> None:
    d = GpuKernelDesc("chase", "int32", level="mem", chains=1)
    nxt = d.make_input(1000, np.random.default_rng(3))
    seen = {0}
    k = 0
    for _ in range(999):
        k = int(nxt[k])
        seen.add(k)
    assert len(seen) == 1000 and int(nxt[k]) == 0                         # one cycle through every element
    k = 0
    for _ in range(12345):
        k = int(nxt[k])
    assert int(d.reference(nxt, global_size=1, rounds=12345)[0]) == k


def test_bad_descriptions() -> None:
    with pytest.raises(BenchError):
        GpuKernelDesc("intensity", "int32")
    with pytest.raises(BenchError):
        GpuKernelDesc("chase", "sp")
    with pytest.raises(BenchError):
        GpuKernelDesc("intensity", "sp", vector_width=3)
    with pytest.raises(BenchError):
        GpuKernelDesc("cache", "sp", level="shared", local_elems=100)
