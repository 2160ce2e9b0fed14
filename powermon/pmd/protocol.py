"""The PMD-USB byte protocol (``../shared/reference/pmd_usb_protocol.md``). Continuous TX frames are a
little-endian timestamp (low bytes of a 3 MHz counter) then one raw word per channel of the mask; there is no
sync word, counter or CRC, so the decoder checks that each frame's timestamp advances by a whole number of
frame periods and re-finds the alignment when it does not (dropping the frame before the break as suspect).

Raw words: code = int16 >> 4; V = (code + AdcOffset) * 7.568 mV, I = (code + AdcOffset) * 48.8 mA. Word order:
PCIE1 V, PCIE1 I, PCIE2 V, PCIE2 I, EPS1 V, EPS1 I, EPS2 V, EPS2 I; pair p = words 2p (V) and 2p + 1 (I).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from archline.powermon.stream.driver import Decoded, StreamStats

WELCOME = b"ElmorLabs PMD-USB"
VENDOR, PRODUCT, FIRMWARE = 0xEE, 0x0A, 0x06
CMD_WELCOME, CMD_ID, CMD_SENSORS, CMD_VALUES, CMD_READ_CONFIG, CMD_WRITE_CONFIG = 0, 1, 2, 3, 4, 5
CMD_READ_ADC, CMD_CONT_TX, CMD_UART, CMD_RESET, CMD_BOOT, CMD_NOP = 6, 7, 8, 0xF0, 0xF1, 0xFF
PARAM_BYTES = {CMD_CONT_TX: 3, CMD_UART: 16}
TICK_HZ = 3_000_000.0
TS_BYTES = 4
ALL_CHANNELS = 0xFF
FRAME_BYTES = TS_BYTES + 2 * 8
VOLT_PER_CODE = 0.007568
AMP_PER_CODE = 0.0488
RAIL_NAMES = ("PCIE1", "PCIE2", "EPS1", "EPS2")
CONFIG_V5_BYTES = 34
CONFIG_V4_BYTES = 26
START = bytes([CMD_CONT_TX, 1, TS_BYTES, ALL_CHANNELS])
STOP = bytes([CMD_CONT_TX, 0, 0, 0])


def crc16_ccitt_false(data: bytes) -> int:
    crc = 0xFFFF
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else (crc << 1)
            crc &= 0xFFFF
    return crc


@dataclass(frozen=True)
class PmdConfig:
    adc_offset: tuple[int, ...] = (0,) * 8          #: int8 per ADC channel, in ADC counts
    averaging: int = 0
    version: int = 5

    def pack(self) -> bytes:
        body = struct.pack("<8bBxHBBBBBBB", *self.adc_offset, 0, 0, 2, 0, 0, 0, 0, 0, self.averaging)
        body = body[:19] + (bytes(8) if self.version >= 5 else b"")          # AdcGainOffset (v5)
        head = struct.pack("<BxH", self.version, crc16_ccitt_false(body))
        return head + body + bytes(3)

    @staticmethod
    def unpack(raw: bytes) -> PmdConfig:
        version = raw[0]
        offsets = struct.unpack_from("<8b", raw, 4)
        return PmdConfig(tuple(offsets), raw[22], version)

    @staticmethod
    def size(firmware: int) -> int:
        return CONFIG_V5_BYTES if firmware >= 6 else CONFIG_V4_BYTES


def codes_from_words(words: np.ndarray) -> np.ndarray:
    return np.asarray(words).astype(np.int16).astype(np.int64) >> 4


def words_from_codes(codes: np.ndarray) -> np.ndarray:
    return (np.clip(np.asarray(codes, np.int64), -2048, 2047) << 4).astype(np.int16)


def encode_frames(ticks: np.ndarray, words: np.ndarray, ts_bytes: int = TS_BYTES, mask: int = ALL_CHANNELS
                  ) -> bytes:
    """Frames of the low ``ts_bytes`` of ``ticks`` and the words (n, 8) of the mask's channels."""
    n = len(ticks)
    ts = (np.asarray(ticks, np.int64) & 0xFFFFFFFF).astype("<u4").view(np.uint8).reshape(n, 4)[:, :ts_bytes]
    sel = [c for c in range(8) if mask >> c & 1]
    w = np.ascontiguousarray(np.asarray(words)[:, sel].astype("<i2")).view(np.uint8).reshape(n, 2 * len(sel))
    return np.concatenate([ts, w], axis=1).tobytes()


