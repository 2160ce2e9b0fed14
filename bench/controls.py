"""Power caps and clocks: NVML power limit and locked clocks, RAPL constraints, Jetson sysfs override files
(model.md §5) and cpufreq. Each control is skipped with a reason when it is absent or not permitted, records
the requested and the enforced value, and always restores the previous setting, even after a crash:

* before a control changes anything, its previous state goes into a restore file (JSON, written atomically);
* a normal end restores it and removes the entry;
* after a crash (SIGKILL, power cut) the entry stays, and the next run applies it first
  (:func:`apply_pending_restore`, called by every non-emulated session).

Everything takes its roots (``powercap_root``, ``cpu_root``, the Jetson files) and the NVML module as
arguments, so tests run on fake sysfs trees and a fake NVML object.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from archline.bench.errors import BenchError
from archline.common.atomic import write_atomic

DEFAULT_RESTORE = Path(os.environ.get("XDG_STATE_HOME", Path.home() / ".local" / "state")) / "archline" / \
    "restore.json"
#: a verified value may differ from the request by this much before the row says so
ENFORCE_TOL_REL = 0.02


class ControlError(BenchError):
    """A control was asked for something impossible (e.g. a cap outside the device's range)."""


class ControlRangeError(ControlError):
    pass


class Control(Protocol):
    @property
    def kind(self) -> str:
        """Restore-file key: nvml_power, nvml_core_clock, nvml_mem_clock, rapl, jetson, cpufreq."""
        ...

    @property
    def target(self) -> str:
        """Which device, zone or file."""
        ...

    @property
    def unit(self) -> str: ...

    def available(self) -> tuple[bool, str]: ...

    def allowed_range(self) -> tuple[float, float] | None: ...

    def state(self) -> dict[str, Any]: ...

    def set(self, value: float) -> float:
        """Apply ``value`` and return the value read back (enforced)."""
        ...

    def restore(self, state: dict[str, Any]) -> None: ...


class RestoreFile:
    """``{"entries": [{"kind", "target", "state"}]}``: the settings to put back. The first state recorded for a
    (kind, target) is the original and is never overwritten."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def entries(self) -> list[dict[str, Any]]:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return []
        except (OSError, json.JSONDecodeError) as e:
            raise ControlError(f"restore file {self.path} is unreadable ({e}); fix or remove it after checking "
                               "the device settings by hand") from None
        return list(data.get("entries", []))

    def _save(self, entries: list[dict[str, Any]]) -> None:
        if entries:
            write_atomic(self.path, json.dumps({"entries": entries}, indent=1))
        elif self.path.exists():
            self.path.unlink()

    def record(self, kind: str, target: str, state: dict[str, Any]) -> None:
        entries = self.entries()
        if not any(e["kind"] == kind and e["target"] == target for e in entries):
            entries.append({"kind": kind, "target": target, "state": state})
            self._save(entries)

    def done(self, kind: str, target: str) -> None:
        self._save([e for e in self.entries() if not (e["kind"] == kind and e["target"] == target)])


# --- sysfs helpers ------------------------------------------------------------------------------------------

def _read(path: Path) -> str:
    return path.read_text().strip()


def _write(path: Path, value: str) -> None:
    try:
        with open(path, "w") as f:
            f.write(value)
    except PermissionError:
        raise ControlError(f"not permitted to write {path} (run as root, or grant write access)") from None


def _probe_writable(path: Path) -> tuple[bool, str]:
    if not path.exists():
        return False, f"{path} does not exist"
    if not os.access(path, os.W_OK):
        return False, f"not permitted to write {path} (needs root)"
    return True, str(path)


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
        return str(self.zone_dir / f"constraint_{self.constraint}_power_limit_uw")

    def available(self) -> tuple[bool, str]:
        return _probe_writable(Path(self.target))

    def allowed_range(self) -> tuple[float, float] | None:
        f = self.zone_dir / f"constraint_{self.constraint}_max_power_uw"
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


# --- NVML -----------------------------------------------------------------------------------------------------

def _nvml_call(nvml: Any, fn: str, *args: Any) -> Any:
    try:
        return getattr(nvml, fn)(*args)
    except Exception as e:  # pynvml raises NVMLError subclasses
        text = str(e)
        if "Permission" in text or "NO_PERMISSION" in text or "Insufficient" in text:
            raise ControlError(f"NVML {fn}: not permitted ({text}); run as root or enable persistence mode "
                               "and application-clock permissions (nvidia-smi -acp UNRESTRICTED)") from None
        if "Not Supported" in text or "NOT_SUPPORTED" in text:
            raise ControlError(f"NVML {fn}: not supported on this GPU ({text})") from None
        raise ControlError(f"NVML {fn} failed: {text}") from None


@dataclass
class _NvmlGpuControl:
    """What every NVML control shares: the library object, the GPU index and its handle."""

    nvml: Any
    index: int = 0

    @property
    def target(self) -> str:
        return f"gpu{self.index}"

    def _h(self) -> Any:
        return _nvml_call(self.nvml, "nvmlDeviceGetHandleByIndex", self.index)


@dataclass
class NvmlPowerLimit(_NvmlGpuControl):
    kind: str = "nvml_power"
    unit: str = "W"

    def available(self) -> tuple[bool, str]:
        try:
            self.allowed_range()
            _nvml_call(self.nvml, "nvmlDeviceGetPowerManagementLimit", self._h())
        except ControlError as e:
            return False, str(e)
        return True, f"NVML power limit of GPU {self.index}"

    def allowed_range(self) -> tuple[float, float] | None:
        lo, hi = _nvml_call(self.nvml, "nvmlDeviceGetPowerManagementLimitConstraints", self._h())
        return lo / 1e3, hi / 1e3

    def state(self) -> dict[str, Any]:
        return {"limit_mw": int(_nvml_call(self.nvml, "nvmlDeviceGetPowerManagementLimit", self._h()))}

    def set(self, value: float) -> float:
        _nvml_call(self.nvml, "nvmlDeviceSetPowerManagementLimit", self._h(), round(value * 1e3))
        return float(_nvml_call(self.nvml, "nvmlDeviceGetEnforcedPowerLimit", self._h())) / 1e3

    def restore(self, state: dict[str, Any]) -> None:
        _nvml_call(self.nvml, "nvmlDeviceSetPowerManagementLimit", self._h(), int(state["limit_mw"]))


@dataclass
class NvmlLockedClocks(_NvmlGpuControl):
    """GPU (``which="core"``) or memory (``which="mem"``) locked clocks; reset on restore."""

    which: str = "core"
    unit: str = "MHz"

    @property
    def kind(self) -> str:
        return f"nvml_{self.which}_clock"

    def _clock_type(self) -> Any:
        return getattr(self.nvml, "NVML_CLOCK_SM" if self.which == "core" else "NVML_CLOCK_MEM")

    def available(self) -> tuple[bool, str]:
        fn = "nvmlDeviceSetGpuLockedClocks" if self.which == "core" else "nvmlDeviceSetMemoryLockedClocks"
        if not hasattr(self.nvml, fn):
            return False, f"this NVML has no {fn}"
        try:
            self.allowed_range()
        except ControlError as e:
            return False, str(e)
        return True, f"NVML locked {self.which} clocks of GPU {self.index}"

    def allowed_range(self) -> tuple[float, float] | None:
        hi = _nvml_call(self.nvml, "nvmlDeviceGetMaxClockInfo", self._h(), self._clock_type())
        return 1.0, float(hi)

    def state(self) -> dict[str, Any]:
        return {"clock_mhz": int(_nvml_call(self.nvml, "nvmlDeviceGetClockInfo", self._h(), self._clock_type()))}

    def set(self, value: float) -> float:
        mhz = round(value)
        fn = "nvmlDeviceSetGpuLockedClocks" if self.which == "core" else "nvmlDeviceSetMemoryLockedClocks"
        _nvml_call(self.nvml, fn, self._h(), mhz, mhz)
        return float(_nvml_call(self.nvml, "nvmlDeviceGetClockInfo", self._h(), self._clock_type()))

    def restore(self, state: dict[str, Any]) -> None:
        fn = "nvmlDeviceResetGpuLockedClocks" if self.which == "core" else "nvmlDeviceResetMemoryLockedClocks"
        _nvml_call(self.nvml, fn, self._h())


# --- a run's set of controls ---------------------------------------------------------------------------------

def restore_from_entry(entry: dict[str, Any], *, nvml: Any = None) -> None:
    """Put one restore-file entry back."""
    kind, target, state = entry["kind"], entry["target"], entry["state"]
    ctl: Any
    if kind == "rapl":
        p = Path(target)
        ctl = RaplPowerLimit(p.parent, int(p.name.split("_")[1]))
    elif kind == "cpufreq":
        ctl = CpuFreq(Path(target))
    elif kind == "jetson":
        rate = Path(target)
        ctl = JetsonOverride(rate, rate.parent / "state")
    elif kind.startswith("nvml"):
        nv = nvml or _load_nvml()
        idx = int(target.removeprefix("gpu"))
        ctl = NvmlPowerLimit(nv, idx) if kind == "nvml_power" else NvmlLockedClocks(
            nv, idx, "core" if kind == "nvml_core_clock" else "mem")
    else:
        raise ControlError(f"restore file names an unknown control '{kind}'")
    ctl.restore(state)


def apply_pending_restore(path: Path, *, nvml: Any = None, log: Callable[[str], None] | None = None) -> int:
    """Restore what a crashed run left changed; returns the number of settings put back."""
    rf = RestoreFile(path)
    n = 0
    for e in rf.entries():
        restore_from_entry(e, nvml=nvml)
        rf.done(e["kind"], e["target"])
        n += 1
        if log is not None:
            log(f"restored {e['kind']} {e['target']} left changed by an earlier run: {e['state']}")
    return n


def _load_nvml() -> Any:
    try:
        import pynvml
    except ImportError:
        raise ControlError("NVML is not installed (pip install nvidia-ml-py)") from None
    try:
        pynvml.nvmlInit()
    except Exception as e:
        raise ControlError(f"NVML cannot start: {e}") from None
    return pynvml


@dataclass
class ControlSet:
    """The caps and clocks one run sweeps, with the restore file guarding them."""

    restore_file: RestoreFile
    cap: Control | None = None
    cap_skip: str = ""
    core: Control | None = None
    core_skip: str = ""
    mem: Control | None = None
    mem_skip: str = ""
    settings: dict[str, dict[str, float | None]] = field(default_factory=dict)   # dvfs id -> core/mem MHz, V
    log: Callable[[str], None] | None = None
    _changed: list[Control] = field(default_factory=list)

    def _apply(self, ctl: Control | None, skip: str, value: float | None, col: str, req_col: str) -> dict[str, Any]:
        out: dict[str, Any] = {req_col: value}
        if value is None:
            return out
        if ctl is None:
            out["_note"] = f"{col} {value:g} not applied: {skip}"
            return out
        rng = ctl.allowed_range()
        if rng is not None and not rng[0] <= value <= rng[1]:
            raise ControlRangeError(f"{col} {value:g} {ctl.unit} is outside {ctl.target}'s allowed range "
                                    f"{rng[0]:g}-{rng[1]:g} {ctl.unit}")
        if ctl not in self._changed:
            self.restore_file.record(ctl.kind, ctl.target, ctl.state())
            self._changed.append(ctl)
        enforced = ctl.set(value)
        out[col] = enforced
        if abs(enforced - value) > ENFORCE_TOL_REL * value:
            out["_note"] = f"{col}: requested {value:g}, enforced {enforced:g} {ctl.unit}"
        return out

    def validate(self, caps: Sequence[float]) -> None:
        if self.cap is not None:
            rng = self.cap.allowed_range()
            for c in caps:
                if rng is not None and not rng[0] <= c <= rng[1]:
                    raise ControlRangeError(f"power cap {c:g} W is outside {self.cap.target}'s allowed range "
                                            f"{rng[0]:g}-{rng[1]:g} W")

    def apply_point(self, point: Any) -> dict[str, Any]:
        cols: dict[str, Any] = {}
        notes: list[str] = []
        for part in (self._apply(self.cap, self.cap_skip, point.power_cap_w, "power_cap_w", "power_cap_requested_w"),):
            notes += [part.pop("_note")] if "_note" in part else []
            cols.update(part)
        if point.dvfs_id is not None:
            s = self.settings[point.dvfs_id]
            for ctl, skip, key in ((self.core, self.core_skip, "core"), (self.mem, self.mem_skip, "mem")):
                part = self._apply(ctl, skip, s.get(f"{key}_mhz"), f"{key}_mhz", f"{key}_mhz_requested")
                notes += [part.pop("_note")] if "_note" in part else []
                cols.update(part)
            cols["core_v"], cols["mem_v"] = s.get("core_v"), s.get("mem_v")
        if notes:
            cols["note"] = "; ".join(notes)
            if self.log is not None:
                for n in notes:
                    self.log(n)
        return cols

    def restore(self) -> None:
        errors: list[str] = []
        for ctl in reversed(self._changed):
            entry = next((e for e in self.restore_file.entries()
                          if e["kind"] == ctl.kind and e["target"] == ctl.target), None)
            if entry is None:
                continue
            try:
                ctl.restore(entry["state"])
                self.restore_file.done(ctl.kind, ctl.target)
            except ControlError as e:
                errors.append(str(e))
        self._changed.clear()
        if errors:
            raise ControlError("could not restore: " + "; ".join(errors) + f" (kept in {self.restore_file.path})")


def _pick(ctls: Sequence[Control]) -> tuple[Control | None, str]:
    reasons = []
    for c in ctls:
        ok, why = c.available()
        if ok:
            return c, ""
        reasons.append(why)
    return None, "; ".join(reasons) or "no control for this device"


def open_controls(profile: Any, caps: Sequence[float], dvfs_ids: Sequence[str], *, restore_file: Path | None = None,
                  log: Callable[[str], None] | None = None, nvml: Any = None, powercap_root: Path | None = None,
                  cpu_root: Path | None = None) -> ControlSet:
    """Controls for a profile's caps and DVFS settings; pending restores from a crashed run are applied first."""
    rpath = restore_file or DEFAULT_RESTORE
    apply_pending_restore(rpath, nvml=nvml, log=log)
    gpu = profile.platform.device_kind == "gpu" or profile.bench.backend in ("cuda", "opencl")
    cs = ControlSet(RestoreFile(rpath), log=log)
    nv = nvml
    nv_reason = ""
    if gpu and nv is None and (caps or dvfs_ids):
        try:
            nv = _load_nvml()
        except ControlError as e:
            nv_reason = str(e)
    if caps:
        cands: list[Control] = []
        if gpu and nv is not None:
            cands.append(NvmlPowerLimit(nv, int(profile.bench.device or 0)))
        if not gpu:
            root = powercap_root or Path("/sys/class/powercap")
            cands += [RaplPowerLimit(z) for z in sorted(root.glob("intel-rapl:[0-9]*")) if ":" in z.name
                      and z.name.count(":") == 1]
        cs.cap, cs.cap_skip = _pick(cands)
        if cs.cap is None:
            cs.cap_skip = nv_reason or cs.cap_skip or ("no RAPL zone" if not gpu else "no NVML")
        cs.validate(caps)
    if dvfs_ids:
        for sid in dvfs_ids:
            s = profile.dvfs_setting(sid)
            cs.settings[sid] = {"core_mhz": s.core_mhz, "mem_mhz": s.mem_mhz, "core_v": s.core_v, "mem_v": s.mem_v}
        d = profile.dvfs
        core_c: list[Control] = []
        mem_c: list[Control] = []
        if d.core_clock_files:
            core_c.append(JetsonOverride(Path(d.core_clock_files[0]), Path(d.core_clock_files[1])))
        if d.mem_clock_files:
            mem_c.append(JetsonOverride(Path(d.mem_clock_files[0]), Path(d.mem_clock_files[1])))
        if gpu and nv is not None:
            core_c.append(NvmlLockedClocks(nv, int(profile.bench.device or 0), "core"))
            mem_c.append(NvmlLockedClocks(nv, int(profile.bench.device or 0), "mem"))
        if not gpu:
            core_c.append(CpuFreq(cpu_root or Path("/sys/devices/system/cpu")))
        cs.core, cs.core_skip = _pick(core_c)
        cs.mem, cs.mem_skip = _pick(mem_c)
    for what, skip in (("power cap", cs.cap_skip if caps else ""), ("core clock", cs.core_skip if dvfs_ids else ""),
                       ("memory clock", cs.mem_skip if dvfs_ids else "")):
        if skip and log is not None:
            log(f"{what} control skipped: {skip}")
    return cs
