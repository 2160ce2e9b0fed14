"""Breaker 24e: `meter record` of the stream meters (PowerSensor3, PMD-USB) with emulated faults.

1. a PowerSensor3 stall of whole stamp repeats shorter than 40 ms of host time (25.6 ms at 20 kHz, 1250 and
   5000 Hz) is counted whole, from the arrival lags on either side of the silence (was 0 lost, exit 0); a rate whose
   period is no whole microsecond (3 kHz: the stamps repeat every 384 frames, 128 ms) too;
2. a PMD-USB stall with fewer than three frames before it (7 frames/s, a stall at 0.2 s) is counted (was 0 lost:
   the first alignment skipped the frames before it, gap and all);
3. a symlinked --out without a samples suffix takes its format from its target.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest


def _record(run_cli: Any, out: Path, spec: str, duration_s: str = "0.9") -> tuple[int, dict[str, Any], str]:
    r = run_cli("meter", "record", "--meter", spec, "--duration", duration_s, "--out", str(out))
    return r.exit_code, (json.loads(r.stdout) if r.stdout.strip() else {}), r.stderr


def _stalled(rate_hz: float, at_s: float, stall_s: float) -> int:
    """The frames the emulator never sends for ``stall=AT:DUR`` (its own rule)."""
    return math.ceil((at_s + stall_s) * rate_hz - 1e-9) - math.ceil(at_s * rate_hz - 1e-9)


# (rate, stall): whole repeats of 25.6 ms at 20 kHz, 1250 and 5000 Hz, part ones, and 3 kHz's 128 ms
STALLS = [(20000, 0.0256), (20000, 0.0512), (20000, 0.1), (1250, 0.0256), (1250, 0.1024), (5000, 0.1024),
          (3000, 0.128)]


@pytest.mark.parametrize(("rate_hz", "stall_s"), STALLS)
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
