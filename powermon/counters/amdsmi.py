"""AMD GPUs through AMD SMI (the ``amdsmi`` Python package of ROCm): archline's one AMD SMI module.

:class:`AmdSmiGpu` is the device layer every AMD SMI user goes through: the meter (:class:`AmdSmiMeter`: energy
from the GPU's energy accumulator), bench's controls (socket power cap, GFX and memory clock ranges) and the hip
driver's clock and temperature readings.

The energy accumulator (``amdsmi_get_energy_count``) counts ticks of ``counter_resolution`` microjoules (15.3 uJ on
MI200/MI300). Its key is ``power`` in ROCm 6.0-6.1 and ``energy_accumulator`` later. Firmware keeps it in 32 or 64
bits; a reading below the previous one is a wrap, unrolled modulo 2**32 while the readings fit in 32 bits, else
2**64. The meter's resolution is one tick, and a poll period well under the shortest wrap (2**32 ticks: about
2 minutes at 500 W) keeps every wrap visible.

As a ``[[meters]]`` kind (``kind = "amdsmi"``, ``index``): :func:`open_from_spec` opens the GPU;
:func:`emulate_from_spec` plays a power source through :class:`EmulatedAmdSmi`, an amdsmi whose accumulator
counts the readings of a :class:`~archline.powermon.emulator.sensor.SensorModel` in ticks of the counter
resolution, with the firmware's wrap, driven by the real meter and labelled emulated.
"""

from __future__ import annotations

import dataclasses
import time
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archline.powermon.counters.base import CounterMeter, unwrap
from archline.powermon.counters.emulated import SensorEnergy, Timeline, device_power
from archline.powermon.emulator.sensor import SensorModel
from archline.powermon.errors import DeviceError, MeterError

if TYPE_CHECKING:
    from archline.powermon.emulator.power import PowerCallable, PowerSource
    from archline.powermon.spec import MeterSpec

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


class AmdSmiCallError(DeviceError):
    """An AMD SMI call failed: ``fn`` and the library's own text (bench's controls word it for the user)."""

    def __init__(self, fn: str, text: str) -> None:
        super().__init__(f"AMD SMI {fn} failed: {text}")
        self.fn, self.text = fn, text


class AmdSmiGpu:
    """One AMD GPU: every AMD SMI call archline makes. ``lib`` is an initialised amdsmi (``load_amdsmi``) or a fake."""

    def __init__(self, lib: Any, handle: Any, index: int = 0) -> None:
        self.lib, self.handle, self.index = lib, handle, index

    @classmethod
    def open(cls, index: int = 0, lib: Any = None) -> AmdSmiGpu:
        """AMD SMI initialised (once per process for the real module) and GPU ``index`` checked to exist."""
        return cls.at(load_amdsmi(lib), index)

    @classmethod
    def at(cls, lib: Any, index: int = 0) -> AmdSmiGpu:
        """GPU ``index`` of an already initialised ``lib`` (bench's controls hold one)."""
        handles = list(cls._call(lib, "amdsmi_get_processor_handles"))
        if not 0 <= index < len(handles):
            raise DeviceError(f"no AMD GPU {index} (found {len(handles)})")
        return cls(lib, handles[index], index)

    @staticmethod
    def _call(lib: Any, fn: str, *args: Any) -> Any:
        try:
            return getattr(lib, fn)(*args)
        except Exception as e:  # AmdSmiLibraryException and friends; their text spans lines ("Error code:\n\t10 | ...")
            raise AmdSmiCallError(fn, " ".join(str(e).split()) or type(e).__name__) from None

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

    def _clk_type(self, which: str) -> Any:
        return self.lib.AmdSmiClkType.GFX if which == "core" else self.lib.AmdSmiClkType.MEM

    def _clock_info(self, which: str, *keys: str) -> list[float]:
        """``amdsmi_get_clock_info``'s MHz under ``keys`` (``clk`` is ``cur_clk`` before ROCm 6); "N/A" is an
        error naming the key."""
        c = self.call("amdsmi_get_clock_info", self._clk_type(which))
        out = []
        for k in keys:
            v = c.get(k, c.get("cur_clk")) if k == "clk" else c.get(k)
            if not isinstance(v, (int, float)):
                raise AmdSmiCallError("amdsmi_get_clock_info", f"no {k} for the {which} clock on GPU "
                                      f"{self.index} ({v!r})")
            out.append(float(v))
        return out

    def clock_mhz(self, which: str) -> float:
        """The clock in force: ``core`` (GFX) or ``mem``."""
        return self._clock_info(which, "clk")[0]

    def temperature_c(self) -> float:
        return float(self.call("amdsmi_get_temp_metric", self.lib.AmdSmiTemperatureType.EDGE,
                               self.lib.AmdSmiTemperatureMetric.CURRENT))

    def readings(self) -> dict[str, float]:
        """Clocks and temperature now (what the counter meters sample on each poll)."""
        return {"core_mhz": self.clock_mhz("core"), "mem_mhz": self.clock_mhz("mem"),
                "temp_c": self.temperature_c()}

    # -- controls (bench/controls): the socket power cap and the clock ranges ---------------------------------
    def _cap_info(self) -> dict[str, Any]:
        return dict(self.call("amdsmi_get_power_cap_info"))

    def power_limit_w(self) -> float:
        """The socket power cap in force (AMD SMI counts microwatts on Linux)."""
        return float(self._cap_info()["power_cap"]) / 1e6

    def power_limit_range_w(self) -> tuple[float, float] | None:
        """(min, max) cap the firmware accepts; None where this amdsmi does not say (ROCm 5)."""
        c = self._cap_info()
        if not all(isinstance(c.get(k), (int, float)) for k in ("min_power_cap", "max_power_cap")):
            return None
        return c["min_power_cap"] / 1e6, c["max_power_cap"] / 1e6

    def set_power_limit_w(self, watts: float) -> float:
        """Set the cap of power sensor 0; returns the cap read back."""
        self.call("amdsmi_set_power_cap", 0, round(watts * 1e6))
        return self.power_limit_w()

    def clock_range_mhz(self, which: str) -> tuple[float, float]:
        """The (min, max) MHz the clock may run between now."""
        lo, hi = self._clock_info(which, "min_clk", "max_clk")
        return lo, hi

    def can_set_clock_range(self) -> bool:
        return hasattr(self.lib, "amdsmi_set_gpu_clk_range")

    def set_clock_range_mhz(self, which: str, lo_mhz: int, hi_mhz: int) -> float:
        """Hold the clock between ``lo_mhz`` and ``hi_mhz`` (the driver switches the GPU to the manual performance
        level to do it); returns the clock in force after."""
        self.call("amdsmi_set_gpu_clk_range", int(lo_mhz), int(hi_mhz), self._clk_type(which))
        return self.clock_mhz(which)

    def perf_level(self) -> str:
        """The performance level's name (``AUTO``, ``MANUAL``, ``DETERMINISM`` ...)."""
        return str(self.call("amdsmi_get_gpu_perf_level")).removeprefix("AMDSMI_DEV_PERF_LEVEL_")

    def set_perf_level(self, name: str) -> None:
        level = getattr(self.lib.AmdSmiDevPerfLevel, name, None)
        if level is None:
            raise AmdSmiCallError("amdsmi_set_gpu_perf_level", f"no performance level named {name!r}")
        self.call("amdsmi_set_gpu_perf_level", level)


