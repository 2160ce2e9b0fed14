"""Raw captures of the byte-stream meters (PowerSensor3, PMD-USB): the bytes the reader read, kept through the one
capture owner (formats/meters/capture.py) with a sidecar, decode offline into the very samples of the live run, faults
(a dropped byte, garbage, a stall, whose frame index hint the sidecar keeps) included."""

from __future__ import annotations

import importlib
import json
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
from support.stream_meters import SPEED, spec_of

from archline.formats.meters.capture import STREAM_RAW_FORMAT, sidecar_path, stream_capture_kind
from archline.powermon.errors import MeterError
from archline.powermon.record.recorder import Recorder
from archline.powermon.spec import emulate_meter
from archline.powermon.stream.core import StreamFaults

KINDS = {"pmd": 20, "powersensor3": 18}          # kind -> frame bytes
#: frames discarded for the dropped byte and the garbage: the PMD-USB's fixed frames lose one each, the
#: PowerSensor3's per-byte sync bits skip the bad bytes alone
DISCARDED = {"pmd": 2, "powersensor3": 0}


def _ramp(t_s: float) -> dict[int, tuple[float, float]]:
    return {0: (12.0, 5.0 + 10.0 * t_s), 1: (3.3, 2.0)}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_decoding_the_capture_gives_the_live_samples(kind: str, tmp_path: Path) -> None:
    fb = KINDS[kind]
    faults = StreamFaults(drop_bytes=(fb * 100 + 5,), noise=((fb * 300, 3),), stall=(0.2, 0.7))
    meter = emulate_meter(spec_of(kind), _ramp, speed=SPEED, faults=faults, seed=2, raw_dir=tmp_path)
    with Recorder([meter]) as rec:
        rec.begin("w")
        time.sleep(0.7)        # the stall is 0.35 host s: longer than the reader's silence limit
        rec.end("w", t0_s=meter.stream_start_s())
    live = meter.samples()
    raw = meter.raw_path
    assert raw == tmp_path / f"{kind}-0000.raw" and raw.exists()
    side = json.loads(sidecar_path(raw).read_text())
    assert side["format"] == STREAM_RAW_FORMAT and side["type"] == kind and side["emulated"] is True
    # the wraps the stall hid in the PowerSensor3's stamps, with the index they gave the chunk (a PMD-USB's 32-bit
    # ticks hide none)
    assert len(side["hints"]) == (kind == "powersensor3")
    assert stream_capture_kind(raw) == kind
    stats = meter.info()["stats"]
    assert stats["frames_missing"] >= 1400 and stats["frames_discarded"] == DISCARDED[kind]

    module = importlib.import_module(f"archline.powermon.{kind}.meter")
    got, got_stats = module.decode_capture(raw, [0, 1])
    assert got_stats == stats
    assert len(live) > 0 and len(got) == len(live)
    np.testing.assert_array_equal(got.meta["t_dev_s"], live.meta["t_dev_s"])
    np.testing.assert_array_equal(got.channel, live.channel)
    np.testing.assert_array_equal(got.voltage_v, live.voltage_v)
    np.testing.assert_array_equal(got.current_a, live.current_a)
    np.testing.assert_allclose(got.t_s, live.t_s, rtol=0, atol=1e-9)
    assert got.emulated is True
    # the current really ramps: the comparison is not of constants
    assert np.ptp(got.current_a[got.channel == 0]) > 1.0


def test_a_capture_of_another_kind_or_without_sidecar_is_refused(tmp_path: Path) -> None:
    from archline.powermon.pmd.meter import decode_capture

    raw = tmp_path / "c.raw"
    raw.write_bytes(b"\0" * 40)
    with pytest.raises(MeterError, match="no sidecar"):
        decode_capture(raw)
    sidecar_path(raw).write_text(json.dumps({"format": STREAM_RAW_FORMAT, "type": "powersensor3", "rate_hz": 1}))
    with pytest.raises(MeterError, match="not the sidecar of a pmd capture"):
        decode_capture(raw)


