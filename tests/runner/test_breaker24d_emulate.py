"""Breaker 24 (fourth pass), ``--emulate`` in ``archline bench run`` and ``archline measure``:

1. a meter entry with a calibration (``archline meter calibrate``) is emulated as the miscalibrated sensor it
   describes, so that the correction gives the truth back (it used to play the true power and then correct it:
   every energy ~10% low, outside its bound);
2. a meter named with ``--emulate`` is played as itself or refused in one line naming it and the kinds
   ``--emulate`` plays (bench used to replace nvml/rapl by the emulated PowerMon 2 silently and refuse
   amdsmi/hwmon/ipmi with a shunt message; measure said "kind nvml has no driver module").
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from archline.bench.config.profile import load_bench_profile
from archline.bench.emulated.meters import SensorPlayed, emulated_kinds
from archline.bench.emulated.model import EmulatedModel
from archline.bench.kernels import Counts
from archline.powermon.spec import ChannelSpec, MeterSpec

GTX580 = Path(__file__).resolve().parents[2] / "fit" / "platforms" / "gtx580.toml"
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
