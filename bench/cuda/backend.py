"""CUDA driver: the catalogue's kernels built by nvcc, loaded and launched through cupy (optional extra).

Discovery (cupy's runtime), compile (:mod:`archline.bench.cuda.nvcc`: one cubin per point, refused if it spills)
and the CUDA-event timer (:mod:`archline.bench.gpu.cupy_runtime`); the GPU core does the rest. SM and memory
clocks and temperature come from powermon's NVML layer at the timed region's edges.

Verified here without a GPU: every kernel builds with nvcc and its PTX/SASS holds the declared FMAs and loads
(tests/gpu_kernels/test_cuda_compile.py), and this driver's lines run against a fake cupy
(tests/gpu_kernels/test_cuda_runtime_fake.py). Runs on a real GPU are the tests marked gpu.
"""

from __future__ import annotations

import tempfile
from typing import Any

from archline.bench.cuda import nvcc
from archline.bench.errors import BackendUnavailableError, BenchError
from archline.bench.gpu.catalogue import Offer
from archline.bench.gpu.core import GpuBackend, GpuDevice
from archline.bench.gpu.cupy_runtime import CupyDevice, Readings, import_cupy, pick_index, text
from archline.bench.gpu.desc import GpuKernelDesc
from archline.bench.gpu.points import Geometry
from archline.bench.kernels import KernelSpec

NAME = "cuda"


def device_info(cp: Any, index: int) -> dict[str, Any]:
    p = cp.cuda.runtime.getDeviceProperties(index)
    return {
        "device": text(p["name"]), "device_index": index, "arch": f"sm_{p['major']}{p['minor']}",
        "compute_units": int(p["multiProcessorCount"]), "l2_bytes": int(p.get("l2CacheSize", 0)),
        "shared_per_block_bytes": int(p.get("sharedMemPerBlock", 48 << 10)),
        "global_mem_bytes": int(p.get("totalGlobalMem", 0)),
        "driver_version": int(cp.cuda.runtime.driverGetVersion()),
        "runtime_version": int(cp.cuda.runtime.runtimeGetVersion()), "is_gpu": True,
    }


def gpu_geometry(info: dict[str, Any], kernel: str, precision: str) -> Geometry:
    """Occupancy defaults for NVIDIA GPUs: 256 threads a block, 8 blocks per SM resident, 2-wide vector loads."""
    sms = int(info["compute_units"])
    return Geometry(sms * 8 * 256, 256, 2, 4 if kernel in ("intensity", "int") else 2, "interleaved", sms, False)


def default_working_set_bytes(info: dict[str, Any], level: str) -> int:
    l2 = int(info.get("l2_bytes") or (4 << 20))
    if level == "mem":
        return int(min(max(1 << 30, 16 * l2), info.get("global_mem_bytes", 8 << 30) // 4))
    if level == "l2":
        return 1 << max((l2 // 2).bit_length() - 1, 16)
    if level == "l1":
        return 16 << 10
    raise BenchError(f"no default working set for level {level} on CUDA")


def nvml_readings(index: int) -> Readings | None:
    """Clocks and temperature through powermon's NVML layer (None without NVML: the rows say so)."""
    from archline.powermon.counters.nvml import NvmlGpu
    from archline.powermon.errors import MeterError

    try:
        return NvmlGpu.open(index).readings
    except MeterError:
        return None


class CudaDevice(CupyDevice):
    lang = "cuda"
    timer = "cuda-events"
    fp64 = True

    def __init__(self, cp: Any, index: int) -> None:
        super().__init__(cp, index, nvml_readings(index))
        self.info = device_info(cp, index)
        if nvcc.find_nvcc() is None:
            raise BackendUnavailableError(f"{self.info['device']} found but nvcc is missing (the kernels are "
                                          "built with nvcc)")
        nvcc.check_arch(self.info["arch"])
        self.summary = f"{self.info['device']} ({self.info['arch']}, {self.info['compute_units']} SMs)"
        self.local_mem_bytes = int(self.info["shared_per_block_bytes"])
        self.max_alloc_bytes = int(self.info["global_mem_bytes"]) or (1 << 62)

    def geometry(self, kernel: str, precision: str) -> Geometry:
        return gpu_geometry(self.info, kernel, precision)

    def working_set_bytes(self, kernel: str, level: str) -> int:
        return default_working_set_bytes(self.info, level)

    def build(self, desc: GpuKernelDesc, spec: KernelSpec) -> tuple[Any, dict[str, Any]]:
        arch = nvcc.check_arch(str(spec.params.get("arch", self.info["arch"])))
        # L2 kernels bypass L1 as in the thesis (-Xptxas -dlcm=cg); others use the default caching
        flags = ["-Xptxas", "-dlcm=cg"] if spec.level == "l2" else []
        # the build lives in a temp directory only until the module is loaded
        with tempfile.TemporaryDirectory(prefix="archline-cuda-") as out_dir:
            build = nvcc.compile_module([desc], arch, out_dir=out_dir, extra_flags=flags, sass=False)
            rep = nvcc.inspect_module(build, [desc])[desc.name]
            if rep.spill_stores > 0:
                raise BenchError(f"{desc.name} spills {rep.spill_stores} B on {arch}: lower chains or vector_width")
            fn = self.load(build.cubin_path, desc.name)
        major, minor = nvcc.nvcc_version()
        return fn, {"nvcc": f"{major}.{minor}", "nvcc_flags": " ".join(flags), "registers": rep.registers,
                    "ptx_loop_fma": rep.ptx_loop_fma, "compiler": f"nvcc {major}.{minor} -arch={arch}"}


class CudaDriver:
    name = NAME
    offer = Offer(cache_levels=("shared", "l2", "mem"), chase_walkers=(1, 1024))
    warmup_s = 0.5

    def open(self, device: str | None) -> GpuDevice:
        cp = import_cupy("cuda")
        return CudaDevice(cp, pick_index(cp, device, "CUDA"))


class CudaBackend(GpuBackend):
    driver = CudaDriver()
