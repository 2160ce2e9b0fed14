"""HIP driver: the catalogue's kernels built by hipcc for AMD GPUs, loaded and launched through cupy on ROCm.

Why cupy and not hip-python: cupy's ROCm builds expose the same runtime, ``RawModule``, ``Event`` and array calls as
its CUDA builds, so this driver shares the launch and event timer with the cuda driver
(:mod:`archline.bench.gpu.cupy_runtime`) and keeps only discovery (the gfx target) and compile (hipcc ->
code object, refused if it uses scratch). Clocks and temperature come from powermon's AMD SMI layer at the timed
region's edges. Checked here without a GPU: hipcc builds and the instruction-mix checks
(tests/gpu_kernels/test_hip_compile.py), and this driver against a fake cupy (tests/gpu_kernels/test_hip_fake.py).
"""

from __future__ import annotations

from typing import Any

from archline.bench.errors import BackendUnavailableError
from archline.bench.gpu.core import GpuBackend
from archline.bench.gpu.cupy_runtime import CupyDevice, CupyDriver, Readings, layer_readings, text
from archline.bench.gpu.desc import GpuKernelDesc
from archline.bench.hip import hipcc
from archline.bench.kernels import KernelSpec

NAME = "hip"


def amdsmi_readings(index: int) -> Readings | None:
    from archline.powermon.counters.amdsmi import AmdSmiGpu

    return layer_readings(AmdSmiGpu.open, index)


class HipDevice(CupyDevice):
    lang = "hip"
    timer = "hip-events"

    compiler = "hipcc"
    unit_word = "CUs"

    def __init__(self, cp: Any, index: int) -> None:
        if not getattr(cp.cuda.runtime, "is_hip", False):
            raise BackendUnavailableError("cupy here is a CUDA build; the hip back end needs cupy for ROCm "
                                          "(pip install 'archline[hip]')")
        super().__init__(cp, index, amdsmi_readings(index))
        self.info["arch"] = text(self.props.get("gcnArchName") or f"gfx{self.props.get('gcnArch', 0)}").split(":")[0]
        self.check_compiler()

    def find_compiler(self) -> str | None:
        return hipcc.find_hipcc()

    def check_arch(self, arch: str) -> str:
        return hipcc.check_target(arch)

    def compile(self, desc: GpuKernelDesc, spec: KernelSpec, arch: str, out_dir: str
                ) -> tuple[str, dict[str, Any], str]:
        build = hipcc.compile_module([desc], arch, out_dir=out_dir, code_object=True)
        rep = hipcc.inspect_module(build, [desc])[desc.name]
        scratch = f"{desc.name} uses {rep.scratch_bytes} B of scratch on {arch} (spills): lower chains or vector_width"
        return build.code_object_path, {"vgprs": rep.vgprs, "asm_loop_fma": rep.loop_fma,
                                        "compiler": f"hipcc --offload-arch={arch} -O3"}, \
            scratch if rep.scratch_bytes > 0 else ""


class HipDriver(CupyDriver):
    name = NAME
    extra = "hip"
    label = "HIP"
    device_class = HipDevice


class HipBackend(GpuBackend):
    driver = HipDriver()
