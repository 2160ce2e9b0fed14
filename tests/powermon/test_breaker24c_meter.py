"""Breaker 24c, `archline meter`: a real-hardware probe whose reference cannot start names it and its platform, and a
malformed --device is bad input (1); the emulated PowerSensor3's rate note is a prefixed warning (2); a power script
channel "x" is one line (3); a stream capture without its sidecar is named as such (4); decode's --rate/--channels
that disagree with the sidecar are refused, --r-sense warned about (5); --rate against an emulator URL's ?rate= is
refused (6); --channels '' is refused (7); probe/calibrate --help examples name meters their profiles have (8); a
recording's window spans --duration (9); the standalone IPMI emulator's readings are labelled emulated
(10)."""

from __future__ import annotations

import csv
import itertools
import json
import re
import shlex
from pathlib import Path
from typing import Any

import numpy as np
import pytest

PS3 = "powersensor3://default?rate=2000"
PMD = "pmd://default"


def _record(run_cli: Any, out: Path, spec: str, duration_s: str = "0.3", *extra: str) -> dict[str, Any]:
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


def test_a_real_boards_rate_warning_is_prefixed(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from archline.powermon.powersensor3.driver import PowerSensor3
    from archline.powermon.stream.rate_note import note_rate

    with caplog.at_level(logging.INFO, logger="archline.powermon"):
        note_rate(PowerSensor3("/dev/ttyACM9", 250.0, name="ps3"))       # a real one told 250: never opened
    (rec,) = caplog.records
    assert rec.getMessage().startswith("archline: warning: ps3: a real PowerSensor3")


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
    _record(run_cli, tmp_path / "t.csv", spec)
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
    _record(run_cli, tmp_path / "t.csv", "emulated:4")
    (tmp_path / "t.raw.bin.json").unlink()
    r = run_cli("meter", "decode", str(tmp_path / "t.raw.bin"), "--out", str(tmp_path / "s.csv"))
    assert r.exit_code == 0, r.stderr


# (5) ------------------------------------------------------------------------------------------------------------

def test_decode_options_that_disagree_with_the_sidecar(run_cli: Any, tmp_path: Path) -> None:
    _record(run_cli, tmp_path / "t.csv", "emulated:4")
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
    _record(run_cli, tmp_path / "t.csv", PS3)
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
    summary = _record(run_cli, out, spec, "0.1", "--rate", "1000")
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
    summary = _record(run_cli, out, spec, str(duration_s))
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
        summary = _record(run_cli, out, f"ipmi:ipmi://archline:emulated@127.0.0.1:{srv.port}", "1")
    assert srv.proc.returncode == 0
    (m,) = [v for v in summary.values() if isinstance(v, dict) and "energy_j" in v]
    assert m["emulated"] is True and summary["emulated"] is True
    assert json.loads(Path(f"{out}.json").read_text())["emulated"] is True
