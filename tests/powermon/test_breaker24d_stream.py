"""Breaker 24d: `meter record` of the stream meters (PowerSensor3, PMD-USB) with emulated faults.

1. a stall of (near) whole PowerSensor3 timestamp wraps (128 ms at 1 and 2 kHz) is counted whole, as on PMD;
2. a stream that fails to start (exit 4) leaves no raw capture behind, nor replaces the one there;
3. an emulator URL option given twice is refused (exit 2), naming it;
4. a symlinked --out names its sidecar and raw capture from the file the samples go to.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest


def _record(run_cli: Any, out: Path, spec: str, duration_s: str = "0.9") -> tuple[int, dict[str, Any], str]:
    r = run_cli("meter", "record", "--meter", spec, "--duration", duration_s, "--out", str(out))
    return r.exit_code, (json.loads(r.stdout) if r.stdout.strip() else {}), r.stderr


def _stall_spec(kind: str, rate_hz: int, stall_s: float) -> str:
    return f"{kind}:{kind}://default?rate={rate_hz}&stall=0.2:{stall_s}"


STALLS = [("powersensor3", 2000, d) for d in (0.05, 0.128, 0.15, 0.2, 0.256, 0.3)] + \
         [("powersensor3", 1000, d) for d in (0.128, 0.256)] + \
         [("pmd", 2000, d) for d in (0.128, 0.256)] + [("pmd", 1000, 0.128)]


@pytest.mark.parametrize(("kind", "rate_hz", "stall_s"), STALLS)
def test_a_stall_is_counted_whole_whatever_its_length(run_cli: Any, tmp_path: Path, kind: str, rate_hz: int,
                                                      stall_s: float) -> None:
    """The emulator drops the stalled frames (never sends them): the loss counted is the stall, to a frame or two,
    also where the stall is a whole number of the PowerSensor3's 128 ms timestamp wraps (was 0, exit 0)."""
    out = tmp_path / "cc.csv"
    code, summary, err = _record(run_cli, out, _stall_spec(kind, rate_hz, stall_s))
    assert code == 6, err                  # more than --max-lost: counted, and said
    meter = summary[kind]
    period_s = 1.0 / rate_hz
    assert abs(meter["lost_s"] - stall_s) <= 2 * period_s, meter
    missing = json.loads(Path(f"{out}.json").read_text())["info"]["stats"]["frames_missing"]
    assert abs(missing - stall_s * rate_hz) <= 2, missing


def test_a_whole_wrap_stall_decodes_from_the_capture_as_it_did_live(run_cli: Any, tmp_path: Path) -> None:
    """The frame index the host clock gave the chunk after the stall is kept with the capture: a decode counts
    the same loss."""
    out = tmp_path / "cc.csv"
    code, _, err = _record(run_cli, out, _stall_spec("powersensor3", 2000, 0.128), "0.6")
    assert code == 6, err
    r = run_cli("meter", "decode", str(tmp_path / "cc.raw.bin"), "--out", str(tmp_path / "d.csv"))
    assert r.exit_code == 0, r.stderr
    assert "256 frame(s) missing" in r.stderr
    assert (tmp_path / "d.csv").read_bytes() == out.read_bytes()


def test_the_driver_asks_the_host_clock_within_half_a_wrap() -> None:
    """A PowerSensor3's stamps repeat every 128 ms at 2 kHz: the driver gives a chunk its index from its arrival
    time after a silence of 64 ms (half a wrap), not only after the 0.25 s stall threshold; a wrap too short to
    resolve against the host's jitter (8 ms of host time at 250 Hz and speed 16) is left to the stall threshold."""
    from archline.powermon.powersensor3.driver import PowerSensor3

    drv = PowerSensor3("powersensor3://default?rate=2000", 2000.0, name="ps3")
    assert drv.decoder.wrap_frames == 256
    assert drv._hint_after_s() == pytest.approx(0.064)
    assert PowerSensor3("x", 1000.0, name="ps3")._hint_after_s() == pytest.approx(0.064)
    assert PowerSensor3("x", 250.0, name="ps3", speed=16.0)._hint_after_s() == pytest.approx(0.25)


