"""Recorder regions on an emulated meter, integration, traces, and the `archline meter` commands."""

from __future__ import annotations

import csv
import errno
import io
import itertools
import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from support.powermon_helpers import SCRIPT

from archline.cli.meter import meter as meter_cli
from archline.common.exits import EXIT_INPUT, EXIT_OK, EXIT_WRITE
from archline.formats.meters.samples_file import read_samples
from archline.powermon.emulator import Script
from archline.powermon.errors import MeterError
from archline.powermon.powermon2.driver import PowerMon2
from archline.powermon.powermon2.meter import emulated_powermon, open_powermon
from archline.powermon.record.integrate import integrate_series
from archline.powermon.record.recorder import Recorder
from archline.powermon.spec import MeterSpec, parse_meters

#: the papers' GPU rails (S0 §IV-A): PCIe slot 12 V and 3.3 V through the interposer, 6-pin and 8-pin cables
(GPU,) = parse_meters([{"name": "pm", "kind": "powermon2", "channels": [
    {"id": 0, "rail": "pcie_12v", "device": "gpu", "r_sense_ohm": 0.00422},
    {"id": 1, "rail": "pcie_3v3", "device": "gpu", "nominal_v": 3.3, "r_sense_ohm": 0.01},
    {"id": 2, "rail": "aux_6pin", "device": "gpu"}, {"id": 3, "rail": "aux_8pin", "device": "gpu"}]}], "test")


def test_recorder_regions_energy_within_0p1_percent(tmp_path: Path) -> None:
    m = emulated_powermon(GPU, SCRIPT, speed=4.0, name="pm")
    with Recorder([m]) as rec:
        time.sleep(0.1)
        rec.begin("outer")
        rec.begin("a")
        time.sleep(0.4)
        ra = rec.end("a")
        time.sleep(0.3)
        ro = rec.end("outer")
        with pytest.raises(MeterError, match="never begun"):
            rec.end("a")
    cm = m.driver.clock_map()
    for r in (ra, ro):
        mr = r.meters["pm"]
        d0, d1 = cm.to_device(r.t_start_s), cm.to_device(r.t_end_s)
        want = SCRIPT.energy_j(d0, d1, [0, 1, 2, 3])
        assert r.energy_j() == pytest.approx(want, rel=1e-3)
        assert abs(r.energy_j() - want) <= r.energy_err_j()
        assert r.emulated and mr.emulated and mr.overflows == 0 and mr.gaps == 0
        assert r.energy_j(device="gpu") == pytest.approx(r.energy_j())
        assert set(mr.channels) == {"0", "1", "2", "3"} and mr.channels["1"].rail == "pcie_3v3"
        assert mr.n_samples == pytest.approx((d1 - d0) * 128 * 4, abs=8)
        assert mr.samples is not None and len(mr.samples) >= mr.n_samples
    paths = rec.write_traces(tmp_path / "run", "parquet") + rec.write_traces(tmp_path / "run2", "csv.gz")
    for p in paths:
        s, meta = read_samples(p)
        assert len(s) > 0 and meta["emulated"] is True and meta["marks"][0]["name"] == "outer"


def test_channel_map_errors() -> None:
    with pytest.raises(MeterError, match="channels 0-7, got 9"):
        parse_meters([{"name": "a", "kind": "powermon2", "channels": [{"id": 9, "rail": "x"}]}], "t")
    with pytest.raises(MeterError, match="more than one channel"):
        parse_meters([{"name": "a", "kind": "powermon2", "channels": [{"id": 0, "rail": "x"}, {"id": 1, "rail": "x"}]}],
                     "t")
    with pytest.raises(MeterError, match="has no port"):
        open_powermon(MeterSpec(name="a", kind="powermon2", channels=GPU.channels))


def test_integrate_partial_edges_and_bound() -> None:
    t = np.arange(0, 1.01, 0.1)
    p = 10.0 + 5.0 * t            # linear: the trapezoid is exact
    ce = integrate_series(t, p, 0.05, 0.95)
    assert ce.energy_j == pytest.approx(10.0 * 0.9 + 2.5 * (0.95**2 - 0.05**2))
    assert ce.energy_err_j > 0 and ce.gaps == 0
    t2 = np.delete(t, [4, 5])
    assert integrate_series(t2, 10 + 0 * t2, period_s=0.1).gaps == 1
    assert integrate_series(t2, 10 + 0 * t2, period_s=0.1).lost_samples == 2


