"""A profile whose [emulate] rates or constants are absurd (1e-300 bytes/s made the emulator's sleep overflow with a
traceback) is one line naming the key, before anything runs."""

from __future__ import annotations

import csv
import dataclasses
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from archline.bench.config.profile import load_bench_profile
from archline.bench.emulated.backend import EmulatedBackend
from archline.bench.emulated.meters import SensorPlayed, choose, emulated_kinds
from archline.bench.emulated.model import EmulatedModel, EmulationError
from archline.bench.errors import BenchError
from archline.bench.kernels import Counts
from archline.formats.platforms.profiles import load_platform
from archline.model.errors import ProfileFormatError
from archline.powermon.spec import ChannelSpec, MeterSpec

GTX580 = Path(load_platform("gtx580").origin)


def _profile(tmp_path: Path, name: str, **subs: str) -> Path:
    """The shipped GTX 580 profile renamed ``name``, each ``key = value`` line of ``subs`` replaced (or, for a key
    not there, added to [emulate])."""
    text = GTX580.read_text()
    text = re.sub(r'^name = .*$', f'name = "{name}"', text, count=1, flags=re.M)
    for key, value in subs.items():
        line = f"{key} = {value}"
        text, n = re.subn(rf"^{key} = .*$", line, text, count=1, flags=re.M)
        if not n:
            text = text.replace("[emulate]\n", f"[emulate]\n{line}\n", 1)
    d = tmp_path / "profiles"
    d.mkdir(exist_ok=True)
    p = d / f"{name}.toml"
    p.write_text(text)
    return p


@pytest.mark.parametrize(("key", "value"), [
    ("observed_byte_per_s", "1e-300"), ("observed_byte_per_s", "1e300"), ("observed_flop_per_s_sp", "inf"),
    ("observed_flop_per_s_dp", "nan"), ("time_compression", "1e-300"), ("time_compression", "1e300"),
    ("idle_w", "1e300"), ("noise_rel", "1e10"),
])
def test_absurd_emulate_values_are_one_line(run_cli: Callable[..., Any], tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch, key: str, value: str) -> None:
    p = _profile(tmp_path, "absurd", **{key: value})
    monkeypatch.setenv("ARCHLINE_PLATFORM_PATH", str(p.parent))
    out = tmp_path / "out"
    r = run_cli("bench", "run", "--platform", "absurd", "--emulate", "--quick", "--out", str(out))
    assert r.exit_code == 2, r.stderr
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1 and key in r.stderr, r.stderr
    assert not out.exists()


@pytest.mark.parametrize(("subs", "says"), [
    ({"peak_byte_per_s": '{ value = 1e-300, source = "x" }', "observed_byte_per_s": "170e9"}, None),
    ({"eps_mem": '{ value = 1e300, source = "x" }'}, "eps_mem"),
])
def test_absurd_constants_cannot_be_emulated(tmp_path: Path, subs: dict[str, str], says: str | None) -> None:
    p = _profile(tmp_path, "odd", **subs)
    text = p.read_text()
    if says is None:     # the memory rate from 1/tau_mem: drop the observed rate so that the constant is used
        p.write_text(re.sub(r"^observed_byte_per_s = .*\n", "", text, flags=re.M))
    # a cost no machine can have is refused already where the profile is read (fit's profile owner)
    with pytest.raises((EmulationError, ProfileFormatError), match=says or "bytes_mem rate"):
        EmulatedModel.from_profile(load_bench_profile(str(p)))
    assert issubclass(EmulationError, BenchError)


# --- folded from test_breaker24d_emulate.py (a review round's regression tests) ----------------------------------
# Breaker 24 (fourth pass), ``--emulate`` in ``archline bench run`` and ``archline measure``:
#
# 1. a meter entry with a calibration (``archline meter calibrate``) is emulated as the miscalibrated sensor it
#    describes, so that the correction gives the truth back (it used to play the true power and then correct it:
#    every energy ~10% low, outside its bound);
# 2. a meter named with ``--emulate`` is played as itself or refused in one line naming it and the kinds
#    ``--emulate`` plays (bench used to replace nvml/rapl by the emulated PowerMon 2 silently and refuse
#    amdsmi/hwmon/ipmi with a shunt message; measure said "kind nvml has no driver module").


