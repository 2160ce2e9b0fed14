"""``archline meter probe``: an emulated on-board sensor measured against the emulated PowerMon 2 recovers the
update period, averaging window, lag and quantum it was given; its sensor profile is what the integrator uses.

Tolerances (stated in docs/meters.md): update period within 0.1% (the requirement is 2%; the lattice fit gives
about 1e-6), window and lag within one reference-sample period (1/1024 s, the PowerMon 2's fastest per-channel
rate), quantum within 1e-6 W.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.powermon_helpers import one_line, run

from archline.common import outputs
from archline.powermon.errors import MeterError
from archline.powermon.record.integrate import SensorLimits, sensor_window
from archline.powermon.record.meters import ChannelResult, DeviceResult, MeterRegion
from archline.powermon.sensor.apply import LimitedMeter
from archline.powermon.sensor.probe import quantum, reading_times, update_period
from archline.powermon.sensor.profile import FORMAT, SensorProfile
from archline.powermon.sensor.response import fit_response

SensorModel = pytest.importorskip("archline.powermon.emulator.sensor").SensorModel

REF_PERIOD_S = 1 / 1024
GIVEN = {"update_period_s": 0.05, "window_s": 0.02, "lag_s": 0.03, "quantum_w": 0.25, "gain": 1.07,
         "offset_w": -3.5}


def _emulated(model: Any, speed: float = 10.0, **kw: Any) -> tuple[Any, Any, Any]:
    from archline.bench.monitor import PhasePower, PhasePowerSource
    from archline.powermon.sensor.run import REFERENCE_SPEC, EdgeLoad, emulated_pair

    schedule = PhasePower(40.0, 160.0)
    ref, sensor = emulated_pair(model, PhasePowerSource(schedule, REFERENCE_SPEC), speed=speed, **kw)
    return ref, sensor, EdgeLoad(schedule.edge)


@pytest.fixture(scope="module")
def probed() -> dict[str, float]:
    from archline.powermon.sensor.run import probe

    ref, sensor, load = _emulated(SensorModel(**GIVEN), speed=20.0)
    return probe(ref, sensor, load, n_steps=20, step_s=0.3, seed=3).as_dict()


def test_probe_recovers_what_the_emulated_sensor_was_given(probed: dict[str, float]) -> None:
    assert probed["update_period_s"] == pytest.approx(GIVEN["update_period_s"], rel=1e-3)
    assert abs(probed["window_s"] - GIVEN["window_s"]) <= REF_PERIOD_S
    assert abs(probed["lag_s"] - GIVEN["lag_s"]) <= REF_PERIOD_S
    assert probed["quantum_w"] == pytest.approx(GIVEN["quantum_w"], abs=1e-6)
    # the probe's own gain/offset are a by-product (calibrate measures them): still close
    assert probed["gain"] == pytest.approx(GIVEN["gain"], rel=0.01)
    assert 0 < probed["window_err_s"] <= 2 * REF_PERIOD_S and 0 < probed["lag_err_s"] <= 2 * REF_PERIOD_S


def test_update_period_from_an_incomplete_jittered_lattice() -> None:
    rng = np.random.default_rng(0)
    k = np.sort(rng.choice(np.arange(2000), 600, replace=False))          # most updates unseen (steady power)
    t = 3.7 + 0.1003 * k + rng.uniform(-1e-3, 1e-3, k.size)              # polled at 1 kHz
    period, err = update_period(t)
    assert period == pytest.approx(0.1003, rel=1e-4)
    assert 0 < err < 1e-5
    with pytest.raises(MeterError, match="no regular lattice"):
        update_period(np.cumsum(rng.uniform(0.05, 0.15, 50)))


def test_reading_times_are_the_value_changes() -> None:
    t = np.arange(10) * 0.001
    v = np.array([1, 1, 1, 2, 2, 2, 2, 3, 3, 3], float)
    assert reading_times(t, v).tolist() == [0.0, 0.003, 0.007]


def test_quantum_is_the_step_every_value_is_a_multiple_of() -> None:
    rng = np.random.default_rng(1)
    assert quantum(np.round(rng.uniform(30, 200, 60) / 0.125) * 0.125)[0] == pytest.approx(0.125, abs=1e-9)
    assert quantum(np.round(rng.uniform(30, 200, 60) / 0.001) * 0.001)[0] == pytest.approx(0.001, abs=1e-12)
    assert quantum(rng.uniform(30, 200, 60)) == (0.0, 0.0)           # no lattice: no quantum
    assert quantum(np.array([39.25, 167.75, 39.25])) == (0.0, 0.0)     # too few values to tell


@pytest.mark.parametrize(("window_s", "lag_s"), [(0.03, 0.01), (0.08, 0.0), (0.2, 0.15)])
def test_fit_response_on_an_exact_reference(window_s: float, lag_s: float) -> None:
    """Without the emulators: a square wave sampled at 1 kHz, and a sensor model's readings of it."""
    rng = np.random.default_rng(7)
    edges = np.cumsum(rng.uniform(0.5, 0.9, 60))

    def power_w(t: np.ndarray) -> np.ndarray:
        return np.where(np.searchsorted(edges, t) % 2 == 0, 50.0, 120.0)

    model = SensorModel(update_period_s=0.1, window_s=window_s, lag_s=lag_s, gain=0.95, offset_w=2.0)
    ref_t = np.arange(0, edges[-1], REF_PERIOD_S)
    read_t, read_w = model.readings(power_w, 1.0, edges[-1])
    r = fit_response(ref_t, power_w(ref_t), read_t, read_w, max_window_s=0.4, max_lag_s=0.4, resolution_s=2.5e-4)
    assert abs(r.window_s - window_s) <= REF_PERIOD_S and abs(r.lag_s - lag_s) <= REF_PERIOD_S
    assert r.gain == pytest.approx(0.95, rel=2e-3) and r.offset_w == pytest.approx(2.0, abs=0.2)