class AmdSmiMeter(CounterMeter):
    """One AMD GPU's energy accumulator, wraps unrolled, in joules; GFX and memory clocks and edge temperature sampled
    on the same polls (``readings``), reported per window."""

    update_hz = 1000.0        # the SMU updates the accumulator about every millisecond
    sensor: SensorModel | None = None   # what an emulated GPU was given (for `meter probe` to compare)

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
                    "wraps": self.wraps, "speed": self.speed})
        if self.sensor is not None:
            out["sensor_model"] = dataclasses.asdict(self.sensor)
        return out


# --- the kind dispatch (powermon/spec.py) and the emulator --------------------------------------------------------

#: MI200/MI300: the SMU samples socket power about every millisecond and adds it to the accumulator. An instant
#: sample (window 0) costs one power evaluation per reading, which keeps a 50x emulation real-time; pass a
#: SensorModel with a window (and lag, gain ...) to emulate a slower, averaging sensor
DEFAULT_SENSOR = SensorModel(update_period_s=0.001, window_s=0.0)
RESOLUTION_UJ = 15.3


@dataclass(frozen=True)
class AmdSmiFaults:
    """What the emulated GPU does wrong: its accumulator's width and start (near ``2**counter_bits`` to see a wrap
    early), and the device second after which every call fails (the GPU fell off the bus)."""

    counter_bits: int = 64
    start_ticks: int = 0
    fail_after_s: float | None = None


