"""Recorder regions on an emulated meter, integration, traces, and the `archline meter` commands."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from support.powermon_helpers import SCRIPT

from archline.cli.meter import meter as meter_cli
from archline.powermon.emulator import Script
from archline.powermon.errors import MeterError
from archline.powermon.powermon2.driver import PowerMon2
from archline.powermon.powermon2.meter import emulated_powermon, open_powermon
from archline.powermon.record.integrate import integrate_series
from archline.powermon.record.recorder import Recorder
from archline.powermon.record.samples_file import read_samples
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