def test_decode_and_integrate_commands(pty_device, tmp_path: Path) -> None:
    flat = Script.constant({0: (12.0, 5.0), 1: (3.3, 2.0), 2: (12.0, 8.0)})
    _, srv = pty_device(None, 4.0, flat)
    raw = tmp_path / "cap.raw.bin"
    with PowerMon2(srv.port, [0, 1, 2], rate_hz=256, speed=4.0, raw_path=raw):
        time.sleep(1.0)
    runner = CliRunner()
    out = tmp_path / "samples.csv"
    res = runner.invoke(meter_cli, ["decode", str(raw), "--out", str(out)])
    assert res.exit_code == 0, res.output
    header = out.read_text().splitlines()[0]
    assert header == "t_s,channel,voltage_v,current_a,power_w"
    res = runner.invoke(meter_cli, ["integrate", str(out), "--format", "json"])
    assert res.exit_code == 0, res.output
    js = json.loads(res.output)
    assert set(js) >= {"channels", "total_energy_j", "energy_err_j", "duration_s", "overflows", "gaps"}
    assert set(js["channels"]) == {"0", "1", "2"} and js["overflows"] == 0 and js["gaps"] == 0
    for c in js["channels"].values():
        assert set(c) >= {"energy_j", "mean_power_w", "n_samples"}
    # integrated on the device's timeline, as the recording is: host seconds x speed = device seconds
    s, _ = read_samples(out)
    span_dev = (s.t_s.max() - s.t_s.min()) * 4.0
    assert js["time_compression"] == 4.0 and js["duration_s"] == pytest.approx(span_dev)
    expected_w = 12.0 * 5.0 + 3.3 * 2.0 + 12.0 * 8.0
    assert js["total_energy_j"] / span_dev == pytest.approx(expected_w, rel=2e-3)
    # bad input: one-line errors, not tracebacks
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(b"\xff" * 4000)
    res = runner.invoke(meter_cli, ["decode", str(garbage), "--out", str(tmp_path / "g.csv")])
    assert res.exit_code != 0 and isinstance(res.exception, MeterError)
    (tmp_path / "t.bin").write_bytes(b"\x00\x01")
    res = runner.invoke(meter_cli, ["decode", str(tmp_path / "t.bin"), "--out", str(tmp_path / "t.csv")])
    assert isinstance(res.exception, MeterError) and "truncated" in str(res.exception)


def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-c", "import sys; from archline.cli.main import main; sys.exit(main())",
                        "meter", "decode", str(tmp_path / "none.bin"), "--out", str(tmp_path / "x.csv")],
                       capture_output=True, text=True)
    assert p.returncode == 2 and p.stderr.strip().count("\n") == 0 and "does not exist" in p.stderr


