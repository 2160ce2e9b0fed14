"""Breaker 24: `meter decode` of PowerSensor3 / PMD-USB captures (device timeline, garbage refused, cut captures
counted), PMD resync warnings, URL option errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

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
