"""HIP driver: the catalogue's kernels built by hipcc for AMD GPUs, loaded and launched through cupy on ROCm.

Why cupy and not hip-python: cupy's ROCm builds expose the same runtime, ``RawModule``, ``Event`` and array calls as
its CUDA builds, so this driver shares the launch and event timer with the cuda driver
(:mod:`archline.bench.gpu.cupy_runtime`) and keeps only discovery (the gfx target) and compile (hipcc ->
code object, refused if it uses scratch). Clocks and temperature come from powermon's AMD SMI layer at the timed
region's edges. Checked here without a GPU: hipcc builds and the instruction-mix checks
(tests/gpu_kernels/test_hip_compile.py), and this driver against a fake cupy (tests/gpu_kernels/test_hip_fake.py).
"""

from __future__ import annotations

import tempfile
from typing import Any

from archline.bench.errors import BackendUnavailableError, BenchError
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

    def __init__(self, cp: Any, index: int) -> None:
        if not getattr(cp.cuda.runtime, "is_hip", False):
            raise BackendUnavailableError("cupy here is a CUDA build; the hip back end needs cupy for ROCm "
                                          "(pip install 'archline[hip]')")
        super().__init__(cp, index, amdsmi_readings(index))
        self.info["arch"] = text(self.props.get("gcnArchName") or f"gfx{self.props.get('gcnArch', 0)}").split(":")[0]
        if hipcc.find_hipcc() is None:
            raise BackendUnavailableError(f"{self.info['device']} found but hipcc is missing (the kernels are "
                                          "built with hipcc)")
        hipcc.check_target(self.info["arch"])
        self.summary = f"{self.info['device']} ({self.info['arch']}, {self.info['compute_units']} CUs)"

    def build(self, desc: GpuKernelDesc, spec: KernelSpec) -> tuple[Any, dict[str, Any]]:
        target = hipcc.check_target(str(spec.params.get("arch", self.info["arch"])))
        with tempfile.TemporaryDirectory(prefix="archline-hip-") as out_dir:
            build = hipcc.compile_module([desc], target, out_dir=out_dir, code_object=True)
            rep = hipcc.inspect_module(build, [desc])[desc.name]
            if rep.scratch_bytes > 0:
                raise BenchError(f"{desc.name} uses {rep.scratch_bytes} B of scratch on {target} (spills): lower "
                                 "chains or vector_width")
            fn = self.load(build.code_object_path, desc.name)
        return fn, {"vgprs": rep.vgprs, "asm_loop_fma": rep.loop_fma,
                    "compiler": f"hipcc --offload-arch={target} -O3"}


class HipDriver(CupyDriver):
    name = NAME
    extra = "hip"
    label = "HIP"
    device_class = HipDevice


class HipBackend(GpuBackend):
    driver = HipDriver()
