"""Breaker 24 item 1: a calibration made by `meter calibrate --emulate` went unmarked into a real meter's entry,
where it would correct a sensor it never saw. It is now marked `emulated = true`; such a line is refused on real
hardware, and rows measured through it say 'emulated calibration'."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomllib

from archline.formats.platforms.profiles import SHIPPED_DIR
from archline.powermon.errors import MeterError
from archline.powermon.sensor.apply import apply_spec
from archline.powermon.sensor.calibration import Calibration
from archline.powermon.sensor.profile_edit import with_calibration


class _Meter:
    name = "ps3"
    speed = 1.0

    def __init__(self, emulated: bool) -> None:
        self.emulated = emulated


class _Spec:
    name = "ps3"
    sensor_profile = None

    def __init__(self, cal: dict[str, object]) -> None:
        self.calibration = cal


def test_an_emulated_calibration_is_marked_and_refused_on_real_hardware() -> None:
    cal = Calibration(1.07, 0.001, -3.5, 0.1, emulated=True)
    text = with_calibration((SHIPPED_DIR / "gtx580.toml").read_text(), "ps3", cal.as_dict(), "gtx580.toml")
    entry = next(m for m in tomllib.loads(text)["meters"] if m["name"] == "ps3")
    assert entry["calibration"]["emulated"] is True
    assert Calibration.from_dict(entry["calibration"]) == cal
    assert "emulated calibration" in cal.text()
    with pytest.raises(MeterError, match="made on emulated meters"):
        apply_spec(_Meter(emulated=False), _Spec(entry["calibration"]))
    assert apply_spec(_Meter(emulated=True), _Spec(entry["calibration"])).calibrated
    real = Calibration(1.07, 0.001, -3.5, 0.1)
    assert "emulated" not in real.as_dict() and apply_spec(_Meter(False), _Spec(real.as_dict())).calibrated


def test_calibrate_emulate_writes_the_mark(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    prof = tmp_path / "gtx580.toml"
    prof.write_text((SHIPPED_DIR / "gtx580.toml").read_text())
    out = tmp_path / "cal.toml"
    r = run_cli("meter", "calibrate", "ps3", "--emulate", "--gain", "1.07", "--offset", "-3.5", "--profile", str(prof),
                "--out", str(out))
    assert r.exit_code == 0, r.stderr
    entry = next(m for m in tomllib.loads(out.read_text())["meters"] if m["name"] == "ps3")
    assert entry["calibration"]["emulated"] is True


def test_a_sensor_profile_of_another_major_version_or_absurd_quantum_is_refused(tmp_path: Path) -> None:
    """Breaker 24 item 14: format archline.sensor_profile/2 was used, quantum_w 1e9 accepted."""
    import json

    from archline.formats.meters.sensor_profile import SensorProfile

    good = {"format": "archline.sensor_profile/1", "meter": "nvml0", "emulated": True, "update_period_s": 0.05,
            "window_s": 0.02, "lag_s": 0.03, "quantum_w": 0.25}
    assert SensorProfile.from_obj(good, "p.json").quantum_w == 0.25
    with pytest.raises(MeterError, match=r"is not 'archline\.sensor_profile/1'"):
        SensorProfile.from_obj({**good, "format": "archline.sensor_profile/2"}, "p.json")
    with pytest.raises(MeterError, match="quantum_w"):
        SensorProfile.from_obj({**good, "quantum_w": 1e9}, "p.json")
    (tmp_path / "p.json").write_text(json.dumps(good))
    assert SensorProfile.read(tmp_path / "p.json").lag_s == 0.03


@pytest.mark.parametrize("args", [["--gain", "1e9"], ["--offset", "1e9"], ["--gain", "0.01"]])
def test_probe_refuses_an_emulated_sensor_no_meter_is(run_cli, tmp_path: Path, args: list[str]) -> None:  # type: ignore[no-untyped-def]
    """Breaker 24 item 15: --gain 1e9 wrote a quantum of 1.6e8 W with exit 0."""
    r = run_cli("meter", "probe", "nvml0", "--emulate", *args, "--out", str(tmp_path / "o.json"))
    assert r.exit_code == 2 and args[0] in r.stderr and not (tmp_path / "o.json").exists()