#: one busy phase of 0.4 s between idle stretches: the emulated device draws its peak inside it
PHASE = 'sleep 0.1; echo "begin a" > "$ARCHLINE_MARKS"; sleep 0.4; echo "end a" > "$ARCHLINE_MARKS"; sleep 0.1'
COUNTER_METERS = '''
[[meters]]
name = "nvml0"
kind = "nvml"
index = 0

[[meters]]
name = "rapl"
kind = "rapl"

[[meters]]
name = "amdsmi"
kind = "amdsmi"
index = 0

[[meters]]
name = "hwmon"
kind = "hwmon"
'''


def calibrated(tmp_path: Path, *, gain: float = 1.07, offset_w: float = -3.5, lag_s: float = 0.03) -> Path:
    """gtx580 whose ps3 entry carries the calibration `meter calibrate ps3 --emulate --gain 1.07 --offset -3.5`
    writes (its fitted values, rounded)."""
    cal = (f"calibration = {{ gain = {gain}, gain_err = 0.0004, offset_w = {offset_w}, offset_w_err = 0.04, "
           f"lag_s = {lag_s}, lag_s_err = 0.0006, emulated = true }}")
    text = re.sub(r'(?m)^name = "gtx580"', 'name = "gtx580cal"', GTX580.read_text(), count=1)
    text = text.replace('port = "/dev/ttyACM0"', f'port = "/dev/ttyACM0"\n{cal}')
    assert cal in text
    p = tmp_path / "gtx580-cal.toml"
    p.write_text(text)
    return p


def with_counters(tmp_path: Path) -> Path:
    p = tmp_path / "my.toml"
    p.write_text(GTX580.read_text() + COUNTER_METERS)
    return p


def inside(w: dict[str, Any]) -> bool:
    return abs(w["energy_j"] - w["truth_energy_j"]) <= w["energy_err_j"]


def rows_of(out: Path) -> list[dict[str, str]]:
    (results,) = out.glob("*.csv")
    with open(results) as f:
        return list(csv.DictReader(f))


def model_truth_j(profile: Path, row: dict[str, str]) -> float:
    """What the emulated device drew in one timed region of the row: the model's power times its time."""
    model = EmulatedModel.from_profile(load_bench_profile(str(profile)))
    counts = Counts(flops_sp=int(float(row["flops_sp"] or 0)), bytes_mem=int(float(row["bytes_mem"] or 0)))
    return model.power_w(counts) * float(row["time_s"])


# --- 1: a calibrated meter, emulated ---------------------------------------------------------------------------

class _Flat:
    """A source playing 100 W for t < 1 device s and 200 W after, split 0.25/0.75 on two 12 V channels."""

    def sample(self, t_s: Any, channels: Any) -> tuple[Any, Any]:
        p = np.where(np.asarray(t_s) < 1.0, 100.0, 200.0)
        share = {0: 0.25, 1: 0.75}
        volts = np.full((p.size, len(channels)), 12.0)
        amps = np.stack([p * share[c] / 12.0 for c in channels], axis=1)
        return volts, amps


