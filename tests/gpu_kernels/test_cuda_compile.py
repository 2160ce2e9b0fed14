"""Every CUDA kernel of the sweep builds with nvcc for each supported architecture, and its PTX/SASS holds the
declared FMAs and loads per loop trip with no spills: the compiler neither folded nor dropped work. No GPU needed.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from archline.bench.cuda import nvcc
from archline.bench.cuda.backend import CudaBackend
from archline.bench.errors import BackendUnavailableError, BenchError, UnsupportedError
from archline.bench.gpu import Geometry, GpuKernelDesc, fma_fraction, fma_per_elem_points, parse_spec

NVCC = nvcc.find_nvcc()
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc not installed: CUDA kernels cannot be compiled here")

# the geometry the CUDA back end uses by default (an 80-SM card; only shapes matter for the build)
INFO: dict[str, Any] = {"compute_units": 80, "l2_bytes": 6 << 20, "shared_per_block_bytes": 48 << 10,
                        "global_mem_bytes": 16 << 30}


def gpu_geometry(info: dict[str, Any], kernel: str, precision: str) -> Geometry:
    """The cupy drivers' default launch (bench/gpu/cupy_runtime.CupyDevice.geometry) on this card."""
    sms = int(info["compute_units"])
    return Geometry(sms * 8 * 256, 256, 2, 4 if kernel in ("intensity", "int") else 2, "interleaved", sms, False)


def sweep_descs(quick: bool = False) -> list[GpuKernelDesc]:
    """Every variant the CUDA sweep prepares: intensity sp/dp and int32 at all points, caches, chases."""
    out: list[GpuKernelDesc] = []
    for kernel, prec in (("intensity", "sp"), ("intensity", "dp"), ("int", "int32")):
        geo = gpu_geometry(INFO, kernel, prec)
        pts = fma_per_elem_points(prec, quick)
        if quick:   # one point a doubling plus the fractional shapes (elems 2, 4, 8)
            pts = sorted(set(pts) | {Fraction(5, 8), Fraction(3, 4), Fraction(5, 4), Fraction(7, 4)})
            pts = [p for p in pts if Fraction(1, 2) <= p <= 16 and (prec != "dp" or p >= 1)]
        for f in pts:
            n, e = fma_fraction(f)
            out.append(GpuKernelDesc(kernel, prec, fma_num=n, elems=e, vector_width=geo.vector_width,
                                     chains=geo.chains))
    for prec in ("sp", "dp", "int32"):
        geo = gpu_geometry(INFO, "cache", prec)
        for level in ("shared", "l2", "mem"):
            d, *_ = parse_spec("cache", prec, level, {"rounds": 1, "working_set_bytes": 1 << 20}, geo,
                               lambda lv: 1 << 20, 48 << 10)
            out.append(d)
    for chains in (1, 1024):
        d, *_ = parse_spec("chase", "int32", "mem", {"chains": chains, "working_set_bytes": 1 << 20},
                           gpu_geometry(INFO, "chase", "int32"), lambda lv: 1 << 20, 48 << 10)
        out.append(d)
    return out


FULL = sweep_descs()
QUICK = sweep_descs(quick=True)


def _supported_paper_archs() -> list[str]:
    if NVCC is None:
        return ["sm_80"]
    return [a for a, st in nvcc.paper_archs_status().items() if st == "ok"]


ARCHS = _supported_paper_archs()
# default run: the quick sweep's shapes (every kernel kind and fractional FMA shape) for every supported paper
# architecture; the full sweep (up to 256 DFMAs per element, ~45 s of ptxas per arch on 2 cores) is -m slow
BUILDS = [(ARCHS[-1], "quick")] + [pytest.param((a, "quick"), marks=pytest.mark.slow) for a in ARCHS[:-1]]
BUILDS += [(a, "tiny") for a in ARCHS[:-1]]
BUILDS += [pytest.param((a, "full"), marks=pytest.mark.slow) for a in ARCHS]
# every kind of kernel once, small: what every other supported architecture builds in the default run
TINY = [d for d in QUICK if (d.kernel in ("intensity", "int") and d.fma_per_elem in (Fraction(5, 8), 2))
        or d.kernel in ("cache", "chase")]


