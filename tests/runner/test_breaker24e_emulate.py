"""Breaker 24 (fifth pass), ``--emulate`` in ``archline measure`` and ``archline bench run``:

1. a profile whose ``[[meters]]`` are all of kinds without an emulator (RAPL, NVML) is refused (exit 2, one line
   naming its meters and the kinds ``--emulate`` plays); it used to be played through a PowerMon 2 the profile
   does not have, silently. A profile without ``[[meters]]`` (fermi-sample, gtx680) still gets the default
   emulated PowerMon 2, now with a note saying so.
2. a calibrated entry whose played sensor (``gain x true + offset_w``) would carry a channel past the emulated
   meter's full scale is refused before anything runs, naming the entry, its gain/offset, the power and the full
   scale (gain 2 used to be clipped silently: energies 4.5% low, 13.5x outside the bound).
3. the faults in a profile's emulator port URL (``powersensor3://default?stall=...``) are played by ``measure
   --emulate`` as by ``bench run --emulate`` (one code path, bench/emulated/meters.emulate_entry), and noted.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest

from archline.bench.config.profile import load_bench_profile
from archline.bench.emulated.backend import EmulatedBackend
from archline.bench.emulated.meters import choose, emulated_kinds

GTX580 = Path(__file__).resolve().parents[2] / "fit" / "platforms" / "gtx580.toml"
#: one busy phase of 0.3 s between idle stretches: the emulated device draws its peak inside it
PHASE = 'sleep 0.1; echo "begin a" > "$ARCHLINE_MARKS"; sleep 0.3; echo "end a" > "$ARCHLINE_MARKS"; sleep 0.1'


def profile(tmp_path: Path, meters: str, name: str = "mine") -> Path:
    """gtx580 named ``name``, its [[meters]] replaced by ``meters``."""
    text = GTX580.read_text()
    text = re.sub(r'(?m)^name = "gtx580"', f'name = "{name}"', text[: text.index("[[meters]]")], count=1)
    p = tmp_path / f"{name}.toml"
    p.write_text(text + meters)
    return p


def calibrated(tmp_path: Path, *, gain: float, offset_w: float, meter: str = "ps3") -> Path:
    """gtx580 whose ``meter`` entry carries a hand-written calibration."""
    cal = (f"calibration = {{ gain = {gain}, gain_err = 0.0001, offset_w = {offset_w}, offset_w_err = 0.01, "
           "lag_s = 0.03, lag_s_err = 0.0001 }")
    port = {"ps3": "/dev/ttyACM0", "powermon": "/dev/ttyUSB0"}[meter]
    text = re.sub(r'(?m)^name = "gtx580"', 'name = "bogus"', GTX580.read_text(), count=1)
    text = text.replace(f'port = "{port}"', f'port = "{port}"\n{cal}')
    assert cal in text
    p = tmp_path / "bogus.toml"
    p.write_text(text)
    return p


def errors_of(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.startswith("archline: error:")]


# --- 1: no PowerMon 2 invented for a profile that has other meters ----------------------------------------------

RAPL = '[[meters]]\nname = "rapl"\nkind = "rapl"\n'
NVML = '[[meters]]\nname = "nvml0"\nkind = "nvml"\nindex = 0\n'


@pytest.mark.parametrize("meters,named", [(RAPL, ["'rapl' (rapl)"]), (NVML, ["'nvml0' (nvml)"]),
                                          (RAPL + NVML, ["'rapl' (rapl)", "'nvml0' (nvml)"])])
def test_f1_measure_refuses_a_profile_whose_meters_it_cannot_play(run: Any, tmp_path: Path, meters: str,
                                                                   named: list[str]) -> None:
    prof = profile(tmp_path, meters)
    ran = tmp_path / "ran"
    code, out, err = run("measure", "--platform", str(prof), "--emulate", "--", "touch", str(ran))
    assert code == 2, err
    (line,) = errors_of(err)
    assert all(n in line for n in named) and all(k in line for k in emulated_kinds()), line
    assert "powermon-emulated" not in out + err and "Traceback" not in err and not ran.exists()


def test_f1_bench_run_refuses_it_and_writes_nothing(run: Any, tmp_path: Path) -> None:
    prof = profile(tmp_path, RAPL)
    out = tmp_path / "br" / "r1"
    code, _, err = run("bench", "run", "--platform", str(prof), "--emulate", "--quick", "--out", str(out))
    assert code == 2, err
    (line,) = errors_of(err)
    assert "'rapl' (rapl)" in line and "powermon2" in line and "Traceback" not in err
    assert not out.exists()


def test_f1_a_profile_without_meters_gets_the_default_powermon_and_a_note(run: Any, tmp_path: Path) -> None:
    prof = profile(tmp_path, "")
    code, out, err = run("measure", "--platform", str(prof), "--emulate", "--format", "json", "--", "true")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["meter"].startswith("powermon")
    note = "configures no [[meters]]: --emulate plays a default emulated PowerMon 2"
    assert any(note in w for w in doc["warnings"]), doc["warnings"]
    assert f"archline: warning: platform 'mine' {note}" in err


@pytest.mark.parametrize("name", ["gtx680", "fermi-sample"])
def test_f1_shipped_profiles_without_meters_still_emulate_with_the_note(run: Any, name: str) -> None:
    assert not load_bench_profile(name).meters
    code, _, err = run("measure", "--platform", name, "--emulate", "--", "true")
    assert code == 0, err
    assert "default emulated PowerMon 2" in err
    be = EmulatedBackend(name)                       # bench run's back end: the same default, the same note
    assert be.meter.kind == "powermon2" and any("default emulated PowerMon 2" in n for n in be.meter_notes)


def test_f1_bench_and_measure_pick_the_same_entry() -> None:
    """A PowerMon 2 listed after another playable meter: both commands play the PowerMon 2 (bench used to take
    the first playable entry, measure the PowerMon 2)."""
    ps3_first = dataclasses.replace(load_bench_profile(str(GTX580)))
    ps3_first.meters = tuple(reversed(ps3_first.meters))
    assert ps3_first.meters[0].kind == "powersensor3"
    spec, notes = choose(ps3_first, None)
    assert spec is not None and spec.kind == "powermon2" and not notes
    assert EmulatedBackend(ps3_first).meter.kind == "powermon2"


@pytest.mark.slow
def test_f1_bench_run_on_a_profile_without_meters_says_so(run: Any, tmp_path: Path) -> None:
    prof = profile(tmp_path, "")
    out = tmp_path / "R"
    code, _, err = run("bench", "run", "--platform", str(prof), "--emulate", "--quick", "--precision", "sp",
                       "--kernel", "intensity", "--out", str(out))
    assert code == 0, err
    assert "note: platform 'mine' configures no [[meters]]: --emulate plays a default emulated PowerMon 2" in err
    (results,) = out.glob("*.csv")
    with open(results) as f:
        assert {r["meter"] for r in csv.DictReader(f)} == {"powermon:powermon2-emulated"}


# --- 2: a calibration that would clip the emulated channel is refused --------------------------------------------

@pytest.mark.parametrize("gain,offset_w,played", [(2.0, 0.0, "348.6 W"), (2.0, 50.0, "373.6 W")])
def test_f2_measure_refuses_a_calibration_the_meter_would_clip(run: Any, tmp_path: Path, gain: float,
                                                                offset_w: float, played: str) -> None:
    prof = calibrated(tmp_path, gain=gain, offset_w=offset_w)
    ran = tmp_path / "ran"
    code, _, err = run("measure", "--platform", str(prof), "--emulate", "--meter", "ps3", "--format", "json",
                       "--", "touch", str(ran))
    assert code == 2, err
    (line,) = errors_of(err)
    for part in ("meter 'ps3'", f"gain {gain:g}", f"offset_w {offset_w:g} W", "channel 3 (aux_8pin_12v)",
                 f"would play {played}", "full scale", "clip"):
        assert part in line, (part, line)
    assert not ran.exists() and "Traceback" not in err


def test_f2_bench_run_refuses_it_and_writes_nothing(run: Any, tmp_path: Path) -> None:
    prof = calibrated(tmp_path, gain=2.0, offset_w=0.0)
    out = tmp_path / "R"
    code, _, err = run("bench", "run", "--platform", str(prof), "--emulate", "--meter", "ps3", "--quick",
                       "--out", str(out))
    assert code == 2, err
    (line,) = errors_of(err)
    assert "meter 'ps3'" in line and "gain 2" in line and "full scale" in line
    assert not out.exists()


def test_f2_a_negative_offset_below_the_powermons_zero_is_refused(run: Any, tmp_path: Path) -> None:
    """A PowerMon 2 reads no current below 0 A: an offset that takes the idle channel below it would be clipped."""
    prof = calibrated(tmp_path, gain=1.0, offset_w=-30.0, meter="powermon")
    code, _, err = run("measure", "--platform", str(prof), "--emulate", "--idle-w", "0", "--", "true")
    assert code == 2, err
    (line,) = errors_of(err)
    assert "meter 'powermon'" in line and "offset_w -30 W" in line and "below the 0.0 A" in line


def test_f2_a_gain_within_range_still_gives_the_truth(run: Any, tmp_path: Path) -> None:
    prof = calibrated(tmp_path, gain=1.3, offset_w=0.0)
    code, out, err = run("measure", "--platform", str(prof), "--emulate", "--meter", "ps3", "--format", "json",
                         "--", "sh", "-c", PHASE)
    assert code == 0, err
    (r,) = json.loads(out)["runs"]
    (ph,) = r["phases"]
    for w in (r, ph):
        assert abs(w["energy_j"] - w["truth_energy_j"]) <= w["energy_err_j"], w
    assert ph["truth_energy_j"] > 90


# --- 3: the port URL's faults played by measure --emulate too ----------------------------------------------------

def test_f3_measure_plays_the_ports_stall_and_says_so(run: Any, tmp_path: Path) -> None:
    text = re.sub(r'(?m)^name = "gtx580"', 'name = "stall"', GTX580.read_text(), count=1)
    text = text.replace('port = "/dev/ttyACM0"', 'port = "powersensor3://default?rate=2000&stall=0.4:0.128"')
    prof = tmp_path / "stall.toml"
    prof.write_text(text)
    code, out, err = run("measure", "--platform", str(prof), "--emulate", "--meter", "ps3", "--format", "json",
                         "--", "sleep", "1")
    assert code == 0, err
    doc = json.loads(out)
    (r,) = doc["runs"]
    assert r["lost_samples"] > 0, r                              # the stall was played (it was lost 0)
    assert any("the port's faults are played (stall=" in w for w in doc["warnings"]), doc["warnings"]
    assert abs(r["energy_j"] - r["truth_energy_j"]) <= r["energy_err_j"], r