def test_f1_the_played_sensor_reads_gain_times_the_lagged_truth_plus_the_offset() -> None:
    spec = MeterSpec(name="ps", kind="powersensor3", calibration={"gain": 1.2, "offset_w": -4.0, "lag_s": 0.1},
                     channels=(ChannelSpec(id=0, rail="a", device="gpu", share=0.25),
                               ChannelSpec(id=1, rail="b", device="gpu", share=0.75)))
    src = SensorPlayed(_Flat(), spec)
    t = np.array([0.5, 1.05, 1.2])
    volts, amps = src.sample(t, [0, 1])
    total = (volts * amps).sum(axis=1)
    # 1.05 s is still 100 W on the sensor (0.1 s late); the offset is spread on the channels by their shares
    assert np.allclose(total, [1.2 * 100 - 4, 1.2 * 100 - 4, 1.2 * 200 - 4])
    assert np.allclose(volts[:, 1] * amps[:, 1], [0.75 * (1.2 * p - 4) for p in (100, 100, 200)])


def test_f1_measure_through_a_calibrated_emulated_ps3_brackets_the_truth(run: Any, tmp_path: Path) -> None:
    prof = calibrated(tmp_path)
    code, out, err = run("measure", "--platform", str(prof), "--emulate", "--meter", "ps3", "--format", "json",
                         "--", "sh", "-c", PHASE)
    assert code == 0, err
    doc = json.loads(out)
    (r,) = doc["runs"]
    (ph,) = r["phases"]
    assert "calibrated" in " ".join(r["warnings"])            # the correction was applied ...
    for w in (r, ph):                                          # ... and gives the truth back, within the bound
        assert inside(w), (w["energy_j"], w["energy_err_j"], w["truth_energy_j"])
    assert ph["truth_energy_j"] > 100            # the phase is busy: a 10% miss would be far outside its bound


@pytest.mark.slow
def test_f1_bench_quick_through_a_calibrated_emulated_ps3_brackets_the_truth(run: Any, tmp_path: Path) -> None:
    prof = calibrated(tmp_path)
    out = tmp_path / "R"
    code, _, err = run("bench", "run", "--platform", str(prof), "--emulate", "--meter", "ps3", "--quick",
                       "--precision", "sp", "--time-compression", "10", "--out", str(out))
    assert code == 0, err
    rows = rows_of(out)
    assert len(rows) >= 5, err
    for row in rows:
        assert row["meter"] == "ps3:powersensor3-emulated" and row["calibration"].startswith("calibrated"), row
        e, err_j, truth = float(row["energy_j"]), float(row["energy_err_j"]), model_truth_j(prof, row)
        assert abs(e - truth) <= err_j, (row["point_id"], e, err_j, truth)


# --- 2: a named meter is played as itself or refused -------------------------------------------------------------

@pytest.mark.parametrize("meter,kind", [("nvml0", "nvml"), ("rapl", "rapl")])
def test_f2_bench_run_refuses_a_meter_it_cannot_emulate_and_writes_nothing(run: Any, tmp_path: Path, meter: str,
                                                                           kind: str) -> None:
    prof = with_counters(tmp_path)
    out = tmp_path / "R"
    code, _, err = run("bench", "run", "--platform", str(prof), "--emulate", "--meter", meter, "--quick",
                       "--precision", "sp", "--out", str(out))
    assert code == 2, err
    errors = [ln for ln in err.splitlines() if ln.startswith("archline: error:")]
    assert len(errors) == 1 and f"meter '{meter}' ({kind})" in errors[0] and "cannot be emulated" in errors[0], err
    assert all(k in errors[0] for k in emulated_kinds()) and "Traceback" not in err
    assert not out.exists()


@pytest.mark.parametrize("meter", ["nvml0", "rapl"])
def test_f2_measure_refuses_it_in_the_same_words(run: Any, tmp_path: Path, meter: str) -> None:
    prof = with_counters(tmp_path)
    ran = tmp_path / "ran"
    code, _, err = run("measure", "--platform", str(prof), "--emulate", "--meter", meter, "--", "touch", str(ran))
    assert code == 2, err
    errors = [ln for ln in err.splitlines() if ln.startswith("archline: error:")]
    assert len(errors) == 1 and f"meter '{meter}'" in errors[0] and "cannot be emulated: --emulate plays" in errors[0]
    assert "driver module" not in err and not ran.exists()