def test_emulate_command_serves_a_pty(tmp_path: Path) -> None:
    import subprocess
    import sys

    script = tmp_path / "s.json"
    script.write_text(json.dumps({"steps": [{"t_s": 0, "channels": {"0": [12.0, 2.0]}}]}))
    portfile = tmp_path / "port"
    proc = subprocess.Popen([sys.executable, "-c", "from archline.cli.main import main; main()", "meter", "emulate",
                             "--script", str(script), "--duration", "20", "--port-file", str(portfile)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        for _ in range(100):
            if portfile.exists() and portfile.read_text().strip():
                break
            time.sleep(0.05)
        pm = PowerMon2(portfile.read_text().strip(), [0], rate_hz=128)
        with pm:
            time.sleep(0.5)
        assert pm.emulated and len(pm.samples()) >= 50
        assert np.allclose(pm.samples().power_w, 24.0, rtol=2e-3)
    finally:
        proc.terminate()
        proc.wait(5)


def test_package_api_and_record_command(tmp_path: Path) -> None:
    import archline.powermon as pm

    meter = pm.open_meter(GPU.model_copy(update={"port": "/dev/does-not-exist"}))
    with pytest.raises(MeterError, match="does not exist"), pm.Recorder([meter]):
        pass
    em = pm.emulated_powermon(GPU, power=lambda t_s: {0: (12.0, 5.0), 1: (3.3, 2.0), 2: (12.0, 1.0),
                                                      3: (12.0, 2.0)}, speed=8.0)
    with pm.Recorder([em]) as rec:
        rec.begin("x")
        time.sleep(0.3)
        r = rec.end("x")
    assert r.energy_j(device="gpu") / (r.time_s * 8.0) == pytest.approx(60 + 6.6 + 12 + 24, rel=2e-3)
    assert r.summary()["pm" if "pm" in r.meters else em.name]["emulated"] is True
    res = CliRunner().invoke(meter_cli, ["record", "--meter", "emulated:4", "--channels", "0,1", "--duration", "0.5",
                                         "--out", str(tmp_path / "t.parquet")])
    assert res.exit_code == 0, res.output
    s, meta = read_samples(tmp_path / "t.parquet")
    assert len(s) > 100 and meta["emulated"] is True and s.channels() == [0, 1]


# --- folded from test_breaker24_leftovers.py (a review round's regression tests) ---------------------------------
# Breaker 24, the meters' leftovers: integrate states a stream meter's resolution bound as record did (13), a
# --duration under one sample period is refused (17), a BMC refuses --channels and --rate (19), the sensor-window
# refusal says what to do (23) and an empty trace says it holds no samples (24).


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


def test_a_real_powersensor3_told_an_emulators_rate_is_refused(caplog: pytest.LogCaptureFixture) -> None:
    """A real PowerSensor3 streams its MCU's rate whatever the profile says (an F411 20 kHz, an F401 17.5 kHz, issue
    35 S#2): the profile's 250 is refused at open naming the fix, with no warning first (note_rate leaves it to the
    handshake, which knows the board)."""
    import logging

    from archline.powermon.errors import MeterError
    from archline.powermon.powersensor3.driver import PowerSensor3
    from archline.powermon.stream.rate_note import note_rate

    drv = PowerSensor3("/dev/ttyACM9", 250.0, name="ps3")            # constructed, never opened
    with caplog.at_level(logging.INFO, logger="archline.powermon"):
        note_rate(drv)
    assert caplog.records == [] and drv.rate_note is None and drv.rate_warning is None
    drv.version = "F411-1.6.1"                                          # what V answers
    with pytest.raises(MeterError, match="set rate_hz = 20000"):
        drv.check_version()


# --- folded from test_breaker24b_outputs.py (a review round's regression tests) ----------------------------------
# Breaker 24b, meter record's outputs: the raw capture keeps the trace's whole name and never replaces another
# recording's (1), a trace written to stdout keeps the summary out of it (2), and every output is checked before the
# meter starts, with nothing half-written left when a write fails at the end (6).


HEADER = "t_s,channel,voltage_v,current_a,power_w"


def _record_r24b(run_cli: Any, out: str | Path, *extra: str, duration: str = "0.3") -> Any:
    return run_cli("meter", "record", "--meter", "emulated:8", "--duration", duration, "--out", str(out), *extra)


def _files(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir())


# ---------------------------------------------------------------------------------------------- (1) capture name
@pytest.mark.parametrize(("trace", "raw"), [("run.1.csv", "run.1.raw.bin"), ("h1.2.csv.gz", "h1.2.raw.bin"),
                                            ("x_stall_0.5_0.5.parquet", "x_stall_0.5_0.5.raw.bin"),
                                            ("t.CSV", "t.raw.bin")])
def test_the_capture_keeps_the_whole_trace_name(trace: str, raw: str) -> None:
    from archline.powermon.recording import raw_capture_path

    assert raw_capture_path(Path("/d") / trace) == Path("/d") / raw


def test_two_recordings_with_dotted_names_keep_both_captures(run_cli: Any, tmp_path: Path) -> None:
    """run.1.csv then run.2.csv both wrote run.raw.bin: the second replaced the first silently."""
    for n in (1, 2):
        r = _record_r24b(run_cli, tmp_path / f"run.{n}.csv")
        assert r.exit_code == EXIT_OK, r.stderr
        assert json.loads(r.stdout)["raw"] == str(tmp_path / f"run.{n}.raw.bin")
    assert _files(tmp_path) == [f"run.{n}.{x}" for n in (1, 2) for x in ("csv", "csv.json", "raw.bin",
                                                                          "raw.bin.json")]
    side = json.loads((tmp_path / "run.1.csv.json").read_text())
    assert side["raw"] == "run.1.raw.bin"
    d = run_cli("meter", "decode", str(tmp_path / "run.1.raw.bin"), "--out", str(tmp_path / "d.csv"))
    assert d.exit_code == EXIT_OK, d.stderr


def test_another_recordings_capture_is_never_replaced(run_cli: Any, tmp_path: Path) -> None:
    """t.csv and then t.parquet share t.raw.bin: the second is refused before it records (exit 2, one line), and the
    first recording's capture is untouched; rerunning t.csv itself replaces its own capture, as any output."""
    assert _record_r24b(run_cli, tmp_path / "t.csv").exit_code == EXIT_OK
    before = (tmp_path / "t.raw.bin").read_bytes()
    r = _record_r24b(run_cli, tmp_path / "t.parquet", duration="30")      # refused at once: not 30 s
    assert r.exit_code == EXIT_INPUT and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "t.raw.bin" in r.stderr and "already exists" in r.stderr, r.stderr
    assert (tmp_path / "t.raw.bin").read_bytes() == before
    assert _files(tmp_path) == ["t.csv", "t.csv.json", "t.raw.bin", "t.raw.bin.json"]
    first = (tmp_path / "t.raw.bin").stat()
    assert _record_r24b(run_cli, tmp_path / "t.csv").exit_code == EXIT_OK       # its own capture: replaced
    again = (tmp_path / "t.raw.bin").stat()
    # a new file (the emulator may stream the very same bytes again, so compare the file, not its bytes)
    assert (again.st_ino, again.st_mtime_ns) != (first.st_ino, first.st_mtime_ns)


def test_a_stray_capture_sidecar_is_not_replaced(run_cli: Any, tmp_path: Path) -> None:
    (tmp_path / "q.raw.bin.json").write_text("{}")
    r = _record_r24b(run_cli, tmp_path / "q.csv")
    assert r.exit_code == EXIT_INPUT and "q.raw.bin.json" in r.stderr, r.stderr
    assert _files(tmp_path) == ["q.raw.bin.json"] and (tmp_path / "q.raw.bin.json").read_text() == "{}"


# ---------------------------------------------------------------------------------------------- (2) stdout
def _cli(args: list[str], cwd: Path, stdout: Any) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "archline.cli", *args], cwd=cwd, stdout=stdout,
                          stderr=subprocess.PIPE, timeout=120, check=False)


