"""NVML, the cuda back end's vendor library (and an NVIDIA GPU's under OpenCL), declared once: its device layer
(clocks and temperature in a window) and its controls, the board power limit and the locked clocks, each call
through powermon's one NVML layer (``NvmlGpu``, initialised by ``load_nvml`` only)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from archline.bench.controls.gpu import GpuVendor, _Clock, _GpuControl, _PowerLimit
from archline.powermon.counters.kind import NVML
from archline.powermon.counters.nvml import NvmlGpu, load_nvml


class _Nvml(_GpuControl):
    vendor, prefix = "NVML", NVML
    permission_fix = "run as root or enable persistence mode and application-clock permissions " \
                     "(nvidia-smi -acp UNRESTRICTED)"

    @property
    def gpu(self) -> NvmlGpu:
        return NvmlGpu(self.lib, self.index)


@dataclass
class NvmlPowerLimit(_Nvml, _PowerLimit):
    pass


@dataclass
class NvmlLockedClocks(_Nvml, _Clock):
    """GPU (``which="core"``) or memory (``which="mem"``) locked clocks; reset on restore."""

    which: str = "core"

    def available(self) -> tuple[bool, str]:
        def lacks() -> str:
            return "" if self.gpu.can_lock_clock(self.which) else \
                f"this NVML has no {self.gpu._lock_fn(self.which, 'Set')}"

        return self._probe(f"NVML locked {self.which} clocks of GPU {self.index}", lacks=lacks)

    def allowed_range(self) -> tuple[float, float] | None:
        return 1.0, float(self.call("max_clock_mhz", self.which))

    def state(self) -> dict[str, Any]:
        return {"clock_mhz": int(self.call("clock_mhz", self.which))}

    def set(self, value: float) -> float:
        return float(self.call("lock_clock_mhz", self.which, round(value)))

    def restore(self, state: dict[str, Any]) -> None:
        self.call("reset_clock", self.which)


VENDOR = GpuVendor(name=NVML, power=NvmlPowerLimit, clock=NvmlLockedClocks, load=load_nvml, layer=NvmlGpu)