@pytest.mark.parametrize("meter", ["amdsmi", "hwmon"])
def test_f2_bench_run_plays_a_counter_meter_and_its_rows_name_it(run: Any, tmp_path: Path, meter: str) -> None:
    prof = with_counters(tmp_path)
    out = tmp_path / "R"
    code, _, err = run("bench", "run", "--platform", str(prof), "--emulate", "--meter", meter, "--quick",
                       "--precision", "sp", "--out", str(out))
    assert code == 0, err
    assert "r_sense_ohm" not in err                   # no shunt check for a meter that has no shunt
    rows = rows_of(out)
    assert rows and {r["meter"] for r in rows} == {f"{meter}:{meter}-emulated"}
    for r in rows:                                    # plain numbers in the cells (not "np.float64(...)")
        float(r["energy_j"]), float(r["energy_err_j"])


def test_f2_measure_plays_the_counter_meter_named(run: Any, tmp_path: Path) -> None:
    prof = with_counters(tmp_path)
    code, out, err = run("measure", "--platform", str(prof), "--emulate", "--meter", "amdsmi", "--format", "json",
                         "--", "true")
    assert code == 0, err
    assert json.loads(out)["meter"].startswith("amdsmi")


def test_f2_measure_default_skips_a_first_meter_without_an_emulator(run: Any, tmp_path: Path) -> None:
    """No PowerMon 2 in the profile, its first meter an nvml one: the first meter with an emulator plays (it used
    to fail with 'kind nvml has no driver module')."""
    text = GTX580.read_text()
    head = text[: text.index("[[meters]]")]
    prof = tmp_path / "counters.toml"
    prof.write_text(head + COUNTER_METERS)
    code, out, err = run("measure", "--platform", str(prof), "--emulate", "--format", "json", "--", "true")
    assert code == 0, err
    assert json.loads(out)["meter"].startswith("amdsmi")


# --- folded from test_breaker24e_emulate.py (a review round's regression tests) ----------------------------------
# Breaker 24 (fifth pass), ``--emulate`` in ``archline measure`` and ``archline bench run``:
#
# 1. a profile whose ``[[meters]]`` are all of kinds without an emulator (RAPL, NVML) is refused (exit 2, one line
#    naming its meters and the kinds ``--emulate`` plays); it used to be played through a PowerMon 2 the profile
#    does not have, silently. A profile without ``[[meters]]`` (fermi-sample, gtx680) still gets the default
#    emulated PowerMon 2, now with a note saying so.
# 2. a calibrated entry whose played sensor (``gain x true + offset_w``) would carry a channel past the emulated
#    meter's full scale is refused before anything runs, naming the entry, its gain/offset, the power and the full
#    scale (gain 2 used to be clipped silently: energies 4.5% low, 13.5x outside the bound).
# 3. the faults in a profile's emulator port URL (``powersensor3://default?stall=...``) are played by ``measure
#    --emulate`` as by ``bench run --emulate`` (one code path, bench/emulated/meters.emulate_entry), and noted.


#: one busy phase of 0.3 s between idle stretches: the emulated device draws its peak inside it
PHASE_r24e = 'sleep 0.1; echo "begin a" > "$ARCHLINE_MARKS"; sleep 0.3; echo "end a" > "$ARCHLINE_MARKS"; sleep 0.1'


def profile(tmp_path: Path, meters: str, name: str = "mine") -> Path:
    """gtx580 named ``name``, its [[meters]] replaced by ``meters``."""
    text = GTX580.read_text()
    text = re.sub(r'(?m)^name = "gtx580"', f'name = "{name}"', text[: text.index("[[meters]]")], count=1)
    p = tmp_path / f"{name}.toml"
    p.write_text(text + meters)
    return p