def _trace_rows(text: str) -> list[dict[str, str]]:
    assert text.startswith(HEADER + "\n"), text[:200]
    rows = list(csv.DictReader(io.StringIO(text)))
    assert rows and all(len(r) == 5 and None not in r.values() for r in rows)
    float(rows[-1]["power_w"])          # the last line is a whole sample, not the summary
    return rows


@pytest.mark.parametrize("fmt", ["json", "table"])
@pytest.mark.parametrize("name", ["/dev/stdout", "/dev/fd/1", "same file"])
def test_a_trace_on_stdout_redirected_to_a_file_stays_whole(tmp_path: Path, fmt: str, name: str) -> None:
    """`--out /dev/stdout > so.txt`: the summary overwrote the trace's header; now it goes to stderr (also for
    `--out so.csv > so.csv`, where it went to the replaced file and was lost)."""
    so = tmp_path / ("so.csv" if name == "same file" else "so.txt")
    out = str(so) if name == "same file" else name
    with open(so, "wb") as f:
        p = _cli(["meter", "record", "--meter", "emulated:8", "--duration", "0.3", "--out", out, "--format", fmt],
                 tmp_path, f)
    assert p.returncode == EXIT_OK, p.stderr
    rows = _trace_rows(so.read_text())
    assert {r["channel"] for r in rows} == {str(c) for c in range(8)}
    err = p.stderr.decode()
    if fmt == "json":
        summary = json.loads(err)          # the window's samples: within what the trace holds
        assert 0 < summary["powermon2-emulated"]["n_samples"] <= len(rows) and summary["trace"] == out
    else:
        assert "energy_j" in err and f"trace {out}" in err
    if name != "same file":
        assert _files(tmp_path) == ["so.txt"]        # a stream gets no sidecar and no capture


@pytest.mark.parametrize("fmt", ["json", "table"])
def test_a_trace_on_stdout_through_a_pipe_has_no_summary_after_it(tmp_path: Path, fmt: str) -> None:
    p = _cli(["meter", "record", "--meter", "emulated:8", "--duration", "0.3", "--out", "/dev/stdout", "--format",
              fmt], tmp_path, subprocess.PIPE)
    assert p.returncode == EXIT_OK, p.stderr
    rows = _trace_rows(p.stdout.decode())
    err = p.stderr.decode()
    if fmt == "json":
        assert 0 < json.loads(err)["powermon2-emulated"]["n_samples"] <= len(rows)
    else:
        assert "energy_j" in err and "trace /dev/stdout" in err
    assert _files(tmp_path) == []


def test_a_trace_in_a_file_keeps_the_summary_on_stdout(tmp_path: Path) -> None:
    p = _cli(["meter", "record", "--meter", "emulated:8", "--duration", "0.3", "--out", "t.csv"], tmp_path,
             subprocess.PIPE)
    assert p.returncode == EXIT_OK, p.stderr
    assert json.loads(p.stdout)["trace"] == "t.csv" and p.stderr == b""


def test_writes_stdout_tells_dev_null_apart() -> None:
    from archline.powermon.recording import writes_stdout

    assert writes_stdout("/dev/stdout") and writes_stdout("/dev/fd/1")
    assert not writes_stdout(os.devnull)


# ---------------------------------------------------------------------------------------------- (6) checked first
def _refused_at_once(r: Any, name: str) -> None:
    assert r.exit_code == EXIT_WRITE and r.stdout == "", (r.exit_code, r.stderr)
    assert r.stderr.count("\n") == 1 and name in r.stderr and ".tmp" not in r.stderr, r.stderr


def test_a_dangling_link_is_refused_before_recording(run_cli: Any, tmp_path: Path) -> None:
    (tmp_path / "dangling.csv").symlink_to(tmp_path / "missing" / "x.csv")
    r = _record_r24b(run_cli, tmp_path / "dangling.csv", duration="60")    # refused at once, not after 60 s
    _refused_at_once(r, "dangling.csv")
    assert _files(tmp_path) == ["dangling.csv"] and not (tmp_path / "missing").exists()


def test_a_directory_named_as_the_sidecar_is_refused_before_recording(run_cli: Any, tmp_path: Path) -> None:
    """`mkdir z.csv.json` left z.csv without its sidecar (integrate then lost the 4x time compression) and the
    capture behind."""
    (tmp_path / "z.csv.json").mkdir()
    r = _record_r24b(run_cli, tmp_path / "z.csv", duration="60")
    _refused_at_once(r, "z.csv.json")
    assert _files(tmp_path) == ["z.csv.json"] and not any((tmp_path / "z.csv.json").iterdir())


