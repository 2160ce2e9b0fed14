"""GPU power caps and clocks: what every vendor's controls share. Each vendor is declared once, as a
:class:`GpuVendor`, in its back end's folder (NVML: ``bench/cuda/vendor.py``, AMD SMI: ``bench/hip/vendor.py``),
whose controls call the vendor's library through its one powermon device layer (``NvmlGpu``, ``AmdSmiGpu``); a back
end's :class:`~archline.bench.registry.BackendInfo` names the vendors its devices use. A control holds the
initialised library and the GPU index; the restore-file kind names the vendor (``nvml_power``,
``amdsmi_core_clock`` ...) and the target the GPU (``gpu0``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from archline.bench.controls.base import Control, ControlError
from archline.powermon.errors import DeviceError, MeterError


@dataclass(frozen=True)
class GpuVendor:
    """One GPU vendor's library as bench's controls and GPU back ends use it, declared once in its back end's
    folder."""

    #: the library's name: its powermon meter kind, the restore-file kinds' first part and the keyword a caller
    #: passes its library object under (``open_controls(..., nvml=fake)``)
    name: str
    power: Callable[[Any, int], Control]            #: ``power(lib, index)``: the GPU's power limit
    clock: Callable[[Any, int, str], Control]       #: ``clock(lib, index, "core" | "mem")``: a clock it holds
    load: Callable[[], Any]                         #: the initialised library, or MeterError (or DeviceError) why not
    layer: Any                                      #: powermon's device layer class (open(index), readings())

    def library(self, given: Any = None) -> Any:
        """``given`` (a caller's library object), else the library loaded; its absence as a control error."""
        if given is not None:
            return given
        try:
            return self.load()
        except MeterError as e:
            raise ControlError(str(e)) from None


def _layer_call(gpu: Any, vendor: str, method: str, *args: Any, fix: str = "") -> Any:
    """``gpu.method(*args)``, the library's failure (``NvmlCallError``, ``AmdSmiCallError``: ``fn`` and ``text``)
    worded for someone setting a cap or a clock."""
    try:
        return getattr(gpu, method)(*args)
    except DeviceError as e:
        fn, text = getattr(e, "fn", method), getattr(e, "text", str(e))
        if any(w in text for w in ("Permission", "NO_PERMISSION", "NO_PERM", "Insufficient")):
            raise ControlError(f"{vendor} {fn}: not permitted ({text}); {fix}") from None
        if "Not Supported" in text or "NOT_SUPPORTED" in text:
            raise ControlError(f"{vendor} {fn}: not supported on this GPU ({text})") from None
        raise ControlError(f"{vendor} {fn} failed: {text}") from None


@dataclass
class _GpuControl:
    """What every GPU control shares: the library object (initialised), the GPU index and its device layer."""

    lib: Any
    index: int = 0

    vendor = ""        #: "NVML", "AMD SMI": the words of its errors
    prefix = ""        #: the vendor's GpuVendor.name: the restore-file kind's first part
    units = ""         #: "W", "MHz"
    permission_fix = ""  #: what to do when the library says "not permitted"

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
        return _layer_call(self.gpu, self.vendor, method, *args, fix=self.permission_fix)

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
