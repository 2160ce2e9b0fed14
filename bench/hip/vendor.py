"""AMD SMI, the hip back end's vendor library (and an AMD GPU's under OpenCL), declared once: its device layer
(clocks and temperature in a window) and its controls, the socket power cap and the GFX and memory clock ranges,
each call through powermon's one AMD SMI layer (``AmdSmiGpu``, initialised by ``load_amdsmi`` only)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from archline.bench.controls.base import ControlError
from archline.bench.controls.gpu import GpuVendor, _Clock, _GpuControl, _PowerLimit
from archline.powermon.counters.amdsmi import AmdSmiGpu, load_amdsmi
from archline.powermon.counters.kind import AMDSMI
from archline.powermon.errors import DeviceError


class _AmdSmi(_GpuControl):
    vendor, prefix = "AMD SMI", AMDSMI
    permission_fix = "run as root (AMD SMI sets caps and clocks through the amdgpu driver's root-only sysfs files)"

    @property
    def gpu(self) -> AmdSmiGpu:
        try:
            return AmdSmiGpu.at(self.lib, self.index)
        except DeviceError as e:
            raise ControlError(str(e)) from None


@dataclass
class AmdSmiPowerCap(_AmdSmi, _PowerLimit):
    """The socket power cap (``amdsmi_set_power_cap`` on power sensor 0), read back after each set."""


#: the performance level of each AMD GPU before archline set a clock range on it, (id(lib), index) -> (lib, level):
#: setting the first clock's range leaves AUTO for MANUAL, so the other clock's state must not take MANUAL for the
#: level to go back to (restored in either order, each range then the level, the GPU ends at the level before)
_LEVEL_BEFORE: dict[tuple[int, int], tuple[Any, str]] = {}


@dataclass
class AmdSmiClockRange(_AmdSmi, _Clock):
    """GFX (``which="core"``) or memory (``which="mem"``) clock held at one value by setting its range's minimum and
    maximum to it. The state is the range and the GPU's performance level before (the driver leaves AUTO for MANUAL
    to set a range); restore puts both back, the range first."""

    which: str = "core"
    #: the range before archline changed it: the allowed range for every later point (a set range narrows what
    #: the device reports as its range)
    _range: tuple[float, float] | None = field(default=None, compare=False, repr=False)

    def available(self) -> tuple[bool, str]:
        def lacks() -> str:
            return "" if self.gpu.can_set_clock_range() else "this amdsmi has no amdsmi_set_gpu_clk_range"

        return self._probe(f"AMD SMI {self.which} clock range of GPU {self.index}", ("perf_level",), lacks=lacks)

    def allowed_range(self) -> tuple[float, float] | None:
        if self._range is None:
            self._range = self.call("clock_range_mhz", self.which)
        return self._range

    def state(self) -> dict[str, Any]:
        lo, hi = self.allowed_range() or self.call("clock_range_mhz", self.which)
        key = (id(self.lib), self.index)
        seen = _LEVEL_BEFORE.get(key)
        if seen is None or seen[0] is not self.lib:
            seen = _LEVEL_BEFORE[key] = (self.lib, str(self.call("perf_level")))
        return {"min_mhz": int(lo), "max_mhz": int(hi), "perf_level": seen[1]}

    def set(self, value: float) -> float:
        mhz = round(value)
        return float(self.call("set_clock_range_mhz", self.which, mhz, mhz))

    def restore(self, state: dict[str, Any]) -> None:
        self.call("set_clock_range_mhz", self.which, int(state["min_mhz"]), int(state["max_mhz"]))
        self.call("set_perf_level", str(state["perf_level"]))
        _LEVEL_BEFORE.pop((id(self.lib), self.index), None)


VENDOR = GpuVendor(name=AMDSMI, power=AmdSmiPowerCap, clock=AmdSmiClockRange, load=load_amdsmi, layer=AmdSmiGpu)
