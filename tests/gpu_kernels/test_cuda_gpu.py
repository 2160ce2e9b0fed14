"""Every CUDA kernel on a real NVIDIA GPU: exact counts and verified checksums (pytest -m gpu).

Skipped without cupy or a CUDA device; never run on the development machine (no GPU there).
"""

from __future__ import annotations

from fractions import Fraction

import pytest

pytestmark = pytest.mark.gpu

cp = pytest.importorskip("cupy", reason="cupy not installed (pip install 'archline[cuda]')")

from archline.bench.cuda.backend import CudaBackend  # noqa: E402
from archline.bench.kernels import KernelSpec  # noqa: E402

B = CudaBackend()
_ok, _why = B.availability()
if not _ok:  # pragma: no cover - depends on the machine
    pytest.skip(f"CUDA back end unusable: {_why}", allow_module_level=True)

SMALL = {"warmup_s": 0.0}


@pytest.mark.parametrize(("precision", "fma"), [("sp", 0.5), ("sp", 0.625), ("sp", 3), ("sp", 128), ("dp", 1),
                                                 ("dp", 1.75), ("dp", 256)])
def test_intensity(precision: str, fma: float) -> None:
    pk = B.prepare(KernelSpec("cuda", "intensity", precision, "mem", {**SMALL, "fma_per_elem": fma,
                                                                       "working_set_bytes": 8 << 20}))
    res = pk.run(2)
    assert res.checksum_ok, res.extra
    n = res.extra["input_bytes"] // (8 if precision == "dp" else 4)
    assert pk.counts_per_rep.flops == 2 * Fraction(fma) * n
    pk.close()


def test_int32() -> None:
    pk = B.prepare(KernelSpec("cuda", "int", "int32", "mem", {**SMALL, "fma_per_elem": 4,
                                                               "working_set_bytes": 8 << 20}))
    assert pk.run(2).checksum_ok
    pk.close()


@pytest.mark.parametrize("precision", ["sp", "dp", "int32"])
@pytest.mark.parametrize("level", ["shared", "l2", "mem"])
def test_cache(precision: str, level: str) -> None:
    params = {**SMALL, "rounds": 16}
    if level != "shared":
        params["working_set_bytes"] = 1 << 20
    pk = B.prepare(KernelSpec("cuda", "cache", precision, level, params))
    assert pk.run(2).checksum_ok
    pk.close()


@pytest.mark.parametrize("chains", [1, 1024])
def test_chase(chains: int) -> None:
    pk = B.prepare(KernelSpec("cuda", "chase", "int32", "mem", {**SMALL, "chains": chains, "steps": 1000,
                                                                 "working_set_bytes": 16 << 20}))
    res = pk.run(1)
    assert res.checksum_ok and pk.counts_per_rep.rand_accesses == chains * 1000
    assert res.extra["ns_per_access"] > 0
    pk.close()
