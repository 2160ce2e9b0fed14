"""NVIDIA GPUs through NVML (nvidia-ml-py): the total-energy counter where the GPU has one (Volta and newer),
instant power always. Power scope: ``nvmlDeviceGetPowerUsage`` and the energy counter cover the whole board
(GPU, memory and the rest of the card), which is what this meter records as ``power_scope``.
"""

from __future__ import annotations

import time
import types
from collections.abc import Callable
from typing import Any

from archline.powermon.counters.base import CounterMeter
from archline.powermon.errors import MeterError

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
            raise MeterError("NVML unavailable: nvidia-ml-py is not installed (pip install nvidia-ml-py)") from None
    try:
        nvml.nvmlInit()
    except Exception as e:  # pynvml raises NVMLError subclasses
        raise MeterError(f"NVML unavailable: {e} (no NVIDIA driver or GPU)") from None
    if isinstance(nvml, types.ModuleType) and not _LOADED:
        _LOADED.append(nvml)
    return nvml


def list_gpus(nvml: Any = None) -> list[dict[str, Any]]:
    lib = load_nvml(nvml)
    out = []
    for i in range(lib.nvmlDeviceGetCount()):
        h = lib.nvmlDeviceGetHandleByIndex(i)
        name = lib.nvmlDeviceGetName(h)
        out.append({"index": i, "name": name.decode() if isinstance(name, bytes) else str(name),
                    "total_energy": _has_energy(lib, h), "power_scope": POWER_SCOPE})
    return out


def _has_energy(lib: Any, handle: Any) -> bool:
    try:
        lib.nvmlDeviceGetTotalEnergyConsumption(handle)
        return True
    except Exception:
        return False


class NvmlMeter(CounterMeter):
    """One GPU. Energy from the total-energy counter (mJ) when present, else integrated instant power."""

    resolution_j = 1e-3
    update_hz = 50.0          # board power and the energy counter advance about every 20 ms

    def __init__(self, index: int = 0, nvml: Any = None, poll_s: float = 0.02, name: str | None = None,
                 device: str = "gpu", clock: Callable[[], float] = time.monotonic) -> None:
        self.lib = load_nvml(nvml)
        n = self.lib.nvmlDeviceGetCount()
        if not 0 <= index < n:
            raise MeterError(f"no NVIDIA GPU {index} (found {n})")
        self.index = index
        self.handle = self.lib.nvmlDeviceGetHandleByIndex(index)
        self.has_energy = _has_energy(self.lib, self.handle)
        super().__init__([f"gpu{index}"], {device: [f"gpu{index}"]}, poll_s, clock)
        self.name = name or f"nvml{index}"
        self._energy_j = 0.0
        self._last: tuple[float, float] | None = None
        self._e0_mj: float | None = None
        self.power_w: list[tuple[float, float]] = []

    def _read(self) -> list[float]:
        t = self.clock()
        try:
            p_w = self.lib.nvmlDeviceGetPowerUsage(self.handle) / 1000.0
            self.power_w.append((t, p_w))
            if self.has_energy:
                mj = float(self.lib.nvmlDeviceGetTotalEnergyConsumption(self.handle))
                if self._e0_mj is None:
                    self._e0_mj = mj
                return [(mj - self._e0_mj) / 1000.0]
        except MeterError:
            raise
        except Exception as e:
            raise MeterError(f"NVML read failed on GPU {self.index}: {e}") from None
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