def test_sensor_profile_round_trip_version_and_inputs(tmp_path: Path) -> None:
    p = SensorProfile(meter="nvml0", emulated=True, update_period_s=0.1, window_s=0.05, lag_s=0.02, quantum_w=0.01)
    out = p.write(tmp_path / "s.json")
    back = SensorProfile.read(out)
    assert back == p and json.loads(out.read_text())["format"] == FORMAT
    assert back.limits().min_window_s == pytest.approx((0.1 + 0.05) / 0.1)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**json.loads(out.read_text()), "format": "archline.costs/1"}))
    with pytest.raises(MeterError, match="not a sensor profile"):
        SensorProfile.read(bad)
    unknown = tmp_path / "unknown.json"
    unknown.write_text(json.dumps({**json.loads(out.read_text()), "windw_s": 1}))
    with pytest.raises(MeterError, match="windw_s"):
        SensorProfile.read(unknown)
    outputs.note_input(out)                      # read as an input: writing over it is refused
    with pytest.raises(Exception, match="is an input"):
        p.write(out)


LIMITS = SensorLimits(update_period_s=0.1, window_s=0.05, lag_s=0.02, source="sensor profile s.json")


def test_a_window_shorter_than_the_sensor_allows_is_refused_or_widened() -> None:
    assert sensor_window(0.0, 2.0, LIMITS) == (0.0, 2.0, "")
    with pytest.raises(MeterError, match=r"shorter than the sensor allows.*every 0.1 s averaging 0.05 s"):
        sensor_window(10.0, 10.5, LIMITS)
    a, b, why = sensor_window(10.0, 10.5, LIMITS, widen=True)
    assert (a, b) == pytest.approx((9.5, 11.0)) and "widened from 0.5 s to 1.5 s" in why


class _FakeMeter:
    name, emulated, kind, speed = "fake", True, "sampling", 1.0

    def __init__(self) -> None:
        self.asked: list[tuple[float, float]] = []

    def region(self, t0_s: float, t1_s: float) -> MeterRegion:
        self.asked.append((t0_s, t1_s))
        d = t1_s - t0_s
        return MeterRegion("fake", "sampling", True, t0_s, t1_s, {"0": ChannelResult(100 * d, 0.1, 100, 10, "r")},
                           {"gpu": DeviceResult(100 * d, 0.1, 100, ["r"])}, 100 * d, 0.1, 100.0, 10, 10.0)


