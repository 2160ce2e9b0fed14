"""Breaker 24 (second pass), ``bench run --emulate`` and ``archline measure`` with the issue-24 meters: a profile's
emulator URL keeps its faults under --emulate; the BMC's time-compression limit comes from its update period and
HTTP polls; --quick is never larger than the profile's own sweep; a run with no row leaves no capture directory;
measure's exit code, warnings, --meter and names."""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any

import pytest

GTX580 = Path(__file__).resolve().parents[2] / "fit" / "platforms" / "gtx580.toml"


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
