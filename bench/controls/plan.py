"""A run's set of controls: which cap and clocks it sweeps, applying them point by point with the requested and
enforced values in the row, restoring them at the end, and putting back what a crashed run left changed."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archline.bench.controls.base import (
    DEFAULT_RESTORE,
    ENFORCE_TOL_REL,
    Control,
    ControlError,
    ControlRangeError,
    RestoreFile,
)
from archline.bench.controls.devices import CpuFreq, JetsonOverride, NvmlLockedClocks, NvmlPowerLimit, RaplPowerLimit

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
    """NVML through powermon (the one place it is initialised), as a control error."""
    from archline.powermon.counters.nvml import load_nvml
    from archline.powermon.errors import MeterError

    try:
        return load_nvml()
    except MeterError as e:
        raise ControlError(str(e)) from None


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
            from archline.powermon.counters.rapl import default_root, list_zones

            cands += [RaplPowerLimit(z.path) for z in list_zones(powercap_root or default_root()) if "/" not in z.name]
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