def calibrated_r24e(tmp_path: Path, *, gain: float, offset_w: float, meter: str = "ps3") -> Path:
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
    prof = calibrated_r24e(tmp_path, gain=gain, offset_w=offset_w)
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
    prof = calibrated_r24e(tmp_path, gain=2.0, offset_w=0.0)
    out = tmp_path / "R"
    code, _, err = run("bench", "run", "--platform", str(prof), "--emulate", "--meter", "ps3", "--quick",
                       "--out", str(out))
    assert code == 2, err
    (line,) = errors_of(err)
    assert "meter 'ps3'" in line and "gain 2" in line and "full scale" in line
    assert not out.exists()


def test_f2_a_negative_offset_below_the_powermons_zero_is_refused(run: Any, tmp_path: Path) -> None:
    """A PowerMon 2 reads no current below 0 A: an offset that takes the idle channel below it would be clipped."""
    prof = calibrated_r24e(tmp_path, gain=1.0, offset_w=-30.0, meter="powermon")
    code, _, err = run("measure", "--platform", str(prof), "--emulate", "--idle-w", "0", "--", "true")
    assert code == 2, err
    (line,) = errors_of(err)
    assert "meter 'powermon'" in line and "offset_w -30 W" in line and "below the 0.0 A" in line


def test_f2_a_gain_within_range_still_gives_the_truth(run: Any, tmp_path: Path) -> None:
    prof = calibrated_r24e(tmp_path, gain=1.3, offset_w=0.0)
    code, out, err = run("measure", "--platform", str(prof), "--emulate", "--meter", "ps3", "--format", "json",
                         "--", "sh", "-c", PHASE_r24e)
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
    text = text.replace("rate_hz = 250", "rate_hz = 2000")      # one rate (two that disagree are refused)
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


# --- folded from test_breaker24b_bench_measure.py (a review round's regression tests) ----------------------------
# Breaker 24 (second pass), ``bench run --emulate`` and ``archline measure`` with the issue-24 meters: a profile's
# emulator URL keeps its faults under --emulate; the BMC's time-compression limit comes from its update period and
# HTTP polls; --quick is never larger than the profile's own sweep; a run with no row leaves no capture directory;
# measure's exit code, warnings, --meter and names.




def small_profile(tmp_path: Path, *, name: str = "myfault", port: str | None = None,
                  ps3_port: str | None = None, points: int = 2, extra: str = "") -> Path:
    """The GTX 580 profile renamed, with a 2-point DP sweep (``--quick`` keeps it) and the meter ports given."""
    text = GTX580.read_text()
    text = re.sub(r'(?m)^name = "gtx580"', f'name = "{name}"', text, count=1)
    text = text.replace('precisions = ["sp", "dp"]', 'precisions = ["dp"]')
    text = text.replace('kernels = ["intensity", "cache"]', 'kernels = ["intensity"]')
    text = text.replace("min_samples = 200 ", f"min_samples = 200 \n{extra}", 1)
    text = re.sub(r"(?m)^# PowerMon 2 with the PCIe",
                  f"[bench.sweep]\nintensity_dp = {{ min = 1.0, max = 4.0, points = {points} }}\n\n"
                  "# PowerMon 2 with the PCIe", text, count=1)
    if port is not None:
        text = text.replace('port = "/dev/ttyUSB0"', f'port = "{port}"')
    if ps3_port is not None:
        text = text.replace('port = "/dev/ttyACM0"', f'port = "{ps3_port}"')
    p = tmp_path / f"{name}.toml"
    p.write_text(text)
    return p


def rows(out: Path) -> list[dict[str, str]]:
    got: list[dict[str, str]] = []
    for f in sorted(out.glob("*.csv")):
        with f.open() as fh:
            got += list(csv.DictReader(fh))
    return got


# --- 8: the port's emulator URL and its faults under --emulate ------------------------------------------------

