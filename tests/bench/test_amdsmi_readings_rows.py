"""Clocks and temperature an AMD SMI meter samples on its polls reach the region's summary and the result row when
the back end measures no clock itself (an OpenCL run on an AMD GPU), and a throttling clock seen only by the meter
flags the row."""

from __future__ import annotations

import time
import types
from typing import Any

from archline.bench.kernels import Counts, KernelSpec, RunResult
from archline.bench.run.points import Point, RunSettings
from archline.bench.run.rows import MeterInfo, Region, RunContext, build_row
from archline.bench.run.runner import Runner
from archline.powermon.counters.amdsmi import AmdSmiMeter
from archline.powermon.record.recorder import Recorder


class ClockedAmdSmi:
    """An AMD GPU drawing 200 W (the accumulator counts 15.3 uJ ticks from its creation), GFX at 1502 MHz, memory at
    1600 MHz, edge at 61 C."""

    AmdSmiClkType = types.SimpleNamespace(GFX=0, MEM=1)
    AmdSmiTemperatureType = types.SimpleNamespace(EDGE=0)
    AmdSmiTemperatureMetric = types.SimpleNamespace(CURRENT=0)

    def __init__(self) -> None:
        self.t0 = time.monotonic()

    def amdsmi_init(self) -> None:
        pass

    def amdsmi_get_processor_handles(self) -> list[str]:
        return ["h0"]

    def amdsmi_get_energy_count(self, h: str) -> dict[str, Any]:
        return {"energy_accumulator": int((time.monotonic() - self.t0) * 200.0 / 15.3e-6), "counter_resolution": 15.3}

    def amdsmi_get_clock_info(self, h: str, kind: int) -> dict[str, Any]:
        return {"clk": 1502 if kind == 0 else 1600, "min_clk": 500, "max_clk": 1700}

    def amdsmi_get_temp_metric(self, h: str, kind: int, metric: int) -> int:
        return 61


class NoClockKernel:
    """A prepared kernel whose results carry no clock (OpenCL has no clock query)."""

    def run(self, reps: int) -> RunResult:
        time.sleep(2e-4 * reps)
        return RunResult(2e-4 * reps, reps, Counts(flops_sp=100 * reps), True, {})

    def close(self) -> None:
        pass


class Backend:
    name = "fake"

    def prepare(self, spec: object, device: object = None) -> NoClockKernel:
        return NoClockKernel()


def test_meter_readings_reach_the_summary_and_the_row() -> None:
    meter = AmdSmiMeter(0, lib=ClockedAmdSmi(), poll_s=0.005, name="gpu")
    rec = Recorder([meter]).start()
    try:
        rec.begin("w")
        time.sleep(0.05)
        summary = rec.end("w").summary()
        info = MeterInfo("gpu:amdsmi", meter.update_hz, False, "amdsmi meter gpu")
        settings = RunSettings(fixed_reps=100, min_regions=2, max_regions=2, min_region_s=0.0, idle_s=0.0,
                               warmup_reps=1, traces=False)
        runner = Runner(Backend(), rec, info, RunContext.new("x", "dev", "fake", False), settings)  # type: ignore[arg-type]
        row = runner.measure(Point(KernelSpec("fake", "intensity", "sp", "mem", {})), 0)
    finally:
        rec.stop()
    r = summary["gpu"]["readings"]
    assert (r["core_mhz"], r["core_mhz_min"], r["core_mhz_max"], r["mem_mhz"], r["temp_c_max"]) == (
        1502.0, 1502.0, 1502.0, 1600.0, 61.0)
    assert r["n_readings"] >= 2               # the polls at both edges at least
    assert (row["core_mhz"], row["mem_mhz"], row["effective_clock_hz"]) == (1502.0, 1600.0, 1502e6)
    assert row["clock_method"].startswith("mean of ") and row["clock_method"].endswith(" polls of meter gpu:amdsmi")
    assert row["energy_j"] is not None and row["throttled"] is False


def _region(core_mhz: float, extra: dict[str, Any] | None = None) -> Region:
    res = RunResult(1.0, 10, Counts(flops_sp=1000), True, extra or {})
    return Region(res, 1.0, 100.0, 0.1, 50, readings={"core_mhz": core_mhz, "mem_mhz": 1600.0, "n_readings": 50.0})


def test_a_clock_drop_seen_by_the_meter_flags_throttling_and_the_back_end_clock_wins() -> None:
    spec = KernelSpec("fake", "intensity", "sp", "mem", {})
    info = MeterInfo("gpu:amdsmi", 1000.0, False, "amdsmi meter gpu")
    ctx = RunContext.new("x", "dev", "fake", False)
    row = build_row(ctx, spec, "p", [_region(1700.0), _region(1650.0), _region(1300.0)], info, ci_rel=0.01,
                    max_regions=9)
    assert row["throttled"] is True and "effective clock 1300-1700 MHz over the regions" in row["note"]
    assert row["core_mhz"] == 1650.0 and row["clock_method"] == "mean of 50 polls of meter gpu:amdsmi"
    # a back end that measured its clock keeps it (the meter's readings only fill in where it has none)
    row = build_row(ctx, spec, "p", [_region(1700.0, {"effective_clock_hz": 1.2e9})] * 2, info, ci_rel=0.01,
                    max_regions=9)
    assert (row["core_mhz"], row["effective_clock_hz"], row["mem_mhz"]) == (1200.0, 1.2e9, 1600.0)
    assert "clock_method" not in row