def test_a_directory_named_as_the_capture_is_refused_before_recording(run_cli: Any, tmp_path: Path) -> None:
    (tmp_path / "c.raw.bin").mkdir()
    r = _record_r24b(run_cli, tmp_path / "c.csv", duration="60")
    assert r.exit_code in (EXIT_INPUT, EXIT_WRITE) and "c.raw.bin" in r.stderr and r.stderr.count("\n") == 1
    assert _files(tmp_path) == ["c.raw.bin"]


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")
def test_an_output_in_proc_names_the_users_path(run_cli: Any, tmp_path: Path) -> None:
    r = _record_r24b(run_cli, "/proc/x.csv", duration="60")
    _refused_at_once(r, "/proc/x.csv")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_dev_full_is_refused_before_recording(run_cli: Any, tmp_path: Path) -> None:
    r = _record_r24b(run_cli, "/dev/full", duration="60")
    _refused_at_once(r, "/dev/full")
    assert "space" in r.stderr


@pytest.mark.parametrize("where", ["trace", "sidecar"])
def test_a_write_that_fails_at_the_end_leaves_nothing(run_cli: Any, tmp_path: Path, monkeypatch: Any,
                                                      where: str) -> None:
    """A full disk while the trace or its sidecar is written: exit 7 naming the user's file, and neither the
    trace, its sidecar, nor the capture (finished before them) is left."""
    import archline.formats.meters.samples_file as sf

    def full(*a: Any, **k: Any) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp_path / ("t.csv.json" if where == "sidecar"
                                                                                 else "t.csv")))
    if where == "sidecar":
        monkeypatch.setattr(sf, "_write_sidecar", full)
    else:
        monkeypatch.setattr("archline.formats.meters.traces.csv_bytes", full)
    r = _record_r24b(run_cli, tmp_path / "t.csv")
    assert r.exit_code == EXIT_WRITE and "t.csv" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert _files(tmp_path) == []


def test_a_failed_write_keeps_files_it_did_not_make(run_cli: Any, tmp_path: Path, monkeypatch: Any) -> None:
    """Another recording's files beside it are left as they were."""
    assert _record_r24b(run_cli, tmp_path / "a.csv").exit_code == EXIT_OK
    before = {n: (tmp_path / n).read_bytes() for n in _files(tmp_path)}
    import archline.formats.meters.samples_file as sf

    def full(*a: Any, **k: Any) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp_path / "b.csv.json"))
    monkeypatch.setattr(sf, "_write_sidecar", full)
    assert _record_r24b(run_cli, tmp_path / "b.csv").exit_code == EXIT_WRITE
    assert {n: (tmp_path / n).read_bytes() for n in _files(tmp_path)} == before


def test_probe_checks_its_out_before_the_probe(run_cli: Any, tmp_path: Path) -> None:
    (tmp_path / "dang.json").symlink_to(tmp_path / "missing" / "p.json")
    r = run_cli("meter", "probe", "nvml0", "--emulate", "--steps", "1000", "--step", "3600", "--out",
                str(tmp_path / "dang.json"))
    _refused_at_once(r, "dang.json")
    assert _files(tmp_path) == ["dang.json"]


# --- folded from test_breaker24c_meter.py (a review round's regression tests) ------------------------------------
# Breaker 24c, `archline meter`: a real-hardware probe whose reference cannot start names it and its platform, and a
# malformed --device is bad input (1); the emulated PowerSensor3's rate note is a prefixed warning (2); a power script
# channel "x" is one line (3); a stream capture without its sidecar is named as such (4); decode's --rate/--channels
# that disagree with the sidecar are refused, --r-sense warned about (5); --rate against an emulator URL's ?rate= is
# refused (6); --channels '' is refused (7); probe/calibrate --help examples name meters their profiles have (8); a
# recording's window spans --duration (9); the standalone IPMI emulator's readings are labelled emulated
# (10).


PS3 = "powersensor3://default?rate=2000"
PMD = "pmd://default"


def _record_r24c(run_cli: Any, out: Path, spec: str, duration_s: str = "0.3", *extra: str) -> dict[str, Any]:
    r = run_cli("meter", "record", "--meter", spec, "--duration", duration_s, "--out", str(out), *extra)
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)  # type: ignore[no-any-return]


def _one_error_line(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.startswith("archline: error:")]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


# (1) ------------------------------------------------------------------------------------------------------------

_PROFILE = """schema = "archline.platform/1"
name = "breaker-node"
title = "a CPU node whose PowerMon 2 is not plugged in"
device_kind = "cpu"

[constants]
peak_flop_per_s_sp = { value = 1e11, source = "test" }
peak_flop_per_s_dp = { value = 5e10, source = "test" }
peak_byte_per_s = { value = 2e10, source = "test" }

[bench]
backend = "cpu_asm"

[[meters]]
name = "pm"
kind = "powermon2"
port = "PORT"
rate_hz = 128
channels = [ { id = 0, rail = "atx_12v", device = "cpu_system", nominal_v = 12.0, r_sense_ohm = 0.00422 } ]

[[meters]]
name = "pmd"
kind = "pmd"
port = "pmd://default"
rate_hz = 1000
channels = [ { id = 0, rail = "eps1_12v", device = "cpu_system" } ]
"""