def test_limited_meter_widens_and_its_bound_says_why() -> None:
    inner = _FakeMeter()
    m = LimitedMeter(inner, LIMITS, widen=True)
    r = m.region(5.0, 5.2)
    assert inner.asked == [pytest.approx((4.35, 5.85))]
    assert r.energy_err_j > 0.1 and any("widened" in w for w in r.warnings)
    assert any("bound includes" in w and "every 0.1 s" in w for w in r.warnings)
    with pytest.raises(MeterError, match="shorter than the sensor allows"):
        LimitedMeter(_FakeMeter(), LIMITS).region(5.0, 5.2)


def test_emulated_sensor_meter_refuses_a_short_window_and_widens_on_request() -> None:
    import time

    from archline.powermon.record.recorder import Recorder

    model = SensorModel(update_period_s=0.05, window_s=0.02, lag_s=0.01)
    lim = SensorLimits(0.05, 0.02, 0.01, source="probe")          # shortest window (0.05 + 0.02) / 0.1 = 0.7 s
    for widen in (False, True):
        ref, raw, load = _emulated(model, speed=10.0)
        sensor = LimitedMeter(raw, lim, widen=widen)
        with Recorder([ref, sensor]) as rec:
            t0 = rec.begin("short")
            time.sleep(0.1)                                         # room for the widened window on both sides
            load.high()
            time.sleep(0.01)
            load.low()
            time.sleep(0.1)
            if not widen:
                with pytest.raises(MeterError, match="shorter than the sensor allows"):
                    rec.end("short", t0_s=t0 + 0.1, t1_s=t0 + 0.11)   # 0.1 s emulated
                continue
            r = rec.end("short", t0_s=t0 + 0.1, t1_s=t0 + 0.11).meters[sensor.name]
        assert r.device_time_s == pytest.approx(0.7) and r.t_start_s < t0 + 0.1
        assert any("widened from 0.1 s to 0.7 s" in w for w in r.warnings)
        # the sensor's share of the bound: swing x (period + window) at least
        assert r.energy_err_j >= 120.0 * 0.07


def test_probe_cli_emulated_writes_a_profile(tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "nvml0.json"
    code, stdout, err = run(capsys, "meter", "probe", "nvml0", "--emulate", "--steps", "20", "--speed", "20",
                            "--out", str(out), "--format", "json", "--seed", "2")
    assert code == 0, err
    doc = json.loads(stdout)
    assert doc["emulated"] is True and doc["given"]["update_period_s"] == 0.05
    prof = SensorProfile.read(out)
    assert prof.meter == "nvml0" and prof.emulated
    assert prof.update_period_s == pytest.approx(0.05, rel=1e-3)
    assert abs(prof.lag_s - 0.03) <= REF_PERIOD_S and abs(prof.window_s - 0.02) <= REF_PERIOD_S


def test_probe_cli_real_hardware_is_one_line(tmp_path: Path, capsys: Any) -> None:
    code, _, err = run(capsys, "meter", "probe", "nvml0", "--out", str(tmp_path / "p.json"))
    assert code == 2
    assert "use --emulate" in one_line(err)
    assert not (tmp_path / "p.json").exists()


@pytest.mark.slow
def test_probe_recovers_a_slow_averaging_sensor() -> None:
    """A BMC-like sensor: a reading every 0.25 s averaging 0.6 s, 0.1 s late, 1 W steps."""
    from archline.powermon.sensor.run import probe

    given = {"update_period_s": 0.25, "window_s": 0.6, "lag_s": 0.1, "quantum_w": 1.0}
    ref, sensor, load = _emulated(SensorModel(**given), speed=20.0)
    d = probe(ref, sensor, load, n_steps=10, step_s=1.5, seed=5).as_dict()
    assert d["update_period_s"] == pytest.approx(0.25, rel=1e-3)
    assert abs(d["window_s"] - 0.6) <= REF_PERIOD_S and abs(d["lag_s"] - 0.1) <= REF_PERIOD_S
    assert d["quantum_w"] == pytest.approx(1.0, abs=1e-6)
