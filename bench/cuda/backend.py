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
from archline.bench.gpu.core import GpuBackend
from archline.bench.gpu.cupy_runtime import CupyDevice, CupyDriver, Readings, layer_readings
from archline.bench.gpu.desc import GpuKernelDesc
from archline.bench.kernels import KernelSpec

NAME = "cuda"


def nvml_readings(index: int) -> Readings | None:
    from archline.powermon.counters.nvml import NvmlGpu

    return layer_readings(NvmlGpu.open, index)


class CudaDevice(CupyDevice):
    lang = "cuda"
    timer = "cuda-events"
    fp64 = True

    def __init__(self, cp: Any, index: int) -> None:
        super().__init__(cp, index, nvml_readings(index))
        self.info["arch"] = f"sm_{self.props['major']}{self.props['minor']}"
        if nvcc.find_nvcc() is None:
            raise BackendUnavailableError(f"{self.info['device']} found but nvcc is missing (the kernels are "
                                          "built with nvcc)")
        nvcc.check_arch(self.info["arch"])
        self.summary = f"{self.info['device']} ({self.info['arch']}, {self.info['compute_units']} SMs)"

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


class CudaDriver(CupyDriver):
    name = NAME
    extra = "cuda"
    label = "CUDA"
    device_class = CudaDevice


class CudaBackend(GpuBackend):
    driver = CudaDriver()
