"""The host's controls: RAPL power limits (through powermon's RAPL module, the one place powercap files are read
and written), cpufreq and Jetson clock overrides (model.md §5). Each probes whether it is there and permitted, reads
its state for the restore file, sets a value and reads back what is enforced. The GPU vendors' controls are in
:mod:`archline.bench.controls.gpu`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from archline.bench.controls.base import ControlError, _probe_writable, _read, _write
from archline.powermon.counters.kind import RAPL
from archline.powermon.counters.rapl import PowercapConstraint, default_root, list_zones
from archline.powermon.errors import MeterError

T = TypeVar("T")

# --- RAPL -----------------------------------------------------------------------------------------------------


def _rapl(fn: Callable[[], T]) -> T:
    """A powercap read or write, its failure as a control error."""
    try:
        return fn()
    except MeterError as e:
        raise ControlError(str(e)) from None


@dataclass
class RaplPowerLimit:
    """``constraint_<n>_power_limit_uw`` of a powercap zone (long-term constraint 0 by default)."""

    zone_dir: Path
    constraint: int = 0
    kind: str = RAPL
    unit: str = "W"

    @property
    def _c(self) -> PowercapConstraint:
        return PowercapConstraint(Path(self.zone_dir), self.constraint)

    @property
    def target(self) -> str:
        return str(self._c.limit_file)

    def available(self) -> tuple[bool, str]:
        return _probe_writable(self._c.limit_file)

    def allowed_range(self) -> tuple[float, float] | None:
        hi = self._c.max_uw()
        return None if hi is None else (1.0, hi / 1e6)

    def state(self) -> dict[str, Any]:
        return {"power_limit_uw": _rapl(self._c.limit_uw)}

    def set(self, value: float) -> float:
        return _rapl(lambda: self._c.set_limit_uw(round(value * 1e6))) / 1e6

    def restore(self, state: dict[str, Any]) -> None:
        _rapl(lambda: self._c.set_limit_uw(int(state["power_limit_uw"])))


def rapl_power_limits(powercap_root: Path | None = None) -> list[RaplPowerLimit]:
    """The power limit of every top-level RAPL zone (packages, psys; not their subzones), in powercap's order."""
    return [RaplPowerLimit(z.path) for z in list_zones(powercap_root or default_root()) if "/" not in z.name]


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
