"""Power-cap and clock controls on fake sysfs trees and a fake NVML: requested vs enforced, range errors,
skips with reasons, and the restore file that survives a crash (issue 7)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from archline.bench.config.profile import bench_profile
from archline.bench.controls import (
    ControlError,
    ControlRangeError,
    ControlSet,
    CpuFreq,
    JetsonOverride,
    RaplPowerLimit,
    RestoreFile,
    apply_pending_restore,
    open_controls,
)
from archline.bench.cuda.vendor import NvmlLockedClocks, NvmlPowerLimit
from archline.formats.platforms.profiles import load_platform


class FakeNvml:
    """Just the NVML calls the controls use; the enforced limit is clamped like a real board's."""

    NVML_CLOCK_SM = 1
    NVML_CLOCK_MEM = 2

    def __init__(self, permitted: bool = True) -> None:
        self.limit_mw = 250_000
        self.range_mw = (100_000, 300_000)
        self.sm_mhz, self.mem_mhz = 1500, 5000
        self.locked: tuple[int, int] | None = None
        self.permitted = permitted

    def nvmlDeviceGetHandleByIndex(self, i: int) -> str:
        return f"h{i}"

    def nvmlDeviceGetPowerManagementLimitConstraints(self, h: str) -> tuple[int, int]:
        return self.range_mw

    def nvmlDeviceGetPowerManagementLimit(self, h: str) -> int:
        return self.limit_mw

    def nvmlDeviceGetEnforcedPowerLimit(self, h: str) -> int:
        return min(self.limit_mw, 280_000)   # the board enforces at most 280 W

    def nvmlDeviceSetPowerManagementLimit(self, h: str, mw: int) -> None:
        if not self.permitted:
            raise RuntimeError("Insufficient Permissions")
        self.limit_mw = mw

    def nvmlDeviceGetMaxClockInfo(self, h: str, t: int) -> int:
        return 2000 if t == self.NVML_CLOCK_SM else 6000

    def nvmlDeviceGetClockInfo(self, h: str, t: int) -> int:
        if t == self.NVML_CLOCK_SM:
            return self.locked[0] if self.locked else self.sm_mhz
        return self.mem_mhz

    def nvmlDeviceSetGpuLockedClocks(self, h: str, lo: int, hi: int) -> None:
        self.locked = (lo - lo % 15, hi)   # snaps to a 15 MHz step

    def nvmlDeviceResetGpuLockedClocks(self, h: str) -> None:
        self.locked = None


def _rapl_tree(root: Path, limit_uw: int = 95_000_000, max_uw: int = 130_000_000) -> Path:
    z = root / "intel-rapl:0"
    z.mkdir(parents=True)
    (z / "name").write_text("package-0\n")
    (z / "energy_uj").write_text("0\n")
    (z / "constraint_0_power_limit_uw").write_text(f"{limit_uw}\n")
    (z / "constraint_0_max_power_uw").write_text(f"{max_uw}\n")
    return z


def _cpufreq_tree(root: Path, n: int = 2) -> Path:
    for i in range(n):
        d = root / f"cpu{i}" / "cpufreq"
        d.mkdir(parents=True)
        for name, v in (("cpuinfo_min_freq", 800_000), ("cpuinfo_max_freq", 3_600_000),
                        ("scaling_min_freq", 800_000), ("scaling_max_freq", 3_600_000),
                        ("scaling_cur_freq", 2_000_000)):
            (d / name).write_text(f"{v}\n")
    return root


def test_runner_rapl_cap_requested_enforced_restored(tmp_path: Path) -> None:
    z = _rapl_tree(tmp_path / "powercap")
    rf = RestoreFile(tmp_path / "restore.json")
    cs = ControlSet(rf, cap=RaplPowerLimit(z))
    cols = cs.apply_point(SimpleNamespace(power_cap_w=60.0, dvfs_id=None))
    assert cols["power_cap_requested_w"] == 60.0 and cols["power_cap_w"] == 60.0
    assert (z / "constraint_0_power_limit_uw").read_text().strip() == "60000000"
    assert rf.entries()[0]["state"] == {"power_limit_uw": 95_000_000}
    cs.apply_point(SimpleNamespace(power_cap_w=80.0, dvfs_id=None))
    assert rf.entries()[0]["state"] == {"power_limit_uw": 95_000_000}   # the original is kept
    with pytest.raises(ControlRangeError, match="allowed range 1-130 W"):
        cs.apply_point(SimpleNamespace(power_cap_w=500.0, dvfs_id=None))
    cs.restore()
    assert (z / "constraint_0_power_limit_uw").read_text().strip() == "95000000"
    assert not rf.path.exists()


def test_runner_restore_file_applied_by_the_next_run_after_a_crash(tmp_path: Path) -> None:
    z = _rapl_tree(tmp_path / "powercap")
    cpus = _cpufreq_tree(tmp_path / "cpu")
    rpath = tmp_path / "state" / "restore.json"
    cs = ControlSet(RestoreFile(rpath), cap=RaplPowerLimit(z), core=CpuFreq(cpus), settings={
        "S1": {"core_mhz": 1200.0, "mem_mhz": None, "core_v": 0.9, "mem_v": None}})
    cols = cs.apply_point(SimpleNamespace(power_cap_w=50.0, dvfs_id="S1"))
    assert cols["core_mhz_requested"] == 1200.0 and cols["core_v"] == 0.9
    # scaling_cur_freq is what the hardware reports: here it did not follow -> the row says so
    assert cols["core_mhz"] == 2000.0 and "requested 1200, enforced 2000" in cols["note"]
    assert (cpus / "cpu1" / "cpufreq" / "scaling_max_freq").read_text().strip() == "1200000"
    # the process dies here (no restore); the next run applies the file first
    log: list[str] = []
    assert apply_pending_restore(rpath, log=log.append) == 2
    assert (z / "constraint_0_power_limit_uw").read_text().strip() == "95000000"
    assert (cpus / "cpu0" / "cpufreq" / "scaling_min_freq").read_text().strip() == "800000"
    assert (cpus / "cpu0" / "cpufreq" / "scaling_max_freq").read_text().strip() == "3600000"
    assert not rpath.exists() and len(log) == 2


