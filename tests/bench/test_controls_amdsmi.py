"""AMD GPU power cap and clocks through powermon's one AMD SMI layer (AmdSmiGpu), against a fake amdsmi that keeps the
real module's units (microwatts, MHz), argument types and side effects (setting a range leaves the AUTO performance
level; the range set is what the device then reports): requested vs enforced, range errors, the restore file,
restore after a crash, the vendor picked by open_controls, and each failure worded."""

from __future__ import annotations

import json
import types
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest

from archline.bench.controls import (
    ControlError,
    ControlRangeError,
    ControlSet,
    RestoreFile,
    apply_pending_restore,
    open_controls,
)
from archline.bench.hip.vendor import AmdSmiClockRange, AmdSmiPowerCap
from archline.powermon.counters.amdsmi import AmdSmiCallError, AmdSmiGpu

LEVELS = ("AUTO", "LOW", "HIGH", "MANUAL", "STABLE_STD", "STABLE_PEAK", "DETERMINISM")


class FakeAmdSmi:
    """The amdsmi calls the controls make, for one MI250X-like GCD. The SMU takes whole watts; the memory clock
    has four DPM levels and a range snaps down to one."""

    AmdSmiClkType = types.SimpleNamespace(SYS=0, GFX=0, MEM=1)
    AmdSmiDevPerfLevel = types.SimpleNamespace(**{n: i for i, n in enumerate(LEVELS)})
    MEM_LEVELS = (400, 700, 1200, 1600)
    HW: ClassVar[dict[int, tuple[int, int]]] = {0: (500, 1700), 1: (400, 1600)}   # hardware clock limits, MHz

    def __init__(self, permitted: bool = True, rocm5: bool = False, n: int = 1) -> None:
        self.cap_uw, self.permitted, self.rocm5, self.n = 300_000_000, permitted, rocm5, n
        self.ranges = dict(self.HW)
        self.level = "AUTO"
        self.calls: list[str] = []

    def _set(self, fn: str) -> None:
        self.calls.append(fn)
        if not self.permitted:
            raise RuntimeError("Error code:\n\t10 | AMDSMI_STATUS_NO_PERM - Permission Denied")

    def amdsmi_init(self) -> None:
        pass

    def amdsmi_get_processor_handles(self) -> list[str]:
        return [f"h{i}" for i in range(self.n)]

    def amdsmi_get_power_cap_info(self, h: str) -> dict[str, Any]:
        if self.rocm5:                               # ROCm 5's amdsmi said nothing of the range
            return {"dpm_cap": 1700, "power_cap": self.cap_uw}
        return {"power_cap": self.cap_uw, "default_power_cap": 500_000_000, "dpm_cap": 1700,
                "min_power_cap": 100_000_000, "max_power_cap": 560_000_000}

    def amdsmi_set_power_cap(self, h: str, sensor: int, cap: int) -> None:
        assert isinstance(cap, int) and sensor == 0          # the real wrapper refuses a float
        self._set("amdsmi_set_power_cap")
        self.cap_uw = cap // 1_000_000 * 1_000_000

    def amdsmi_get_clock_info(self, h: str, kind: int) -> dict[str, Any]:
        lo, hi = self.ranges[kind]
        natural = 1650 if kind == 0 else 1600
        return {"clk": min(max(natural, lo), hi), "min_clk": lo, "max_clk": hi, "clk_locked": False,
                "clk_deep_sleep": "N/A"}

    def amdsmi_set_gpu_clk_range(self, h: str, lo: int, hi: int, kind: int) -> None:
        assert isinstance(lo, int) and isinstance(hi, int)
        self._set("amdsmi_set_gpu_clk_range")
        hw_lo, hw_hi = self.HW[kind]
        if not hw_lo <= lo <= hi <= hw_hi:
            raise RuntimeError("AMDSMI_STATUS_INVAL - Invalid parameters")
        if kind == 1:
            lo, hi = (max(v for v in self.MEM_LEVELS if v <= x) for x in (lo, hi))
        self.ranges[kind] = (lo, hi)
        self.level = "MANUAL"

    def amdsmi_get_gpu_perf_level(self, h: str) -> str:
        return f"AMDSMI_DEV_PERF_LEVEL_{self.level}"

    def amdsmi_set_gpu_perf_level(self, h: str, level: int) -> None:
        self._set("amdsmi_set_gpu_perf_level")
        self.level = LEVELS[level]