def test_a_reference_that_cannot_start_is_named_with_its_platform(run_cli: Any, tmp_path: Path) -> None:
    """(1) The reference's port is missing: the message said only `serial port ... does not exist`; it now names
    METER, the reference meter and the platform."""
    missing = tmp_path / "ttyUSB7"
    prof = tmp_path / "node.toml"
    prof.write_text(_PROFILE.replace("PORT", str(missing)))
    r = run_cli("meter", "probe", "pmd", "--platform", str(prof), "--threads", "1", "--steps", "2", "--step", "0.5",
                "--out", str(tmp_path / "s.json"))
    assert r.exit_code == 4, r.stderr
    line = _one_error_line(r.stderr)
    assert "meter pmd's reference meter 'pm' (powermon2) of platform 'breaker-node'" in line
    assert str(missing) in line
    assert not (tmp_path / "s.json").exists()


@pytest.mark.parametrize("device", ["0:-1", "", "0:0:0"])
@pytest.mark.parametrize("command", ["probe", "calibrate"])
def test_a_malformed_device_is_bad_input(run_cli: Any, tmp_path: Path, command: str, device: str) -> None:
    """(1) `--device 0:-1` exited 4 (the GPU back end was looked for first); a malformed one is exit 2."""
    out = ["--out", str(tmp_path / "s.json")] if command == "probe" else []
    r = run_cli("meter", command, "ps3", "--platform", "gtx580", "--device", device, *out)
    assert r.exit_code == 2, r.stderr
    assert "--device" in _one_error_line(r.stderr)


# (2) ------------------------------------------------------------------------------------------------------------

def test_the_emulated_rate_note_is_a_prefixed_warning(run_cli: Any, tmp_path: Path) -> None:
    """(2) The emulated PowerSensor3's rate note was printed bare; every warning on stderr has the prefix."""
    r = run_cli("meter", "record", "--meter", PS3, "--duration", "0.05", "--out", str(tmp_path / "t.csv"))
    assert r.exit_code == 0, r.stderr
    notes = [ln for ln in r.stderr.splitlines() if "frames/s" in ln]
    assert notes and all(ln.startswith("archline: warning: ") for ln in notes), r.stderr
    side = json.loads((tmp_path / "t.csv.json").read_text())
    assert side["info"]["rate_note"].startswith("powersensor3: the emulated")     # the sidecar keeps it bare


# (3) ------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("channels, says", [({"x": [12.0, 5.0]}, "channel 'x'"),
                                            ({"1.5": [12.0, 5.0]}, "channel '1.5'"),
                                            ({"0": [12.0]}, "give [volts, amps]"),
                                            ({"0": ["a", 1.0]}, "volts must be a number")])
def test_a_power_script_with_a_bad_channel_is_one_line(run_cli: Any, tmp_path: Path, channels: Any,
                                                       says: str) -> None:
    from archline.powermon.emulator.power import Script
    from archline.powermon.errors import MeterError

    script = tmp_path / "s.json"
    script.write_text(json.dumps({"steps": [{"t_s": 0, "channels": channels}]}))
    with pytest.raises(MeterError, match=re.escape(says)):
        Script.load(script)
    r = run_cli("meter", "emulate", "--script", str(script), "--duration", "0.1")
    assert r.exit_code == 2
    line = _one_error_line(r.stderr)
    assert says in line and "ValueError" not in line and "invalid literal" not in line
    with pytest.raises(MeterError, match="channel 'x'"):
        Script([(0.0, {"x": (1.0, 2.0)})])           # type: ignore[dict-item]


# (4) ------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("spec, label", [(PS3, "PowerSensor3"), (PMD, "PMD-USB")])
def test_a_stream_capture_without_its_sidecar_is_named(run_cli: Any, tmp_path: Path, spec: str, label: str) -> None:
    _record_r24c(run_cli, tmp_path / "t.csv", spec)
    raw = tmp_path / "t.raw.bin"
    (tmp_path / "t.raw.bin.json").unlink()
    r = run_cli("meter", "decode", str(raw), "--out", str(tmp_path / "s.csv"))
    assert r.exit_code == 2
    line = _one_error_line(r.stderr)
    assert f"looks like a {label} capture" in line and "t.raw.bin.json is missing" in line
    assert "not a PowerMon 2 capture" not in line
    assert not (tmp_path / "s.csv").exists()


def test_a_capture_of_nothing_known_names_both_possibilities(run_cli: Any, tmp_path: Path) -> None:
    junk = tmp_path / "j.raw.bin"
    junk.write_bytes(bytes(np.random.default_rng(1).integers(0, 256, 4000, dtype=np.uint8)))
    r = run_cli("meter", "decode", str(junk), "--out", str(tmp_path / "s.csv"))
    assert r.exit_code == 2
    line = _one_error_line(r.stderr)
    assert "PowerMon 2" in line and "PowerSensor3 or PMD-USB" in line and "j.raw.bin.json is missing" in line