def test_runner_restore_file_is_versioned_and_damage_is_one_line(tmp_path: Path) -> None:
    """The restore file's owner (formats/restore_state.py, issue 37): written with its schema; a file from before
    the schema reads as version 1; a newer major version, damaged JSON or a malformed entry is a ControlError naming
    the file (a point fails, as with any control), never a guess."""
    z = _rapl_tree(tmp_path / "powercap")
    rpath = tmp_path / "restore.json"
    ControlSet(RestoreFile(rpath), cap=RaplPowerLimit(z)).apply_point(SimpleNamespace(power_cap_w=60.0, dvfs_id=None))
    data = json.loads(rpath.read_text())
    assert data["schema"] == "archline.restore/1" and [e["kind"] for e in data["entries"]] == ["rapl"]
    rpath.write_text(json.dumps({"entries": data["entries"]}))          # an older archline's file: no schema
    assert apply_pending_restore(rpath) == 1 and not rpath.exists()
    assert (z / "constraint_0_power_limit_uw").read_text().strip() == "95000000"
    for text, says in ((json.dumps({"schema": "archline.restore/2", "entries": []}), "written by a newer archline"),
                       (json.dumps({"schema": "archline.costs/1"}), "expected 'archline.restore/1'"),
                       ('{"entries": [', "Expecting value"), ("[]", "not a JSON object"),
                       (json.dumps({"entries": [{"kind": "rapl", "target": "x"}]}), "entries[0] is not"),
                       (json.dumps({"entries": {}}), "'entries' is not a list")):
        rpath.write_text(text)
        with pytest.raises(ControlError) as e:
            apply_pending_restore(rpath)
        assert str(e.value).startswith(f"restore file {rpath} is unreadable (") and says in str(e.value)
        assert "\n" not in str(e.value) and rpath.read_text() == text       # left for someone to check


def test_runner_jetson_override_files(tmp_path: Path) -> None:
    clock = tmp_path / "clock"
    ov = clock / "override.gbus"
    ov.mkdir(parents=True)
    (ov / "rate").write_text("852000000\n")
    (ov / "state").write_text("0\n")
    (clock / "gbus").mkdir()
    (clock / "gbus" / "rate").write_text("756000000\n")   # what the clock really runs at
    j = JetsonOverride(ov / "rate", ov / "state")
    assert j.available()[0]
    st = j.state()
    enforced = j.set(612.0)
    assert (ov / "rate").read_text() == "612000000" and (ov / "state").read_text() == "1"
    assert enforced == 756.0          # read back from gbus/rate, not from the file we wrote
    j.restore(st)
    assert (ov / "rate").read_text().strip() == "852000000" and (ov / "state").read_text().strip() == "0"


def test_runner_nvml_cap_and_locked_clocks(tmp_path: Path) -> None:
    nv = FakeNvml()
    rf = RestoreFile(tmp_path / "r.json")
    cs = ControlSet(rf, cap=NvmlPowerLimit(nv), core=NvmlLockedClocks(nv, 0, "core"),
                    settings={"A": {"core_mhz": 1007.0, "mem_mhz": None, "core_v": None, "mem_v": None}})
    cols = cs.apply_point(SimpleNamespace(power_cap_w=290.0, dvfs_id="A"))
    assert cols["power_cap_requested_w"] == 290.0 and cols["power_cap_w"] == 280.0   # enforced, read back
    assert cols["core_mhz"] == 1005.0 and cols["core_mhz_requested"] == 1007.0
    with pytest.raises(ControlRangeError, match="100-300 W"):
        cs.validate([50.0])
    cs.restore()
    assert nv.limit_mw == 250_000 and nv.locked is None and not rf.path.exists()


def test_runner_controls_skipped_with_reason(tmp_path: Path) -> None:
    nv = FakeNvml(permitted=False)
    ctl = NvmlPowerLimit(nv)
    with pytest.raises(ControlError, match="not permitted"):
        ctl.set(200.0)
    # a CPU profile on a machine without RAPL or cpufreq: the cap is skipped, the row says why
    prof = bench_profile(load_platform("i7-950"))
    log: list[str] = []
    cs = open_controls(prof, [100.0], [], restore_file=tmp_path / "r.json", log=log.append,
                       powercap_root=tmp_path / "none", cpu_root=tmp_path / "none")
    cols = cs.apply_point(SimpleNamespace(power_cap_w=100.0, dvfs_id=None))
    assert "power_cap_w" not in cols and cols["power_cap_requested_w"] == 100.0
    assert "not applied" in cols["note"] and any("skipped" in m for m in log)


def test_runner_open_controls_gpu_profile_uses_nvml(tmp_path: Path) -> None:
    prof = bench_profile(load_platform("gtx580"))
    nv: Any = FakeNvml()
    with pytest.raises(ControlRangeError, match="outside"):
        open_controls(prof, [400.0], [], restore_file=tmp_path / "r.json", nvml=nv)
    cs = open_controls(prof, [150.0], [], restore_file=tmp_path / "r.json", nvml=nv)
    cols = cs.apply_point(SimpleNamespace(power_cap_w=150.0, dvfs_id=None))
    assert cols["power_cap_w"] == 150.0 and json.loads((tmp_path / "r.json").read_text())["entries"]
    cs.restore()
    assert nv.limit_mw == 250_000
