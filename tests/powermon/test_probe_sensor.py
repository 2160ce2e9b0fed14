"""``archline meter probe``: an emulated on-board sensor measured against the emulated PowerMon 2 recovers the
update period, averaging window, lag and quantum it was given; its sensor profile is what the integrator uses.

Tolerances (stated in docs/meters.md): update period within 0.1% (the requirement is 2%; the lattice fit gives
about 1e-6), window and lag within one reference-sample period (1/1024 s, the PowerMon 2's fastest per-channel
rate), quantum within 1e-6 W.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.powermon_helpers import one_line, run

from archline.common import outputs
from archline.formats.meters.sensor_profile import FORMAT, SensorProfile
from archline.powermon.errors import MeterError
from archline.powermon.powermon2.protocol import half_lsb_w
from archline.powermon.record.integrate import SensorLimits, sensor_window
from archline.powermon.record.meters import ChannelResult, DeviceResult, MeterRegion
from archline.powermon.sensor import probe as probe_mod
from archline.powermon.sensor.apply import LimitedMeter
from archline.powermon.sensor.limits import check_emulated
from archline.powermon.sensor.probe import (
    edge_limits,
    period_warning,
    quantum,
    quantum_resolved,
    reading_times,
    rounding_bound_w,
    step_plan,
    update_period,
)
from archline.powermon.sensor.response import Response, fit_response, time_uncertainty
from archline.powermon.sensor.run import REFERENCE_SPEC
from archline.powermon.spec import ChannelSpec

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


# --- folded from test_breaker24b_probe.py (a review round's regression tests) ------------------------------------
# Breaker 24b's probe findings (7, 9, 12, 17): a quantum of 0 is reported as none, set-ups that would run out of
# memory or measure nothing are refused before anything runs, another meter's sensor profile is named as such, and the
# stated uncertainty of window and lag is not smaller than the reference's sampling allows.


pytest.importorskip("archline.powermon.emulator.sensor")



def test_quantum_zero_is_reported_as_none(tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "q0.json"
    code, stdout, err = run(capsys, "meter", "probe", "nvml0", "--emulate", "--quantum", "0", "--speed", "20",
                            "--out", str(out), "--format", "json", "--seed", "1")
    assert code == 0, err
    assert json.loads(stdout)["measured"]["quantum_w"] == 0.0
    assert SensorProfile.read(out).quantum_w == 0.0


def test_offset_lattice_is_not_a_quantum() -> None:
    # two levels seen through a fixed-point mean: 40 + 0.46875 k W. Its zero-based step (0.15625 W) is no rounding
    values = 40.0 + 0.46875 * np.arange(0, 40)
    assert quantum(values) == (0.0, 0.0)
    # a real rounding still is one
    rng = np.random.default_rng(0)
    q, _ = quantum(np.round(rng.uniform(40, 160, 300) / 0.25) * 0.25)
    assert q == pytest.approx(0.25, abs=1e-9)
    # continuous values have no quantum
    assert quantum(rng.uniform(40, 160, 300)) == (0.0, 0.0)


@pytest.mark.parametrize(("args", "words"), [
    (("--period", "1e-6"), "pass --period"),
    (("--period", "5"), "the fit needs at least"),
    (("--quantum", "1000"), "never change"),
    (("--quantum", "80"), "at most one quantum"),
])
def test_setups_that_cannot_run_are_refused_before_anything_runs(tmp_path: Path, capsys: Any, args: tuple[str, ...],
                                                                 words: str) -> None:
    out = tmp_path / "p.json"
    code, _, err = run(capsys, "meter", "probe", "nvml0", "--emulate", *args, "--out", str(out))
    assert code == 2, err
    assert words in one_line(err)
    assert not out.exists()


def test_a_sensor_profile_of_another_meter_is_named(tmp_path: Path, capsys: Any) -> None:
    prof = tmp_path / "rapl.json"
    code, _, err = run(capsys, "meter", "probe", "rapl", "--emulate", "--speed", "20", "--steps", "4", "--out",
                       str(prof))
    assert code == 0, err
    code, _, err = run(capsys, "meter", "calibrate", "nvml0", "--emulate", "--sensor-profile", str(prof))
    assert code == 2
    line = one_line(err)
    assert "meter 'rapl'" in line and "not meter 'nvml0'" in line and "gain" not in line


def test_time_uncertainty_never_below_the_reference_sampling() -> None:
    # an exact-looking fit (interval 0) still carries the reference's sample period / sqrt(3)
    assert time_uncertainty(0.0, reference_period_s=REF_PERIOD_S, window_s=0.02, quantum_w=0.0, gain=1.0,
                            swing_w=120.0) == pytest.approx(REF_PERIOD_S / math.sqrt(3))
    # and a coarse quantum adds window x quantum / swing
    u = time_uncertainty(0.0, reference_period_s=REF_PERIOD_S, window_s=1.0, quantum_w=1.0, gain=1.0, swing_w=10.0)
    assert u == pytest.approx(math.hypot(REF_PERIOD_S / math.sqrt(3), 0.1))


def test_update_period_of_a_sensor_that_changes_only_at_the_edges() -> None:
    # no window, noise-free levels: updates seen only at edges, many periods apart; the period is their divisor
    rng = np.random.default_rng(4)
    period = 0.05
    k = np.cumsum(rng.integers(3, 9, 40))
    t = 1.0 + k * period + rng.uniform(-1e-4, 1e-4, k.size)
    p, err = update_period(t)
    assert p == pytest.approx(period, rel=1e-3)
    assert err < 1e-3


def test_stated_lag_uncertainty_covers_the_error_over_seeds() -> None:
    """Breaker 24b, 17: the stated window/lag uncertainty was 3-15x smaller than the actual error. Over several
    seeds of a quantised slow sensor, the error stays within 3 stated sigmas."""
    from archline.bench.monitor import PhasePower, PhasePowerSource
    from archline.powermon.emulator.sensor import SensorModel
    from archline.powermon.sensor.run import REFERENCE_SPEC, EdgeLoad, emulated_pair, probe

    given = {"update_period_s": 0.05, "window_s": 0.02, "lag_s": 0.03, "quantum_w": 1.0}
    worst = 0.0
    for seed in range(3):
        schedule = PhasePower(40.0, 160.0)
        ref, sensor = emulated_pair(SensorModel(**given), PhasePowerSource(schedule, REFERENCE_SPEC), speed=20.0)
        d = probe(ref, sensor, EdgeLoad(schedule.edge), n_steps=8, step_s=0.3, seed=seed).as_dict()
        assert d["lag_err_s"] >= REF_PERIOD_S / math.sqrt(3) * 0.999
        worst = max(worst, abs(d["lag_s"] - given["lag_s"]) / d["lag_err_s"],
                    abs(d["window_s"] - given["window_s"]) / d["window_err_s"])
    assert worst < 3.0


# --- folded from test_breaker24d_sensor.py (a review round's regression tests) -----------------------------------
# Breaker 24d's `meter probe` / `meter calibrate` findings (emulated sensors):
#
# 1. a busy level above the emulated reference's full scale (a PowerMon 2 channel clips at about 301 W at 12 V) is
#    refused before anything runs, naming the level, the full scale and what to pass; at very low levels the
#    reference's resolution is in the stated gain error;
# 2. a quantum above a quarter of the swing (fewer than 5 distinct readings) is refused; a degenerate update lattice
#   is a
#    named failure, never a LinAlgError;
# 3. a slow sensor with few readings inside edges states window and lag uncertainties that contain the truth (and
#    warns), and a quantum it cannot tell is "not resolved", not 0 = none, in the output and the profile;
# 4. gain and offset uncertainties include the reference's resolution and the sensor's quantum (systematic per level):
#    the truth within 2 stated errors in at least 7 of 8 seeds.


pytest.importorskip("archline.powermon.emulator.sensor")

REF_HZ = 1024.0
LIMITS_r24d = dict(duration_s=12.0, update_period_s=0.05, quantum_w=0.25, gain=1.0, idle_w=40.0, reference_hz=REF_HZ,
              speed=10.0, redfish=False)


# 1 ------------------------------------------------------------------------------------------------------------------
def test_busy_level_above_the_references_full_scale_is_refused() -> None:
    full_w = ChannelSpec(id=0, rail="x").full_scale_a * 12.0         # the stock shunt's 12-bit range at 12 V
    assert 300 < full_w < 302
    with pytest.raises(MeterError) as e:
        check_emulated(**LIMITS_r24d, busy_w=400.0, reference=REFERENCE_SPEC)
    msg = str(e.value)
    assert "--busy-w 400" in msg and "33.3 A" in msg and "25.1 A full scale" in msg and "pass --busy-w 300" in msg
    check_emulated(**LIMITS_r24d, busy_w=300.0, reference=REFERENCE_SPEC)   # within: no error


def test_calibrate_above_full_scale_exits_2_before_anything_runs(tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "cal400.toml"
    code, stdout, err = run(capsys, "meter", "calibrate", "ps3", "--emulate", "--gain", "1.07", "--offset", "-3.5",
                            "--busy-w", "400", "--profile", "gtx580", "--out", str(out))
    assert code == 2, err
    line = one_line(err)
    assert "--busy-w 400" in line and "full scale" in line and "pass --busy-w 300 or less" in line
    assert not out.exists() and stdout == ""


def test_low_levels_state_the_references_resolution(tmp_path: Path, capsys: Any) -> None:
    # 0.5 W at 12 V is 6.8 current codes of 73.5 mW: read as 7 (0.514 W), gain 0.972 for a truth of 1
    code, stdout, err = run(capsys, "meter", "probe", "nvml0", "--emulate", "--idle-w", "0", "--busy-w", "0.5",
                            "--quantum", "0.01", "--out", str(tmp_path / "lo.json"), "--format", "json")
    assert code == 0, err
    m = json.loads(stdout)["measured"]
    assert abs(m["gain"] - 1.0) <= 2 * m["gain_err"], m
    assert m["gain_err"] > 0.01           # was 0.0005: the resolution (about 0.04 W at each level) is in it


# 2 ------------------------------------------------------------------------------------------------------------------
def test_a_quantum_above_a_quarter_of_the_swing_is_refused(tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "q50.json"
    code, _, err = run(capsys, "meter", "probe", "nvml0", "--emulate", "--quantum", "50", "--out", str(out))
    assert code == 2, err
    line = one_line(err)
    assert "--quantum 50" in line and "fewer than 5 distinct values" in line and "30 W or less" in line
    assert not out.exists()
    check_emulated(**{**LIMITS_r24d, "quantum_w": 30.0}, busy_w=160.0, reference=REFERENCE_SPEC)   # a quarter: allowed


def test_a_degenerate_lattice_is_a_named_failure_never_a_linalg_error(monkeypatch: Any) -> None:
    t = np.arange(40) * 0.05

    def broken(*a: Any, **k: Any) -> Any:
        raise np.linalg.LinAlgError("SVD did not converge")

    monkeypatch.setattr(probe_mod.np.linalg, "lstsq", broken)
    with pytest.raises(MeterError, match="no regular lattice"):
        update_period(t)


def test_a_non_finite_period_guess_is_a_named_failure() -> None:
    gaps = np.full(10, 0.05)
    with pytest.raises(MeterError, match="no regular lattice"):
        probe_mod._lattice_fit(np.arange(11) * 0.05, gaps, float("nan"))
    with pytest.raises(MeterError, match="no regular lattice"):
        probe_mod._lattice_fit(np.arange(11) * 0.05, gaps, 1e9)      # every gap rounds to 0 periods


# 3 ------------------------------------------------------------------------------------------------------------------
def _response(window_s: float) -> Response:
    return Response(window_s, 6e-4, 0.05, 6e-4, 1.0, 1e-3, 0.0, 0.1, 0.1, 26)


def test_few_readings_inside_edges_widen_window_and_lag_and_warn() -> None:
    levels = np.r_[np.full(12, 40.0), np.full(12, 160.0)]
    few = np.r_[levels, 71.25, 120.5]                        # 2 readings inside an edge's window
    resp, n_in, warnings = edge_limits(_response(0.1), few, period_s=0.5, n_steps=6, reference_period_s=1 / REF_HZ,
                                       quantum_w=0.25)
    pin = 2 * 0.5 / 13
    assert n_in == 2
    assert resp.window_err_s == pytest.approx(np.hypot(6e-4, pin)) and resp.lag_err_s == pytest.approx(np.hypot(6e-4,
                                                                                                                pin))
    assert len(warnings) == 1 and "only 2 of 26 readings fell inside an edge's window" in warnings[0]
    many = np.r_[levels, np.linspace(50, 150, 12)]
    resp, n_in, warnings = edge_limits(_response(0.1), many, period_s=0.5, n_steps=6, reference_period_s=1 / REF_HZ,
                                       quantum_w=0.25)
    assert n_in == 12 and warnings == [] and resp.window_err_s == 6e-4


@pytest.mark.slow
def test_slow_sensor_few_steps_states_an_uncertainty_containing_the_truth(tmp_path: Path, capsys: Any) -> None:
    # a reading every 0.5 s, 12 edges: window 0.0687 +- 0.0006 (truth 0.1, 55 sigma) before
    for seed in (0, 2, 5):
        out = tmp_path / f"x{seed}.json"
        code, stdout, err = run(capsys, "meter", "probe", "nvml0", "--emulate", "--period", "0.5", "--window", "0.1",
                                "--lag", "0.05", "--step", "1", "--steps", "6", "--seed", str(seed), "--out",
                                str(out), "--format", "json")
        assert code == 0, err
        m = json.loads(stdout)["measured"]
        assert abs(m["window_s"] - 0.1) <= 2 * m["window_err_s"], m
        assert abs(m["lag_s"] - 0.05) <= 2 * m["lag_err_s"], m
        if m["n_edge_readings"] < 5 and m["window_s"] >= REF_PERIOD_S:
            assert "fell inside an edge's window" in err
        elif m["n_edge_readings"] == 0:     # no reading inside an edge (timing): no window seen, none claimed
            assert m["window_s"] == 0.0 and m["window_err_s"] >= 0.1 / 2
        prof = SensorProfile.read(out)
        if m["quantum_resolved"]:
            assert m["quantum_w"] is not None
        else:        # not resolved: no number in the output, said so in the profile and on stderr
            assert m["quantum_w"] is None and "quantum not resolved" in err
            assert prof.quantum_resolved is False and prof.quantum_w == 0.0


def test_quantum_not_resolved_is_kept_apart_from_none(tmp_path: Path) -> None:
    assert not quantum_resolved(np.array([40.0, 160.0, 71.25, 40.0]))
    assert quantum_resolved(np.array([40.0, 160.0, 71.25, 100.0, 130.5]))
    base = dict(meter="nvml0", emulated=True, update_period_s=0.5, window_s=0.1, lag_s=0.05, quantum_w=0.0)
    unresolved = SensorProfile(**base, quantum_resolved=False)
    unresolved.write(tmp_path / "u.json")
    assert json.loads((tmp_path / "u.json").read_text())["quantum_resolved"] is False
    assert SensorProfile.read(tmp_path / "u.json").quantum_resolved is False
    # a resolved quantum (or none seen) is written as before: the key only appears when false
    SensorProfile(**base).write(tmp_path / "r.json")
    assert "quantum_resolved" not in json.loads((tmp_path / "r.json").read_text())
    assert SensorProfile.read(tmp_path / "r.json").quantum_resolved is True


# 4 ------------------------------------------------------------------------------------------------------------------
def _coded(power_w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A PowerMon 2 channel at 12 V reading ``power_w``: (power from 12-bit V and I codes, half a step of each)."""
    from archline.powermon.powermon2.protocol import (
        DEFAULT_R_SENSE_OHM,
        amps_from_code,
        code_from_amps,
        code_from_volts,
        volts_from_code,
    )
    v = volts_from_code(code_from_volts(np.full(power_w.shape, 12.0)))
    a = amps_from_code(code_from_amps(power_w / 12.0))
    return v * a, half_lsb_w(a, v, DEFAULT_R_SENSE_OHM)


