"""Every kind of kernel in the catalogue builds with hipcc (HIP_PLATFORM=amd) for each target Debian's ROCm supports,
and its AMDGCN round loop holds the declared FMAs, loads (by bytes), adds and no scratch: the compiler neither
folded nor dropped work. No GPU needed. Skipped with the reason where hipcc is not installed."""

from __future__ import annotations

from typing import Any

import pytest

from archline.bench.errors import BenchError, UnsupportedError
from archline.bench.gpu import GpuKernelDesc
from archline.bench.gpu.ceilings import CeilingKernelDesc
from archline.bench.hip import hipcc

needs_hipcc = pytest.mark.skipif(hipcc.find_hipcc() is None,
                                 reason="hipcc not installed (Debian: apt install hipcc): HIP cannot be compiled here")
TARGETS = ("gfx908", "gfx90a", "gfx1030")

DESCS: list[GpuKernelDesc] = [
    GpuKernelDesc("intensity", "sp", fma_num=5, elems=8, vector_width=2, chains=4),
    GpuKernelDesc("intensity", "sp", fma_num=4, elems=1, vector_width=4, chains=4),
    GpuKernelDesc("intensity", "dp", fma_num=2, elems=1, vector_width=2, chains=4),
    GpuKernelDesc("int", "int32", fma_num=3, elems=2, vector_width=2, chains=4),
    GpuKernelDesc("cache", "sp", "shared", vector_width=2, chains=2, local_elems=1024),
    GpuKernelDesc("cache", "dp", "l2", vector_width=2, chains=2),
    GpuKernelDesc("cache", "sp", "mem", vector_width=2, chains=2),
    GpuKernelDesc("chase", "int32", "mem", chains=1),
    CeilingKernelDesc("ceil_flop", "sp", fma=True, steps=16, chains=8),
    CeilingKernelDesc("ceil_flop", "sp", fma=False, steps=16, chains=1),
    CeilingKernelDesc("ceil_flop", "dp", fma=False, steps=8, chains=8),
    CeilingKernelDesc("ceil_mem", "sp", access="strided", chains=4),
    CeilingKernelDesc("ceil_mem", "dp", access="subset", active_div=8, chains=4),
]


def _declared(d: GpuKernelDesc) -> dict[str, Any]:
    """Per trip of the round loop: FMA lanes, multiplies, adds and bytes loaded, from the description alone."""
    w, s = d.vector_width, d.scalar_bytes
    if isinstance(d, CeilingKernelDesc):
        ops = d.steps * d.chains * w
        if d.kernel == "ceil_flop":
            return {"fma": ops if d.fma else 0, "mul": 0 if d.fma else ops, "add": 0 if d.fma else ops, "bytes": 0}
        return {"fma": 0, "mul": 0, "add": d.chains * w, "bytes": d.chains * w * s}
    if d.kernel in ("intensity", "int"):
        return {"fma": d.fma_num * d.chains * w, "mul": 0, "add": None, "bytes": d.vectors_per_round * w * s}
    if d.kernel == "cache":
        return {"fma": 0, "mul": 0, "add": d.chains * w, "bytes": d.chains * w * s}
    return {"fma": 0, "mul": 0, "add": None, "bytes": d.chains * d.chase_unroll * 4}


@pytest.fixture(scope="module", params=TARGETS)
def build(request: pytest.FixtureRequest) -> hipcc.Build:
    if hipcc.find_hipcc() is None:
        pytest.skip("hipcc not installed (Debian: apt install hipcc)")
    return hipcc.compile_module(DESCS, request.param)


@needs_hipcc
def test_every_kernel_holds_its_instruction_mix(build: hipcc.Build) -> None:
    reps = hipcc.inspect_module(build, DESCS)
    bad = []
    for d in DESCS:
        r, want = reps[d.name], _declared(d)
        got = {"fma": r.loop_fma, "mul": r.loop_mul, "add": r.loop_add, "bytes": r.loop_load_bytes}
        for k, v in want.items():
            if v is not None and got[k] != v:
                bad.append(f"{d.name}: loop has {got[k]} {k}, declared {v}")
        if r.scratch_bytes != 0 or not 0 < r.vgprs <= 512:
            bad.append(f"{d.name}: scratch {r.scratch_bytes} B, VGPRs {r.vgprs}")
    assert not bad, f"{build.target}:\n" + "\n".join(bad)


def test_hip_source_is_the_cuda_dialect() -> None:
    """HIP renders the CUDA lines (one description); only the unfused ceiling adds clang's contract pragma."""
    d = DESCS[0]
    assert d.source("hip") == d.source("cuda") and d.source_hash("hip") == d.source_hash("cuda")
    nofma = CeilingKernelDesc("ceil_flop", "sp", fma=False)
    assert "#pragma clang fp contract(off)" in nofma.source("hip")
    assert "__fmul_rn" in nofma.source("cuda") and "__fmul_rn" not in nofma.source("hip")
    with pytest.raises(UnsupportedError, match="HIP has no 8-wide"):
        GpuKernelDesc("intensity", "sp", vector_width=8).source("hip")
    with pytest.raises(BenchError, match="unknown kernel dialect"):
        d.source("metal")


@needs_hipcc
def test_targets_named_plainly() -> None:
    assert hipcc.check_target("gfx90a:sramecc+:xnack-") == "gfx90a"
    with pytest.raises(BenchError, match="bad AMD GPU target"):
        hipcc.check_target("sm_80")
    try:                                    # MI300 needs a newer ROCm than Debian's 5.2: refused, named
        hipcc.check_target("gfx942")
    except UnsupportedError as e:
        assert "gfx942 CDNA3 (MI300)" in str(e)