def test_the_decoder_counts_whole_wraps_from_the_hint() -> None:
    """Frames 0-399, then 656-799 (a gap of exactly one 256-frame wrap): the stamps alone show no gap; with the
    index the host clock gives the chunk, 256 frames are missing."""
    from archline.powermon.powersensor3.protocol import Decoder, default_config, encode_frames, timestamp_us

    def frames(k0: int, k1: int) -> bytes:
        k = np.arange(k0, k1)
        return encode_frames(timestamp_us(k, 2000.0), np.full((len(k), 8), 600), np.zeros(len(k), bool))

    blind, told = Decoder(default_config(), 2000.0), Decoder(default_config(), 2000.0)
    for dec, hint in ((blind, None), (told, 799.0 + 150)):    # a hint late by over half a wrap still lands on it
        dec.feed(frames(0, 400))
        got = dec.feed(frames(656, 800), hint)
        assert got.k.size == 144
    assert blind.stats.frames_missing == 0
    assert told.stats.frames_missing == 256


FAILS = ["powersensor3:powersensor3://default?rate=2000&disconnect=0",
         "powersensor3:powersensor3://default?rate=2000&stall=0:100",
         "pmd:pmd://default?disconnect=0", "pmd:pmd://default?stall=0:100"]


@pytest.mark.slow
@pytest.mark.parametrize("spec", FAILS)
def test_a_stream_that_never_starts_leaves_no_capture(run_cli: Any, tmp_path: Path, spec: str) -> None:
    """Exit 4 leaves nothing (docs/errors.md), as a PowerMon 2 does: no empty f.raw.bin and no sidecar."""
    code, _, err = _record(run_cli, tmp_path / "f.csv", spec, "0.3")
    assert code == 4, err
    assert sorted(os.listdir(tmp_path)) == []


@pytest.mark.slow
def test_a_failed_rerun_keeps_the_previous_capture(run_cli: Any, tmp_path: Path) -> None:
    out = tmp_path / "f.csv"
    code, _, err = _record(run_cli, out, "pmd:pmd://default", "0.3")
    assert code == 0, err
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert "f.raw.bin" in before
    code, _, err = _record(run_cli, out, "pmd:pmd://default?disconnect=0", "0.3")
    assert code == 4, err
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


@pytest.mark.parametrize("spec", ["powersensor3:powersensor3://default?rate=2000&rate=0",
                                  "pmd:pmd://default?speed=2&speed=1",
                                  "pmd:pmd://default?stall=0.1:0.1&stall=0.2:0.1",
                                  "powermon:powermon://default?seed=1&seed=2"])
def test_an_option_given_twice_is_refused(run_cli: Any, tmp_path: Path, spec: str) -> None:
    code, _, err = _record(run_cli, tmp_path / "d.csv", spec, "0.3")
    key = spec.rpartition("&")[2].partition("=")[0]
    assert code == 2, err
    assert f"option {key} is given 2 times" in err and "Traceback" not in err
    assert err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("scheme", ["powersensor3", "pmd", "powermon"])
def test_the_emulator_url_itself_refuses_a_repeated_option(scheme: str) -> None:
    """Every emulator URL handler parses its query with url_device: a URL opened directly is refused too."""
    import serial

    import archline.powermon.pmd.driver  # each driver registers its emulator URL handler
    import archline.powermon.powermon2.driver
    import archline.powermon.powersensor3.driver  # noqa: F401

    with pytest.raises(serial.SerialException, match="option seed is given 2 times"):
        serial.serial_for_url(f"{scheme}://default?seed=1&seed=1", timeout=0.1)


def test_a_symlinked_out_names_its_sidecars_from_its_target(run_cli: Any, tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("")
    link = tmp_path / "link.csv"
    link.symlink_to("a.csv")
    code, summary, err = _record(run_cli, link, "pmd:pmd://default", "0.3")
    assert code == 0, err
    assert link.is_symlink() and (tmp_path / "a.csv").stat().st_size > 0
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["a.csv", "a.csv.json", "a.raw.bin", "a.raw.bin.json", "link.csv"]
    assert json.loads((tmp_path / "a.csv.json").read_text())["raw"] == "a.raw.bin"
    assert summary["trace"].endswith("a.csv")
