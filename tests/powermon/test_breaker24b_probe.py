"""Breaker 24b's probe findings (7, 9, 12, 17): a quantum of 0 is reported as none, set-ups that would run out of
memory or measure nothing are refused before anything runs, another meter's sensor profile is named as such, and the
stated uncertainty of window and lag is not smaller than the reference's sampling allows."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.powermon_helpers import one_line, run

from archline.powermon.sensor.probe import quantum, update_period
from archline.powermon.sensor.profile import SensorProfile
from archline.powermon.sensor.response import time_uncertainty

pytest.importorskip("archline.powermon.emulator.sensor")

REF_PERIOD_S = 1 / 1024


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
