"""Default working sets of the OpenCL/CUDA/HIP back ends: one pure function of (reported caches, memory sizes,
measured bounds), the CPU path's rule (bench/cpu_asm/topology.py) with the device's and the host's memory as
bounds. Exact sizes, including a VM's reported 300 MiB and 1 GiB caches and absurd values; the drivers' device
descriptions (a fake pyopencl device, the fake cupy's properties) go through the same function."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from archline.bench.cpu_asm import topology as topo
from archline.bench.errors import BenchError
from archline.bench.gpu.ceilings import CeilingKernelDesc
from archline.bench.gpu.core import InputCache
from archline.bench.gpu.desc import HOST_ALIGN_BYTES, GpuKernelDesc
from archline.bench.gpu.reference import _first_round_that_matters
from archline.bench.gpu.working_set import DeviceCaches, believed_cache_bytes, default_working_set_bytes

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30
HOST = 22 * GIB                      # MemAvailable of the 2-vCPU Zen 3 VM
#: PoCL on the 2-vCPU Zen 3 VM as it reports itself (a 32 MiB L3, 2 compute units)
POCL_VM = DeviceCaches(last_cache_bytes=32 * MIB, compute_units=2, global_mem_bytes=23128711168,
                       max_alloc_bytes=8 * GIB, is_cpu=True)
H100 = DeviceCaches(last_cache_bytes=50 * MIB, compute_units=132, global_mem_bytes=80 * GIB,
                    max_alloc_bytes=80 * GIB)


def _ws(dev: DeviceCaches, kernel: str = "intensity", level: str = "mem", host: int = HOST) -> int:
    return default_working_set_bytes(dev, kernel, level, host_available_bytes=host)


@pytest.mark.parametrize(("cache", "mem", "chase"), [
    (32 * MIB, GIB, 64 * MIB),            # as reported: 8 x 32 MiB < the 1 GiB minimum
    (300 * MIB, GIB, 256 * MIB),          # a VM's host L3: believed as 2 x 64 MiB, not 8 x 300 MiB = 2.3 GiB
    (GIB, GIB, 256 * MIB),                # a stacked 1 GiB L3: the same cap
    (0, GIB, 64 * MIB),                   # not reported: 4 MiB assumed
    (-5, GIB, 64 * MIB),
    (1 << 62, GIB, 256 * MIB),            # absurd
])
def test_pocl_vm_memory_level(cache: int, mem: int, chase: int) -> None:
    dev = replace(POCL_VM, last_cache_bytes=cache)
    assert _ws(dev) == mem
    assert _ws(dev, "chase") == chase


def test_reported_l2_as_last_cache() -> None:
    # a device whose last cache is an L2 (GPUs): the same per-unit cap, then the device's bounds
    assert _ws(replace(POCL_VM, last_cache_bytes=300 * MIB)) == GIB
    server = 512 * GIB                                                 # a GPU server's available host memory
    assert _ws(H100, host=server) == GIB                              # 8 x 50 MiB = 400 MiB < 1 GiB
    assert _ws(replace(H100, last_cache_bytes=GIB), host=server) == 8 * GIB   # within 64 MiB per SM: believed
    # absurd: believed as 64 MiB x 132 SMs, 8x that = 66 GiB, bounded by a quarter of the device's 80 GiB ...
    assert _ws(replace(H100, last_cache_bytes=1 << 62), host=server) == 20 * GIB
    # ... and on this VM's host by a quarter of its 22 GiB
    assert _ws(replace(H100, last_cache_bytes=1 << 62)) == HOST // 4


@pytest.mark.parametrize(("dev", "host", "expected"), [
    (replace(POCL_VM, global_mem_bytes=GIB), HOST, GIB // 4),             # a quarter of device memory
    (replace(POCL_VM, max_alloc_bytes=300 * MIB), HOST, 300 * MIB),       # the largest allocation
    (POCL_VM, 2 * GIB, 512 * MIB),                                        # a quarter of available host memory
    (replace(POCL_VM, global_mem_bytes=0, max_alloc_bytes=0), HOST, GIB),  # unreported: host bound only
    (replace(POCL_VM, global_mem_bytes=-1, max_alloc_bytes=-1), 0, MIB),  # nothing at all: the 1 MiB floor
    (replace(POCL_VM, compute_units=0, last_cache_bytes=GIB), HOST, GIB),  # no units: one
])
def test_memory_level_bounds(dev: DeviceCaches, host: int, expected: int) -> None:
    assert _ws(dev, host=host) == expected


def test_levels() -> None:
    assert _ws(POCL_VM, level="l1") == 16 * KIB
    assert _ws(POCL_VM, level="l2") == 256 * KIB                     # a CPU device: its private L2, not the L3
    assert _ws(H100, level="l2") == 16 * MIB                         # pow2 floor of half of 50 MiB
    assert _ws(replace(H100, last_cache_bytes=0), level="l2") == 2 * MIB
    assert _ws(replace(H100, last_cache_bytes=1 << 62), level="l3") == 4 * GIB   # 132 x 64 MiB / 2, pow2 floor
    with pytest.raises(BenchError, match="level shared"):
        _ws(POCL_VM, level="shared")


def test_the_cpu_rule_is_the_one_rule() -> None:
    # the GPU function calls the CPU path's two steps; the CPU path's numbers are these
    assert topo.plausible_llc_bytes(300 * MIB, 2) == 128 * MIB
    assert topo.plausible_llc_bytes(GIB, 16) == GIB
    assert topo.mem_working_set_bytes(128 * MIB) == GIB
    assert topo.mem_working_set_bytes(512 * MIB) == 4 * GIB
    assert topo.mem_working_set_bytes(512 * MIB, quick=True) == topo.MEM_QUICK_MAX_BYTES
    assert believed_cache_bytes(replace(POCL_VM, last_cache_bytes=300 * MIB)) == topo.plausible_llc_bytes(
        300 * MIB, 2)


def test_opencl_device_description() -> None:
    """The OpenCL driver reads a device's description once; a fake pyopencl device shows what it reads."""
    cl = pytest.importorskip("pyopencl")
    from archline.bench.opencl.backend import device_caches

    fake = SimpleNamespace(global_mem_cache_size=300 * MIB, max_compute_units=2, global_mem_size=23128711168,
                           max_mem_alloc_size=8 * GIB, type=cl.device_type.CPU)
    assert device_caches(fake) == replace(POCL_VM, last_cache_bytes=300 * MIB)
    gpu = SimpleNamespace(global_mem_cache_size=0, max_compute_units=60, global_mem_size=16 * GIB,
                          max_mem_alloc_size=4 * GIB, type=cl.device_type.GPU)
    assert device_caches(gpu) == DeviceCaches(0, 60, 16 * GIB, 4 * GIB, False)