def test_f8_emulate_plays_the_ports_disconnect_fault(run: Any, tmp_path: Path) -> None:
    prof = small_profile(tmp_path, port="powermon://default?disconnect=0.05")
    code, _, err = run("bench", "run", "--platform", str(prof), "--emulate", "--quick", "--kernel", "intensity",
                       "--precision", "dp", "--out", str(tmp_path / "R"))
    # the meter vanishes 0.05 device s into its stream: no point can be measured, and the user is told why
    assert "the port's faults are played (disconnect_s=0.05)" in err, err
    assert "disconnected" in err, err
    assert code != 0
    assert rows(tmp_path / "R") == []
    assert not list((tmp_path / "R").glob("*/*.raw")) if (tmp_path / "R").exists() else True


def test_f8_emulate_refuses_a_bad_fault_option_in_one_line(run: Any, tmp_path: Path) -> None:
    prof = small_profile(tmp_path, port="powermon://default?stall=oops")
    code, _, err = run("bench", "run", "--platform", str(prof), "--emulate", "--quick", "--out", str(tmp_path / "R"))
    assert code == 2 and "stall takes" in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "R").exists()


def test_f8_port_faults_parsed_per_kind() -> None:
    from archline.bench.emulated.port import port_faults
    from archline.powermon.spec import MeterSpec

    pm = MeterSpec.model_validate({"name": "pm", "kind": "powermon2", "port": "powermon://default?stall=0.3:0.5&speed=9",
                                   "channels": [{"id": 0, "rail": "r", "device": "gpu", "nominal_v": 12.0}]})
    faults, notes = port_faults(pm)
    assert faults is not None and faults.stall == (0.3, 0.5)
    assert any("speed= is not used under --emulate" in n for n in notes)
    ps3 = MeterSpec.model_validate({"name": "ps3", "kind": "powersensor3", "port": "powersensor3://default?drop=100",
                                    "channels": [{"id": 0, "rail": "r", "device": "gpu", "nominal_v": 12.0}]})
    assert port_faults(ps3)[0].drop_bytes == (100,)
    pmd = MeterSpec.model_validate({"name": "pmd", "kind": "pmd", "port": "pmd://default?disconnect=2",
                                    "channels": [{"id": 0, "rail": "r", "device": "gpu", "nominal_v": 12.0}]})
    assert port_faults(pmd)[0].disconnect_s == 2.0
    real = MeterSpec.model_validate({"name": "pm", "kind": "powermon2", "port": "/dev/ttyUSB0",
                                     "channels": [{"id": 0, "rail": "r", "device": "gpu", "nominal_v": 12.0}]})
    assert port_faults(real) == (None, [])
    # the PowerMon 2's options through its URL's one parser (issue 37: the copy here had drifted and refused
    # overflow=, which meter record takes), its errors worded as meter record's
    over = port_faults(pm.model_copy(update={"port": "powermon://default?overflow=64:3&partial_first=2"}))[0]
    assert over is not None and over.overflow == ((64, 3),) and over.partial_first == 2
    with pytest.raises(EmulationError, match=r"port 'powermon://default\?overflow=64': overflow takes EVENT:N pairs"):
        port_faults(pm.model_copy(update={"port": "powermon://default?overflow=64"}))


# --- 14: the BMC's time-compression limit ---------------------------------------------------------------------

@pytest.mark.parametrize("tc", ["100000", "200", "100"])
def test_f14_bmc_time_compression_refused_by_its_polls(run: Any, tmp_path: Path, tc: str) -> None:
    code, _, err = run("bench", "run", "--platform", "emulated-node", "--emulate", "--time-compression", tc,
                         "--out", str(tmp_path / "R"))
    assert code == 2, err
    line = err.strip()
    assert len(line.splitlines()) == 1 and "pty" not in line and "records per second" not in line, line
    assert "polled over HTTP" in line and "lower --time-compression to 20 or less" in line, line
    assert not (tmp_path / "R").exists()


