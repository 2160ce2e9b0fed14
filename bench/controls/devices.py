"""The controls themselves: RAPL power limits, cpufreq, Jetson clock overrides (model.md §5), NVML power limit and
locked clocks. Each probes whether it is there and permitted, reads its state for the restore file, sets a value
and reads back what is enforced."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archline.bench.controls.base import ControlError, _probe_writable, _read, _write
from archline.powermon.counters.rapl import constraint_file

if TYPE_CHECKING:
    from archline.powermon.counters.nvml import NvmlGpu

# --- RAPL -----------------------------------------------------------------------------------------------------

@dataclass
class RaplPowerLimit:
    """``constraint_<n>_power_limit_uw`` of a powercap zone (long-term constraint 0 by default)."""

    zone_dir: Path
    constraint: int = 0
    kind: str = "rapl"
    unit: str = "W"

    @property
    def target(self) -> str:
        return str(constraint_file(self.zone_dir, self.constraint, "power_limit_uw"))

    def available(self) -> tuple[bool, str]:
        return _probe_writable(Path(self.target))

    def allowed_range(self) -> tuple[float, float] | None:
        f = constraint_file(self.zone_dir, self.constraint, "max_power_uw")
        try:
            hi = float(_read(f)) / 1e6
        except (OSError, ValueError):
            return None
        return (1.0, hi) if hi > 0 else None

    def state(self) -> dict[str, Any]:
        return {"power_limit_uw": int(_read(Path(self.target)))}

    def set(self, value: float) -> float:
        _write(Path(self.target), str(round(value * 1e6)))
        return float(_read(Path(self.target))) / 1e6

    def restore(self, state: dict[str, Any]) -> None:
        _write(Path(self.target), str(int(state["power_limit_uw"])))


# --- cpufreq --------------------------------------------------------------------------------------------------

@dataclass
class CpuFreq:
    """Pins every CPU's scaling_min_freq = scaling_max_freq (kHz files; values in MHz here)."""

    cpu_root: Path = Path("/sys/devices/system/cpu")
    kind: str = "cpufreq"
    unit: str = "MHz"

    @property
    def target(self) -> str:
        return str(self.cpu_root)

    def _dirs(self) -> list[Path]:
        return sorted(p for p in self.cpu_root.glob("cpu[0-9]*/cpufreq") if p.is_dir())

    def available(self) -> tuple[bool, str]:
        dirs = self._dirs()
        if not dirs:
            return False, f"no cpufreq under {self.cpu_root} (a VM or a kernel without cpufreq)"
        ok, why = _probe_writable(dirs[0] / "scaling_max_freq")
        return ok, why if not ok else f"cpufreq on {len(dirs)} CPUs"

    def allowed_range(self) -> tuple[float, float] | None:
        d = self._dirs()[0]
        return float(_read(d / "cpuinfo_min_freq")) / 1e3, float(_read(d / "cpuinfo_max_freq")) / 1e3

    def state(self) -> dict[str, Any]:
        return {str(d): {"min": _read(d / "scaling_min_freq"), "max": _read(d / "scaling_max_freq")}
                for d in self._dirs()}

    def set(self, value: float) -> float:
        khz = str(round(value * 1e3))
        for d in self._dirs():
            cur_min = int(_read(d / "scaling_min_freq"))
            # order the writes so min <= max holds at every step
            if int(khz) >= cur_min:
                _write(d / "scaling_max_freq", khz)
                _write(d / "scaling_min_freq", khz)
            else:
                _write(d / "scaling_min_freq", khz)
                _write(d / "scaling_max_freq", khz)
        curs = []
        for d in self._dirs():
            f = d / "scaling_cur_freq"
            curs.append(float(_read(f if f.exists() else d / "scaling_max_freq")) / 1e3)
        return sum(curs) / len(curs)

    def restore(self, state: dict[str, Any]) -> None:
        for d, mm in state.items():
            p = Path(d)
            # widest first, so min <= max holds after every write
            _write(p / "scaling_max_freq", _read(p / "cpuinfo_max_freq"))
            _write(p / "scaling_min_freq", mm["min"])
            _write(p / "scaling_max_freq", mm["max"])


# --- Jetson override files (model.md §5) ----------------------------------------------------------------------

