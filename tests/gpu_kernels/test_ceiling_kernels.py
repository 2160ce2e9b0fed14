"""S4's ceiling kernels (t×b, FMA, ILP, FMA+ILP; normal, strided, subset memory): one generator for OpenCL and
CUDA, run on the local OpenCL device (PoCL on the CPU here) with exact counts and bit-exact checksums, and built
with nvcc with the declared multiply-adds and loads in each loop trip. Sizes are small; speed is never asserted."""

from __future__ import annotations

import re
import warnings
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from archline.bench.cuda import nvcc
from archline.bench.errors import BenchError, UnsupportedError
from archline.bench.gpu import Geometry
from archline.bench.gpu.ceilings import (
    FLOPS_CEILINGS,
    MEM_CEILINGS,
    CeilingKernelDesc,
    ceiling_points,
    parse_ceiling_spec,
)
from archline.bench.kernels import KernelSpec

GPU = Geometry(80 * 8 * 256, 256, 1, 2, "interleaved", 80, False)     # an 80-SM card, as the CUDA back end sees it
CPU = Geometry(2 * 4, 1, 16, 4, "blocked", 2, True)                    # PoCL on 2 AVX-512 cores
SMALL = {"rounds": 64, "warmup_s": 0.0}
MEM_SMALL = {"working_set_bytes": 256 << 10, "warmup_s": 0.0}


def _ws(level: str) -> int:
    return 1 << 30


# -- the generator and the counts (no device) ---------------------------------------------------------------------

def test_sweep_is_s4s_ceilings() -> None:
    """Compute: t×b first (no FMA, no ILP), then FMA, ILP, FMA+ILP; memory: normal, strided, subset (S4 §III)."""
    labels = [s.params["ceiling"] for s in ceiling_points("opencl", "ceilings", "sp")]
    assert labels == [lab for lab, _ in FLOPS_CEILINGS] + [lab for lab, _ in MEM_CEILINGS]
    quick = [s.params["ceiling"] for s in ceiling_points("opencl", "ceil_flop", "dp", quick=True)]
    assert quick == ["t×b 1/4×1/4", "t×b 1×1", "FMA", "ILP", "FMA+ILP"]
    with pytest.raises(BenchError, match="sp or dp"):
        ceiling_points("opencl", "ceilings", "int32")


@pytest.mark.parametrize(("geo", "t", "b", "want"), [
    (GPU, "1", "1", (80 * 8 * 256, 256, 1)), (GPU, "1/4", "1/4", (80 * 2 * 64, 64, 1)),
    (GPU, "1/4", "1", (80 * 8 * 64, 64, 1)), (CPU, "1", "1", (8, 1, 16)), (CPU, "1/4", "1/4", (2, 1, 4)),
])
def test_threads_by_blocks_scale_the_full_configuration(geo: Geometry, t: str, b: str,
                                                        want: tuple[int, int, int]) -> None:
    """GPUs: t = work-group size, b = work-groups; CPUs: t = vector lanes per work-item, b = work-items."""
    d, gsz, lsz, _, _ = parse_ceiling_spec("ceil_flop", "sp", {"t_frac": t, "b_frac": b, "fma": 0}, geo, _ws)
    assert (gsz, lsz, d.vector_width) == want


@pytest.mark.parametrize(("fma", "chains"), [(True, 1), (False, 1), (True, 8), (False, 8)])
def test_sources_hold_the_declared_multiply_adds(fma: bool, chains: int) -> None:
    d = CeilingKernelDesc("ceil_flop", "sp", chains=chains, fma=fma, steps=16, vector_width=4)
    ocl, cu = d.source("opencl"), d.source("cuda")
    n = 16 * chains
    if fma:
        assert len(re.findall(r"\bfma\(", ocl)) == n and "FP_CONTRACT" not in ocl
        assert len(re.findall(r"\bfmaf\(", cu)) == n * 4                          # CUDA works per lane
    else:
        assert len(re.findall(r"\bfma\(", ocl)) == 0 and "#pragma OPENCL FP_CONTRACT OFF" in ocl
        assert len(re.findall(r"\* mv;", ocl)) == n and len(re.findall(r"__fmul_rn\(", cu)) == n * 4
        assert len(re.findall(r"__fadd_rn\(", cu)) == n * 4 and "fmaf(" not in cu