def test_layer_controls_in_watts_and_mhz() -> None:
    lib = FakeAmdSmi()
    g = AmdSmiGpu.at(lib, 0)
    assert g.power_limit_w() == 300.0 and g.power_limit_range_w() == (100.0, 560.0)
    assert g.set_power_limit_w(250.4) == 250.0 and lib.cap_uw == 250_000_000
    assert g.clock_range_mhz("core") == (500.0, 1700.0) and g.clock_range_mhz("mem") == (400.0, 1600.0)
    assert g.perf_level() == "AUTO"
    assert g.set_clock_range_mhz("core", 1100, 1100) == 1100.0 and g.perf_level() == "MANUAL"
    g.set_perf_level("AUTO")
    assert lib.level == "AUTO"
    with pytest.raises(AmdSmiCallError, match="no performance level named 'TURBO'"):
        g.set_perf_level("TURBO")
    assert AmdSmiGpu.at(FakeAmdSmi(rocm5=True), 0).power_limit_range_w() is None


def test_cap_requested_enforced_and_restored(tmp_path: Path) -> None:
    lib = FakeAmdSmi()
    rf = RestoreFile(tmp_path / "restore.json")
    cs = ControlSet(rf, cap=AmdSmiPowerCap(lib, 0))
    cols = cs.apply_point(SimpleNamespace(power_cap_w=287.5, dvfs_id=None))
    assert cols["power_cap_requested_w"] == 287.5 and cols["power_cap_w"] == 287.0   # whole watts, read back
    assert lib.cap_uw == 287_000_000 and "note" not in cols                           # within 2 %
    assert rf.entries() == [{"kind": "amdsmi_power", "target": "gpu0", "state": {"limit_mw": 300_000}}]
    cs.apply_point(SimpleNamespace(power_cap_w=150.0, dvfs_id=None))
    assert rf.entries()[0]["state"] == {"limit_mw": 300_000}                          # the original is kept
    with pytest.raises(ControlRangeError, match="gpu0's allowed range 100-560 W"):
        cs.apply_point(SimpleNamespace(power_cap_w=600.0, dvfs_id=None))
    cs.restore()
    assert lib.cap_uw == 300_000_000 and not rf.path.exists()


def test_clock_ranges_set_and_restored_with_the_performance_level(tmp_path: Path) -> None:
    lib = FakeAmdSmi()
    rf = RestoreFile(tmp_path / "restore.json")
    settings = {"low": {"core_mhz": 1100.0, "mem_mhz": 1000.0, "core_v": None, "mem_v": None},
                "high": {"core_mhz": 1600.0, "mem_mhz": 1600.0, "core_v": None, "mem_v": None}}
    cs = ControlSet(rf, core=AmdSmiClockRange(lib, 0, "core"), mem=AmdSmiClockRange(lib, 0, "mem"),
                    settings=settings)
    assert cs.core is not None and cs.core.available() == (True, "AMD SMI core clock range of GPU 0")
    cols = cs.apply_point(SimpleNamespace(power_cap_w=None, dvfs_id="low"))
    assert (cols["core_mhz"], cols["core_mhz_requested"]) == (1100.0, 1100.0)
    assert (cols["mem_mhz"], cols["mem_mhz_requested"]) == (700.0, 1000.0)    # snapped to a DPM level
    assert cols["note"] == "mem_mhz: requested 1000, enforced 700 MHz"
    assert lib.ranges == {0: (1100, 1100), 1: (700, 700)} and lib.level == "MANUAL"
    states = {e["kind"]: e["state"] for e in rf.entries()}
    assert states == {"amdsmi_core_clock": {"min_mhz": 500, "max_mhz": 1700, "perf_level": "AUTO"},
                      "amdsmi_mem_clock": {"min_mhz": 400, "max_mhz": 1600, "perf_level": "AUTO"}}
    # the device now reports 1100-1100 as the core range; the next point is checked against the range before
    cols = cs.apply_point(SimpleNamespace(power_cap_w=None, dvfs_id="high"))
    assert (cols["core_mhz"], cols["mem_mhz"]) == (1600.0, 1600.0) and "note" not in cols
    cs.restore()
    assert lib.ranges == FakeAmdSmi.HW and lib.level == "AUTO" and not rf.path.exists()