def test_a_powermon2_capture_without_its_sidecar_still_decodes(run_cli: Any, tmp_path: Path) -> None:
    _record_r24c(run_cli, tmp_path / "t.csv", "emulated:4")
    (tmp_path / "t.raw.bin.json").unlink()
    r = run_cli("meter", "decode", str(tmp_path / "t.raw.bin"), "--out", str(tmp_path / "s.csv"))
    assert r.exit_code == 0, r.stderr


# (5) ------------------------------------------------------------------------------------------------------------

def test_decode_options_that_disagree_with_the_sidecar(run_cli: Any, tmp_path: Path) -> None:
    _record_r24c(run_cli, tmp_path / "t.csv", "emulated:4")
    raw = str(tmp_path / "t.raw.bin")
    out = str(tmp_path / "s.csv")

    def decode(*opts: str) -> Any:
        return run_cli("meter", "decode", raw, "--out", out, *opts)

    r = decode("--channels", "0,1")
    assert r.exit_code == 2 and "--channels 0,1" in r.stderr and "0,1,2,3,4,5,6,7" in _one_error_line(r.stderr)
    r = decode("--rate", "64")
    assert r.exit_code == 2 and "--rate 64" in r.stderr and "128 Hz" in _one_error_line(r.stderr)
    assert not Path(out).exists()
    base = decode()
    assert base.exit_code == 0
    rows = Path(out).read_text()
    for agree in (("--rate", "128"), ("--channels", "7,6,5,4,3,2,1,0"), ("--r-sense", "0.00422")):
        r = decode(*agree)
        assert r.exit_code == 0 and "warning" not in r.stderr and Path(out).read_text() == rows, (agree, r.stderr)
    r = decode("--r-sense", "0.01")           # re-decoding with a corrected shunt is a use: warned, both named
    assert r.exit_code == 0
    (warn,) = [ln for ln in r.stderr.splitlines() if "--r-sense" in ln]
    assert warn.startswith("archline: warning:") and "0.01" in warn and "0.00422" in warn


def test_stream_decode_rate_must_agree(run_cli: Any, tmp_path: Path) -> None:
    _record_r24c(run_cli, tmp_path / "t.csv", PS3)
    raw = str(tmp_path / "t.raw.bin")
    r = run_cli("meter", "decode", raw, "--out", str(tmp_path / "a.csv"), "--rate", "500")
    assert r.exit_code == 2 and "500" in r.stderr and "2000" in _one_error_line(r.stderr)
    assert not (tmp_path / "a.csv").exists()
    r = run_cli("meter", "decode", raw, "--out", str(tmp_path / "b.csv"), "--rate", "2000")
    assert r.exit_code == 0, r.stderr


# (6) and (7) ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("spec", ["powersensor3://default?rate=1000", "pmd:pmd://default?rate=1000"])
def test_rate_against_the_urls_rate(run_cli: Any, tmp_path: Path, spec: str) -> None:
    out = tmp_path / "t.csv"
    r = run_cli("meter", "record", "--meter", spec, "--rate", "500", "--duration", "0.1", "--out", str(out))
    assert r.exit_code == 2
    line = _one_error_line(r.stderr)
    assert "--rate 500" in line and "rate=1000" in line
    assert list(tmp_path.iterdir()) == []
    summary = _record_r24c(run_cli, out, spec, "0.1", "--rate", "1000")
    (m,) = [v for v in summary.values() if isinstance(v, dict) and "energy_j" in v]
    assert m["expected_samples"] > 0


@pytest.mark.parametrize("channels", ["", ",", " , "])
def test_empty_channels_are_refused(run_cli: Any, tmp_path: Path, channels: str) -> None:
    r = run_cli("meter", "record", "--meter", "emulated:4", "--channels", channels, "--duration", "0.1",
                "--out", str(tmp_path / "t.csv"))
    assert r.exit_code == 2 and "--channels" in _one_error_line(r.stderr)
    assert list(tmp_path.iterdir()) == []
    r = run_cli("meter", "decode", str(tmp_path / "none.raw.bin"), "--channels", channels,
                "--out", str(tmp_path / "s.csv"))
    assert r.exit_code == 2 and "--channels" in _one_error_line(r.stderr)


# (8) ------------------------------------------------------------------------------------------------------------

def _examples(run_cli: Any, command: str) -> list[list[str]]:
    r = run_cli("meter", command, "--help")
    assert r.exit_code == 0
    text = r.stdout.replace("\\\n", " ")
    return [shlex.split(ln.strip().replace('"$(archline platforms show gtx580 --format toml-path)"', "GTX580"))
            for ln in text.splitlines() if ln.strip().startswith("archline meter")]


