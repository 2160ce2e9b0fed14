"""NVIDIA GPUs through NVML (nvidia-ml-py): archline's one NVML module.

:class:`NvmlGpu` is the device layer every NVML user goes through: the meter (:class:`NvmlMeter`: the
total-energy counter where the GPU has one, Volta and newer, instant power always), bench's controls (power limit,
locked clocks) and the GPU drivers' clock and temperature readings. Power scope: ``nvmlDeviceGetPowerUsage`` and
the energy counter cover the whole board (GPU, memory and the rest of the card), recorded as ``power_scope``.
"""

from __future__ import annotations

import time
import types
from collections.abc import Callable
from typing import Any

from archline.powermon.counters.base import CounterMeter
from archline.powermon.errors import DeviceError

POWER_SCOPE = "board"


_LOADED: list[Any] = []


def load_nvml(nvml: Any = None) -> Any:
    """The pynvml module (or a given fake), initialised once per process; MeterError with the reason when
    unavailable. The one place NVML is initialised (meters, controls and the CUDA back end all come here)."""
    if nvml is None and _LOADED:
        return _LOADED[0]
    if nvml is None:
        try:
            import pynvml

            nvml = pynvml
        except ImportError:
            raise DeviceError("NVML unavailable: nvidia-ml-py is not installed (pip install nvidia-ml-py)") from None
    try:
        nvml.nvmlInit()
    except Exception as e:  # pynvml raises NVMLError subclasses
        raise DeviceError(f"NVML unavailable: {e} (no NVIDIA driver or GPU)") from None
    if isinstance(nvml, types.ModuleType) and not _LOADED:
        _LOADED.append(nvml)
    return nvml


class NvmlCallError(DeviceError):
    """An NVML call failed: ``fn`` and NVML's own text (callers such as bench's controls word it for the user)."""

    def __init__(self, fn: str, text: str) -> None:
        super().__init__(f"NVML {fn} failed: {text}")
        self.fn, self.text = fn, text


class NvmlGpu:
    """One NVIDIA GPU: every NVML call archline makes. ``lib`` is an initialised NVML (``load_nvml``) or a fake."""

    def __init__(self, lib: Any, index: int = 0) -> None:
        self.lib, self.index = lib, index
        self._handle: Any = None

    @classmethod
    def open(cls, index: int = 0, nvml: Any = None) -> NvmlGpu:
        """NVML initialised (once per process) and GPU ``index`` checked to exist."""
        lib = load_nvml(nvml)
        n = lib.nvmlDeviceGetCount()
        if not 0 <= index < n:
            raise DeviceError(f"no NVIDIA GPU {index} (found {n})")
        return cls(lib, index)

    def call(self, fn: str, *args: Any) -> Any:
        try:
            return getattr(self.lib, fn)(*args)
        except Exception as e:  # pynvml raises NVMLError subclasses
            raise NvmlCallError(fn, str(e)) from None

    @property
    def handle(self) -> Any:
        if self._handle is None:
            self._handle = self.call("nvmlDeviceGetHandleByIndex", self.index)
        return self._handle

    def _clock_type(self, which: str) -> Any:
        return getattr(self.lib, "NVML_CLOCK_SM" if which == "core" else "NVML_CLOCK_MEM")

    # -- readings ------------------------------------------------------------------------------------------
    def name(self) -> str:
        n = self.call("nvmlDeviceGetName", self.handle)
        return n.decode() if isinstance(n, bytes) else str(n)

    def power_w(self) -> float:
        return float(self.call("nvmlDeviceGetPowerUsage", self.handle)) / 1000.0

    def energy_mj(self) -> float:
        return float(self.call("nvmlDeviceGetTotalEnergyConsumption", self.handle))

    def has_energy(self) -> bool:
        try:
            self.energy_mj()
            return True
        except DeviceError:
            return False

    def clock_mhz(self, which: str) -> float:
        """The clock in force: ``core`` (SM) or ``mem``."""
        return float(self.call("nvmlDeviceGetClockInfo", self.handle, self._clock_type(which)))

    def temperature_c(self) -> float:
        return float(self.call("nvmlDeviceGetTemperature", self.handle, self.lib.NVML_TEMPERATURE_GPU))

    def readings(self) -> dict[str, float]:
        """Clocks and temperature now (what the counter meters sample on each poll)."""
        return {"core_mhz": self.clock_mhz("core"), "mem_mhz": self.clock_mhz("mem"),
                "temp_c": self.temperature_c()}

    # -- controls ------------------------------------------------------------------------------------------
    def power_limit_w(self) -> float:
        return float(self.call("nvmlDeviceGetPowerManagementLimit", self.handle)) / 1e3

    def power_limit_range_w(self) -> tuple[float, float]:
        lo, hi = self.call("nvmlDeviceGetPowerManagementLimitConstraints", self.handle)
        return lo / 1e3, hi / 1e3

    def set_power_limit_w(self, watts: float) -> float:
        """Set the limit; returns the one the board enforces."""
        self.call("nvmlDeviceSetPowerManagementLimit", self.handle, round(watts * 1e3))
        return float(self.call("nvmlDeviceGetEnforcedPowerLimit", self.handle)) / 1e3

    def max_clock_mhz(self, which: str) -> float:
        return float(self.call("nvmlDeviceGetMaxClockInfo", self.handle, self._clock_type(which)))

    @staticmethod
    def _lock_fn(which: str, verb: str) -> str:
        return f"nvmlDevice{verb}{'Gpu' if which == 'core' else 'Memory'}LockedClocks"

    def can_lock_clock(self, which: str) -> bool:
        return hasattr(self.lib, self._lock_fn(which, "Set"))

    def lock_clock_mhz(self, which: str, mhz: int) -> float:
        """Lock the clock at ``mhz``; returns the clock in force after."""
        self.call(self._lock_fn(which, "Set"), self.handle, mhz, mhz)
        return self.clock_mhz(which)

    def reset_clock(self, which: str) -> None:
        self.call(self._lock_fn(which, "Reset"), self.handle)


