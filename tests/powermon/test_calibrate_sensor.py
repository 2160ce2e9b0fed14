"""``archline meter calibrate``: an emulated on-board sensor with a given gain and offset, recorded at once with the
emulated PowerMon 2 (one Recorder, two meters) while the load steps, is fitted back; the calibration goes into a
new profile's meter entry and corrects energy on a machine without the reference, labelled calibrated.

Tolerances (docs/meters.md): gain within 0.5% of the given 1.07, offset within 0.3 W of the given -3.5 W, lag within
one reference-sample period (1/1024 s). The reference's own resolution (12-bit codes, 1 ms samples that blur each
step) is what limits them; the reported standard errors are least-squares floors.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import tomllib
from support.powermon_helpers import one_line, run

from archline.powermon.errors import MeterError
from archline.powermon.record.meters import ChannelResult, DeviceResult, MeterRegion
from archline.powermon.sensor.apply import apply_spec
from archline.powermon.sensor.calibration import CalibratedMeter, Calibration
from archline.powermon.sensor.profile_edit import with_calibration

SensorModel = pytest.importorskip("archline.powermon.emulator.sensor").SensorModel

REF_PERIOD_S = 1 / 1024
GIVEN = {"update_period_s": 0.05, "window_s": 0.02, "lag_s": 0.03, "quantum_w": 0.25, "gain": 1.07,
         "offset_w": -3.5}

PROFILE = """\
# a platform profile (comments and order are kept)
name = "demo"

[[meters]]
name = "powermon"
kind = "powermon2"
port = "/dev/ttyUSB0"
channels = [{ id = 0, rail = "slot_12v", device = "gpu" }]

