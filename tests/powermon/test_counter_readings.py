"""Clocks and temperature sampled by the counter meters on their polls and reported per Recorder window
(MeterRegion.readings), poll gaps counted, on a hand-driven clock: exact values."""

from __future__ import annotations

import types
from typing import Any

import pytest
from support.counter_meters import FakeClock
from support.fakes import FakeNvml

from archline.powermon.counters.base import CounterMeter, ReadingsMeter
from archline.powermon.counters.nvml import NvmlMeter
from archline.powermon.record.recorder import Recorder


class Layer:
    """A device layer whose clocks follow a script: one entry per readings() call."""

    def __init__(self, core_mhz: list[float]) -> None:
        self.core = list(core_mhz)
        self.calls = 0

    def readings(self) -> dict[str, float]:
        v = self.core[min(self.calls, len(self.core) - 1)]
        self.calls += 1
        return {"core_mhz": v, "temp_c": 50.0 + self.calls}


def test_window_readings_are_the_polls_of_the_window() -> None:
    clk = FakeClock(0.0)
    m = ReadingsMeter(Layer([900, 1000, 1200, 1100, 800]), "gpu0-readings", poll_s=0.1, clock=clk)
    for t in (0.0, 0.1, 0.2, 0.3, 0.4):      # polls at 0.0 .. 0.4 s read 900, 1000, 1200, 1100, 800
        clk.t = t
        m.poll()
    r = m.window_readings(0.05, 0.25)        # the polls at 0.1, 0.2 and the first at/after the end (0.3)
    assert r["n_readings"] == 3
    assert r["core_mhz"] == pytest.approx((1000 + 1200 + 1100) / 3)
    assert (r["core_mhz_min"], r["core_mhz_max"]) == (1000, 1200)
    assert (r["temp_c_min"], r["temp_c_max"]) == (52, 54)
    reg = m.region(0.05, 0.25)
    assert reg.readings == r and reg.channels == {} and reg.energy_j == 0 and reg.gaps == 0
    assert m.window_readings(5.0, 6.0) == {}


def test_counter_meter_counts_poll_gaps() -> None:
    class Ramp(CounterMeter):
        def _read(self) -> list[float]:
            return [10.0 * self.clock()]       # 10 W

    clk = FakeClock(0.0)
    m = Ramp(["c"], {"cpu": ["c"]}, poll_s=0.1, clock=clk)
    for t in (0.0, 0.1, 0.2, 0.3, 1.0, 1.1):  # 0.3 -> 1.0: six polls missed
        clk.t = t
        m.poll()
    reg = m.region(0.0, 1.1)
    assert reg.energy_j == pytest.approx(11.0) and reg.mean_power_w == pytest.approx(10.0)
    assert (reg.gaps, reg.lost_samples, reg.expected_samples) == (1, 6, 12)
    assert reg.lost_s == pytest.approx(0.7) and "energy is whole" in reg.warnings[0]
    m.speed = 50.0                             # an emulator 50x faster: device seconds, same joules
    reg = m.region(0.0, 1.1)
    assert reg.device_time_s == pytest.approx(55.0) and reg.mean_power_w == pytest.approx(0.2)


def test_nvml_meter_samples_clocks_in_a_recorder_window() -> None:
    class ClockedNvml(FakeNvml):
        NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 0, 1, 0

        def nvmlDeviceGetClockInfo(self, h: int, t: int) -> int:
            return 1410 if t == 0 else 1215

        def nvmlDeviceGetTemperature(self, h: int, t: int) -> int:
            return 64

    m = NvmlMeter(0, nvml=ClockedNvml(), poll_s=0.005)
    with Recorder([m]) as rec:
        rec.begin("w")
        region = rec.end("w").meters[m.name]
    r = region.readings
    assert r["n_readings"] >= 2 and r["core_mhz"] == 1410 and r["mem_mhz_max"] == 1215 and r["temp_c_max"] == 64
    off = NvmlMeter(0, nvml=ClockedNvml(), readings=False)
    off.poll()
    off.poll()
    assert off.window_readings(0, float("inf")) == {}


def test_a_layer_without_clocks_keeps_the_energy() -> None:
    m = NvmlMeter(0, nvml=FakeNvml(), poll_s=0.005)       # FakeNvml has power and energy, no clocks
    m.poll()
    m.poll()
    assert m.window_readings(0, float("inf")) == {} and "NVML_CLOCK_SM" in m.info()["readings_error"]
    broken: Any = types.SimpleNamespace(readings=lambda: 1 / 0)
    rm = ReadingsMeter(broken, "x")
    rm.poll()
    assert rm.readings_error == "division by zero"