def test_f14_bmc_limit_is_the_profiles_own_speed() -> None:
    from archline.bench.config.profile import load_bench_profile
    from archline.bench.emulated.backend import bmc_max_time_compression

    # the shipped profile runs at its limit (a reading on show 50 ms, polled every 12.5 ms: docs/meters.md)
    assert bmc_max_time_compression(1.0) == 20
    assert load_bench_profile("emulated-node").emulate.time_compression <= bmc_max_time_compression(1.0)


# --- 16: --quick is never larger than the profile's sweep -----------------------------------------------------

def test_f16_quick_never_larger_than_the_profiles_sweep() -> None:
    from archline.bench.config.options import RunOptions
    from archline.bench.config.profile import load_bench_profile
    from archline.bench.emulated.backend import EmulatedBackend
    from archline.bench.run.points import make_points

    prof = load_bench_profile("emulated-node")
    be = EmulatedBackend(prof)
    quick, _ = make_points(be, RunOptions(platform="emulated-node", emulate=True, quick=True), prof, (None,), (None,))
    full, _ = make_points(be, RunOptions(platform="emulated-node", emulate=True), prof, (None,), (None,))
    qi = [p.spec.params["intensity"] for p in quick]
    fi = [p.spec.params["intensity"] for p in full]
    assert len(fi) == 5 and len(qi) == 5 and max(qi) == 16.0 and min(qi) == 0.0625
    gtx = load_bench_profile("gtx580")   # the default sweep (36 DP points): quick still shrinks it to 11
    be = EmulatedBackend(gtx)
    q, _ = make_points(be, RunOptions(platform="gtx580", emulate=True, quick=True, precisions=("dp",),
                                kernels=("intensity",)), gtx, (None,),
                       (None,))
    assert len([p for p in q if p.spec.kernel == "intensity"]) == 11


# --- 11: bench run with a sensor profile ------------------------------------------------------------------------

def sensor_profile(tmp_path: Path) -> Path:
    """A PowerSensor3 entry held to a sensor profile whose shortest window is (0.05 + 0.02) / 0.1 = 0.7 s, longer
    than --quick's 0.5 s idle windows and its 128-sample (0.51 s at 250 Hz) regions."""
    (tmp_path / "S.json").write_text('{"format": "archline.sensor_profile/1", "meter": "ps3", "emulated": true, '
                                     '"update_period_s": 0.05, "window_s": 0.02, "lag_s": 0.0}')
    p = small_profile(tmp_path, name="sens")
    p.write_text(p.read_text().replace('port = "/dev/ttyACM0"', 'port = "/dev/ttyACM0"\nsensor_profile = "S.json"'))
    return p


def test_f11_bench_windows_lengthened_to_the_sensors_minimum(run: Any, tmp_path: Path) -> None:
    prof = sensor_profile(tmp_path)
    code, _, err = run("bench", "run", "--platform", str(prof), "--emulate", "--meter", "ps3", "--quick",
                       "--kernel", "intensity", "--out", str(tmp_path / "R"))
    assert code == 0, err
    assert "failed" not in err and "windows last at least 0.77 s" in err, err
    got = rows(tmp_path / "R")
    assert len(got) == 2
    for r in got:    # each region's time (device s) at least the sensor's shortest window
        assert float(r["time_s"]) >= 0.7 and int(r["n_regions"]) >= 1, r


def test_f11_no_row_leaves_no_capture_directory_and_says_which_option(run: Any, tmp_path: Path) -> None:
    prof = sensor_profile(tmp_path)
    out = tmp_path / "R"
    out.mkdir()
    (out / "keep.txt").write_text("not the run's")
    code, _, err = run("bench", "run", "--platform", str(prof), "--emulate", "--meter", "ps3", "--quick",
                       "--kernel", "intensity", "--reps", "1", "--out", str(out))
    assert code == 3, err
    assert err.count("failed: window of") == 2 and "bench run: --min-time lengthens" in err, err
    assert "loop its work inside the phase" not in err
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]     # no <run_id>/powersensor3-0000.raw