class Decoder:
    """Stateful: bytes in (any chunking), plausible frames out with their index on the cadence of ``rate_hz``."""

    def __init__(self, config: PmdConfig, rate_hz: float, tol: float = 0.1, max_gap_s: float = 60.0) -> None:
        self.offset = np.array(config.adc_offset, np.int64)
        self.period_ticks = TICK_HZ / rate_hz
        self.tol = tol
        self.max_steps = max(int(max_gap_s * rate_hz), 2)
        self.stats = StreamStats()
        self._tail = b""
        self._consumed = 0
        self._aligned = False
        self._ts_prev: int | None = None
        self._k_prev = -1

    def _steps(self, d: np.ndarray) -> np.ndarray:
        """Whole frame periods in tick differences ``d`` (mod 2^32); 0 where none fits."""
        m = (np.asarray(d, np.int64) % (1 << 32)) / self.period_ticks
        r = np.rint(m)
        return np.where((np.abs(m - r) <= self.tol) & (r >= 1) & (r <= self.max_steps), r, 0).astype(np.int64)

    def _ts(self, b: np.ndarray, starts: np.ndarray) -> np.ndarray:
        idx = starts[:, None] + np.arange(4)[None, :]
        return (b[idx].astype(np.int64) << (8 * np.arange(4))[None, :]).sum(axis=1)

    def _align(self, b: np.ndarray) -> tuple[int | None, int]:
        """(the first offset where three frames in a row, and the last good one, agree; or None), and how many
        leading bytes were ruled out when there is none."""
        n = len(b) - 3 * FRAME_BYTES + 1
        if n <= 0:
            return None, 0
        o = np.arange(n)
        t0, t1, t2 = (self._ts(b, o + i * FRAME_BYTES) for i in range(3))
        ok = (self._steps(t1 - t0) == 1) & (self._steps(t2 - t1) == 1)
        if self._ts_prev is None and self._steps(t1[:1] - t0[:1])[0] and self._steps(t2[:1] - t1[:1])[0]:
            # the stream's first bytes (flushed before the start command): frames from byte 0 whose stamps advance
            # by whole periods, a gap among them too (at 7 frames/s a stall at 0.2 s leaves 2 frames before it,
            # which the rule of three in a row skipped, gap and all: 0 lost)
            return 0, 0
        if self._ts_prev is not None:
            ok &= self._steps(t0 - self._ts_prev) > 0
        hits = np.flatnonzero(ok)
        return (int(hits[0]), 0) if hits.size else (None, n)

    def feed(self, data: bytes, k_hint: float | None = None) -> Decoded:
        buf = self._tail + data
        self.stats.bytes_in += len(data)
        b = np.frombuffer(buf, np.uint8)
        ks: list[np.ndarray] = []
        words: list[np.ndarray] = []
        pos = 0
        held = -1                                          # index of the whole frame kept back in the tail, if known
        while True:
            if not self._aligned:                          # find three frames in a row that agree
                o, ruled_out = self._align(b[pos:])
                if o is None:
                    pos += ruled_out
                    break
                pos += o
                self._aligned = True
                if self._ts_prev is not None:              # the first alignment is a sync, not a resync
                    self.stats.resyncs += 1
                if self._ts_prev is None:                  # the first frame ever is frame 0
                    t0 = int(self._ts(b, np.array([pos]))[0])
                    self._ts_prev = (t0 - round(self.period_ticks)) & 0xFFFFFFFF
            n = (len(b) - pos) // FRAME_BYTES
            if n == 0:
                break
            starts = pos + np.arange(n) * FRAME_BYTES
            ts = self._ts(b, starts)
            steps = self._steps(np.diff(np.concatenate([[self._ts_prev], ts])))
            bad = np.flatnonzero(steps == 0)
            if bad.size == 0 and n == 1:
                held = self._k_prev + int(steps[0])
                break                                      # a frame is vouched for by the next one's timestamp
            # the last frame waits for its successor: a byte lost in its words shows only in the next timestamp
            good = n - 1 if bad.size == 0 else int(bad[0])
            if bad.size and good > 0:
                good -= 1                                  # the frame before a break may hold the lost byte
                self.stats.frames_discarded += 1
            if good:
                k = self._k_prev + np.cumsum(steps[:good])
                self.stats.frames_missing += int(np.sum(steps[:good] - 1))
                idx = starts[:good, None] + TS_BYTES + 2 * np.arange(8)[None, :]
                ks.append(k)
                words.append(b[idx].astype(np.int64) | (b[idx + 1].astype(np.int64) << 8))
                self._k_prev = int(k[-1])
                self._ts_prev = int(ts[good - 1])
            if bad.size == 0:
                # the last frame is kept for its successor, but its bytes are here and its timestamp fits the
                # cadence: the clock map pairs this chunk's arrival with it (it was taken before it arrived)
                held = self._k_prev + int(steps[n - 1])
                pos += (n - 1) * FRAME_BYTES
                break
            pos = int(starts[good])
            self._aligned = False
        self._tail = bytes(buf[pos:])
        self._consumed += pos
        if ks:
            self.stats.frames += sum(len(k) for k in ks)
        self.stats.bytes_skipped = self._consumed - FRAME_BYTES * self.stats.frames
        if not ks:
            d = Decoded.empty()
            d.k_arrived = held
            return d
        k = np.concatenate(ks)
        codes = codes_from_words(np.concatenate(words)) + self.offset[None, :]
        return Decoded(k.astype(np.int64), codes[:, 0::2] * VOLT_PER_CODE, codes[:, 1::2] * AMP_PER_CODE,
                       k_arrived=held)


def frame_share(b: np.ndarray, min_frames: int) -> float:
    """The share of bytes ``b`` that lies in a run of frames whose tick counters advance by one period (0 with
    fewer than ``min_frames``): what :func:`archline.powermon.stream.sniff.sniff_stream_kind` asks of a capture
    without its sidecar."""
    best = 0
    for o in range(FRAME_BYTES):
        n = (len(b) - o) // FRAME_BYTES
        if n < min_frames:
            break
        rows = b[o:o + n * FRAME_BYTES].reshape(n, FRAME_BYTES)[:, :TS_BYTES].astype(np.int64)
        ticks = (rows << (8 * np.arange(TS_BYTES))[None, :]).sum(axis=1)
        d = np.diff(ticks) % (1 << 32)
        period = float(np.median(d))
        if not 30 <= period <= 3_000_000:          # 100 kHz .. 1 Hz at the 3 MHz counter
            continue
        agree = int(np.sum(np.abs(d - period) <= 0.1 * period))
        best = max(best, agree + 1)
    return best * FRAME_BYTES / max(len(b), 1) if best >= min_frames else 0.0