class EmulatedAmdSmi:
    """The amdsmi calls :class:`AmdSmiGpu` makes, answered by one emulated GPU (its name says emulated)."""

    AmdSmiClkType = types.SimpleNamespace(GFX=0, MEM=1)
    AmdSmiTemperatureType = types.SimpleNamespace(EDGE=0)
    AmdSmiTemperatureMetric = types.SimpleNamespace(CURRENT=0)

    def __init__(self, energy: SensorEnergy, timeline: Timeline, faults: AmdSmiFaults | None = None,
                 resolution_uj: float = RESOLUTION_UJ, clocks_mhz: tuple[float, float] = (1700.0, 1600.0),
                 n_gpus: int = 1) -> None:
        self.energy, self.timeline, self.faults = energy, timeline, faults or AmdSmiFaults()
        self.resolution_uj, self.clocks_mhz, self.n_gpus = resolution_uj, clocks_mhz, n_gpus

    def _now_s(self) -> float:
        t = self.timeline.emulated_time_s()
        if self.faults.fail_after_s is not None and t > self.faults.fail_after_s:
            raise RuntimeError("AMDSMI_STATUS_NOT_INIT: the emulated GPU is gone")
        return t

    def amdsmi_init(self) -> None:
        self._now_s()

    def amdsmi_get_processor_handles(self) -> list[str]:
        return [f"emulated-gpu{i}" for i in range(self.n_gpus)]   # every index plays the same power

    def amdsmi_get_gpu_asic_info(self, h: str) -> dict[str, Any]:
        return {"market_name": "AMD Instinct MI250X (emulated)", "vendor_id": "0x1002"}

    def ticks(self, t_dev_s: float) -> int:
        """The accumulator at device time ``t_dev_s``: whole ticks of the resolution, modulo its width."""
        n = int(self.energy.energy_j(t_dev_s) * 1e6 / self.resolution_uj)
        return (self.faults.start_ticks + n) % (1 << self.faults.counter_bits)

    def amdsmi_get_energy_count(self, h: str) -> dict[str, Any]:
        t = self._now_s()
        return {"energy_accumulator": self.ticks(t), "counter_resolution": self.resolution_uj,
                "timestamp": int(t * 1e9)}

    def amdsmi_get_power_info(self, h: str) -> dict[str, Any]:
        return {"socket_power": round(self.energy.power_now_w(self._now_s())), "average_socket_power": "N/A"}

    def amdsmi_get_clock_info(self, h: str, kind: int) -> dict[str, Any]:
        self._now_s()
        return {"clk": self.clocks_mhz[0] if kind == 0 else self.clocks_mhz[1], "clk_locked": False}

    def amdsmi_get_temp_metric(self, h: str, kind: int, metric: int) -> int:
        return round(30 + 0.1 * self.energy.power_now_w(self._now_s()))   # a warm card, no thermal lag


def _device(spec: MeterSpec) -> str:
    return spec.channels[0].device if spec.channels else "gpu"


def open_from_spec(spec: MeterSpec, *, raw_dir: str | Path | None = None, **kw: Any) -> AmdSmiMeter:
    """GPU ``spec.index`` through AMD SMI (counter meters keep no raw capture: ``raw_dir`` is unused)."""
    if spec.kind != "amdsmi":
        raise MeterError(f"meter '{spec.name}' is a {spec.kind} meter, not an AMD SMI one")
    kw.setdefault("name", spec.name)
    return AmdSmiMeter(spec.index, device=_device(spec), **kw)


def emulate_from_spec(spec: MeterSpec, power: PowerSource | PowerCallable | None, *, speed: float = 1.0,
                      seed: int = 0, raw_dir: str | Path | None = None, faults: AmdSmiFaults | None = None,
                      sensor: SensorModel = DEFAULT_SENSOR, resolution_uj: float = RESOLUTION_UJ,
                      **kw: Any) -> AmdSmiMeter:
    """An emulated AMD GPU playing ``power`` (summed over the spec's channels) through ``sensor`` into an energy
    accumulator of ``resolution_uj`` ticks, read by the real meter; labelled emulated. ``speed``: device seconds
    per host second; ``seed`` is unused (the sensor model is deterministic)."""
    if spec.kind != "amdsmi":
        raise MeterError(f"meter '{spec.name}' is a {spec.kind} meter, not an AMD SMI one")
    timeline = Timeline(speed)
    energy = SensorEnergy(sensor, device_power(power, [c.id for c in spec.channels] or [0], timeline))
    lib = EmulatedAmdSmi(energy, timeline, faults, resolution_uj, n_gpus=spec.index + 1)
    kw.setdefault("name", spec.name)
    meter = AmdSmiMeter(spec.index, lib=lib, device=_device(spec), **kw)
    meter.emulated, meter.speed, meter.sensor = True, speed, sensor
    meter.latched_at_read_start = True      # the emulated accumulator is of the time the call begins
    meter.update_hz = 1.0 / sensor.update_period_s
    return meter


def list_meters(lib: Any = None) -> list[dict[str, Any]]:
    """`archline meter list`'s rows for this kind: each AMD GPU, or why there is none."""
    try:
        lib = load_amdsmi(lib)
        n = len(list(AmdSmiGpu._call(lib, "amdsmi_get_processor_handles")))
        gpus = [AmdSmiGpu.open(i, lib) for i in range(n)]
        rows = [{"kind": "amdsmi", "name": f"gpu{g.index}", "available": True,
                 "detail": f"{g.name()}, energy accumulator, power scope {POWER_SCOPE} (kind = \"amdsmi\", "
                           f"index = {g.index})"} for g in gpus]
    except DeviceError as e:
        rows = [{"kind": "amdsmi", "name": "-", "available": False, "detail": str(e),
                 "fix": "pip install /opt/rocm/share/amd_smi" if "not installed" in str(e) else ""}]
    return rows or [{"kind": "amdsmi", "name": "-", "available": False, "detail": "AMD SMI lists no GPU"}]
