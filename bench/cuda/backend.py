"""CUDA driver: the catalogue's kernels built by nvcc, loaded and launched through cupy (optional extra).

Discovery (cupy's runtime), compile (:mod:`archline.bench.cuda.nvcc`: one cubin per point, refused if it spills)
and the CUDA-event timer (:mod:`archline.bench.gpu.cupy_runtime`); the GPU core does the rest. SM and memory
clocks and temperature come from powermon's NVML layer, sampled through a Recorder window around the launches.

Verified here without a GPU: every kernel builds with nvcc and its PTX/SASS holds the declared FMAs and loads
(tests/gpu_kernels/test_cuda_compile.py), and this driver's lines run against a fake cupy
(tests/gpu_kernels/test_cuda_runtime_fake.py). Runs on a real GPU are the tests marked gpu.
"""

from __future__ import annotations

from typing import Any

from archline.bench.cuda import nvcc
from archline.bench.cuda.vendor import VENDOR
from archline.bench.gpu.core import GpuBackend
from archline.bench.gpu.cupy_runtime import CupyDevice, CupyDriver
from archline.bench.gpu.desc import GpuKernelDesc
from archline.bench.kernels import KernelSpec

NAME = "cuda"


class CudaDevice(CupyDevice):
    lang, timer, compiler, unit_word, layer = "cuda", "cuda-events", "nvcc", "SMs", VENDOR.layer
    find_compiler = staticmethod(nvcc.find_nvcc)
    check_arch = staticmethod(nvcc.check_arch)

    def arch_name(self) -> str:
        return f"sm_{self.props['major']}{self.props['minor']}"

    def compile(self, desc: GpuKernelDesc, spec: KernelSpec, arch: str, out_dir: str
                ) -> tuple[str, dict[str, Any], str]:
        # L2 kernels bypass L1 as in the thesis (-Xptxas -dlcm=cg); others use the default caching
        flags = ["-Xptxas", "-dlcm=cg"] if spec.level == "l2" else []
        build = nvcc.compile_module([desc], arch, out_dir=out_dir, extra_flags=flags, sass=False)
        rep = nvcc.inspect_module(build, [desc])[desc.name]
        major, minor = nvcc.nvcc_version()
        spills = f"{desc.name} spills {rep.spill_stores} B on {arch}: lower chains or vector_width"
        return build.cubin_path, {"nvcc": f"{major}.{minor}", "nvcc_flags": " ".join(flags),
                                  "registers": rep.registers, "ptx_loop_fma": rep.ptx_loop_fma,
                                  "compiler": f"nvcc {major}.{minor} -arch={arch}"}, \
            spills if rep.spill_stores > 0 else ""


class CudaBackend(GpuBackend):
    driver = CupyDriver(CudaDevice, NAME, extra="cuda", label="CUDA")