[[meters]]  # the on-board sensor
name = "nvml0"
kind = "nvml"
index = 0
"""


def _calibrate(window_s: float | None, seed: int) -> tuple[Calibration, Any]:
    from archline.bench.monitor import PhasePower, PhasePowerSource
    from archline.powermon.sensor.run import REFERENCE_SPEC, EdgeLoad, calibrate, emulated_pair

    schedule = PhasePower(40.0, 160.0)
    ref, sensor = emulated_pair(SensorModel(**GIVEN), PhasePowerSource(schedule, REFERENCE_SPEC), speed=20.0,
                                seed=seed)
    return calibrate(ref, sensor, EdgeLoad(schedule.edge), n_steps=20, step_s=0.3, seed=seed, window_s=window_s)


@pytest.mark.parametrize("window_s", [None, 0.02])
def test_calibrate_recovers_the_given_gain_offset_and_lag(window_s: float | None) -> None:
    cal, resp = _calibrate(window_s, seed=4)
    assert cal.gain == pytest.approx(1.07, rel=5e-3)
    assert cal.offset_w == pytest.approx(-3.5, abs=0.3)
    assert abs(cal.lag_s - 0.03) <= REF_PERIOD_S
    assert cal.gain_err > 0 and cal.offset_w_err > 0 and cal.lag_s_err > 0
    if window_s is not None:
        assert resp.window_s == 0.02 and resp.window_err_s == 0.0     # taken from the sensor profile


def test_calibration_corrects_energy_and_labels_it() -> None:
    cal = Calibration(gain=1.07, gain_err=0.001, offset_w=-3.5, offset_w_err=0.05, lag_s=0.03, lag_s_err=0.001)

    class Inner:
        name, emulated, kind, speed = "nvml0", True, "sampling", 1.0

        def __init__(self) -> None:
            self.asked: list[tuple[float, float]] = []

        def region(self, t0_s: float, t1_s: float) -> MeterRegion:
            self.asked.append((t0_s, t1_s))
            d = t1_s - t0_s
            e = (1.07 * 100.0 - 3.5) * d                       # a sensor reading 1.07 x 100 W - 3.5 W
            return MeterRegion("nvml0", "sampling", True, t0_s, t1_s, {"0": ChannelResult(e, 0.5, e / d, 20, "gpu")},
                               {"gpu": DeviceResult(e, 0.5, e / d, ["gpu"])}, e, 0.5, e / d, 20, 10.0)

        def info(self) -> dict[str, Any]:
            return {"meter": "nvml0"}

    inner = Inner()
    m = CalibratedMeter(inner, cal)
    r = m.region(10.0, 12.0)
    assert inner.asked == [pytest.approx((10.03, 12.03))]              # the lag: the sensor's later window
    assert r.energy_j == pytest.approx(200.0) and r.devices["gpu"].energy_j == pytest.approx(200.0)
    assert r.energy_err_j == pytest.approx(0.5 / 1.07 + 200 * 0.001 / 1.07 + 0.05 * 2 / 1.07)
    assert (r.t_start_s, r.t_end_s) == (10.0, 12.0)
    assert any(w.startswith("calibrated: gain 1.07") for w in r.warnings)
    assert m.info()["calibrated"] is True and m.info()["calibration"]["offset_w"] == -3.5

    class Spec:
        name, sensor_profile, calibration = "nvml0", None, cal.as_dict()

    assert isinstance(apply_spec(Inner(), Spec()), CalibratedMeter)
    with pytest.raises(MeterError, match="unknown key"):
        Calibration.from_dict({"gain": 1.0, "offset_w": 0.0, "ofset": 1.0})
    with pytest.raises(MeterError, match="gain must be positive"):
        Calibration(0.0, 0.0, 0.0, 0.0)


def test_with_calibration_keeps_the_profile_and_sets_one_entry() -> None:
    cal = {"gain": 1.07, "gain_err": 0.001, "offset_w": -3.5, "offset_w_err": 0.05, "lag_s": 0.03,
           "lag_s_err": 1e-4}
    out = with_calibration(PROFILE, "nvml0", cal, "demo.toml")
    assert out.startswith("# a platform profile") and "# the on-board sensor" in out
    doc = tomllib.loads(out)
    assert doc["meters"][1]["calibration"] == cal and "calibration" not in doc["meters"][0]
    again = with_calibration(out, "nvml0", {**cal, "gain": 1.1}, "demo.toml")      # replaced, not added twice
    assert tomllib.loads(again)["meters"][1]["calibration"]["gain"] == 1.1 and again.count("calibration =") == 1
    with pytest.raises(MeterError, match="no \\[\\[meters\\]\\] entry named 'rapl'"):
        with_calibration(PROFILE, "rapl", cal, "demo.toml")
    inline = 'meters = [{ name = "nvml0", kind = "nvml" }]\n'
    with pytest.raises(MeterError, match="add this line to it by hand: calibration = "):
        with_calibration(inline, "nvml0", cal, "inline.toml")


def test_calibrate_cli_writes_a_new_profile_never_the_input(tmp_path: Path, capsys: Any) -> None:
    prof = tmp_path / "demo.toml"
    prof.write_text(PROFILE)
    out = tmp_path / "demo-cal.toml"
    code, stdout, err = run(capsys, "meter", "calibrate", "nvml0", "--emulate", "--gain", "1.07", "--offset",
                            "-3.5", "--speed", "20", "--steps", "20", "--profile", str(prof), "--out", str(out),
                            "--format", "json")
    assert code == 0, err
    doc = json.loads(stdout)
    assert doc["emulated"] is True and doc["calibration"]["gain"] == pytest.approx(1.07, rel=5e-3)
    assert prof.read_text() == PROFILE
    assert tomllib.loads(out.read_text())["meters"][1]["calibration"] == doc["calibration"]
    code, _, err = run(capsys, "meter", "calibrate", "nvml0", "--emulate", "--profile", str(prof), "--out",
                       str(prof))
    assert code == 2 and "is an input" in one_line(err) and prof.read_text() == PROFILE
    code, _, err = run(capsys, "meter", "calibrate", "nvml0", "--emulate", "--profile", str(prof))
    assert code == 2 and "--profile and --out go together" in err


def test_a_calibrated_sensor_gets_the_reference_energy_without_it(tmp_path: Path) -> None:
    """The emulated sensor (gain 1.07, offset -3.5 W, 30 ms late) through its profile and calibration, as a
    ``[[meters]]`` entry gives them, reads the energy the PowerMon 2 reads over a window of steps, within the two
    bounds; uncorrected it is off by far more."""
    from archline.bench.monitor import PhasePower, PhasePowerSource
    from archline.formats.meters.sensor_profile import SensorProfile
    from archline.powermon.record.recorder import Recorder
    from archline.powermon.sensor.probe import drive_steps, step_plan
    from archline.powermon.sensor.run import REFERENCE_SPEC, EdgeLoad, emulated_pair

    prof = SensorProfile(meter="nvml0", emulated=True, update_period_s=0.05, window_s=0.02, lag_s=0.03,
                         lag_err_s=0.0005, quantum_w=0.25).write(tmp_path / "nvml0.json")
    cal = Calibration(1.07, 0.001, -3.5, 0.05, 0.03, 0.0005)

    class Spec:
        name, sensor_profile, calibration = "nvml0", str(prof), cal.as_dict()

    schedule = PhasePower(40.0, 160.0)
    ref, raw = emulated_pair(SensorModel(**GIVEN), PhasePowerSource(schedule, REFERENCE_SPEC), speed=10.0)
    sensor = apply_spec(raw, Spec())
    with Recorder([ref, sensor]) as rec:
        rec.begin("work")
        drive_steps(EdgeLoad(schedule.edge), step_plan(12, 0.3, seed=1), speed=10.0)
        region = rec.end("work")
        uncorrected = raw.region(region.t_start_s, region.t_end_s)
    truth, got = region.meters[ref.name], region.meters[sensor.name]
    assert truth.duration_s > 6.0
    assert abs(got.energy_j - truth.energy_j) <= got.energy_err_j + truth.energy_err_j
    assert got.energy_err_j < 0.03 * truth.energy_j
    assert abs(uncorrected.energy_j - truth.energy_j) > got.energy_err_j + truth.energy_err_j
    assert any(w.startswith("calibrated: ") for w in got.warnings)
    assert sensor.info()["calibrated"] is True
