"""``archline measure`` with a profile's meters (issue 24's third review pass): a sensor-profiled meter's refusal comes
before the command when it can be known then, and a run or phase too short for the sensor is measured over a widened
window (not thrown away); every warning reaches stderr in table mode too; without --meter every meter of the profile
that opens here measures (help and behaviour agree); --out and ``platform`` use the profile's own name."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

GTX580 = Path(__file__).resolve().parents[2] / "formats" / "platforms" / "gtx580.toml"


def profile(tmp_path: Path, *, name: str = "myfault", file: str | None = None, edit: Any = None) -> Path:
    text = re.sub(r'(?m)^name = "gtx580"', f'name = "{name}"', GTX580.read_text(), count=1)
    if edit is not None:
        text = edit(text)
    p = tmp_path / (file or f"{name}.toml")
    p.write_text(text)
    return p


def sensor_profile(tmp_path: Path) -> Path:
    """gtx580's ps3 entry held to a sensor profile whose shortest window is (0.05 + 0.02) / 0.1 = 0.7 s."""
    (tmp_path / "S.json").write_text('{"format": "archline.sensor_profile/1", "meter": "ps3", "emulated": true, '
                                     '"update_period_s": 0.05, "window_s": 0.02, "lag_s": 0.0}')
    return profile(tmp_path, name="sens", edit=lambda t: t.replace('port = "/dev/ttyACM0"',
                                                                   'port = "/dev/ttyACM0"\nsensor_profile = "S.json"'))


# --- 1: a profiled sensor's limits ---------------------------------------------------------------------------

def test_f1_baseline_shorter_than_the_sensor_refused_before_the_command_runs(run: Any, tmp_path: Path) -> None:
    prof = sensor_profile(tmp_path)
    ran = tmp_path / "ran"
    code, _, err = run("measure", "--platform", str(prof), "--emulate", "--meter", "ps3", "--baseline-s", "0.3",
                         "--out", str(tmp_path / "O"), "--", "touch", str(ran))
    assert code == 2, err
    errors = [ln for ln in err.splitlines() if ln.startswith("archline: error:")]
    assert len(errors) == 1 and "--baseline-s 0.3 is shorter than meter" in errors[0], err
    assert "give --baseline-s 0.7 or more" in errors[0] and "Traceback" not in err
    assert not ran.exists()                                  # the command never ran
    assert not list((tmp_path / "O").iterdir()) if (tmp_path / "O").exists() else True


def test_f1_a_run_and_phase_too_short_are_measured_over_a_widened_window(run: Any, tmp_path: Path) -> None:
    prof = sensor_profile(tmp_path)
    cmd = 'echo "begin p" > "$ARCHLINE_MARKS"; sleep 0.1; echo "end p" > "$ARCHLINE_MARKS"; sleep 0.1'
    code, out, err = run("measure", "--platform", str(prof), "--emulate", "--meter", "ps3", "--format", "json",
                         "--out", str(tmp_path / "O"), "--", "sh", "-c", cmd)
    assert code == 0, err                                    # the command's exit code, not a refusal
    doc = json.loads(out)
    (r,) = doc["runs"]
    (p,) = r["phases"]
    for w in (r, p):
        asked = w["widened_from"]["time_s"]
        assert asked < 0.7 <= w["time_s"] + 1e-6, w       # the command's own time, and the widened window's
        assert w["energy_j"] is not None
        assert abs(w["energy_j"] - w["truth_energy_j"]) <= w["energy_err_j"], w   # the bound still holds
        assert any("shorter than meter 'ps3-emulated' can measure" in x and "widened to" in x
                   for x in w["warnings"]), w["warnings"]
    assert f"archline: warning: run: lasted {r['widened_from']['time_s']:.4g} s" in err, err
    assert "archline: error" not in err
    saved = json.loads(Path(doc["files"]["result"]).read_text())   # the measurement the user paid for is kept
    assert saved["runs"][0]["widened_from"] == r["widened_from"]


def test_f1_help_says_what_a_sensor_profile_does(run: Any) -> None:
    code, out, _ = run("measure", "--help")
    text = " ".join(out.split())
    assert code == 0
    assert "A --baseline-s shorter than that is refused before the command runs (exit 2)" in text
    assert "widened to the sensor's shortest about its middle" in text


# --- 2: warnings on stderr in table mode --------------------------------------------------------------------

