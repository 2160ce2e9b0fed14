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
from archline.bench.controls.devices import CpuFreq, JetsonOverride, RaplPowerLimit, rapl_power_limits
from archline.bench.controls.gpu import GpuVendor
from archline.bench.registry import backends, gpu_vendors, of_kind
from archline.powermon.counters.kind import AMDSMI, NVML, RAPL

# --- a run's set of controls ---------------------------------------------------------------------------------

def restore_from_entry(entry: dict[str, Any], *, nvml: Any = None, amdsmi: Any = None) -> None:
    """Put one restore-file entry back."""
    kind, target, state = entry["kind"], entry["target"], entry["state"]
    ctl: Any
    if kind == RAPL:
        p = Path(target)
        ctl = RaplPowerLimit(p.parent, int(p.name.split("_")[1]))
    elif kind == "cpufreq":
        ctl = CpuFreq(Path(target))
    elif kind == "jetson":
        rate = Path(target)
        ctl = JetsonOverride(rate, rate.parent / "state")
    elif (vendor := next((v for v in gpu_vendors() if kind.startswith(f"{v.name}_")), None)) is not None:
        what = kind.removeprefix(f"{vendor.name}_")
        lib = vendor.library(_given(nvml, amdsmi).get(vendor.name))
        idx = int(target.removeprefix("gpu"))
        ctl = vendor.power(lib, idx) if what == "power" else vendor.clock(lib, idx, what.removesuffix("_clock"))
    else:
        raise ControlError(f"restore file names an unknown control '{kind}'")
    ctl.restore(state)


def apply_pending_restore(path: Path, *, nvml: Any = None, amdsmi: Any = None,
                          log: Callable[[str], None] | None = None) -> int:
    """Restore what a crashed run left changed; returns the number of settings put back."""
    rf = RestoreFile(path)
    n = 0
    for e in rf.entries():
        restore_from_entry(e, nvml=nvml, amdsmi=amdsmi)
        rf.done(e["kind"], e["target"])
        n += 1
        if log is not None:
            log(f"restored {e['kind']} {e['target']} left changed by an earlier run: {e['state']}")
    return n


def _given(nvml: Any, amdsmi: Any) -> dict[str, Any]:
    """A caller's library objects (a test's fakes) by vendor name."""
    return {NVML: nvml, AMDSMI: amdsmi}


def _gpu_libs(backend: str, given: dict[str, Any]) -> tuple[list[tuple[GpuVendor, Any]], str]:
    """The vendors a GPU profile's controls may use with their libraries, in the order tried (the back end's
    ``control_vendors`` in the registry; else every vendor's), each given or loaded; and why those that are not
    there are not."""
    info = backends().get(backend)
    vendors: tuple[GpuVendor, ...] = info.vendors() if info is not None else gpu_vendors()
    libs: list[tuple[GpuVendor, Any]] = []
    reasons: list[str] = []
    for v in vendors:
        try:
            libs.append((v, v.library(given.get(v.name))))
        except ControlError as e:
            reasons.append(str(e))
    return libs, "; ".join(reasons)


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
                  log: Callable[[str], None] | None = None, nvml: Any = None, amdsmi: Any = None,
                  powercap_root: Path | None = None, cpu_root: Path | None = None) -> ControlSet:
    """Controls for a profile's caps and DVFS settings; pending restores from a crashed run are applied first. A GPU
    is capped and clocked through NVML or AMD SMI (the first whose control is there), a CPU through RAPL and
    cpufreq; Jetson override files come first where the profile names them."""
    rpath = restore_file or DEFAULT_RESTORE
    apply_pending_restore(rpath, nvml=nvml, amdsmi=amdsmi, log=log)
    backend, kind = str(profile.bench.backend or ""), profile.platform.device_kind
    # OpenCL on a CPU (PoCL) is a CPU: RAPL and cpufreq, not a GPU vendor's library
    gpu = kind == "gpu" or (kind != "cpu" and backend in of_kind("gpu"))
    cs = ControlSet(RestoreFile(rpath), log=log)
    libs: list[tuple[GpuVendor, Any]] = []
    lib_reason = ""
    dev = str(profile.bench.device or "0")
    idx = int(dev) if dev.isdigit() else 0
    if gpu and (caps or dvfs_ids):
        if dev.isdigit():
            libs, lib_reason = _gpu_libs(backend, _given(nvml, amdsmi))
        else:
            lib_reason = f"the profile's [bench] device '{dev}' is not a GPU index (caps and clocks need one)"
    if caps:
        cands: list[Control] = []
        if gpu:
            cands += [v.power(lib, idx) for v, lib in libs]
        else:
            cands += rapl_power_limits(powercap_root)
        cs.cap, cs.cap_skip = _pick(cands)
        if cs.cap is None:
            cs.cap_skip = "; ".join(r for r in (cs.cap_skip if cands else "", lib_reason) if r) or (
                "no RAPL zone" if not gpu else "no NVML or AMD SMI")
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
        for v, lib in libs:
            core_c.append(v.clock(lib, idx, "core"))
            mem_c.append(v.clock(lib, idx, "mem"))
        if not gpu:
            core_c.append(CpuFreq(cpu_root or Path("/sys/devices/system/cpu")))
        cs.core, cs.core_skip = _pick(core_c)
        cs.mem, cs.mem_skip = _pick(mem_c)
        if lib_reason and cs.core is None:     # say why the vendor's control was not even tried
            cs.core_skip = "; ".join(r for r in (cs.core_skip if core_c else "", lib_reason) if r)
        if lib_reason and cs.mem is None:
            cs.mem_skip = "; ".join(r for r in (cs.mem_skip if mem_c else "", lib_reason) if r)
    for what, skip in (("power cap", cs.cap_skip if caps else ""), ("core clock", cs.core_skip if dvfs_ids else ""),
                       ("memory clock", cs.mem_skip if dvfs_ids else "")):
        if skip and log is not None:
            log(f"{what} control skipped: {skip}")
    return cs
