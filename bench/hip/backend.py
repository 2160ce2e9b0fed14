"""HIP driver: the catalogue's kernels built by hipcc for AMD GPUs, loaded and launched through cupy on ROCm.

Why cupy and not hip-python: cupy's ROCm builds expose the same runtime, ``RawModule``, ``Event`` and array calls as
its CUDA builds, so this driver shares the launch and event timer with the cuda driver
(:mod:`archline.bench.gpu.cupy_runtime`) and keeps only discovery (the gfx target) and compile (hipcc ->
code object, refused if it uses scratch). Clocks and temperature come from powermon's AMD SMI layer, sampled through
a Recorder window around the launches. Checked here without a GPU: hipcc builds and the instruction-mix checks
(tests/gpu_kernels/test_hip_compile.py), and this driver against a fake cupy (tests/gpu_kernels/test_hip_fake.py).
"""

from __future__ import annotations

from typing import Any

from archline.bench.errors import BackendUnavailableError
from archline.bench.gpu.core import GpuBackend
from archline.bench.gpu.cupy_runtime import CupyDevice, CupyDriver, text
from archline.bench.gpu.desc import GpuKernelDesc
from archline.bench.hip import hipcc
from archline.bench.hip.vendor import VENDOR
from archline.bench.kernels import KernelSpec

NAME = "hip"


class HipDevice(CupyDevice):
    lang, timer, compiler, unit_word, layer = "hip", "hip-events", "hipcc", "CUs", VENDOR.layer
    find_compiler = staticmethod(hipcc.find_hipcc)
    check_arch = staticmethod(hipcc.check_target)

    def check_runtime(self, cp: Any) -> None:
        if not getattr(cp.cuda.runtime, "is_hip", False):
            raise BackendUnavailableError("cupy here is a CUDA build; the hip back end needs cupy for ROCm "
                                          "(pip install 'archline[hip]')")

    def arch_name(self) -> str:
        return text(self.props.get("gcnArchName") or f"gfx{self.props.get('gcnArch', 0)}").split(":")[0]

    def compile(self, desc: GpuKernelDesc, spec: KernelSpec, arch: str, out_dir: str
                ) -> tuple[str, dict[str, Any], str]:
        build = hipcc.compile_module([desc], arch, out_dir=out_dir, code_object=True)
        rep = hipcc.inspect_module(build, [desc])[desc.name]
        scratch = f"{desc.name} uses {rep.scratch_bytes} B of scratch on {arch} (spills): lower chains or vector_width"
        return build.code_object_path, {"vgprs": rep.vgprs, "asm_loop_fma": rep.loop_fma,
                                        "compiler": f"hipcc --offload-arch={arch} -O3"}, \
            scratch if rep.scratch_bytes > 0 else ""


class HipBackend(GpuBackend):
    driver = CupyDriver(HipDevice, NAME, extra="hip", label="HIP")
