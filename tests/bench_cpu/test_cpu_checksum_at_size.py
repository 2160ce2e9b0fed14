"""Checksums hold at any size (issue 13): the nt sweep failed 22 of 34 points at 3.75 GiB because its read-back was a
plain sequential double sum whose rounding outgrew a fixed tolerance. These tests reproduce both halves of that:
the read-back sum on data built to defeat a plain sum (fast), and the nt kernel itself at 3.75 GiB on every ISA
this CPU runs (slow)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from archline.bench.cpu_asm import reference as ref
from archline.bench.cpu_asm.variants import ISAS


def test_readback_sum_error_does_not_grow_with_n(cpu_backend) -> None:
    from archline.bench.cpu_asm import _kernels

    # one large term, then 2^20 terms each below half an ulp of the running sum: a sequential sum keeps 1.0 and
    # loses all of them (relative error 1.1e-10, far outside any checksum tolerance); the read-back sum must stay
    # within its stated bound, READBACK_ULPS units of 2^-53 of the exact (fsum) total
    x = np.concatenate([[1.0], np.full(1 << 20, 0.75 * 2.0**-53)])
    exact = math.fsum(x.tolist())
    naive = 0.0
    for v in (1.0, *([0.75 * 2.0**-53] * 1000)):
        naive += v
    assert naive == 1.0                                          # the failure mode, shown on a prefix
    got = _kernels.readback_sum(x)
    assert _kernels.READBACK_ULPS == ref.READBACK_ULPS
    assert abs(got - exact) <= ref.READBACK_ULPS * 2.0**-53 * exact
    # positive random data of the kernels' kind, long enough for a sequential sum's random walk to matter
    y = np.random.default_rng(1).uniform(0.5, 1.5, 1 << 22)
    assert abs(_kernels.readback_sum(y) - math.fsum(y.tolist())) <= ref.READBACK_ULPS * 2.0**-53 * float(y.sum())


def test_nt_tolerance_is_derived_from_counts() -> None:
    v = ISAS["avx2"]
    small = ref.intensity_nt_rel_tol("dp", v.g_fp, v.g_fp * 10, 10**6)
    big = ref.intensity_nt_rel_tol("dp", v.g_fp, v.g_fp * 10, 10**9)
    assert small <= big < 2 * small          # the element count enters only through O(n u^2)
    assert ref.intensity_nt_rel_tol("dp", v.g_fp, v.g_fp * 100, 10**6) > small   # more Horner steps, more slack
    assert ref.intensity_nt_rel_tol("sp", v.g_fp, v.g_fp * 10, 10**6) > 1e6 * small  # float rounding dominates


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["dp", "sp"])
def test_nt_checksums_at_3_75_gib(cpu_backend, x86_isa: str, precision: str) -> None:
    """The failing configuration of issue 13: the nt stream at 3.75 GiB (8 x a reported 480 MiB L3), several F
    across the sweep, every checksum within its derived tolerance."""
    from archline.bench.cpu_asm import _kernels
    from archline.bench.cpu_asm.topology import mem_available_bytes, one_cpu_per_core

    ws = 3 * 2**30 + 3 * 2**28
    if mem_available_bytes() < 2 * ws:
        pytest.skip(f"needs {2 * ws / 2**30:.1f} GiB free")
    v = ISAS[x86_isa]
    esize = 8 if precision == "dp" else 4
    cpus = one_cpu_per_core()
    unit = v.g_fp * v.lanes(precision) * len(cpus)
    n = (ws * 2 // 3 // esize) // unit * unit
    stream = _kernels.Stream(f"intensity_nt_{precision}", x86_isa, n, cpus, 1, ref.PERIOD)
    try:
        for f in (v.g_fp // 2, v.g_fp * 2 + 3, v.g_fp * 9 + 5, v.g_fp * 40):
            got = stream.run(1, f)["checksum"]
            exp = ref.intensity_nt_checksum(precision, 1, n, v.g_fp, v.lanes(precision), f)
            tol = ref.intensity_nt_rel_tol(precision, v.g_fp, f, n)
            assert abs(got - exp) <= tol * exp, (x86_isa, precision, f, got, exp, abs(got - exp) / exp, tol)
    finally:
        stream.close()