def test_a_crashed_run_is_restored_by_the_next(tmp_path: Path) -> None:
    lib = FakeAmdSmi()
    rpath = tmp_path / "state" / "restore.json"
    cs = ControlSet(RestoreFile(rpath), cap=AmdSmiPowerCap(lib, 0), core=AmdSmiClockRange(lib, 0, "core"),
                    mem=AmdSmiClockRange(lib, 0, "mem"),
                    settings={"s": {"core_mhz": 900.0, "mem_mhz": 1200.0, "core_v": None, "mem_v": None}})
    cs.apply_point(SimpleNamespace(power_cap_w=200.0, dvfs_id="s"))
    assert (lib.cap_uw, lib.ranges, lib.level) == (200_000_000, {0: (900, 900), 1: (1200, 1200)}, "MANUAL")
    # the process dies here; the next run applies the restore file first (in the order it was written: core's range
    # and level, then mem's range, which leaves AUTO again, then its level), with the amdsmi it is given
    log: list[str] = []
    assert apply_pending_restore(rpath, amdsmi=lib, log=log.append) == 3
    assert (lib.cap_uw, lib.ranges, lib.level) == (300_000_000, FakeAmdSmi.HW, "AUTO")
    assert not rpath.exists()
    assert [m.split()[1] for m in log] == ["amdsmi_power", "amdsmi_core_clock", "amdsmi_mem_clock"]


def test_failures_are_worded() -> None:
    denied = FakeAmdSmi(permitted=False)
    with pytest.raises(ControlError) as e:
        AmdSmiPowerCap(denied, 0).set(200.0)
    assert str(e.value) == ("AMD SMI amdsmi_set_power_cap: not permitted (Error code: 10 | AMDSMI_STATUS_NO_PERM - "
                            "Permission Denied); run as root (AMD SMI sets caps and clocks through the amdgpu "
                            "driver's root-only sysfs files)")       # one line, however the library spaces it
    with pytest.raises(ControlError, match="AMD SMI amdsmi_set_gpu_clk_range failed: AMDSMI_STATUS_INVAL"):
        AmdSmiClockRange(FakeAmdSmi(), 0, "core").set(2500.0)
    ok, why = AmdSmiPowerCap(FakeAmdSmi(), 3).available()
    assert not ok and why == "no AMD GPU 3 (found 1)"

    class NoRange(FakeAmdSmi):   # an amdsmi older than the clock-range call
        def __getattribute__(self, name: str) -> Any:
            if name == "amdsmi_set_gpu_clk_range":
                raise AttributeError(name)
            return super().__getattribute__(name)

    assert AmdSmiClockRange(NoRange(), 0, "mem").available() == (False, "this amdsmi has no amdsmi_set_gpu_clk_range")

    class NotSupported(FakeAmdSmi):
        def amdsmi_get_gpu_perf_level(self, h: str) -> str:
            raise RuntimeError("AMDSMI_STATUS_NOT_SUPPORTED")

    ok, why = AmdSmiClockRange(NotSupported(), 0, "core").available()
    assert not ok and why == ("AMD SMI amdsmi_get_gpu_perf_level: not supported on this GPU "
                              "(AMDSMI_STATUS_NOT_SUPPORTED)")


