"""AMD GPUs through AMD SMI (the ``amdsmi`` Python package of ROCm): archline's one AMD SMI module.

:class:`AmdSmiGpu` is the device layer every AMD SMI user goes through: the meter (:class:`AmdSmiMeter`: energy
from the GPU's energy accumulator), and the hip driver's clock and temperature readings.

The energy accumulator (``amdsmi_get_energy_count``) counts ticks of ``counter_resolution`` microjoules (15.3 uJ on
MI200/MI300). Its key is ``power`` in ROCm 6.0-6.1 and ``energy_accumulator`` later. Firmware keeps it in 32 or 64
bits; a reading below the previous one is a wrap, unrolled modulo 2**32 while the readings fit in 32 bits, else
2**64. The meter's resolution is one tick, and a poll period well under the shortest wrap (2**32 ticks: about
2 minutes at 500 W) keeps every wrap visible.
"""

from __future__ import annotations

import time
import types
from collections.abc import Callable
from typing import Any

from archline.powermon.counters.base import CounterMeter
from archline.powermon.errors import DeviceError

POWER_SCOPE = "socket"      # AMD SMI's socket power: the GPU package (die and HBM), not the whole board
_LOADED: list[Any] = []


def load_amdsmi(lib: Any = None) -> Any:
    """The amdsmi module (or a given fake), initialised once per process; DeviceError with the reason."""
    if lib is None and _LOADED:
        return _LOADED[0]
    if lib is None:
        try:
            import amdsmi

            lib = amdsmi
        except ImportError:
            raise DeviceError("AMD SMI unavailable: the amdsmi package is not installed (it ships with ROCm: "
                              "/opt/rocm/share/amd_smi)") from None
    try:
        lib.amdsmi_init()
    except Exception as e:
        raise DeviceError(f"AMD SMI unavailable: {e} (no amdgpu driver or GPU)") from None
    if isinstance(lib, types.ModuleType) and not _LOADED:
        _LOADED.append(lib)
    return lib


def unwrap(prev_raw: int, raw: int, total: int) -> int:
    """The running tick total after reading ``raw`` (the previous reading ``prev_raw``), wraps unrolled."""
    if raw >= prev_raw:
        return total + raw - prev_raw
    modulus = 1 << (32 if prev_raw < (1 << 32) else 64)
    return total + raw + modulus - prev_raw


class AmdSmiGpu:
    """One AMD GPU: every AMD SMI call archline makes. ``lib`` is an initialised amdsmi (``load_amdsmi``) or a fake."""

    def __init__(self, lib: Any, handle: Any, index: int = 0) -> None:
        self.lib, self.handle, self.index = lib, handle, index

    @classmethod
    def open(cls, index: int = 0, lib: Any = None) -> AmdSmiGpu:
        lib = load_amdsmi(lib)
        handles = list(cls._call(lib, "amdsmi_get_processor_handles"))
        if not 0 <= index < len(handles):
            raise DeviceError(f"no AMD GPU {index} (found {len(handles)})")
        return cls(lib, handles[index], index)

    @staticmethod
    def _call(lib: Any, fn: str, *args: Any) -> Any:
        try:
            return getattr(lib, fn)(*args)
        except Exception as e:  # AmdSmiLibraryException and friends
            raise DeviceError(f"AMD SMI {fn} failed: {e}") from None

    def call(self, fn: str, *args: Any) -> Any:
        return self._call(self.lib, fn, self.handle, *args)

    def name(self) -> str:
        info = self.call("amdsmi_get_gpu_asic_info")
        return str(info.get("market_name") or info.get("name") or f"AMD GPU {self.index}")

    def energy(self) -> tuple[int, float]:
        """(raw accumulator ticks, microjoules per tick)."""
        e = self.call("amdsmi_get_energy_count")
        raw = e.get("energy_accumulator", e.get("power"))
        if raw is None:
            raise DeviceError(f"AMD SMI amdsmi_get_energy_count on GPU {self.index} has no accumulator: {e}")
        return int(raw), float(e["counter_resolution"])

    def power_w(self) -> float:
        p = self.call("amdsmi_get_power_info")
        for k in ("socket_power", "current_socket_power", "average_socket_power"):
            if isinstance(p.get(k), (int, float)):
                return float(p[k])
        raise DeviceError(f"AMD SMI reports no socket power on GPU {self.index}: {p}")

    def clock_mhz(self, which: str) -> float:
        kind = self.lib.AmdSmiClkType.GFX if which == "core" else self.lib.AmdSmiClkType.MEM
        c = self.call("amdsmi_get_clock_info", kind)
        return float(c.get("clk", c.get("cur_clk", 0)))

    def temperature_c(self) -> float:
        return float(self.call("amdsmi_get_temp_metric", self.lib.AmdSmiTemperatureType.EDGE,
                               self.lib.AmdSmiTemperatureMetric.CURRENT))

    def readings(self) -> dict[str, float]:
        """Clocks and temperature now (what the counter meters sample on each poll)."""
        return {"core_mhz": self.clock_mhz("core"), "mem_mhz": self.clock_mhz("mem"),
                "temp_c": self.temperature_c()}


class AmdSmiMeter(CounterMeter):
    """One AMD GPU's energy accumulator, wraps unrolled, in joules; GFX and memory clocks and edge temperature sampled
    on the same polls (``readings``), reported per window."""

    update_hz = 1000.0        # the SMU updates the accumulator about every millisecond

    def __init__(self, index: int = 0, lib: Any = None, poll_s: float = 0.02, name: str | None = None,
                 device: str = "gpu", clock: Callable[[], float] = time.monotonic, readings: bool = True) -> None:
        self.gpu = AmdSmiGpu.open(index, lib)
        self.index = index
        self.readings_source = self.gpu.readings if readings else None
        raw, self.uj_per_tick = self.gpu.energy()
        self.resolution_j = self.uj_per_tick * 1e-6
        self._raw0 = self._raw = raw
        self._ticks = 0
        self.wraps = 0
        super().__init__([f"gpu{index}"], {device: [f"gpu{index}"]}, poll_s, clock)
        self.name = name or f"amdsmi{index}"

    def _read(self) -> list[float]:
        raw, _ = self.gpu.energy()
        if raw < self._raw:
            self.wraps += 1
        self._ticks = unwrap(self._raw, raw, self._ticks)
        self._raw = raw
        return [self._ticks * self.resolution_j]

    def info(self) -> dict[str, Any]:
        out = super().info()
        out.update({"type": "amdsmi", "index": self.index, "power_scope": POWER_SCOPE,
                    "energy_source": "amdsmi_get_energy_count", "resolution_j": self.resolution_j,
                    "wraps": self.wraps})
        return out