@pytest.mark.parametrize("command", ["probe", "calibrate"])
def test_help_examples_name_meters_their_profiles_have(run_cli: Any, command: str) -> None:
    """(8) `meter probe nvml0 --platform gtx580 ...` could never run: gtx580 has no nvml0. Every real-hardware
    example names a shipped profile's own meters, or a stand-in profile (mynode.toml) the help says is the user's;
    a --profile is a file that exists."""
    from archline.bench.config.profile import load_bench_profile

    gtx580 = run_cli("platforms", "show", "gtx580", "--format", "toml-path").stdout.strip()
    assert Path(gtx580).is_file()
    help_text = " ".join(run_cli("meter", command, "--help").stdout.split())
    examples = _examples(run_cli, command)
    assert len(examples) >= 4
    shipped_real = 0
    for ex in examples:
        meter = ex[3]
        opts = dict(itertools.pairwise(ex[4:]))        # each word and the next (a flag's value follows it)
        platform = opts.get("--platform")
        if platform is not None:
            assert "--emulate" not in ex
            if platform.endswith(".toml"):
                assert platform in help_text and "stands for a profile of yours" in help_text
                continue
            names = {m.name for m in load_bench_profile(platform).meters}
            assert meter in names, (ex, names)
            assert opts.get("--reference", next(iter(names - {meter}))) in names - {meter}, ex
            shipped_real += 1
        profile = opts.get("--profile")
        if profile is not None and not profile.endswith("mynode.toml"):
            assert profile in ("GTX580", "gtx580")      # the shipped profile, by its name or its path
            assert f'name = "{meter}"' in Path(gtx580).read_text()
    assert shipped_real >= 1


# (9) ------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("spec", ["emulated:1", "emulated:4", PS3, PMD])
def test_a_recording_spans_its_duration(run_cli: Any, tmp_path: Path, spec: str) -> None:
    """(9) `--duration 1` recorded 1.02-1.04 s (the window ran from the stream's start to after the sleep): the
    recorded window is now --duration long within one sample period, the trace covers it, and integrating the trace
    gives the recording's energy. The samples that arrived while the meter stopped stay in the trace (as in its
    capture and counts), counted in the sidecar's rows_after_window."""
    duration_s = 0.5
    out = tmp_path / "t.csv"
    summary = _record_r24c(run_cli, out, spec, str(duration_s))
    side = json.loads(Path(f"{out}.json").read_text())
    speed = float(side.get("speed") or 1.0)
    period_s = 1.0 / float(side["rate_hz"]) / speed            # host seconds
    assert duration_s - 1e-9 <= summary["time_s"] <= duration_s + period_s + 1e-9
    (m,) = [v for v in summary.values() if isinstance(v, dict) and "energy_j" in v]
    assert duration_s * speed - 1e-9 <= m["duration_s"] <= (duration_s + period_s) * speed + 1e-9
    w0, w1 = side["window_s"]
    assert abs((w1 - w0) - duration_s) <= period_s + 1e-9
    rows = list(csv.DictReader(out.open()))
    t = np.array([float(row["t_s"]) for row in rows])
    assert side["rows_after_window"] == int(np.sum(t > w1))
    for ch in {row["channel"] for row in rows}:
        tc = np.array([float(row["t_s"]) for row in rows if row["channel"] == ch])
        assert tc.min() <= w0 + period_s + 1e-9 and tc.max() >= w1 - period_s - 1e-9, ch    # the window covered
        inside = tc[(tc >= w0 - 1e-9) & (tc <= w1 + 1e-9)]
        assert abs(len(inside) * period_s - duration_s) <= 2 * period_s + 1e-9
    r = run_cli("meter", "integrate", str(out), "--format", "json")
    assert r.exit_code == 0 and "missing" not in r.stderr, r.stderr
    got = json.loads(r.stdout)
    assert got["total_energy_j"] == pytest.approx(m["energy_j"], rel=1e-6)
    assert got["lost_samples"] == 0


# (10) -----------------------------------------------------------------------------------------------------------

def test_the_emulators_device_id_marks_it() -> None:
    from archline.powermon.bmc import dcmi

    ours = bytes(dcmi.emulator_device_id())
    assert len(ours) == 15 and dcmi.is_emulator_device_id(ours)
    # a real BMC's reply (Dell iDRAC: manufacturer 674 = 0x0002A2) is not ours, nor is a short reply
    real = bytes([0x20, 0x01, 0x03, 0x30, 0x02, 0xBF, 0xA2, 0x02, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00])
    assert not dcmi.is_emulator_device_id(real) and not dcmi.is_emulator_device_id(ours[:11])


def test_the_standalone_ipmi_emulator_is_labelled_emulated(run_cli: Any, tmp_path: Path) -> None:
    """(10) `meter record ipmi://...` of `python -m archline.powermon.bmc.ipmi_serve` said emulated: false."""
    from archline.powermon.bmc.ipmi import BmcProcess

    out = tmp_path / "t.csv"
    with BmcProcess(["--power-w", "412"]) as srv:
        summary = _record_r24c(run_cli, out, f"ipmi:ipmi://archline:emulated@127.0.0.1:{srv.port}", "1")
    assert srv.proc.returncode == 0
    (m,) = [v for v in summary.values() if isinstance(v, dict) and "energy_j" in v]
    assert m["emulated"] is True and summary["emulated"] is True
    assert json.loads(Path(f"{out}.json").read_text())["emulated"] is True