def test_a_noise_free_sensor_states_the_references_resolution() -> None:
    # a sensor with no window and no quantum, exact; the reference reads 40 W as 39.966 W: gain 0.99968 +- 8e-17
    t = np.arange(0, 12, 1 / REF_HZ)
    true_w = np.where((t // 0.3) % 2 == 1, 160.0, 40.0)
    ref_w, half_w = _coded(true_w)
    read_t = np.arange(0.2, 11.9, 0.05)
    read_w = np.interp(read_t - 0.03, t, true_w)
    kw = dict(max_window_s=0.1, max_lag_s=0.1, resolution_s=1 / REF_HZ / 4, reference_period_s=1 / REF_HZ)
    bare = fit_response(t, ref_w, read_t, read_w, **kw)
    assert abs(bare.gain - 1) > 2 * bare.gain_err            # the bias the least-squares error alone cannot see
    honest = fit_response(t, ref_w, read_t, read_w, **kw, ref_resolution_w=half_w)
    assert abs(honest.gain - 1) <= 2 * honest.gain_err, honest
    assert abs(honest.offset_w) <= 2 * honest.offset_err_w, honest


@pytest.mark.slow
@pytest.mark.parametrize("command", ["probe", "calibrate"])
def test_gain_and_offset_within_2_stated_errors_over_8_seeds(tmp_path: Path, capsys: Any, command: str) -> None:
    # before: probe's offset outside +-1 error 7 of 8 times (always about +0.06 W +- 0.04); calibrate's gain
    # 1.0703-1.0707 +- 0.0004, 6 of 8 outside
    given = {"probe": (1.0, 0.0), "calibrate": (1.07, -3.5)}[command]
    inside = {"gain": 0, "offset": 0}
    for seed in range(8):
        if command == "probe":
            args = ["probe", "nvml0", "--emulate", "--out", str(tmp_path / f"s{seed}.json")]
        else:
            args = ["calibrate", "nvml0", "--emulate", "--gain", "1.07", "--offset", "-3.5"]
        code, stdout, err = run(capsys, "meter", *args, "--seed", str(seed), "--speed", "20", "--format", "json")
        assert code == 0, err
        d = json.loads(stdout)
        if command == "probe":
            m = d["measured"]
            g, ge, o, oe = m["gain"], m["gain_err"], m["offset_w"], m["offset_err_w"]
        else:
            c = d["calibration"]
            g, ge, o, oe = c["gain"], c["gain_err"], c["offset_w"], c["offset_w_err"]
        inside["gain"] += abs(g - given[0]) <= 2 * ge
        inside["offset"] += abs(o - given[1]) <= 2 * oe
    assert inside["gain"] >= 7 and inside["offset"] >= 7, inside


# --- folded from test_breaker24e_sensor.py (a review round's regression tests) -----------------------------------
# Breaker 24e's `meter probe` / `meter calibrate` findings (emulated sensors):
#
# 1. a sensor whose reading changes only at some updates (0.3 s steps on a 0.5 s sensor) got a wrong lattice (0.902 +-
#    0.008 s, truth 0.5): the largest period that every interval between changes is a whole multiple of is found, a
#    handful of irregular instants is no lattice, and a warning says a divisor cannot be ruled out;
# 2. a quantum not resolved (2 levels read rounded to an unknown step) put the offset 10 stated errors off: gain and
#    offset now carry each level's rounding by up to half the largest step every value is a multiple of;
# 3. the period's stated error of an exact lattice was 1e-18 s (below the float resolution of the period): floored.


pytest.importorskip("archline.powermon.emulator.sensor")



def _changes(seed: int, *, period_s: float = 0.5, step_s: float = 0.3, jitter_s: float = 0.0) -> np.ndarray:
    """The instants at which a window-free, noise-free sensor's reading changes while the probe's step plan plays:
    updates every ``period_s`` (phase 0.123 s), each reading the level 0.03 s before it."""
    edges = np.cumsum(step_plan(20, step_s, seed))
    t = 0.123 + period_s * np.arange(int(edges[-1] / period_s))
    level = np.where(np.searchsorted(edges, t - 0.03) % 2 == 1, 160.0, 40.0)
    t = t + np.random.default_rng(seed).uniform(-jitter_s, jitter_s, t.size)
    return reading_times(t, level)


# 1 ------------------------------------------------------------------------------------------------------------------
def test_the_reported_changes_give_the_true_period_not_a_wrong_lattice() -> None:
    # the instants of the reported run: updates every 0.5 s, the reading changed after 2 to 5 of them
    t = 0.5 * np.array([0, 5, 7, 9, 12, 16, 18, 20, 23, 25, 27], dtype=np.float64)
    p, err = update_period(t)                                 # was 0.902 +- 0.008
    assert abs(p - 0.5) <= 2 * err and 0 < err < 1e-9
    assert period_warning(t, p) and "divisor" in period_warning(t, p)[0]
    assert period_warning(np.arange(20) * 0.5, 0.5) == []       # a change at every update: no doubt


@pytest.mark.parametrize("jitter_s", [0.0, 1e-3])
def test_period_from_changes_at_some_updates_over_seeds(jitter_s: float) -> None:
    # before: 13 of 40 seeds (noise-free) and 5 of 40 (1 ms jitter) off by more than 2 stated errors, or refused
    off = []
    for seed in range(40):
        t = _changes(seed, jitter_s=jitter_s)
        p, err = update_period(t)
        if abs(p - 0.5) > 3 * err:
            off.append((seed, p, err))
    assert not off, off


def test_a_handful_of_irregular_instants_is_no_lattice() -> None:
    # 11 irregular instants fitted a lattice of 0.062 s within a quarter period before
    rng = np.random.default_rng(0)
    for n in (8, 11, 20):
        with pytest.raises(MeterError, match="no regular lattice"):
            update_period(np.cumsum(rng.uniform(0.05, 0.15, n)))


# 3 ------------------------------------------------------------------------------------------------------------------
def test_the_period_error_of_an_exact_lattice_is_above_float_resolution() -> None:
    # emulated instants on an exact 0.05 s lattice: the stated error was 1e-18 to 1e-16 s, the truth outside 2 of it
    # in 19 of 33 runs
    rng = np.random.default_rng(3)
    for _ in range(33):
        t0 = rng.uniform(0, 5)
        k = np.sort(rng.choice(np.arange(400), 250, replace=False))
        p, err = update_period(t0 + 0.05 * k)
        assert abs(p - 0.05) <= 2 * err, (p, err)
        assert 4 * np.spacing(0.05) <= err < 1e-12


# 2 ------------------------------------------------------------------------------------------------------------------
def test_rounding_bound_is_the_largest_step_the_values_share() -> None:
    assert rounding_bound_w(np.array([40.0, 160.0, 40.0])) == pytest.approx(40.0)
    assert rounding_bound_w(np.array([40.4, 160.4])) == pytest.approx(0.4)
    assert rounding_bound_w(np.array([40.0, 71.25, 160.0])) == pytest.approx(1.25)
    assert rounding_bound_w(np.array([])) == 0.0


def _two_levels(quantum_w: float, idle_w: float = 40.4, busy_w: float = 160.4, gain: float = 1.0,
                offset_w: float = 0.0) -> tuple[np.ndarray, ...]:
    t = np.arange(0, 12, 1 / REF_HZ)
    true_w = np.where((t // 0.3) % 2 == 1, busy_w, idle_w)
    read_t = np.arange(0.21, 11.9, 0.2)
    read_w = np.round((gain * np.interp(read_t, t, true_w) + offset_w) / quantum_w) * quantum_w
    return t, true_w, read_t, read_w


@pytest.mark.parametrize(("gain", "offset_w"), [(1.0, 0.0), (1.07, -3.5)])
def test_gain_and_offset_carry_the_rounding_of_each_level_when_the_quantum_is_not_resolved(
        gain: float, offset_w: float) -> None:
    t, true_w, read_t, read_w = _two_levels(1.0, gain=gain, offset_w=offset_w)
    assert np.unique(read_w).size == 2
    kw: dict[str, Any] = dict(max_window_s=0.1, max_lag_s=0.1, resolution_s=1 / REF_HZ / 4,
                              reference_period_s=1 / REF_HZ)
    bare = fit_response(t, true_w, read_t, read_w, **kw)
    assert abs(bare.offset_w - offset_w) > 2 * bare.offset_err_w      # the rounding the fit alone cannot see
    honest = fit_response(t, true_w, read_t, read_w, **kw, level_rounding_w=rounding_bound_w(read_w))
    assert abs(honest.offset_w - offset_w) <= 2 * honest.offset_err_w, honest
    assert abs(honest.gain - gain) <= 2 * honest.gain_err, honest


@pytest.mark.slow
def test_probe_and_calibrate_with_an_unresolved_quantum_state_errors_containing_the_truth(
        tmp_path: Path, capsys: Any) -> None:
    # before: probe offset -0.416 +- 0.04 W (truth 0), calibrate -3.11 +- 0.043 W (truth -3.5)
    common = ["--emulate", "--period", "0.2", "--window", "0", "--lag", "0", "--quantum", "1", "--idle-w", "40.4",
              "--busy-w", "160.4", "--speed", "20", "--format", "json"]
    code, stdout, err = run(capsys, "meter", "probe", "s", *common, "--out", str(tmp_path / "s.json"))
    assert code == 0, err
    m = json.loads(stdout)["measured"]
    assert m["quantum_resolved"] is False and "quantum not resolved" in err and "up to" in err
    assert abs(m["offset_w"]) <= 2 * m["offset_err_w"] and abs(m["gain"] - 1) <= 2 * m["gain_err"], m
    code, stdout, err = run(capsys, "meter", "calibrate", "s", *common, "--gain", "1.07", "--offset", "-3.5")
    assert code == 0, err
    c = json.loads(stdout)["calibration"]
    assert abs(c["offset_w"] + 3.5) <= 2 * c["offset_w_err"] and abs(c["gain"] - 1.07) <= 2 * c["gain_err"], c


@pytest.mark.slow
def test_probe_of_a_sensor_slower_than_the_steps_finds_its_period(tmp_path: Path, capsys: Any) -> None:
    # before: 0.902 +- 0.008 s (truth 0.5) in about a third of runs of seed 0 (the host's timing moves the edges)
    for i in range(3):
        code, stdout, err = run(capsys, "meter", "probe", "s", "--emulate", "--period", "0.5", "--step", "0.3",
                                "--quantum", "1", "--idle-w", "40.45", "--busy-w", "160.45", "--seed", "0",
                                "--speed", "20", "--format", "json", "--out", str(tmp_path / f"q{i}.json"))
        assert code == 0, err
        m = json.loads(stdout)["measured"]
        assert abs(m["update_period_s"] - 0.5) <= 2 * m["update_period_err_s"], m


def test_a_polled_counters_jittered_instants_keep_their_period() -> None:
    """Real wiring (a fake RAPL counter at 50 ms seen through polls, 2 ms scatter): a 6.58 ms lattice held the same
    instants at 0.9 ms, nearer in seconds but 3x farther as a share of its period; 4 of 12 runs reported it. The
    lattice is judged by its scatter as a share of its period."""
    from pathlib import Path

    from archline.powermon.sensor.lattice import update_period

    t = np.loadtxt(Path(__file__).resolve().parents[1] / "data" / "rapl_counter_update_instants.txt")
    period_s, err_s = update_period(t + 1234.5)
    assert abs(period_s - 0.05) < 3 * err_s + 1e-4