@dataclass
class JetsonOverride:
    """Write the rate in Hz to ``override.X/rate``, then ``1`` to ``override.X/state`` (S1 §5.2.2)."""

    rate_file: Path
    state_file: Path
    kind: str = "jetson"
    unit: str = "MHz"

    @property
    def target(self) -> str:
        return str(self.rate_file)

    def _readback(self) -> Path:
        # /sys/kernel/debug/clock/override.gbus/rate -> /sys/kernel/debug/clock/gbus/rate when present
        d = self.rate_file.parent
        actual = d.parent / d.name.removeprefix("override.") / "rate"
        return actual if actual.exists() and actual != self.rate_file else self.rate_file

    def available(self) -> tuple[bool, str]:
        for f in (self.rate_file, self.state_file):
            ok, why = _probe_writable(f)
            if not ok:
                return False, why
        return True, str(self.rate_file.parent)

    def allowed_range(self) -> tuple[float, float] | None:
        return None

    def state(self) -> dict[str, Any]:
        return {"rate": _read(self.rate_file), "state": _read(self.state_file)}

    def set(self, value: float) -> float:
        _write(self.rate_file, str(round(value * 1e6)))
        _write(self.state_file, "1")
        return float(_read(self._readback())) / 1e6

    def restore(self, state: dict[str, Any]) -> None:
        _write(self.rate_file, state["rate"])
        _write(self.state_file, state["state"])


# --- NVML (through powermon's NVML layer, the one place NVML is called) -----------------------------------------

def _nvml_call(gpu: NvmlGpu, method: str, *args: Any) -> Any:
    """``gpu.method(*args)``, its failure worded for someone setting a cap or a clock."""
    from archline.powermon.counters.nvml import NvmlCallError

    try:
        return getattr(gpu, method)(*args)
    except NvmlCallError as e:
        text, fn = e.text, e.fn
        if "Permission" in text or "NO_PERMISSION" in text or "Insufficient" in text:
            raise ControlError(f"NVML {fn}: not permitted ({text}); run as root or enable persistence mode "
                               "and application-clock permissions (nvidia-smi -acp UNRESTRICTED)") from None
        if "Not Supported" in text or "NOT_SUPPORTED" in text:
            raise ControlError(f"NVML {fn}: not supported on this GPU ({text})") from None
        raise ControlError(f"NVML {fn} failed: {text}") from None


@dataclass
class _NvmlGpuControl:
    """What every NVML control shares: the library object (initialised), the GPU index and its device layer."""

    nvml: Any
    index: int = 0

    @property
    def target(self) -> str:
        return f"gpu{self.index}"

    @property
    def gpu(self) -> NvmlGpu:
        from archline.powermon.counters.nvml import NvmlGpu

        return NvmlGpu(self.nvml, self.index)


@dataclass
class NvmlPowerLimit(_NvmlGpuControl):
    kind: str = "nvml_power"
    unit: str = "W"

    def available(self) -> tuple[bool, str]:
        try:
            self.allowed_range()
            _nvml_call(self.gpu, "power_limit_w")
        except ControlError as e:
            return False, str(e)
        return True, f"NVML power limit of GPU {self.index}"

    def allowed_range(self) -> tuple[float, float] | None:
        return _nvml_call(self.gpu, "power_limit_range_w")  # type: ignore[no-any-return]

    def state(self) -> dict[str, Any]:
        return {"limit_mw": round(_nvml_call(self.gpu, "power_limit_w") * 1e3)}

    def set(self, value: float) -> float:
        return float(_nvml_call(self.gpu, "set_power_limit_w", value))

    def restore(self, state: dict[str, Any]) -> None:
        _nvml_call(self.gpu, "set_power_limit_w", int(state["limit_mw"]) / 1e3)


@dataclass
class NvmlLockedClocks(_NvmlGpuControl):
    """GPU (``which="core"``) or memory (``which="mem"``) locked clocks; reset on restore."""

    which: str = "core"
    unit: str = "MHz"

    @property
    def kind(self) -> str:
        return f"nvml_{self.which}_clock"

    def available(self) -> tuple[bool, str]:
        if not self.gpu.can_lock_clock(self.which):
            return False, f"this NVML has no {self.gpu._lock_fn(self.which, 'Set')}"
        try:
            self.allowed_range()
        except ControlError as e:
            return False, str(e)
        return True, f"NVML locked {self.which} clocks of GPU {self.index}"

    def allowed_range(self) -> tuple[float, float] | None:
        return 1.0, float(_nvml_call(self.gpu, "max_clock_mhz", self.which))

    def state(self) -> dict[str, Any]:
        return {"clock_mhz": int(_nvml_call(self.gpu, "clock_mhz", self.which))}

    def set(self, value: float) -> float:
        return float(_nvml_call(self.gpu, "lock_clock_mhz", self.which, round(value)))

    def restore(self, state: dict[str, Any]) -> None:
        _nvml_call(self.gpu, "reset_clock", self.which)