def test_counts_derive_from_the_parameters() -> None:
    d = CeilingKernelDesc("ceil_flop", "dp", chains=8, steps=16, vector_width=2)
    c = d.counts(global_size=1000, rounds=50)
    assert c.flops_dp == 2 * 16 * 50 * 8 * 1000 * 2 and c.flops_sp == 0
    assert c.bytes_mem == 3 * 8 * 1000 * 2 * 8                                   # seed, addend read; sum written
    m = CeilingKernelDesc("ceil_mem", "sp", chains=4, access="subset", active_div=8, vector_width=4)
    c = m.counts(global_size=1024, rounds=32)
    n = 32 * 4 * (1024 // 8) * 4                                                   # elements read, one add each
    assert c.flops_sp == n and c.bytes_mem == 4 * n + 4 * 1024 * 4 * 4


@pytest.mark.parametrize("layout", ["interleaved", "blocked"])
@pytest.mark.parametrize("access", ["normal", "strided", "subset"])
def test_every_element_is_read_once(layout: str, access: str) -> None:
    """The kernel's address arithmetic, replayed: a permutation of the buffer; strided puts neighbouring
    accesses `stride` vectors apart."""
    d = CeilingKernelDesc("ceil_mem", "sp", chains=4, layout=layout, access=access, stride=8,
                          active_div=4 if access == "subset" else 1)
    g, rounds = 16, 8
    ga = d.active(g)
    nvec = rounds * d.chains * ga
    _, _, mask, sl, sr = (int(x) for x in d.scalar_args(g, rounds, nvec))
    r, k, gi = np.meshgrid(np.arange(rounds), np.arange(d.chains), np.arange(ga), indexing="ij")
    i = (r * d.chains + k) * ga + gi if layout == "interleaved" else (gi * rounds + r) * d.chains + k
    addr = ((i << sl) & mask) | (i >> sr) if access == "strided" else i
    assert sorted(addr.ravel().tolist()) == list(range(nvec))
    if access == "strided":
        order = np.argsort(i.ravel())
        assert set(np.diff(addr.ravel()[order])[: nvec // 8 - 1].tolist()) == {8}


@pytest.mark.parametrize(("params", "match"), [
    ({"rounds": 400_000}, f"stays exact for 1..{(2**24 - 1 - 1024) // (3 * 16)} rounds"),  # 1024 + 3*16*r < 2^24
    ({"t_frac": "0"}, "t_frac must lie in"), ({"b_frac": "x"}, "b_frac must be a fraction"),
    ({"unroll": 2}, "unknown ceiling kernel parameter"),
])
def test_bad_flops_parameters(params: dict[str, Any], match: str) -> None:
    with pytest.raises(BenchError, match=match):
        parse_ceiling_spec("ceil_flop", "sp", params, GPU, _ws)


def test_bad_memory_parameters() -> None:
    with pytest.raises(BenchError, match="power of two"):
        parse_ceiling_spec("ceil_mem", "sp", {"chains": 3}, GPU, _ws)
    with pytest.raises(BenchError, match="power of two"):
        parse_ceiling_spec("ceil_mem", "sp", {"global_size": 96, "local_size": 32}, GPU, _ws)
    with pytest.raises(BenchError, match="access must be"):
        parse_ceiling_spec("ceil_mem", "sp", {"access": "random"}, GPU, _ws)
    with pytest.raises(UnsupportedError, match="CUDA has no 8-wide"):
        CeilingKernelDesc("ceil_mem", "sp", vector_width=8).source("cuda")


# -- OpenCL on the local device (PoCL here) -----------------------------------------------------------------------

def _opencl() -> Any:
    pytest.importorskip("pyopencl", reason="pyopencl not installed (pip install 'archline[opencl]')")
    from archline.bench.errors import BackendUnavailableError
    from archline.bench.opencl import backend as ocl

    try:
        ocl.list_devices()
    except BackendUnavailableError as e:  # pragma: no cover - depends on the machine
        pytest.skip(f"no OpenCL device: {e}")
    warnings.filterwarnings("ignore", module="pyopencl")
    return ocl.OpenCLBackend()


SWEEP = [(s.precision, s.kernel, dict(s.params)) for s in ceiling_points("opencl", "ceilings", "sp")]
SWEEP += [(s.precision, s.kernel, dict(s.params)) for s in ceiling_points("opencl", "ceilings", "dp")
          if s.params["ceiling"] in ("FMA+ILP", "t×b 1/4×1/4", "strided 32")]


@pytest.mark.parametrize(("precision", "kernel", "params"), SWEEP,
                         ids=[f"{p}-{prm['ceiling']}" for p, _, prm in SWEEP])
def test_opencl_ceiling_runs_exact(precision: str, kernel: str, params: dict[str, Any]) -> None:
    b = _opencl()
    pk = b.prepare(KernelSpec("opencl", kernel, precision, "mem", {**params, **(SMALL if kernel == "ceil_flop"
                                                                                else MEM_SMALL)}))
    try:
        res = pk.run(2)
    finally:
        pk.close()
    assert res.checksum_ok and res.extra["mismatches"] == 0, res.extra
    g, w, c, rounds = pk.global_size, pk.desc.vector_width, pk.desc.chains, pk.rounds
    s = 8 if precision == "dp" else 4
    flops = res.counts.flops_dp if precision == "dp" else res.counts.flops_sp
    if kernel == "ceil_flop":
        assert flops == 2 * 2 * 16 * rounds * c * g * w                        # 2 reps x 2 flops x steps x ...
        assert res.counts.bytes_mem == 2 * 3 * c * g * w * s
        assert c == int(params["chains"]) and pk.desc.fma == bool(params["fma"])
    else:
        active = g // int(params.get("active_div", 1))
        n = rounds * c * active * w
        assert n * s <= MEM_SMALL["working_set_bytes"] and flops == 2 * n
        assert res.counts.bytes_mem == 2 * (n * s + c * g * w * s)


def test_opencl_thread_block_fractions() -> None:
    b = _opencl()
    sizes = {}
    for t, bf in (("1", "1"), ("1/4", "1/4")):
        pk = b.prepare(KernelSpec("opencl", "ceil_flop", "sp", "mem", {**SMALL, "t_frac": t, "b_frac": bf}))
        sizes[t] = (pk.global_size, pk.local_size, pk.desc.vector_width)
        pk.close()
    full, quarter = sizes["1"], sizes["1/4"]
    if full[0] % 4 or full[2] % 4:  # pragma: no cover - a device too small to quarter
        pytest.skip(f"full configuration {full} cannot be quartered")
    # t x b = 1/4 x 1/4: a sixteenth of the parallel lanes (work-items x vector lanes)
    assert Fraction(quarter[0] * quarter[2], full[0] * full[2]) == Fraction(1, 16)


@pytest.mark.parametrize("kernel", ["ceil_flop", "ceil_mem"])
def test_opencl_checksum_catches_missing_work(kernel: str) -> None:
    """Launch one round fewer than declared: every output lane must mismatch (a skipped multiply-add or a
    skipped element changes each sum)."""
    b = _opencl()
    pk = b.prepare(KernelSpec("opencl", kernel, "sp", "mem",
                              {**(SMALL if kernel == "ceil_flop" else MEM_SMALL), "fma": 1, "chains": 2}
                              if kernel == "ceil_flop" else {**MEM_SMALL, "chains": 2}))
    try:
        assert pk.run(1).checksum_ok
        pk._bound.set_arg(3 if kernel == "ceil_flop" else 2, np.uint32(pk.rounds - 1))
        res = pk.run(1)
    finally:
        pk.close()
    assert not res.checksum_ok and res.extra["mismatches"] > 0


# -- CUDA: nvcc builds, PTX/SASS hold the declared work (no GPU needed) ---------------------------------------

needs_nvcc = pytest.mark.skipif(nvcc.find_nvcc() is None, reason="nvcc not installed: cannot build CUDA kernels")


def _cuda_descs() -> list[CeilingKernelDesc]:
    out = {}
    for prec in ("sp", "dp"):
        for s in ceiling_points("cuda", "ceilings", prec):
            d, *_ = parse_ceiling_spec(s.kernel, prec, dict(s.params), GPU, _ws)
            out[d.name] = d
    return list(out.values())


@needs_nvcc
def test_cuda_builds_with_the_declared_work(tmp_path: Any) -> None:
    descs = _cuda_descs()
    arch = nvcc.supported_archs()[-1]
    b = nvcc.compile_module(list(descs), arch, out_dir=str(tmp_path))
    fns = nvcc._ptx_functions(b.ptx)
    sass = nvcc._sass_functions(b.sass) if b.sass else {}
    bad = []
    for d in descs:
        fn, ty = fns.get(d.name, ""), "f32" if d.precision == "sp" else "f64"
        count = {op: len(re.findall(rf"\b{op}(?:\.rn)?\.{ty}\b", fn)) for op in ("fma", "mul", "add")}
        if d.kernel == "ceil_flop":     # the loop is not unrolled: the function holds one trip's work
            n = d.steps * d.chains
            want = {"fma": n, "mul": 0, "add": 0} if d.fma else {"fma": 0, "mul": n, "add": n}
        else:
            want = {"fma": 0, "mul": 0, "add": d.chains}
            if len(re.findall(r"\bld\.global", fn)) != d.chains:
                bad.append(f"{d.name}: {len(re.findall(r'ld.global', fn))} loads, declared {d.chains}")
        if count != want:
            bad.append(f"{d.name}: PTX {count}, declared {want}")
        if sass and d.kernel == "ceil_flop":
            s = sass.get(d.name, "")
            p = "F" if d.precision == "sp" else "D"
            got = {op: len(re.findall(rf"\b{p}{op.upper()}\b", s)) for op in ("fma", "mul", "add")}
            if got != want:
                bad.append(f"{d.name}: SASS {got}, declared {want}")
    reps = nvcc.inspect_module(b, descs)
    bad += [f"{n}: spills" for n, r in reps.items() if r.spill_stores or r.spill_loads]
    assert not bad, f"{arch}:\n" + "\n".join(bad)


@needs_nvcc
@pytest.mark.parametrize("kernel", ["ceil_flop", "ceil_mem"])
def test_cuda_run_path_with_a_stand_in_cupy(monkeypatch: pytest.MonkeyPatch, kernel: str) -> None:
    """prepare -> nvcc build -> launch arguments -> exact check, against test_cuda_runtime_fake's stand-in."""
    import sys

    from test_cuda_runtime_fake import FakeCupy

    from archline.bench.cuda.backend import CudaBackend

    fake = FakeCupy()
    monkeypatch.setitem(sys.modules, "cupy", fake)
    spec = ceiling_points("cuda", kernel, "sp")[-1]
    pk = CudaBackend().prepare(KernelSpec("cuda", kernel, "sp", "mem",
                                          {**spec.params, **(SMALL if kernel == "ceil_flop" else MEM_SMALL)}))
    fake.expected = pk.desc.reference(pk._host, pk.global_size, pk.rounds, pk.local_size)
    assert pk.run(2).checksum_ok
    _, _, args = fake.launches[-1]
    assert len(args) == (4 if kernel == "ceil_flop" else 7)
    fake.expected = fake.expected.copy()
    fake.expected[0] += 1                         # one lane off by one: caught
    assert not pk.run(1).checksum_ok
