"""Every OpenCL kernel runs on the local OpenCL device (PoCL in CI) with exact counts and a verified checksum.

Sizes are small so the whole file runs in well under a minute on 2 cores; timing is never asserted.
"""

from __future__ import annotations

import warnings
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

cl = pytest.importorskip("pyopencl", reason="pyopencl not installed (pip install 'archline[opencl]')")

from archline.bench.errors import BackendUnavailableError, BenchError, UnsupportedError  # noqa: E402
from archline.bench.kernels import KernelSpec  # noqa: E402
from archline.bench.opencl import backend as ocl  # noqa: E402

try:
    ocl.list_devices()
except BackendUnavailableError as _e:  # pragma: no cover - depends on the machine
    pytest.skip(f"no OpenCL device: {_e}", allow_module_level=True)

warnings.filterwarnings("ignore", module="pyopencl")

SMALL = {"warmup_s": 0.0}
B = ocl.OpenCLBackend()


def _run(kernel: str, precision: str, level: str, params: dict[str, Any], reps: int = 2) -> Any:
    pk = B.prepare(KernelSpec("opencl", kernel, precision, level, {**SMALL, **params}))
    try:
        res = pk.run(reps)
    finally:
        pk.close()
    return pk, res


def _bytes(precision: str) -> int:
    return 8 if precision == "dp" else 4


INTENSITY = [("sp", f) for f in (0.5, 0.625, 1.25, 3, 16)] + [("dp", f) for f in (1, 1.75, 5)]
# the rest of the sweep's shapes (cold PoCL compiles cost ~1 s each): -m slow
INTENSITY += [pytest.param(p, f, marks=pytest.mark.slow) for p, f in
              [("sp", 0.75), ("sp", 0.875), ("sp", 7), ("sp", 64), ("dp", 1.25), ("dp", 2), ("dp", 128)]]


@pytest.mark.parametrize(("precision", "fma"), INTENSITY)
def test_intensity_counts_and_checksum(precision: str, fma: float) -> None:
    pk, res = _run("intensity", precision, "mem", {"fma_per_elem": fma, "working_set_bytes": 96 << 10})
    assert res.checksum_ok, res.extra
    g, r = res.extra["global_size"], res.extra["rounds"]
    w, c = res.extra["vector_width"], res.extra["chains"]
    n_fma, n_el = Fraction(fma).numerator, Fraction(fma).denominator
    n_elems = g * r * c * w * n_el                      # every work-item streams rounds x chains x elems vectors
    s = _bytes(precision)
    flops = 2 * n_fma * (n_elems // n_el)
    assert res.extra["input_bytes"] == n_elems * s
    per_rep = res.counts.scaled(1) if res.reps == 1 else pk.counts_per_rep
    assert per_rep.flops == flops
    assert (per_rep.flops_sp if precision == "sp" else per_rep.flops_dp) == flops
    assert per_rep.bytes_mem == n_elems * s + g * c * w * s     # loads + one vector per chain written back
    assert res.counts == per_rep.scaled(2)
    assert res.extra["intensity_flop_per_byte"] == pytest.approx(2 * fma / s)
    for key in ("device", "driver_version", "platform_version", "device_version", "opencl_c_version", "compiler"):
        assert res.extra[key], key
    assert res.time_s > 0


@pytest.mark.parametrize("layout", ["streams", "blocked", "interleaved"])
@pytest.mark.parametrize(("precision", "fma"), [("sp", 0.625), ("dp", 3)])
def test_intensity_layouts(layout: str, precision: str, fma: float) -> None:
    _, res = _run("intensity", precision, "mem", {"fma_per_elem": fma, "working_set_bytes": 64 << 10,
                                                   "layout": layout, "chains": 3, "global_size": 6})
    assert res.checksum_ok and res.extra["layout"] == layout


@pytest.mark.parametrize("fma", [0.5, 1.25, 4, 9])
def test_int32_exact(fma: float) -> None:
    pk, res = _run("int", "int32", "mem", {"fma_per_elem": fma, "working_set_bytes": 64 << 10})
    assert res.checksum_ok and res.extra["mismatches"] == 0
    assert pk.counts_per_rep.int_ops == 2 * Fraction(fma) * res.extra["input_bytes"] // 4
    assert pk.counts_per_rep.flops == 0


@pytest.mark.parametrize("precision", ["sp", "dp", "int32"])
@pytest.mark.parametrize("level", ["l1", "l2", "mem"])
def test_cache_global_levels(precision: str, level: str) -> None:
    pk, res = _run("cache", precision, level, {"working_set_bytes": 32 << 10, "rounds": 40})
    assert res.checksum_ok, res.extra
    g, w, c = res.extra["global_size"], res.extra["vector_width"], res.extra["chains"]
    s = _bytes(precision)
    reads = 40 * c * g * w
    col = {"l1": "bytes_l1", "l2": "bytes_l2", "mem": "bytes_mem"}[level]
    out = g * c * w * s
    row = pk.counts_per_rep.as_row()
    assert row[col] == reads * s + (out if level == "mem" else 0)
    assert row["bytes_mem"] == (reads * s if level == "mem" else 0) + out
    adds = row["int_ops"] if precision == "int32" else row["flops_sp"] + row["flops_dp"]
    assert adds == reads


@pytest.mark.parametrize("precision", ["sp", "dp", "int32"])
def test_cache_shared(precision: str) -> None:
    pk, res = _run("cache", precision, "shared", {"local_bytes": 4096, "rounds": 50, "local_size": 4,
                                                   "global_size": 16})
    assert res.checksum_ok, res.extra
    w, c = res.extra["vector_width"], res.extra["chains"]
    s = _bytes(precision)
    le = 4096 // (w * s)
    fill = 4 * le * w * s                                # 4 work-groups copy their tile once
    reads = 50 * c * 16 * w
    assert pk.counts_per_rep.bytes_shared == reads * s + fill
    assert pk.counts_per_rep.bytes_mem == fill + 16 * c * w * s


@pytest.mark.parametrize("chains", [1, 2, 6])
@pytest.mark.parametrize("level", ["l2", "mem"])
def test_chase(chains: int, level: str) -> None:
    pk, res = _run("chase", "int32", level, {"chains": chains, "working_set_bytes": 256 << 10, "steps": 3001})
    assert res.checksum_ok and res.extra["mismatches"] == 0
    assert pk.counts_per_rep.rand_accesses == chains * 3001
    assert pk.counts_per_rep.bytes_mem == 4 * chains


def test_wrong_result_is_caught() -> None:
    """A kernel that reads other data than the reference assumes must fail its checksum."""
    pk = B.prepare(KernelSpec("opencl", "intensity", "sp", "mem",
                              {**SMALL, "fma_per_elem": 2, "working_set_bytes": 64 << 10}))
    try:
        bad = np.asarray(pk._host).copy()
        bad[::7] *= 0.5
        cl.enqueue_copy(pk.dev.queue, pk._bufs[0], bad).wait()
        assert not pk.run(1).checksum_ok
    finally:
        pk.close()


def test_input_is_random_not_compressible() -> None:
    pk = B.prepare(KernelSpec("opencl", "intensity", "dp", "mem",
                              {**SMALL, "fma_per_elem": 1, "working_set_bytes": 64 << 10}))
    x = np.asarray(pk._host)
    assert np.unique(x).size > 0.99 * x.size and np.abs(x).max() <= 0.95
    pk.close()


def test_no_fp64_says_unsupported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ocl, "has_fp64", lambda dev: False)
    with pytest.raises(UnsupportedError, match="unsupported"):
        B.prepare(KernelSpec("opencl", "intensity", "dp", "mem", {"fma_per_elem": 1}))
    rows = [r for r in B.describe() if r["precision"] == "dp"]
    assert rows and all(not r["available"] and "unsupported" in r["reason"] for r in rows)


