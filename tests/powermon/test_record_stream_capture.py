"""`meter record` of the stream meters (PowerSensor3, PMD-USB) keeps the raw capture as PowerMon 2's does, and
`meter decode` of it gives the recorded samples; the bare emulator URL `KIND://default` that --help names works."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest


@pytest.mark.parametrize("spec", ["pmd://default", "powersensor3://default", "pmd:pmd://default"])
def test_record_keeps_a_capture_that_decodes_to_the_same_samples(run_cli, tmp_path: Path, spec: str) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "t.csv"
    r = run_cli("meter", "record", "--meter", spec, "--duration", "0.5", "--out", str(out))
    assert r.exit_code == 0, r.stderr
    raw = tmp_path / "t.raw.bin"
    assert raw.is_file() and Path(f"{raw}.json").is_file()
    d = run_cli("meter", "decode", str(raw), "--out", str(tmp_path / "u.csv"))
    assert d.exit_code == 0, d.stderr
    recorded = out.read_text().splitlines()
    decoded = (tmp_path / "u.csv").read_text().splitlines()
    assert len(recorded) > 100 and len(decoded) == len(recorded)


@pytest.mark.parametrize("spec", ["powersensor3:powersensor3://default?speed=50", "pmd://default?speed=1000"])
def test_record_refuses_an_emulator_speed_the_pty_cannot_carry(run_cli, tmp_path: Path, spec: str) -> None:  # type: ignore[no-untyped-def]
    """Breaker 24 item 11: ?speed=50 ran 36 s and lost 93% of its samples; bench run already refused it."""
    r = run_cli("meter", "record", "--meter", spec, "--duration", "1", "--out", str(tmp_path / "t.csv"))
    assert r.exit_code == 2 and "lower ?speed= to" in r.stderr and not list(tmp_path.iterdir()), r.stderr


# --- folded from test_breaker24d_stream.py (a review round's regression tests) -----------------------------------
# Breaker 24d: `meter record` of the stream meters (PowerSensor3, PMD-USB) with emulated faults.
#
# 1. a stall of (near) whole PowerSensor3 timestamp wraps (128 ms at 1 and 2 kHz) is counted whole, as on PMD;
# 2. a stream that fails to start (exit 4) leaves no raw capture behind, nor replaces the one there;
# 3. an emulator URL option given twice is refused (exit 2), naming it;
# 4. a symlinked --out names its sidecar and raw capture from the file the samples go to.


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


# --- folded from test_breaker24e_stream.py (a review round's regression tests) -----------------------------------
# Breaker 24e: `meter record` of the stream meters (PowerSensor3, PMD-USB) with emulated faults.
#
# 1. a PowerSensor3 stall of whole stamp repeats shorter than 40 ms of host time (25.6 ms at 20 kHz, 1250 and
#    5000 Hz) is counted whole, from the arrival lags on either side of the silence (was 0 lost, exit 0); a rate whose
#    period is no whole microsecond (3 kHz: the stamps repeat every 384 frames, 128 ms) too;
# 2. a PMD-USB stall with fewer than three frames before it (7 frames/s, a stall at 0.2 s) is counted (was 0 lost:
#    the first alignment skipped the frames before it, gap and all);
# 3. a symlinked --out without a samples suffix takes its format from its target.


def _stalled(rate_hz: float, at_s: float, stall_s: float) -> int:
    """The frames the emulator never sends for ``stall=AT:DUR`` (its own rule)."""
    return math.ceil((at_s + stall_s) * rate_hz - 1e-9) - math.ceil(at_s * rate_hz - 1e-9)


# (rate, stall): whole repeats of 25.6 ms at 20 kHz, 1250 and 5000 Hz, part ones, and 3 kHz's 128 ms
STALLS_r24e = [(20000, 0.0256), (20000, 0.0512), (20000, 0.1), (1250, 0.0256), (1250, 0.1024), (5000, 0.1024),
          (3000, 0.128)]


@pytest.mark.parametrize(("rate_hz", "stall_s"), STALLS_r24e)
def test_a_stall_of_short_wraps_is_counted_whole(run_cli: Any, tmp_path: Path, rate_hz: int, stall_s: float) -> None:
    out = tmp_path / "k.csv"
    code, summary, err = _record(run_cli, out, f"powersensor3:powersensor3://default?rate={rate_hz}&stall=0.2:"
                                               f"{stall_s}", "1")
    assert code == 6, err
    stalled = _stalled(rate_hz, 0.2, stall_s)
    assert summary["decoder"]["frames_missing"] == stalled, summary["decoder"]
    assert summary["powersensor3"]["lost_samples"] == 4 * stalled
    missing = json.loads(Path(f"{out}.json").read_text())["info"]["stats"]["frames_missing"]
    assert missing == stalled


@pytest.mark.parametrize("rate_hz", [1250, 20000])
def test_a_clean_stream_loses_nothing(run_cli: Any, tmp_path: Path, rate_hz: int) -> None:
    """No wraps are found where none were lost (the lags' least values on either side of a chunk agree)."""
    code, summary, err = _record(run_cli, tmp_path / "c.csv", f"powersensor3:powersensor3://default?rate={rate_hz}",
                                 "1")
    assert code == 0, err
    assert summary["decoder"]["frames_missing"] == 0
    assert summary["powersensor3"]["lost_samples"] == 0


def test_wraps_found_live_decode_the_same_from_the_capture(run_cli: Any, tmp_path: Path) -> None:
    """The index the arrivals gave the chunk after the silence is kept with the capture as a hint: a decode places
    it the same (same rows, same count)."""
    out = tmp_path / "k.csv"
    code, _, err = _record(run_cli, out, "powersensor3:powersensor3://default?rate=20000&stall=0.2:0.0512", "0.8")
    assert code == 6, err
    r = run_cli("meter", "decode", str(tmp_path / "k.raw.bin"), "--out", str(tmp_path / "d.csv"))
    assert r.exit_code == 0, r.stderr
    assert "1024 frame(s) missing" in r.stderr
    assert (tmp_path / "d.csv").read_bytes() == out.read_bytes()


def _arrivals(seed: int, lost_at: int | None, n_chunks: int = 400) -> tuple[np.ndarray, np.ndarray]:
    """Chunks every 2 ms of a 20 kHz stream (40 frames each), each arriving 0.5 ms plus a jitter (exponential, mean
    3 ms; one in 10 late by up to 18 ms more) after its newest frame, in order; from chunk ``lost_at`` on, one
    512-frame wrap is missing from the decoded indices (the device sent nothing for 25.6 ms). A chunk is never
    later than 3/4 of a wrap (19.2 ms): a read that late would have carried the frames after it too."""
    rng = np.random.default_rng(seed)
    k_true = np.arange(1, n_chunks + 1) * 40 - 1
    if lost_at is not None:
        k_true[lost_at:] += 512
    late = rng.exponential(0.003, n_chunks) + (rng.random(n_chunks) < 0.1) * rng.random(n_chunks) * 0.018
    host = np.maximum.accumulate(10.0 + k_true / 20000.0 + 0.0005 + np.minimum(late, 0.0187))
    k_decoded = k_true - (512 if lost_at is not None else 0) * (np.arange(n_chunks) >= (lost_at or 0))
    return host, k_decoded


@pytest.mark.parametrize("seed", range(20))
def test_the_arrival_lags_find_a_lost_wrap_and_no_other(seed: int) -> None:
    from archline.powermon.stream.relocate import wrap_deficits

    host, k = _arrivals(seed, 150)
    found, judged = wrap_deficits(host, k, np.ones(len(k), bool), 20000.0, 512, 0, final=True)
    assert found == [(150, 1)]
    assert judged == len(k) or host[-1] - host[judged] < 0.05      # all but the last 50 ms judged
    host, k = _arrivals(seed, None)
    assert wrap_deficits(host, k, np.ones(len(k), bool), 20000.0, 512, 0, final=True)[0] == []


def test_a_silence_is_judged_only_once_the_arrivals_reach_past_it() -> None:
    """Live, the chunk after a silence waits for WINDOW_S of arrivals after it before it is judged."""
    from archline.powermon.stream.relocate import wrap_deficits

    host, k = _arrivals(0, 150)
    cut = int(np.searchsorted(host, host[150] + 0.1))
    found, judged = wrap_deficits(host[:cut], k[:cut], np.ones(cut, bool), 20000.0, 512, 0, final=False)
    assert found == [] and judged <= 150
    found, judged = wrap_deficits(host, k, np.ones(len(k), bool), 20000.0, 512, judged, final=False)
    assert found == [(150, 1)]


@pytest.mark.parametrize(("rate_hz", "frames"), [(1250, 32), (2000, 256), (3000, 384), (20000, 512)])
def test_the_stamps_repeat_where_the_decoder_says(rate_hz: int, frames: int) -> None:
    from archline.powermon.powersensor3.protocol import Decoder, default_config, timestamp_us

    assert Decoder(default_config(), float(rate_hz)).wrap_frames == frames
    ts = timestamp_us(np.arange(4 * frames), float(rate_hz))
    assert np.array_equal(ts[:frames], ts[frames:2 * frames])


def test_the_pmd_decoder_keeps_the_frames_before_an_early_gap() -> None:
    """Two frames, then a gap of three, then frames: the stream's first bytes are frames, the gap is counted."""
    from archline.powermon.pmd.protocol import TICK_HZ, Decoder, PmdConfig, encode_frames

    def frames(k: np.ndarray) -> bytes:
        return encode_frames(np.floor(k * TICK_HZ / 7.0).astype(np.int64) + 12345, np.zeros((len(k), 8)))

    dec = Decoder(PmdConfig(), 7.0)
    got = [dec.feed(frames(np.array([0, 1]))), dec.feed(frames(np.arange(5, 12)))]
    assert np.concatenate([g.k for g in got]).tolist() == [0, 1, *range(5, 11)]
    assert dec.stats.frames_missing == 3 and dec.stats.bytes_skipped == 0


def test_a_pmd_stall_at_seven_frames_a_second_is_counted(run_cli: Any, tmp_path: Path) -> None:
    code, summary, err = _record(run_cli, tmp_path / "l7.csv", "pmd:pmd://default?rate=7&stall=0.2:0.5", "1.5")
    assert code == 6, err
    assert summary["decoder"]["frames_missing"] == _stalled(7, 0.2, 0.5) == 3
    assert summary["decoder"]["bytes_skipped"] == 0


@pytest.mark.parametrize(("target", "magic"), [("t.csv", b"t_s,"), ("t.parquet", b"PAR1")])
def test_a_link_without_a_suffix_takes_the_format_of_its_target(run_cli: Any, tmp_path: Path, target: str,
                                                                 magic: bytes) -> None:
    link = tmp_path / "l2"
    link.symlink_to(target)
    code, summary, err = _record(run_cli, link, "pmd:pmd://default", "0.3")
    assert code == 0, err
    assert link.is_symlink() and (tmp_path / target).read_bytes().startswith(magic)
    assert summary["trace"].endswith(target)


def test_the_longest_legal_out_records_and_leaves_no_temp(run_cli: Any, tmp_path: Path) -> None:
    """SP (877c612): a legal long --out failed 'file name too long' (exit 2): the capture's temp name was shortened
    to the name limit, and its sidecar .NAME.PID.tmp.json passed it. Here t.raw.bin.json is exactly 255 bytes."""
    stem = "n" * (255 - len(".raw.bin.json"))
    out = tmp_path / f"{stem}.csv"
    r = run_cli("meter", "record", "--meter", "powersensor3://default", "--duration", "0.3", "--out", str(out))
    assert r.exit_code == 0, r.stderr
    assert sorted(os.listdir(tmp_path)) == sorted([out.name, f"{out.name}.json", f"{stem}.raw.bin",
                                                   f"{stem}.raw.bin.json"])


def _dead_pid_of_width(width: int) -> int:
    """A process id with ``width`` digits that no process has now (a child that exited, else the first free one)."""
    import subprocess
    import sys

    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    candidates = [int(child.stdout), *range(10 ** (width - 1), 10 ** width)]
    for pid in candidates:
        if len(str(pid)) != width:
            continue
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        except PermissionError:
            continue
    raise AssertionError(f"no free process id of {width} digits")


def test_a_250_byte_capture_keeps_its_recovery_sidecar_and_cleans_a_killed_ones(tmp_path: Path) -> None:
    """A 250-byte capture name (its sidecar 255): the temp name is shortened with room for its own .json, so a
    killed recording still leaves a sidecar for meter decode --partial; a finished one leaves no temp, and a later
    capture removes a killed one's shortened temp files (their process gone)."""

    from archline.formats.meters.capture import sidecar_path, stream_capture

    name = "k" * (250 - len(".raw.bin")) + ".raw.bin"
    meta = {"type": "powersensor3", "rate_hz": 2000.0, "emulated": True}

    def capture():  # type: ignore[no-untyped-def]
        cap = stream_capture("powersensor3", None, tmp_path / name)
        assert cap is not None
        cap.open()
        cap.note_open(lambda: dict(meta))
        assert cap.write(b"\x00" * 64)
        return cap

    done = capture()
    assert len(os.fsencode(sidecar_path(done.tmp).name)) <= 255
    assert "did not finish" in json.loads(sidecar_path(done.tmp).read_text())["recovery"]
    done.finish(lambda: dict(meta))
    kept = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert sorted(kept) == [name, name + ".json"] and kept[name] == b"\x00" * 64

    killed = capture()
    killed._f.flush()                                   # type: ignore[union-attr]
    killed._f = None                                    # kill -9: nothing closes it
    dead_pid = _dead_pid_of_width(len(str(os.getpid())))   # same width: the shortened name has room for our pid only
    stale = killed.tmp.with_name(killed.tmp.name.replace(f".{os.getpid()}.tmp", f".{dead_pid}.tmp"))
    assert stale != killed.tmp and not stale.name.startswith(f".{name}")      # the shortened (hashed) form
    killed.tmp.rename(stale)
    sidecar_path(killed.tmp).rename(sidecar_path(stale))
    again = capture()
    assert not stale.exists() and not sidecar_path(stale).exists()
    again.abandon()
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == kept