def test_f2_table_mode_prints_every_warning_on_stderr(run: Any, tmp_path: Path) -> None:
    prof = sensor_profile(tmp_path)
    code, out, err = run("measure", "--platform", str(prof), "--emulate", "--meter", "ps3", "--",
                         "sh", "-c", 'echo "begin never" > "$ARCHLINE_MARKS"; sleep 0.05')
    assert code == 0, err
    assert "run (widened)" in out
    warned = [ln for ln in err.splitlines() if ln.startswith("archline: warning: ")]
    assert any("run: ps3-emulated: bound includes" in w for w in warned), err      # a window's own warning
    assert any("run: lasted" in w and "widened to" in w for w in warned), err
    assert any("phase 'never' never ended" in w for w in warned), err               # the run's problems too
    assert "never ended" not in out                                                  # once, on stderr


def test_f2_result_warnings_collects_every_window() -> None:
    from archline.formats.measure_result import warnings

    doc = {"warnings": ["meter 'x' left out"], "baseline": {"name": "baseline", "warnings": ["m: lost 3 samples"]},
           "runs": [{"name": "run", "warnings": ["run: widened"],
                     "phases": [{"name": "p", "warnings": ["m: calibrated: gain 1.1"]}]}],
           "problems": ["run: phase 'q' never ended"]}
    assert warnings(doc) == ["meter 'x' left out", "baseline: m: lost 3 samples", "run: widened",
                             "p: m: calibrated: gain 1.1", "run: phase 'q' never ended"]


# --- 3: --meter's default -----------------------------------------------------------------------------------

def multi_profile(tmp_path: Path) -> Path:
    """Real (not --emulate) meters on emulator URLs: powermon on the GPU, ps3 moved to the CPU, 'gone' on a port
    that does not exist, 'dup' on the GPU again."""
    def edit(t: str) -> str:
        t = t.replace('port = "/dev/ttyUSB0"', 'port = "powermon://default"')
        t = t.replace('port = "/dev/ttyACM0"', 'port = "powersensor3://default"')
        i = t.index('name = "ps3"')
        j = t.index("]\n", i)
        t = t[:i] + t[i:j].replace('device = "gpu"', 'device = "cpu"') + t[j:]
        return t + ('\n[[meters]]\nname = "gone"\nkind = "pmd"\nport = "/dev/ttyNOPE-archline"\n'
                    'channels = [{ id = 0, rail = "eps", device = "mem", nominal_v = 12.0 }]\n'
                    '\n[[meters]]\nname = "dup"\nkind = "pmd"\nport = "pmd://default"\n'
                    'channels = [{ id = 0, rail = "pcie", device = "gpu", nominal_v = 12.0 }]\n')
    return profile(tmp_path, name="multi", edit=edit)


def test_f3_without_meter_every_meter_that_opens_measures(run: Any, tmp_path: Path) -> None:
    prof = multi_profile(tmp_path)
    code, out, err = run("measure", "--platform", str(prof), "--format", "json", "--", "sleep", "0.3")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["meter"].startswith("powermon (emulated powermon2), ps3 (emulated powersensor3)"), doc["meter"]
    assert "gone" not in doc["meter"] and "dup" not in doc["meter"]
    assert set(doc["runs"][0]["device_energy_j"]) == {"gpu", "cpu"}
    said = " ".join(doc["warnings"])
    assert "meter 'gone' (pmd) left out: it cannot be opened here" in said
    assert "meter 'dup' left out: it measures gpu as meter 'powermon' does" in said
    assert "archline: warning: meter 'gone' (pmd) left out" in err


def test_f3_a_named_meter_must_open(run: Any, tmp_path: Path) -> None:
    prof = multi_profile(tmp_path)
    code, _, err = run("measure", "--platform", str(prof), "--meter", "gone", "--", "true")
    assert code == 4 and "archline: error:" in err and "ttyNOPE-archline" in err, err


def test_f3_help_says_the_default(run: Any) -> None:
    code, out, _ = run("measure", "--help")
    text = " ".join(out.split())
    assert code == 0 and "(default: all)" not in text
    assert "Default: every one that opens here" in text and "with --emulate one emulated meter" in text


# --- 4: names ------------------------------------------------------------------------------------------------

def test_f4_out_and_platform_use_the_profiles_name(run: Any, tmp_path: Path) -> None:
    prof = profile(tmp_path, name="myfault", file="some file.toml")
    code, out, err = run("measure", "--platform", f"./{prof.name}", "--emulate", "--format", "json",
                         "--out", str(tmp_path / "O"), "--", "true")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["platform"] == "myfault"
    assert doc["platform_path"] is not None and doc["platform_path"].endswith("some file.toml")
    (d,) = (tmp_path / "O").iterdir()
    assert d.name.startswith("measure-myfault-") and "toml" not in d.name, d.name
    code, out, err = run("measure", "--platform", "gtx580", "--emulate", "--format", "json", "--", "true")
    assert code == 0 and json.loads(out)["platform"] == "gtx580" and json.loads(out)["platform_path"] is None
