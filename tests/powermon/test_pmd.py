"""ElmorLabs PMD-USB: the byte protocol (raw words with the config's ADC offsets, exact values, the config struct
and its CRC, fixed frames re-aligned by timestamp), the real driver against the emulator on a pty, each fault
counted."""

from __future__ import annotations

import numpy as np
import pytest
from support.stream_meters import run_window

from archline.powermon.pmd.emulator import EMULATED_OFFSETS, PmdCore
from archline.powermon.pmd.protocol import (
    AMP_PER_CODE,
    CONFIG_V5_BYTES,
    FRAME_BYTES,
    START,
    STOP,
    VOLT_PER_CODE,
    WELCOME,
    Decoder,
    PmdConfig,
    codes_from_words,
    crc16_ccitt_false,
    encode_frames,
    words_from_codes,
)
from archline.powermon.stream.core import StreamFaults

OFFSETS = (1, -2, 0, 3, 0, 0, 0, -1)


def _stream(n: int, rate_hz: float = 1000.0, tick0: int = 2**32 - 5000) -> tuple[bytes, np.ndarray]:
    codes = np.tile(np.array([1585, 102, 436, 41, 1585, 0, -3, 2047]), (n, 1))
    ticks = tick0 + np.arange(n) * round(3e6 / rate_hz)            # wraps at 2^32 after two frames
    return encode_frames(ticks, words_from_codes(codes)), codes


def test_crc_and_config_round_trip() -> None:
    assert crc16_ccitt_false(b"123456789") == 0x29B1
    raw = PmdConfig(OFFSETS, averaging=2).pack()
    assert len(raw) == CONFIG_V5_BYTES == 34 and raw[0] == 5
    assert int.from_bytes(raw[2:4], "little") == crc16_ccitt_false(raw[4:31])
    assert PmdConfig.unpack(raw) == PmdConfig(OFFSETS, 2, 5)


def test_words_are_signed_12_bit_codes() -> None:
    codes = np.array([-2048, -1, 0, 1, 2047])
    assert codes_from_words(words_from_codes(codes)).tolist() == codes.tolist()
    assert words_from_codes(np.array([5000])).tolist() == [2047 << 4]        # clipped at full scale


def test_exact_values_with_offsets_across_the_timestamp_wrap() -> None:
    b, codes = _stream(30)
    assert len(b) == 30 * FRAME_BYTES == 600
    dec = Decoder(PmdConfig(OFFSETS), 1000.0)
    d = dec.feed(b)
    assert d.k.tolist() == list(range(29))            # the last frame waits for the next one's timestamp
    want = (codes[0] + np.array(OFFSETS))
    np.testing.assert_allclose(d.volts[0], want[0::2] * VOLT_PER_CODE, rtol=0, atol=1e-12)
    np.testing.assert_allclose(d.amps[0], want[1::2] * AMP_PER_CODE, rtol=0, atol=1e-12)
    assert dec.stats.frames_missing == 0 and dec.stats.bytes_skipped == 0


def test_a_lost_byte_and_garbage_are_found_by_the_timestamps() -> None:
    b, codes = _stream(60)
    bad = b[:20 * 10 + 9] + b[20 * 10 + 10:20 * 40] + b"\x01\x02\x03" + b[20 * 40:]
    dec = Decoder(PmdConfig(), 1000.0)
    got = [dec.feed(bad[i:i + 33]) for i in range(0, len(bad), 33)]
    k = np.concatenate([g.k for g in got])
    volts = np.concatenate([g.volts for g in got])
    # frame 10 lost its byte; frame 39 came before the garbage and is dropped as suspect
    assert k.tolist() == [i for i in range(59) if i not in (10, 39)]
    assert np.all(volts[:, 0] == codes[0, 0] * VOLT_PER_CODE)          # nothing misaligned got through
    assert dec.stats.frames_missing == 2 and dec.stats.frames_discarded == 2
    assert dec.stats.bytes_skipped == 19 + 20 + 3


def test_emulator_commands() -> None:
    core = PmdCore(lambda t_s: {0: (12.0, 5.0)}, 1000.0, tick0=0)
    core.write(b"\x00")
    assert core.read_available() == WELCOME
    core.write(b"\x01")
    assert core.read_available() == bytes([0xEE, 0x0A, 0x06])
    core.write(b"\x04")
    assert PmdConfig.unpack(core.read_available()).adc_offset == EMULATED_OFFSETS
    core.write(b"\x03")
    v, i = np.frombuffer(core.read_available(), "<i2").reshape(4, 2)[0]
    assert (v, i) == (1200, 50)                           # 12.00 V, 5.0 A in 10 mV / 100 mA
    core.write(b"\x07\x01\x02\x03")                       # 2-byte timestamp, PCIE1 V and I only
    assert core.frame_bytes == 6 and core.streaming
    core.write(STOP)
    assert not core.streaming
    core.write(START)
    assert core.frame_bytes == FRAME_BYTES


def test_driver_on_the_pty_applies_the_offsets() -> None:
    mr, truth, stats = run_window("pmd")
    assert stats["error"] is None and mr.emulated and mr.lost_samples == 0
    assert mr.channels["0"].mean_power_w == pytest.approx(60.0, abs=12 * AMP_PER_CODE + 5 * VOLT_PER_CODE)
    assert mr.channels["1"].mean_power_w == pytest.approx(6.6, abs=3.3 * AMP_PER_CODE + 2 * VOLT_PER_CODE)
    assert truth.frames_generated >= stats["frames"]


@pytest.mark.parametrize(("name", "faults", "missing", "skipped"), [
    ("dropped byte", StreamFaults(drop_bytes=(20 * 100 + 5,)), 1, 19),
    ("garbage between frames", StreamFaults(noise=((20 * 300, 3),)), 1, 3 + 20),
    ("garbage inside a frame", StreamFaults(noise=((20 * 300 + 5, 3),)), 1, 3 + 20),
    ("cut first frame", StreamFaults(cut_first=5), 0, 15),
    ("stall", StreamFaults(stall=(0.2, 0.1)), 200, 0),
])
def test_each_fault_is_counted(name: str, faults: StreamFaults, missing: int, skipped: int) -> None:
    mr, truth, stats = run_window("pmd", faults)
    assert stats["frames_missing"] == missing, name
    assert stats["bytes_skipped"] == skipped, name
    assert truth.bytes_dropped + truth.bytes_inserted == len(faults.drop_bytes) + sum(n for _, n in faults.noise)
    assert mr.lost_samples == 2 * missing
    assert stats["frames_discarded"] == (1 if faults.drop_bytes or faults.noise else 0)


def test_disconnect_is_reported_and_the_rest_counted_lost() -> None:
    mr, truth, stats = run_window("pmd", StreamFaults(disconnect_s=0.3))
    assert truth.frames_cut == 1
    assert stats["error"] is not None and "disconnected" in str(stats["error"])
    assert mr.lost_samples > 0 and any("disconnected" in w for w in mr.warnings)
