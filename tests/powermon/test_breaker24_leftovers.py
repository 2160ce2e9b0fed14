"""Breaker 24, the meters' leftovers: integrate states a stream meter's resolution bound as record did (13), a
--duration under one sample period is refused (17), a BMC refuses --channels and --rate (19), the sensor-window
refusal says what to do (23) and an empty trace says it holds no samples (24)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

STREAMS = {"powersensor3": "powersensor3:powersensor3://default?speed=2&rate=2000",
           "pmd": "pmd:pmd://default?speed=2"}


def _record(run_cli: Any, out: Path, spec: str, *extra: str) -> dict[str, Any]:
    r = run_cli("meter", "record", "--meter", spec, "--duration", "0.5", "--out", str(out), *extra)
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)  # type: ignore[no-any-return]


def _integrate(run_cli: Any, path: Path) -> tuple[dict[str, Any], str]:
    r = run_cli("meter", "integrate", str(path), "--format", "json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout), r.stderr


@pytest.mark.parametrize("kind", sorted(STREAMS))
def test_integrate_states_the_resolution_bound_record_did(run_cli: Any, tmp_path: Path, kind: str) -> None:
    """(13) `meter integrate` of a PowerSensor3 / PMD-USB trace said +- 0 J where `meter record` said ~1 J: the
    per-pair ADC steps now travel in the sidecar and one function makes the bound on both sides."""
    out = tmp_path / "t.csv"
    live = _record(run_cli, out, STREAMS[kind])[kind]
    steps = json.loads(Path(f"{out}.json").read_text())["info"]["resolution"]
    assert set(steps) >= {"0", "1", "2", "3"} and all(s["lsb_v"] > 0 and s["lsb_a"] > 0 for s in steps.values())
    got, err = _integrate(run_cli, out)
    assert got["total_energy_j"] == pytest.approx(live["energy_j"], rel=1e-6)
    assert live["energy_err_j"] > 0.1          # ~1 J over 0.5 s of ~230 W: the half steps, not rounding noise
    assert f"{got['energy_err_j']:.4g}" == f"{live['energy_err_j']:.4g}"
    assert "excludes" not in err


def test_an_old_sidecar_integrates_and_says_the_bound_excludes_resolution(run_cli: Any, tmp_path: Path) -> None:
    out = tmp_path / "t.csv"
    _record(run_cli, out, STREAMS["pmd"])
    side = json.loads(Path(f"{out}.json").read_text())
    del side["info"]["resolution"]                     # as an archline before this fix wrote it
    Path(f"{out}.json").write_text(json.dumps(side))
    got, err = _integrate(run_cli, out)
    assert got["total_energy_j"] > 50
    assert "excludes the meter's resolution" in err and err.count("\n") == 1


def test_a_decoded_stream_capture_keeps_its_resolution(run_cli: Any, tmp_path: Path) -> None:
    out = tmp_path / "t.csv"
    _record(run_cli, out, STREAMS["powersensor3"])
    dec = tmp_path / "d.csv"
    d = run_cli("meter", "decode", str(tmp_path / "t.raw.bin"), "--out", str(dec))
    assert d.exit_code == 0, d.stderr
    got, err = _integrate(run_cli, dec)
    assert got["energy_err_j"] > 0.1 and "excludes" not in err


@pytest.mark.parametrize("spec, period", [("emulated", "0.0078125"), ("emulated:4", "0.001953"),
                                          ("pmd:pmd://default", "0.001")])
def test_a_duration_under_one_sample_period_is_refused(run_cli: Any, tmp_path: Path, spec: str,
                                                       period: str) -> None:
    """(17) --duration 0.0005 was silently widened to a whole sample period."""
    r = run_cli("meter", "record", "--meter", spec, "--duration", "0.0005", "--out", str(tmp_path / "t.csv"))
    assert r.exit_code == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "--duration 0.0005 s" in r.stderr and "sample period" in r.stderr and "pass --duration" in r.stderr
    least = float(r.stderr.split("pass --duration ")[1].split()[0])
    assert least >= float(period) * 0.99999            # what it says to pass is at least one period
    assert list(tmp_path.iterdir()) == []              # nothing recorded, nothing left


def test_the_least_duration_it_names_is_accepted(run_cli: Any, tmp_path: Path) -> None:
    r = run_cli("meter", "record", "--meter", "emulated:4", "--duration", "0.0005", "--out", str(tmp_path / "t.csv"))
    least = r.stderr.split("pass --duration ")[1].split()[0]
    ok = run_cli("meter", "record", "--meter", "emulated:4", "--duration", least, "--out", str(tmp_path / "t.csv"))
    assert ok.exit_code == 0, ok.stderr


@pytest.mark.parametrize("kind", ["redfish", "ipmi"])
@pytest.mark.parametrize("extra, named", [(["--channels", "0,1"], "--channels"), (["--rate", "2"], "--rate"),
                                          (["--channels", "0", "--rate", "2"], "--channels and --rate")])
def test_a_bmc_refuses_channels_and_rate(run_cli: Any, tmp_path: Path, kind: str, extra: list[str],
                                         named: str) -> None:
    """(19) the BMC meters ignored --channels and --rate silently (refused before any BMC is asked)."""
    r = run_cli("meter", "record", "--meter", f"{kind}:http://127.0.0.1:9", "--duration", "1",
                "--out", str(tmp_path / "t.csv"), *extra)
    assert r.exit_code == 2 and r.stderr.count("\n") == 1, r.stderr
    assert f"so {named} cannot apply" in r.stderr and "whole-node" in r.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("meter", ["rapl", "rapl:package-0", "nvml:0"])
@pytest.mark.parametrize("extra, named", [(["--channels", "0,1"], "--channels"), (["--rate", "2"], "--rate")])
def test_an_energy_counter_refuses_channels_and_rate(run_cli: Any, tmp_path: Path, meter: str, extra: list[str],
                                                     named: str) -> None:
    """RAPL and NVML ignored --channels and --rate silently too (refused before the counter is opened)."""
    r = run_cli("meter", "record", "--meter", meter, "--duration", "1", "--out", str(tmp_path / "t.csv"), *extra)
    assert r.exit_code == 2 and r.stderr.count("\n") == 1, r.stderr
    assert f"{named} cannot apply to an energy counter" in r.stderr
    assert list(tmp_path.iterdir()) == []


def test_an_explicit_rate_of_128_is_honoured_by_a_stream_meter(run_cli: Any, tmp_path: Path) -> None:
    """--rate 128 was taken for 'not given' (the option's default) and a PMD-USB streamed its own 1000."""
    out = tmp_path / "t.csv"
    rec = _record(run_cli, out, "pmd:pmd://default", "--rate", "128")
    assert rec["pmd"]["sample_hz"] == 128.0


def test_the_sensor_window_refusal_says_what_to_do() -> None:
    """(23) `measure`'s refusal of a window shorter than the sensor profile allows offered no way out."""
    from archline.powermon.errors import MeterError
    from archline.powermon.record.integrate import SensorLimits, sensor_window

    lim = SensorLimits(update_period_s=0.1, window_s=0.1, source="sensor profile s.toml")
    with pytest.raises(MeterError) as e:
        sensor_window(0.0, 0.5, lim)
    msg = str(e.value)
    assert f"at least {lim.min_window_s:.4g} s" in msg and "sensor_profile" in msg and "\n" not in msg
    assert sensor_window(0.0, lim.min_window_s, lim)[2] == ""


@pytest.mark.parametrize("name", ["e.csv", "e.csv.gz", "e.parquet"])
def test_an_empty_trace_holds_no_samples(run_cli: Any, tmp_path: Path, name: str) -> None:
    """(24) a header-only trace was 'column t_s must hold numbers (found object)'."""
    import gzip

    import pyarrow as pa
    import pyarrow.parquet as pq

    p = tmp_path / name
    header = b"t_s,channel,voltage_v,current_a,power_w\n"
    if name.endswith(".parquet"):
        pq.write_table(pa.table({c: pa.array([], pa.int16() if c == "channel" else pa.float64())
                                 for c in ("t_s", "channel", "voltage_v", "current_a", "power_w")}), p)
    else:
        p.write_bytes(gzip.compress(header) if name.endswith(".gz") else header)
    r = run_cli("meter", "integrate", str(p))
    assert r.exit_code == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "holds no samples" in r.stderr and "must hold numbers" not in r.stderr


def test_the_shipped_ps3_rate_is_said_to_be_the_emulators(run_cli: Any, tmp_path: Path) -> None:
    """(21) gtx580's ps3 streams 250 frames/s so the emulator keeps up; only a TOML comment said a real
    PowerSensor3 streams 20000. `meter list`, every emulated run (bench run, meter record: an INFO line) and the
    trace's sidecar now say it."""
    from archline.bench.config.profile import load_bench_profile
    from archline.powermon.powersensor3.driver import PowerSensor3
    from archline.powermon.stream.rate_note import emulated_rate_note

    (ps3,) = [m for m in load_bench_profile("gtx580").meters if m.name == "ps3"]
    note = emulated_rate_note(PowerSensor3, "ps3", ps3.rate_hz)
    assert note is not None and "streams 250 frames/s" in note and "a real PowerSensor3 streams 20000" in note
    assert emulated_rate_note(PowerSensor3, "ps3", 20000.0) is None
    rows = json.loads(run_cli("meter", "list", "--format", "json").stdout)
    (emu,) = [r for r in rows if r["name"] == "powersensor3://default"]
    assert "20000" in emu["detail"] and "gtx580's ps3: 250" in emu["detail"]
    out = tmp_path / "t.csv"
    r = run_cli("meter", "record", "--meter", "powersensor3://default?rate=250", "--duration", "0.1",
                "--out", str(out))
    assert r.exit_code == 0, r.stderr
    assert "streams 250 frames/s" in r.stderr and "streams 20000" in r.stderr
    assert "streams 250 frames/s" in json.loads(Path(f"{out}.json").read_text())["info"]["rate_note"]
    real_rate = run_cli("meter", "record", "--meter", "powersensor3://default", "--duration", "0.05",
                        "--out", str(out))
    assert real_rate.exit_code == 0 and "frames/s" not in real_rate.stderr


def test_a_real_powersensor3_told_an_emulators_rate_is_warned(caplog: pytest.LogCaptureFixture) -> None:
    """A real PowerSensor3 streams 20 kHz whatever the profile says: the profile's 250 is a warning naming the fix."""
    import logging

    from archline.powermon.powersensor3.driver import PowerSensor3
    from archline.powermon.stream.rate_note import note_rate

    drv = PowerSensor3("/dev/ttyACM9", 250.0, name="ps3")            # constructed, never opened
    with caplog.at_level(logging.INFO, logger="archline.powermon"):
        note_rate(drv)
    (rec,) = caplog.records
    assert rec.levelno == logging.WARNING and "set rate_hz = 20000" in rec.getMessage()
    assert drv.rate_note is None