def test_meter_decode_reads_a_stream_capture(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from archline.cli.meter import meter as meter_cli
    from archline.formats.meters.samples_file import read_samples

    meter = emulate_meter(spec_of("pmd"), _ramp, speed=SPEED, seed=2, raw_dir=tmp_path)
    with Recorder([meter]) as rec:
        rec.begin("w")
        time.sleep(0.2)
        rec.end("w", t0_s=meter.stream_start_s())
    live = meter.samples()
    out = tmp_path / "s.csv"
    res = CliRunner().invoke(meter_cli, ["decode", str(meter.raw_path), "--out", str(out), "--channels", "0,1",
                                         "--format", "json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert report["samples"] == len(live) and report["emulated"] is True
    assert report["decoder"]["frames_missing"] == 0
    got, _ = read_samples(out)
    np.testing.assert_allclose(got.power_w, live.power_w, rtol=1e-6)
    res = CliRunner().invoke(meter_cli, ["decode", str(meter.raw_path), "--out", str(tmp_path / "t.csv"),
                                         "--r-sense", "0.01"])
    assert isinstance(res.exception, MeterError) and "leave out --rate and --r-sense" in str(res.exception)


# --- folded from test_stream_breaker24.py (a review round's regression tests) ------------------------------------
# Breaker 24: `meter decode` of PowerSensor3 / PMD-USB captures (device timeline, garbage refused, cut captures
# counted), PMD resync warnings, URL option errors.


SPECS = ["pmd:pmd://default?speed=2", "powersensor3:powersensor3://default?speed=2&rate=2000"]


def _total_j(run_cli, path: Path, *window: float) -> float:  # type: ignore[no-untyped-def]
    args = ["meter", "integrate", str(path), "--format", "json"]
    if window:
        args += ["--start", repr(window[0]), "--end", repr(window[1])]
    r = run_cli(*args)
    assert r.exit_code == 0, r.stderr
    return float(json.loads(r.stdout)["total_energy_j"])




@pytest.mark.parametrize("spec", SPECS)
def test_decode_puts_samples_on_the_device_timeline(run_cli, tmp_path: Path, spec: str) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "pm.csv"
    r = run_cli("meter", "record", "--meter", spec, "--duration", "1", "--out", str(out))
    assert r.exit_code == 0, r.stderr
    d = run_cli("meter", "decode", str(tmp_path / "pm.raw.bin"), "--out", str(tmp_path / "d.csv"))
    assert d.exit_code == 0, d.stderr
    assert json.loads((tmp_path / "d.csv.json").read_text())["speed"] == 2.0
    window = json.loads(Path(f"{out}.json").read_text())["window_s"]
    live, decoded = _total_j(run_cli, out), _total_j(run_cli, tmp_path / "d.csv", *window)
    assert live > 150 and abs(decoded - live) <= 0.02 * live


def _capture(run_cli, tmp_path: Path) -> Path:  # type: ignore[no-untyped-def]
    out = tmp_path / "c.csv"
    r = run_cli("meter", "record", "--meter", "powersensor3:powersensor3://default", "--duration", "0.3",
                "--out", str(out))
    assert r.exit_code == 0, r.stderr
    return tmp_path / "c.raw.bin"


@pytest.mark.parametrize("body", [b"", bytes(50_000), bytes(range(256)) * 20])
def test_decode_refuses_a_capture_with_no_frames(run_cli, tmp_path: Path, body: bytes) -> None:  # type: ignore[no-untyped-def]
    raw = _capture(run_cli, tmp_path)
    bad = tmp_path / "bad.bin"
    bad.write_bytes(body)
    shutil.copy(f"{raw}.json", f"{bad}.json")
    d = run_cli("meter", "decode", str(bad), "--out", str(tmp_path / "b.csv"))
    assert d.exit_code == 2 and "no plausible sample records" in d.stderr
    assert not (tmp_path / "b.csv").exists()


def test_decode_of_a_capture_cut_mid_frame_needs_partial_and_counts_the_bytes(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    raw = _capture(run_cli, tmp_path)
    cut = tmp_path / "cut.bin"
    cut.write_bytes(raw.read_bytes()[:-5])
    shutil.copy(f"{raw}.json", f"{cut}.json")
    d = run_cli("meter", "decode", str(cut), "--out", str(tmp_path / "k.csv"))
    assert d.exit_code == 2 and "--partial" in d.stderr
    d = run_cli("meter", "decode", str(cut), "--out", str(tmp_path / "k.csv"), "--partial", "--format", "json")
    assert d.exit_code == 0, d.stderr
    doc = json.loads(d.stdout)
    assert doc["decoder"]["bytes_trailing"] == 18 - 5 and any("mid-frame" in w for w in doc["warnings"])


def test_powersensor3_decoder_counts_garbage_as_skipped_bytes() -> None:
    import numpy as np

    from archline.powermon.powersensor3.protocol import Decoder, default_config

    dec = Decoder(default_config(), 1000.0)
    # bytes that are never a packet's first byte (high bit set) then a second byte: no frame can start anywhere
    junk = np.random.default_rng(1).integers(0, 0x80, 5000, dtype=np.uint8).tobytes()
    dec.feed(junk[:2000])
    dec.feed(junk[2000:])
    assert dec.stats.frames == 0 and dec.stats.bytes_skipped == 5000 - len(dec._tail) and dec.stats.bytes_skipped > 4900


@pytest.mark.parametrize("query", ["", "&drop=1", "&drop=300"])
def test_pmd_record_warns_what_the_decoder_counted(run_cli, tmp_path: Path, query: str) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "p.csv"
    r = run_cli("meter", "record", "--meter", f"pmd:pmd://default?speed=2{query}", "--duration", "0.5",
                "--out", str(out))
    assert r.exit_code == 0, r.stderr
    stats = json.loads(Path(f"{out}.json").read_text())["info"]["stats"]
    said = [w for w in r.stderr.splitlines() if "dropped or garbled" in w]
    if not query:
        assert stats["bytes_skipped"] == 0 and stats["resyncs"] == 0 and said == []
    else:
        assert stats["bytes_skipped"] > 0 and len(said) == 1
        assert f"{stats['bytes_skipped']} byte(s) dropped or garbled, {stats['resyncs']} resync(s)" in said[0]


@pytest.mark.parametrize(("query", "said"), [
    ("stall=abc", "stall takes AT_S:DUR_S"), ("stall=1", "stall takes AT_S:DUR_S"),
    ("cut=0.5", "cut takes a whole number"), ("drop=-1", "drop takes byte offsets of 0 or more"),
    ("noise=3", "noise takes OFF:N pairs"), ("disconnect=x", "disconnect takes a number"),
    ("rate=abc", "rate takes a number above 0"), ("seed=1.5", "seed takes a whole number"),
])
@pytest.mark.parametrize("kind", ["pmd", "powersensor3"])
def test_bad_url_options_are_one_line_naming_the_option(run_cli, tmp_path: Path, kind: str, query: str,  # type: ignore[no-untyped-def]
                                                        said: str) -> None:
    r = run_cli("meter", "record", "--meter", f"{kind}:{kind}://default?{query}", "--duration", "0.2",
                "--out", str(tmp_path / "t.csv"))
    assert r.exit_code == 2 and said in r.stderr and "rate=1" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def test_a_rate_in_exponent_form_is_not_mangled_and_too_high_a_rate_is_refused(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    r = run_cli("meter", "record", "--meter", "powersensor3:powersensor3://default", "--rate", "1e7",
                "--duration", "0.2", "--out", str(tmp_path / "t.csv"))
    assert r.exit_code == 2 and "1e 07" not in r.stderr and "rate 1e+07" in r.stderr
    from archline.powermon.spec import channels_spec
    from archline.powermon.stream.meter import spec_port

    port = spec_port(channels_spec("pmd", "pmd", None, port="pmd://default", rate_hz=2.5e3), "pmd", 1000.0, "")
    from archline.powermon.stream.meter import url_rate_hz

    assert url_rate_hz(port, "pmd") == 2500.0
    port = spec_port(channels_spec("pmd", "pmd", None, port="pmd://default", rate_hz=1e5), "pmd", 1000.0, "")
    assert url_rate_hz(port, "pmd") == 1e5


@pytest.mark.parametrize("meter", ["powersensor3:powersensor3://default", "pmd:pmd://default", "emulated"])
def test_negative_channels_are_one_line_exit_2(run_cli, tmp_path: Path, meter: str) -> None:  # type: ignore[no-untyped-def]
    r = run_cli("meter", "record", "--meter", meter, "--channels", "-1", "--duration", "0.2",
                "--out", str(tmp_path / "t.csv"))
    assert r.exit_code == 2
    assert r.stderr.strip() == "archline: error: --channels takes channel numbers of 0 or more, got -1"