def _gpu_profile(backend: str) -> Any:
    setting = SimpleNamespace(core_mhz=1200.0, mem_mhz=None, core_v=None, mem_v=None)
    return SimpleNamespace(platform=SimpleNamespace(device_kind="gpu"),
                           bench=SimpleNamespace(backend=backend, device="0"),
                           dvfs=SimpleNamespace(core_clock_files=(), mem_clock_files=()),
                           dvfs_setting=lambda sid: setting)


def test_open_controls_picks_amdsmi_for_hip(tmp_path: Path) -> None:
    lib = FakeAmdSmi()
    with pytest.raises(ControlRangeError, match="power cap 50 W is outside gpu0's allowed range 100-560 W"):
        open_controls(_gpu_profile("hip"), [50.0], [], restore_file=tmp_path / "r.json", amdsmi=lib)
    cs = open_controls(_gpu_profile("hip"), [250.0], ["s"], restore_file=tmp_path / "r.json", amdsmi=lib)
    assert isinstance(cs.cap, AmdSmiPowerCap) and isinstance(cs.core, AmdSmiClockRange)
    cols = cs.apply_point(SimpleNamespace(power_cap_w=250.0, dvfs_id="s"))
    assert (cols["power_cap_w"], cols["core_mhz"]) == (250.0, 1200.0)
    kinds = sorted(e["kind"] for e in json.loads((tmp_path / "r.json").read_text())["entries"])
    assert kinds == ["amdsmi_core_clock", "amdsmi_power"]
    cs.restore()
    assert (lib.cap_uw, lib.ranges[0], lib.level) == (300_000_000, (500, 1700), "AUTO")


def test_open_controls_opencl_falls_back_to_amdsmi_and_says_why(tmp_path: Path) -> None:
    """An OpenCL run on an AMD GPU: NVML is tried first and has no GPU, AMD SMI is used; with neither control
    there, the cap is skipped with the reason and the row says it was not applied."""

    class NoGpuNvml:   # an initialised NVML that lists no GPU
        def nvmlDeviceGetHandleByIndex(self, i: int) -> None:
            raise RuntimeError("Invalid Argument")

    log: list[str] = []
    lib = FakeAmdSmi()
    cs = open_controls(_gpu_profile("opencl"), [200.0], [], restore_file=tmp_path / "r.json", nvml=NoGpuNvml(),
                       amdsmi=lib, log=log.append)
    assert isinstance(cs.cap, AmdSmiPowerCap) and cs.cap_skip == "" and not log

    class NoCap(FakeAmdSmi):
        def amdsmi_get_power_cap_info(self, h: str) -> dict[str, Any]:
            raise RuntimeError("AMDSMI_STATUS_NOT_SUPPORTED")

    cs = open_controls(_gpu_profile("opencl"), [200.0], [], restore_file=tmp_path / "r.json", nvml=NoGpuNvml(),
                       amdsmi=NoCap(), log=log.append)
    cols = cs.apply_point(SimpleNamespace(power_cap_w=200.0, dvfs_id=None))
    assert cs.cap is None and "power_cap_w" not in cols and cols["power_cap_requested_w"] == 200.0
    assert cs.cap_skip == ("NVML nvmlDeviceGetHandleByIndex failed: Invalid Argument; AMD SMI "
                           "amdsmi_get_power_cap_info: not supported on this GPU (AMDSMI_STATUS_NOT_SUPPORTED)")
    assert cols["note"] == f"power_cap_w 200 not applied: {cs.cap_skip}"
    assert log == [f"power cap control skipped: {cs.cap_skip}", cols["note"]]   # when opened, and on the point
