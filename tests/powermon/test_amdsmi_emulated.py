"""The emulated AMD SMI (an amdsmi whose energy accumulator counts a SensorModel's readings of a power source, in
ticks of the counter resolution, wrapping at its width) read by the real AmdSmiMeter: exact tick counts on a
hand-driven clock, a 32-bit wrap unrolled, the kind dispatch, and a Recorder window on the host clock."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from archline.powermon.counters.amdsmi import (
    AmdSmiFaults,
    AmdSmiGpu,
    AmdSmiMeter,
    EmulatedAmdSmi,
    emulate_from_spec,
)
from archline.powermon.counters.emulated import SensorEnergy, Timeline, device_power
from archline.powermon.emulator.sensor import SensorModel
from archline.powermon.errors import DeviceError
from archline.powermon.record.recorder import Recorder
from archline.powermon.spec import can_emulate, emulate_meter, parse_meters


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def _lib(power: dict[int, tuple[float, float]] | None, model: SensorModel, faults: AmdSmiFaults | None = None,
         speed: float = 1.0) -> tuple[EmulatedAmdSmi, Clock]:
    clk = Clock()
    tl = Timeline(speed, clock=clk)
    src = (lambda t_s: power) if power is not None else (lambda t_s: {0: (12.0, 10.0 if t_s < 1.0 else 20.0)})
    return EmulatedAmdSmi(SensorEnergy(model, device_power(src, [0], tl)), tl, faults), clk


def test_accumulator_counts_the_sensor_readings_in_ticks() -> None:
    model = SensorModel(update_period_s=0.01, window_s=0.01)
    lib, clk = _lib({0: (12.0, 10.0)}, model)          # 120 W
    clk.t += 1.0005                                      # readings at 0, 0.01 .. 1.00 s: 101 of 1.2 J
    e = lib.amdsmi_get_energy_count("emulated-gpu0")
    assert e["counter_resolution"] == 15.3 and e["timestamp"] == 1_000_500_000
    assert e["energy_accumulator"] == math.floor(101 * 1.2e6 / 15.3)
    assert lib.amdsmi_get_power_info("h")["socket_power"] == 120


def test_step_reaches_the_counter_through_the_sensor_lag() -> None:
    model = SensorModel(update_period_s=0.01, window_s=0.01, lag_s=0.05)
    lib, clk = _lib(None, model)                          # 120 W, then 240 W from t = 1 s
    clk.t += 1.0405                                       # readings up to 1.04 s still see 120 W (lag 0.05 s)
    n1 = lib.amdsmi_get_energy_count("h")["energy_accumulator"]
    assert n1 == math.floor(105 * 1.2e6 / 15.3)
    clk.t += 0.1                                          # 1.05 .. 1.14: the window ends at 1.00 .. 1.09 s
    n2 = lib.amdsmi_get_energy_count("h")["energy_accumulator"]
    # reading at 1.05 s averages [0.99, 1.00] (midpoint rule: all 120 W); the next nine are 240 W
    assert n2 == math.floor((106 * 1.2 + 9 * 2.4) * 1e6 / 15.3)


def test_meter_unrolls_a_32_bit_wrap() -> None:
    model = SensorModel(update_period_s=0.001, window_s=0.001)
    start = 2**32 - 20_000
    lib, clk = _lib({0: (12.0, 25.0)}, model, AmdSmiFaults(counter_bits=32, start_ticks=start))   # 300 W
    m = AmdSmiMeter(0, lib=lib, clock=clk)
    raws, joules = [], []
    for _ in range(4):
        clk.t += 0.5
        raws.append(lib.ticks(lib.timeline.emulated_time_s()))
        joules.append(m._read()[0])
    assert raws[-1] < start and m.wraps == 1                      # the counter did wrap ...
    assert np.diff(joules) == pytest.approx(0.5 * 300.0, abs=2 * 15.3e-6)   # ... and every step is 150 J


def test_faults_and_name() -> None:
    lib, clk = _lib({0: (12.0, 1.0)}, SensorModel(0.001, 0.001), AmdSmiFaults(fail_after_s=1.0))
    g = AmdSmiGpu.open(0, lib)
    assert "emulated" in g.name() and g.readings()["core_mhz"] == 1700.0
    clk.t += 2.0
    with pytest.raises(DeviceError, match="the emulated GPU is gone"):
        g.energy()


def test_dispatch_and_a_recorder_window() -> None:
    (spec,) = parse_meters([{"name": "mi250", "kind": "amdsmi"}], "p.toml")
    assert can_emulate(spec)
    meter = emulate_meter(spec, lambda t_s: {0: (12.0, 25.0)}, speed=10.0)   # 300 W, 10x
    assert meter.emulated and meter.speed == 10.0 and meter.name == "mi250"
    assert meter.info()["sensor_model"]["update_period_s"] == 0.001
    with Recorder([meter]) as rec:
        rec.begin("w")
        time.sleep(0.2)
        region = rec.end("w").meters["mi250"]
    assert region.emulated and region.device_time_s == pytest.approx(10 * region.time_s)
    # 300 W, to within the edges' one reading each (1 ms of device time) and the tick resolution
    assert region.devices["gpu"].mean_power_w == pytest.approx(300.0, rel=0.02)
    assert region.readings["core_mhz"] == 1700.0 and region.readings["temp_c_max"] == 60.0


def test_open_from_spec_without_amdsmi() -> None:
    (spec,) = parse_meters([{"name": "g", "kind": "amdsmi", "index": 1}], "p.toml")
    with pytest.raises(DeviceError, match="AMD SMI unavailable"):
        from archline.powermon.spec import open_meter

        open_meter(spec)
    with pytest.raises(Exception, match="not an AMD SMI"):
        emulate_from_spec(spec.model_copy(update={"kind": "hwmon"}), None)


def test_meter_list_rows() -> None:
    from archline.powermon.counters.amdsmi import list_meters

    lib, _ = _lib({0: (12.0, 1.0)}, SensorModel(0.001, 0.0))
    (row,) = list_meters(lib)
    assert row["available"] and row["name"] == "gpu0" and "(emulated)" in row["detail"]
    (none,) = list_meters()
    assert not none["available"] and "AMD SMI unavailable" in none["detail"]
