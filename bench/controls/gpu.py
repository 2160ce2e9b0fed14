"""GPU power caps and clocks, each vendor through its one powermon device layer (NVML: ``NvmlGpu``, AMD SMI:
``AmdSmiGpu``), the place every call to the vendor's library is made. A control holds the initialised library and
the GPU index; the restore-file kind names the vendor (``nvml_power``, ``amdsmi_core_clock`` ...) and the target
the GPU (``gpu0``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from archline.bench.controls.base import ControlError
from archline.powermon.errors import DeviceError

if TYPE_CHECKING:
    from archline.powermon.counters.amdsmi import AmdSmiGpu
    from archline.powermon.counters.nvml import NvmlGpu

#: what to do when the library says "not permitted", per vendor
PERMISSION_FIX = {
    "NVML": "run as root or enable persistence mode and application-clock permissions "
            "(nvidia-smi -acp UNRESTRICTED)",
    "AMD SMI": "run as root (AMD SMI sets caps and clocks through the amdgpu driver's root-only sysfs files)",
}


def _layer_call(gpu: Any, vendor: str, method: str, *args: Any) -> Any:
    """``gpu.method(*args)``, the library's failure (``NvmlCallError``, ``AmdSmiCallError``: ``fn`` and ``text``)
    worded for someone setting a cap or a clock."""
    try:
        return getattr(gpu, method)(*args)
    except DeviceError as e:
        fn, text = getattr(e, "fn", method), getattr(e, "text", str(e))
        if any(w in text for w in ("Permission", "NO_PERMISSION", "NO_PERM", "Insufficient")):
            raise ControlError(f"{vendor} {fn}: not permitted ({text}); {PERMISSION_FIX[vendor]}") from None
        if "Not Supported" in text or "NOT_SUPPORTED" in text:
            raise ControlError(f"{vendor} {fn}: not supported on this GPU ({text})") from None
        raise ControlError(f"{vendor} {fn} failed: {text}") from None


@dataclass
class _GpuControl:
    """What every GPU control shares: the library object (initialised), the GPU index and its device layer."""

    lib: Any
    index: int = 0

    vendor = ""        #: "NVML", "AMD SMI": the words of its errors
    prefix = ""        #: "nvml", "amdsmi": the restore-file kind's first part
    units = ""         #: "W", "MHz"

    @property
    def what(self) -> str:
        """The restore-file kind's second part: ``power``, ``core_clock``, ``mem_clock``."""
        raise NotImplementedError

    @property
    def kind(self) -> str:
        return f"{self.prefix}_{self.what}"

    @property
    def unit(self) -> str:
        return self.units

    @property
    def target(self) -> str:
        return f"gpu{self.index}"

    @property
    def gpu(self) -> Any:
        raise NotImplementedError

    def call(self, method: str, *args: Any) -> Any:
        return _layer_call(self.gpu, self.vendor, method, *args)

    def allowed_range(self) -> tuple[float, float] | None:
        raise NotImplementedError

    def _probe(self, what: str, *calls: tuple[Any, ...], lacks: Callable[[], str] | None = None
               ) -> tuple[bool, str]:
        """``available()``: (True, ``what``) when the library has the setter (``lacks`` says what is missing, ""
        when nothing), the range reads and each of ``calls`` (method, args...) answers; else (False, why)."""
        try:
            missing = lacks() if lacks is not None else ""
            if missing:
                return False, missing
            self.allowed_range()
            for c in calls:
                self.call(*c)
        except ControlError as e:
            return False, str(e)
        return True, what


class _PowerLimit(_GpuControl):
    """The board (NVML) or socket (AMD SMI) power limit: the same calls on both layers."""

    what, units = "power", "W"   # type: ignore[assignment]

    def available(self) -> tuple[bool, str]:
        return self._probe(f"{self.vendor} power limit of GPU {self.index}", ("power_limit_w",))

    def allowed_range(self) -> tuple[float, float] | None:
        return self.call("power_limit_range_w")  # type: ignore[no-any-return]

    def state(self) -> dict[str, Any]:
        return {"limit_mw": round(self.call("power_limit_w") * 1e3)}

    def set(self, value: float) -> float:
        return float(self.call("set_power_limit_w", value))

    def restore(self, state: dict[str, Any]) -> None:
        self.call("set_power_limit_w", int(state["limit_mw"]) / 1e3)


class _Clock(_GpuControl):
    which = "core"
    units = "MHz"

    @property
    def what(self) -> str:
        return f"{self.which}_clock"


# --- NVML -----------------------------------------------------------------------------------------------------

class _Nvml(_GpuControl):
    vendor, prefix = "NVML", "nvml"

    @property
    def gpu(self) -> NvmlGpu:
        from archline.powermon.counters.nvml import NvmlGpu

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


# --- AMD SMI --------------------------------------------------------------------------------------------------

class _AmdSmi(_GpuControl):
    vendor, prefix = "AMD SMI", "amdsmi"

    @property
    def gpu(self) -> AmdSmiGpu:
        from archline.powermon.counters.amdsmi import AmdSmiGpu

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