def test_opencl_device_with_a_faked_cache() -> None:
    """The real PoCL device told it has a 1 GiB cache sizes its memory points through the same function."""
    pytest.importorskip("pyopencl")
    from archline.bench.errors import BackendUnavailableError
    from archline.bench.opencl.backend import OpenCLDevice, pick_device

    try:
        dev = OpenCLDevice(*pick_device(None))
    except BackendUnavailableError as e:
        pytest.skip(str(e))
    dev.caches = replace(dev.caches, last_cache_bytes=GIB)
    expected = default_working_set_bytes(dev.caches, "intensity", "mem",
                                         host_available_bytes=topo.mem_available_bytes())
    assert dev.working_set_bytes("intensity", "mem") == expected
    assert expected <= GIB


@pytest.mark.parametrize("device_class", ["cuda", "hip"])
def test_cupy_devices_size_through_the_same_function(device_class: str) -> None:
    """CUDA and HIP devices: the description from the properties cupy reports (the keys CupyDevice.__init__ fills
    from getDeviceProperties), sized by the same function; no 16x the L2 any more."""
    from archline.bench.cuda.backend import CudaDevice
    from archline.bench.hip.backend import HipDevice

    cls = CudaDevice if device_class == "cuda" else HipDevice
    dev = cls.__new__(cls)
    dev.info = {"device": "Fake GPU", "compute_units": 2, "l2_bytes": GIB, "global_mem_bytes": 8 * GIB}
    assert dev.caches == DeviceCaches(GIB, 2, 8 * GIB, 8 * GIB, False)
    host = topo.mem_available_bytes()
    assert dev.working_set_bytes("intensity", "mem") == default_working_set_bytes(
        dev.caches, "intensity", "mem", host_available_bytes=host)
    assert dev.working_set_bytes("intensity", "mem") == min(GIB, host // 4)   # 2 x 64 MiB believed: 1 GiB
    dev.info["l2_bytes"] = 50 * MIB
    assert dev.working_set_bytes("cache", "l2") == 16 * MIB


@pytest.mark.parametrize("precision", ["sp", "dp", "int32"])
def test_input_cache_gives_the_seeds_stream(precision: str) -> None:
    kernel = "int" if precision == "int32" else "intensity"
    d = GpuKernelDesc(kernel, precision, "mem")
    cache = InputCache()
    big = cache.get(d, 10_007, 5)
    small = cache.get(d, 4_001, 5)
    assert np.array_equal(small, d.make_input(4_001, np.random.default_rng(5)))
    assert np.shares_memory(big, small)                    # a prefix of the cached input, not a new one
    assert not np.shares_memory(cache.get(d, 4_001, 6), big)
    chase = GpuKernelDesc("chase", "int32", "mem", chains=1)
    assert np.array_equal(cache.get(chase, 1000, 5), chase.make_input(1000, np.random.default_rng(5)))
    if precision != "int32":   # ceil_mem reads the same stream; ceil_flop's seeds are its own
        mem = CeilingKernelDesc("ceil_mem", precision, chains=4, vector_width=4)
        assert np.array_equal(cache.get(mem, 3000, 5), mem.make_input(3000, np.random.default_rng(5)))
        flop = CeilingKernelDesc("ceil_flop", precision, chains=4, vector_width=4)
        assert np.array_equal(cache.get(flop, 3000, 5), flop.make_input(3000, np.random.default_rng(5)))


def test_float_inputs_start_on_a_page() -> None:
    for prec in ("sp", "dp"):
        x = GpuKernelDesc("intensity", prec, "mem").make_input(12_345, np.random.default_rng(1))
        assert x.ctypes.data % HOST_ALIGN_BYTES == 0 and x.size == 12_345
        assert float(np.abs(x).max()) <= 0.95


def _first_round_whole(x: np.ndarray, n: int, e: int, chains: int) -> int:
    """The previous whole-buffer computation, as the oracle of the chunked walk."""
    rounds = x.shape[0]
    xr: Any = x.reshape(rounds, chains, e, *x.shape[2:])
    cnt = [(n // e + (1 if i < n % e else 0)) if n >= e else (1 if i < n else 0) for i in range(e)]
    with np.errstate(divide="ignore"):
        logm = sum(ci * np.log(np.abs(xr[:, :, i].astype(np.float64))) for i, ci in enumerate(cnt) if ci)
    suffix = np.cumsum(np.asarray(logm)[::-1], axis=0)[::-1]
    good = np.all(suffix < np.log(1e-40 / 38.0), axis=tuple(range(1, suffix.ndim)))
    idx = np.nonzero(good)[0]
    return int(max(idx[-1] - 1, 0)) if idx.size and rounds > 1 else 0


@pytest.mark.parametrize(("n", "e", "rounds", "chunk"), [(1, 2, 3000, 256), (1, 2, 3000, 7), (5, 4, 500, 64),
                                                           (3, 8, 1000, 1000), (1, 2, 40, 256), (2, 1, 1, 256)])
def test_first_round_that_matters_reads_only_the_tail(n: int, e: int, rounds: int, chunk: int) -> None:
    chains, g, w = 3, 4, 2
    x = GpuKernelDesc("intensity", "sp", "mem").make_input(rounds * chains * e * g * w, np.random.default_rng(n))
    view = x.reshape(g, chains * e, rounds, w).transpose(2, 1, 0, 3)      # the 'streams' layout, a strided view
    assert _first_round_that_matters(view, n, e, chains, chunk) == _first_round_whole(view, n, e, chains)