def test_no_platform(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom() -> list[Any]:
        raise cl.Error("clGetPlatformIDs failed: PLATFORM_NOT_FOUND_KHR")

    monkeypatch.setattr(cl, "get_platforms", boom)
    ok, why = B.availability()
    assert not ok and "no OpenCL platform" in why
    with pytest.raises(BackendUnavailableError, match="no OpenCL platform"):
        B.prepare(KernelSpec("opencl", "intensity", "sp", "mem", {"fma_per_elem": 1}))
    monkeypatch.setattr(cl, "get_platforms", lambda: [])
    assert not B.availability()[0]


def test_device_selection() -> None:
    key, _, dev = ocl.pick_device(None)
    assert ocl.pick_device(key)[2].name == dev.name
    assert ocl.pick_device(dev.name[:6].upper())[2].name == dev.name
    with pytest.raises(BackendUnavailableError, match="no OpenCL device matches"):
        ocl.pick_device("no-such-device-xyz")


def test_bad_params() -> None:
    with pytest.raises(BenchError, match="unknown kernel parameter"):
        B.prepare(KernelSpec("opencl", "intensity", "sp", "mem", {"fma_per_elm": 1}))
    with pytest.raises(BenchError, match=r"< 0\.5"):
        B.prepare(KernelSpec("opencl", "intensity", "sp", "mem", {"fma_per_elem": 0.25}))
    with pytest.raises(BenchError, match="level 'mem'"):
        B.prepare(KernelSpec("opencl", "intensity", "sp", "l2", {"fma_per_elem": 1}))
    with pytest.raises(BenchError):
        B.sweep("nope", "sp")


def test_sweep_and_describe() -> None:
    for prec in ("sp", "dp"):
        pts = B.sweep("intensity", prec)
        s = _bytes(prec)
        ints = [2 * float(p.params["fma_per_elem"]) / s for p in pts]
        assert ints[0] == pytest.approx(0.25) and ints[-1] == pytest.approx(64.0)
        assert ints == sorted(ints)
        for lo in (0.25, 0.5, 1, 2, 4, 8, 16, 32):
            assert sum(lo <= i < 2 * lo for i in ints) >= 4
        assert len(B.sweep("intensity", prec, quick=True)) < len(pts)
    assert {s.level for s in B.sweep("cache", "sp")} >= {"shared", "l2", "mem"}
    assert {s.params["chains"] for s in B.sweep("chase", "int32")} == {1, 32}
    rows = B.describe()
    assert {(r["name"], r["precision"]) for r in rows} >= {("intensity", "sp"), ("intensity", "dp"),
                                                          ("int", "int32"), ("chase", "int32")}
    ok, why = B.availability()
    assert ok and why


def test_registry_finds_backend() -> None:
    from archline.bench.registry import get_backend

    assert get_backend("opencl").name == "opencl"


def test_reps_for_and_warm_up() -> None:
    pk = B.prepare(KernelSpec("opencl", "cache", "sp", "l1", {"warmup_s": 0.01, "rounds": 8,
                                                               "working_set_bytes": 8192}))
    assert pk.reps_for(0.0) >= 1
    assert pk.info["launch_time_s"] > 0
    pk.close()