def list_gpus(nvml: Any = None) -> list[dict[str, Any]]:
    lib = load_nvml(nvml)
    gpus = [NvmlGpu(lib, i) for i in range(lib.nvmlDeviceGetCount())]
    return [{"index": g.index, "name": g.name(), "total_energy": g.has_energy(), "power_scope": POWER_SCOPE}
            for g in gpus]


class NvmlMeter(CounterMeter):
    """One GPU. Energy from the total-energy counter (mJ) when present, else integrated instant power. SM and memory
    clocks and temperature are sampled on the same polls (``readings``), reported per window."""

    resolution_j = 1e-3
    update_hz = 50.0          # board power and the energy counter advance about every 20 ms

    def __init__(self, index: int = 0, nvml: Any = None, poll_s: float = 0.02, name: str | None = None,
                 device: str = "gpu", clock: Callable[[], float] = time.monotonic, readings: bool = True) -> None:
        self.gpu = NvmlGpu.open(index, nvml)
        self.index = index
        self.has_energy = self.gpu.has_energy()
        self.readings_source = self.gpu.readings if readings else None
        super().__init__([f"gpu{index}"], {device: [f"gpu{index}"]}, poll_s, clock)
        self.name = name or f"nvml{index}"
        self._energy_j = 0.0
        self._last: tuple[float, float] | None = None
        self._e0_mj: float | None = None
        self.power_w: list[tuple[float, float]] = []

    def _read(self) -> list[float]:
        t = self.clock()
        try:
            p_w = self.gpu.power_w()
            self.power_w.append((t, p_w))
            if self.has_energy:
                mj = self.gpu.energy_mj()
                if self._e0_mj is None:
                    self._e0_mj = mj
                return [(mj - self._e0_mj) / 1000.0]
        except NvmlCallError as e:
            raise DeviceError(f"NVML read failed on GPU {self.index}: {e.text}") from None
        if self._last is not None:          # no counter: trapezoid over polled power
            t0, p0 = self._last
            self._energy_j += 0.5 * (p0 + p_w) * (t - t0)
        self._last = (t, p_w)
        return [self._energy_j]

    def info(self) -> dict[str, Any]:
        out = super().info()
        out.update({"type": "nvml", "index": self.index, "power_scope": POWER_SCOPE,
                    "energy_source": "nvmlDeviceGetTotalEnergyConsumption" if self.has_energy
                    else "integrated nvmlDeviceGetPowerUsage"})
        return out