@pytest.fixture(scope="module", params=BUILDS, ids=lambda p: f"{p[0]}-{p[1]}")
def build(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[nvcc.Build,
                                                                                              list[GpuKernelDesc]]:
    if NVCC is None:
        pytest.skip("nvcc not installed: CUDA kernels cannot be compiled here")
    arch, which = request.param
    descs = {"quick": QUICK, "tiny": TINY, "full": FULL}[which]
    return nvcc.compile_module(descs, arch, out_dir=str(tmp_path_factory.mktemp(arch))), descs


def _expected_loads(d: GpuKernelDesc) -> int:
    if d.kernel in ("intensity", "int"):
        return d.chains * d.elems
    if d.kernel == "cache":
        return d.chains
    return d.chains * d.chase_unroll


@needs_nvcc
def test_every_kernel_holds_its_fmas_and_loads(build: tuple[nvcc.Build, list[GpuKernelDesc]]) -> None:
    b, descs = build
    reps = nvcc.inspect_module(b, descs)
    bad = []
    for d in descs:
        r = reps[d.name]
        lanes = d.vector_width
        want_fma = d.fma_num * d.chains * lanes if d.kernel in ("intensity", "int") else 0
        if r.ptx_loop_fma != want_fma:
            bad.append(f"{d.name}: PTX loop has {r.ptx_loop_fma} FMAs, declared {want_fma}")
        if r.ptx_loop_loads != _expected_loads(d):
            bad.append(f"{d.name}: PTX loop has {r.ptx_loop_loads} loads, declared {_expected_loads(d)}")
        if d.kernel == "cache" and d.precision != "int32" and r.ptx_loop_add != d.chains * lanes:
            bad.append(f"{d.name}: PTX loop has {r.ptx_loop_add} adds, declared {d.chains * lanes}")
        if d.kernel in ("intensity", "int") and d.precision != "int32":
            # whole function: only the loop's FMAs (no extra FMA outside, none folded away)
            if r.ptx_fma != want_fma:
                bad.append(f"{d.name}: PTX function has {r.ptx_fma} FMAs, declared {want_fma}")
        if r.spill_stores != 0 or r.spill_loads != 0:
            bad.append(f"{d.name}: {r.spill_stores} B spill stores, {r.spill_loads} B spill loads")
        if not 0 < r.registers <= 255:
            bad.append(f"{d.name}: registers {r.registers} unread or over 255")
    assert not bad, f"{b.arch}:\n" + "\n".join(bad)


@needs_nvcc
def test_sass_fma_counts(build: tuple[nvcc.Build, list[GpuKernelDesc]]) -> None:
    b, descs = build
    if not b.sass:
        pytest.skip(f"no SASS: {b.sass_tool}")
    reps = nvcc.inspect_module(b, descs)
    bad = []
    for d in descs:
        r = reps[d.name]
        if d.kernel in ("intensity", "int"):
            want = d.fma_num * d.chains * d.vector_width
            # int32: ptxas also computes addresses with plain IMADs (at most one per load); the PTX check above
            # is exact (mad.lo in the loop == declared), here nothing may be missing
            slack = _expected_loads(d) if d.precision == "int32" else 0
            if not want <= r.sass_loop_fma <= want + slack:
                bad.append(f"{d.name}: SASS loop has {r.sass_loop_fma} FFMA/DFMA/IMAD, declared {want}")
            if d.precision != "int32" and r.sass_fma != want:
                bad.append(f"{d.name}: SASS function has {r.sass_fma} FMAs, declared {want}")
        # ptxas may unroll the chase loop once more; the loads per trip stay a multiple of the declared ones
        if r.sass_loop_loads <= 0 or r.sass_loop_loads % _expected_loads(d):
            bad.append(f"{d.name}: SASS loop has {r.sass_loop_loads} loads, declared {_expected_loads(d)}")
    assert not bad, f"{b.arch}:\n" + "\n".join(bad)


@needs_nvcc
def test_intensity_per_element() -> None:
    """FMAs per loaded element in the compiled loop equal fma_per_elem at every sweep point (one arch)."""
    descs = [d for d in QUICK if d.kernel == "intensity"]
    b = nvcc.compile_module(descs, ARCHS[-1], sass=False)
    reps = nvcc.inspect_module(b, descs)
    for d in descs:
        r = reps[d.name]
        assert Fraction(r.ptx_loop_fma, r.ptx_loop_loads * d.vector_width) == d.fma_per_elem, d.name


@needs_nvcc
def test_paper_archs_are_reported() -> None:
    st = nvcc.paper_archs_status()
    assert set(st) == set(nvcc.PAPER_ARCHS)
    major, minor = nvcc.nvcc_version()
    have = nvcc.supported_archs()
    for arch, s in st.items():
        if arch in have:
            assert s == "ok"
        else:
            assert f"nvcc {major}.{minor} too new for {arch}" in s or f"too old for {arch}" in s, s
            with pytest.raises(UnsupportedError, match=arch):
                nvcc.compile_module(QUICK[:1], arch)
    with pytest.raises(UnsupportedError, match="too old for sm_999"):
        nvcc.check_arch("sm_999")
    with pytest.raises(BenchError, match="bad CUDA architecture"):
        nvcc.check_arch("fermi")


@needs_nvcc
def test_l2_flag_builds() -> None:
    d = [x for x in QUICK if x.kernel == "cache" and x.level == "l2"]
    b = nvcc.compile_module(d, "sm_80", extra_flags=["-Xptxas", "-dlcm=cg"], sass=False)
    assert all(r.spill_stores == 0 for r in nvcc.inspect_module(b, d).values())


def test_cuda_backend_without_cupy_or_gpu_says_why() -> None:
    ok, why = CudaBackend().availability()
    try:
        import cupy  # noqa: F401
    except ImportError:
        assert not ok and "cupy is not installed" in why
        with pytest.raises(BackendUnavailableError, match="cupy"):
            CudaBackend().prepare(CudaBackend().sweep("intensity", "sp", quick=True)[0])
        return
    if not ok:
        assert why  # e.g. "no CUDA device: ..."


def test_cuda_backend_describe_and_sweep() -> None:
    b = CudaBackend()
    rows = b.describe()
    assert rows and all(set(r) >= {"name", "precision", "level", "available", "reason"} for r in rows)
    if not b.availability()[0]:
        assert all(not r["available"] and r["reason"] for r in rows)
    assert len(b.sweep("intensity", "dp")) > len(b.sweep("intensity", "dp", quick=True))
    assert {s.params["chains"] for s in b.sweep("chase", "int32")} == {1, 1024}


def test_cuda_absent_device(monkeypatch: pytest.MonkeyPatch) -> None:
    """A cupy that finds no device gives a reason, not a crash."""
    import sys
    import types

    class _Rt:
        @staticmethod
        def getDeviceCount() -> int:
            raise RuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")

    fake = types.ModuleType("cupy")
    fake.cuda = types.SimpleNamespace(runtime=_Rt)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cupy", fake)
    ok, why = CudaBackend().availability()
    assert not ok and "no CUDA device" in why
