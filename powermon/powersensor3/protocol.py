"""The PowerSensor3 byte protocol (``../shared/reference/powersensor3_protocol.md``): 2-byte packets (bit 7 marks
the first byte), 18-byte frames of a timestamp packet then sensors 0-7, the 41-byte config records, and a
vectorised stateful decoder that aligns on the timestamp packet and maps each frame onto the frame cadence.

Levels: value = (3.3 * level / 1023 - vref) / sens (divisor 1023); even sensors are currents (sens in V/A), odd
ones voltages (sens a divider gain); pair p = sensors 2p (I) and 2p+1 (V).
"""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass

import numpy as np

from archline.powermon.errors import MeterError
from archline.powermon.stream.driver import Decoded, StreamStats

FRAME_BYTES = 18
N_SENSORS = 8
N_PAIRS = 4
TS_MOD = 1024                      #: the timestamp is microseconds modulo 1024
SENTINEL = b"\xff\x3f\xff\x3f"     #: the answer to ``X`` (also a saturated sensor 7, twice: only honoured after X)
RECORD = struct.Struct("<16s16sff?")
RECORD_BYTES = RECORD.size         # 41
ADC_V = 3.3
LEVELS = 1023
REAL_RATE_HZ = 20_000.0            #: frames per second of the F411 firmware
VERSION = "F411-1.6.1"
#: how late a stamp can be (µs): the firmware reads micros() in the DMA interrupt, which outranks USB
#: (``NVIC_SetPriority(DMA2_Stream0_IRQn, OTG_FS priority - 1)``) and runs a fixed path before the read, so only the
#: entry latency and a short SysTick handler vary it (docs/meters.md, PowerSensor3 "Timestamps")
LATE_MAX_US = 1.0
#: a step's stamp difference lies within less than this of its cadence (µs): each stamp is truncated to a whole µs
#: (0 to 1 under the true time) and is 0 to LATE_MAX_US late, and the frame period is exact in micros() units (the
#: ADC and SysTick run off one PLL), so two stamps differ from the true span by less than 1 + LATE_MAX_US
TOL_US = 1.0 + LATE_MAX_US
#: frames per second of each board (the MCU prefix of ``V``'s answer): the F411's 96 MHz gives 50 us per frame,
#: the F401's 84 MHz the same 4800 core cycles in 57.14 us (the sheet's inference); the F407's dual ADC runs
#: another cadence, not stated: only its stamps tell it
MCU_RATE_HZ = {"F411": 20_000.0, "F401": 17_500.0}
#: the oldest firmware whose protocol archline speaks (41-byte config records, markers that do not collapse)
MIN_FIRMWARE = (1, 5, 0)
#: psconfig's sensor types (stored as V/A)
MLX_SENS_V_PER_A = {"MLX10": 0.120, "MLX20": 0.0625, "MLX50": 0.025, "MLX75": 0.01667}


@dataclass(frozen=True)
class SensorConfig:
    type: str
    pair_name: str
    vref_v: float
    sens: float            #: V/A (current) or gain (voltage); its sign is the polarity
    in_use: bool

    def pack(self) -> bytes:
        return RECORD.pack(self.type.encode()[:15], self.pair_name.encode()[:15], self.vref_v, self.sens,
                           self.in_use)

    @staticmethod
    def unpack(rec: bytes) -> SensorConfig:
        t, n, vref, sens, use = RECORD.unpack(rec)

        def name(b: bytes) -> str:
            return b.split(b"\0", 1)[0].decode("ascii", "replace") if b"\0" in b else "INVALID"

        return SensorConfig(name(t), name(n), float(vref), float(sens), bool(use))


def parse_version(line: str) -> tuple[str | None, tuple[int, int, int] | None]:
    """(MCU prefix or None, firmware version or None) of ``V``'s answer: ``F411-1.6.1`` (``-DEMO`` may follow),
    or ``Firmware version: 1.4.1`` from firmware up to 1.4.1."""
    m = re.match(r"^\s*(?:(F\d{3})-|Firmware version:\s*)?v?(\d+)\.(\d+)\.(\d+)", line)
    if not m:
        return None, None
    return m.group(1), (int(m.group(2)), int(m.group(3)), int(m.group(4)))


def config_problem(config: tuple[SensorConfig, ...]) -> str | None:
    """What makes a configuration impossible to measure with, or None: a sensor of a pair in use whose vref or
    sensitivity is not a finite number (NaN: never configured, or erased flash, all FF), or whose sensitivity is 0
    (every level would divide by it). A negative sensitivity is an inverted polarity (psconfig's), not a fault."""
    for i, c in enumerate(config):
        pair = i // 2
        if not (config[2 * pair].in_use and config[2 * pair + 1].in_use):
            continue
        what = "current" if i % 2 == 0 else "voltage"
        if not math.isfinite(c.vref_v) or not math.isfinite(c.sens) or c.sens == 0.0:
            bad = ("vref", c.vref_v) if not math.isfinite(c.vref_v) else ("sensitivity", c.sens)
            return (f"sensor {i} (pair {pair} {what}, type {c.type!r}) has {bad[0]} {bad[1]:g}"
                    + (" (its flash looks erased)" if c.type == "INVALID" else ""))
    return None


def default_config(pair_names: tuple[str, ...] = ("pair0", "pair1", "pair2", "pair3")) -> tuple[SensorConfig, ...]:
    """A riser with four MLX20 current sensors (±26 A) and 0.09 dividers (36 V full scale), as psconfig sets it."""
    out: list[SensorConfig] = []
    for p in range(N_PAIRS):
        out.append(SensorConfig("MLX20", pair_names[p], 1.65, MLX_SENS_V_PER_A["MLX20"], True))
        out.append(SensorConfig("voltage", pair_names[p], 0.0, 0.09, True))
    return tuple(out)


def cal_arrays(config: tuple[SensorConfig, ...]) -> tuple[np.ndarray, np.ndarray]:
    return (np.array([c.vref_v for c in config], np.float64), np.array([c.sens for c in config], np.float64))


def value_from_level(level: np.ndarray, vref_v: np.ndarray, sens: np.ndarray) -> np.ndarray:
    return (ADC_V * np.asarray(level, np.float64) / LEVELS - vref_v) / sens


def level_from_value(value: np.ndarray, vref_v: np.ndarray, sens: np.ndarray) -> np.ndarray:
    lvl = np.rint((np.asarray(value, np.float64) * sens + vref_v) * LEVELS / ADC_V)
    return np.clip(lvl, 0, LEVELS).astype(np.int64)


def timestamp_us(k: np.ndarray, rate_hz: float, first_us: float = 0.0, late_us: np.ndarray | float = 0.0
                 ) -> np.ndarray:
    """The 10-bit microsecond stamp of frame ``k`` of a stream whose frame 0 the device clock put at ``first_us``,
    each stamp ``late_us`` late (micros() truncates)."""
    t = first_us + np.asarray(k, np.float64) * (1e6 / rate_hz) + late_us
    return np.floor(t + 1e-6).astype(np.int64) % TS_MOD


def encode_frames(ts_us: np.ndarray, levels: np.ndarray, marker: np.ndarray) -> bytes:
    """18-byte frames: timestamp packet, then sensors 0-7 (``levels`` (n, 8)); marker bits on sensor 0."""
    n = len(ts_us)
    out = np.empty((n, N_SENSORS + 1, 2), np.uint8)
    t = np.asarray(ts_us, np.int64)
    out[:, 0, 0] = 0xF0 | ((t >> 6) & 0x0F)
    out[:, 0, 1] = 0x40 | (t & 0x3F)
    lv = np.asarray(levels, np.int64)
    ids = np.arange(N_SENSORS, dtype=np.int64)
    out[:, 1:, 0] = 0x80 | (ids << 4) | ((lv >> 6) & 0x0F)
    out[:, 1:, 1] = lv & 0x3F
    out[:, 1, 1] |= (np.asarray(marker, bool).astype(np.uint8) << 6)
    return out.tobytes()


#: frames whose stamp offsets bound the next one's: the offsets do not drift (the ADC's cadence and micros() run off
#: one clock), so this only bounds the memory kept
GRID_HISTORY = 4096
#: frames seen before the grid is trusted over the pairwise step
MIN_GRID_FRAMES = 16
#: the first stamps' steps judged for the cadence (:meth:`Decoder._check_cadence`)
CADENCE_FRAMES = 32


def repeat_frames(period_us: float, tol_us: float) -> int:
    """The fewest frames whose span is a whole number of stamp periods (1024 µs) to within less than ``tol_us``:
    steps that differ by it look the same in the stamps (32 at 1250 Hz, 512 at 20 kHz; 384 at 3 kHz, whose period is
    not a whole µs: counting 1024 there left a 128 ms stall unseen)."""
    m = np.arange(1, 64 * TS_MOD + 1, dtype=np.float64)
    hit = np.flatnonzero(np.abs((m * period_us + TS_MOD / 2) % TS_MOD - TS_MOD / 2) < tol_us)
    return int(m[hit[0]]) if hit.size else 64 * TS_MOD


@dataclass
class Ps3Stats(StreamStats):
    samples_clipped: int = 0      #: pair samples with a sensor at the ADC's end (1023, or a current's 0): clipped


class Decoder:
    """Stateful: bytes in (any chunking), whole frames out with their index on the cadence of ``rate_hz``.

    Indices are relative to the first whole frame (the device's clock free-runs: the first stamp says nothing of
    frames before it); the first frame is 0, or one more per 18 bytes (or part) of garbage before it (the remains of
    frames cut off). Each later step is the fewest frames whose span matches the stamps' difference to within less
    than ``tol_us`` (:data:`TOL_US`)."""

    def __init__(self, config: tuple[SensorConfig, ...], rate_hz: float, tol_us: float = TOL_US) -> None:
        self.vref, self.sens = cal_arrays(config)
        self.in_use = np.array([config[2 * p].in_use and config[2 * p + 1].in_use for p in range(N_PAIRS)])
        self.rate_hz = rate_hz
        self.period_us = 1e6 / rate_hz
        self.tol_us = tol_us
        self.cycle = repeat_frames(self.period_us, tol_us)
        #: frames after which the stamps repeat (128 ms at 2 or 1 kHz): a gap of whole such periods is invisible
        #: in them, so the driver gives a chunk after a silence of half of it its index from the host clock
        self.wrap_frames = self.cycle
        self.stats = Ps3Stats()
        #: which level clips each sensor of a pair in use: full scale for all, 0 for a current too (-26 A; a
        #: voltage's 0 is 0 V)
        use8 = np.repeat(self.in_use, 2)
        self._clip_hi = use8
        self._clip_lo = use8 & (np.arange(N_SENSORS) % 2 == 0)
        self._tail = b""
        self._consumed = 0
        self._k_prev = -1
        self._t_prev = 0
        self._u_ref: float | None = None          #: the first frame's offset from the cadence (µs)
        self._w_hist = np.zeros(0)                #: offsets of the last GRID_HISTORY frames, relative to it
        self._cadence: list[np.ndarray] = []      #: the first stamps' steps, until CADENCE_FRAMES are judged
        self._cadence_judged = False

    def _steps(self, d: np.ndarray) -> np.ndarray:
        """Smallest m >= 1 frames whose span is ``d`` µs modulo 1024 (0: none fits, the timestamp is bad)."""
        d = np.asarray(d, np.float64)
        one = np.abs((self.period_us - d + TS_MOD / 2) % TS_MOD - TS_MOD / 2) < self.tol_us
        out = np.where(one, 1, 0)
        rest = np.flatnonzero(~one)          # the few steps that are not one frame: try every count
        if rest.size:
            m = np.arange(1, self.cycle + 1, dtype=np.float64)
            err = (m[None, :] * self.period_us - d[rest, None] + TS_MOD / 2) % TS_MOD - TS_MOD / 2
            ok = np.abs(err) < self.tol_us
            out[rest] = np.where(ok.any(axis=1), np.argmax(ok, axis=1) + 1, 0)
        return out

    def _offsets(self, t: np.ndarray, k: np.ndarray) -> np.ndarray:
        """Each frame's stamp less its place on the cadence, relative to the first frame's (µs, in -512..512)."""
        ref = self._u_ref or 0.0
        return (t - k * self.period_us - ref + TS_MOD / 2) % TS_MOD - TS_MOD / 2

    def _on_grid(self, t: np.ndarray, steps: np.ndarray, first_known: bool) -> np.ndarray:
        """Steps checked against the whole grid, not only the previous stamp. Every stamp lies within less than
        ``tol_us`` of one offset from the cadence (truncated: up to 1 µs under; late: up to LATE_MAX_US over), so
        the offsets of the last :data:`GRID_HISTORY` frames span less than ``tol_us``. A step whose frame leaves that
        span (a gap the stamp pair explains by a nearer count, 41 frames off at 20 kHz when the pair is 1 µs apart)
        gets the fewest frames that keep it; where none does, or the history is too short or already wider (a
        device off the cadence), the pairwise step stays."""
        steps = steps.copy()
        k = self._k_prev + np.cumsum(steps)
        if self._u_ref is None:
            self._u_ref = float(t[0] - k[0] * self.period_us)
        start = 0 if first_known else 1
        handled = start
        while True:
            w = self._offsets(t, k)
            allw = np.concatenate([self._w_hist, w])
            n_h = len(self._w_hist)
            # the span of the offsets before each frame
            lo = np.concatenate([[np.inf], np.minimum.accumulate(allw)])[n_h:n_h + len(w)]
            hi = np.concatenate([[-np.inf], np.maximum.accumulate(allw)])[n_h:n_h + len(w)]
            off = (np.maximum(hi, w) - np.minimum(lo, w)) >= self.tol_us
            known = (np.arange(len(w)) + n_h) >= MIN_GRID_FRAMES
            cand = np.flatnonzero(((steps > 1) | off) & known & (np.arange(len(w)) >= handled))
            if not cand.size:
                break
            i = int(cand[0])
            handled = i + 1
            if hi[i] - lo[i] >= self.tol_us:       # already wider: so is every later frame's history
                break
            k_before = int(k[i - 1]) if i else self._k_prev
            m = np.arange(1, self.cycle + 1)
            wm = self._offsets(np.full(len(m), float(t[i])), k_before + m)
            ok = (np.maximum(hi[i], wm) - np.minimum(lo[i], wm)) < self.tol_us
            if not ok.any():
                continue
            wraps = (int(steps[i]) - 1) // self.cycle
            new = int(m[np.argmax(ok)]) + wraps * self.cycle
            if new != steps[i]:
                steps[i] = new
                k = self._k_prev + np.cumsum(steps)
        w = self._offsets(t, k)
        self._w_hist = np.concatenate([self._w_hist, w])[-GRID_HISTORY:]
        return steps

    def _check_cadence(self, d_us: np.ndarray) -> None:
        """Refuse a stream whose stamps do not step by the period of ``rate_hz`` (a board told another rate than
        its own: an F401 streams 17500 frames/s, not 20000; decoded so, 2 s became a 235 s window): once the first
        :data:`CADENCE_FRAMES` steps are in, most must be one period."""
        if self._cadence_judged:
            return
        self._cadence.append(np.asarray(d_us, np.float64))
        d = np.concatenate(self._cadence)
        if len(d) < CADENCE_FRAMES:
            return
        self._cadence_judged, self._cadence = True, []
        one = np.abs((d - self.period_us + TS_MOD / 2) % TS_MOD - TS_MOD / 2) < self.tol_us
        if one.mean() >= 0.5:
            return
        med = float(np.median(d))
        near = d[np.abs(d - med) <= 3]
        seen_hz = 1e6 / float(near.mean()) if near.size and near.mean() > 0 else float("nan")
        raise MeterError(f"the PowerSensor3's stamps step {med:g} us per frame (about {seen_hz:.5g} frames/s), not "
                         f"{self.period_us:.4g} us as rate {self.rate_hz:g} says: set rate_hz (or --rate) to the "
                         "board's rate (an F411 streams 20000, an F401 17500)")

    def feed(self, data: bytes, k_hint: float | None = None) -> Decoded:
        d = self._feed(data, k_hint)
        # counted on every chunk, those that hold no frame too (garbage is skipped bytes, not nothing)
        self.stats.bytes_skipped = self._consumed - FRAME_BYTES * self.stats.frames
        return d

    def _feed(self, data: bytes, k_hint: float | None) -> Decoded:
        buf = self._tail + data
        self.stats.bytes_in += len(data)
        b = np.frombuffer(buf, np.uint8)
        if b.size < 2:
            self._tail = buf
            return Decoded.empty()
        hi = b >= 0x80
        starts = np.flatnonzero(hi[:-1] & ~hi[1:])
        b0 = b[starts].astype(np.int64)
        b1 = b[starts + 1].astype(np.int64)
        sid = (b0 >> 4) & 7
        lvl = ((b0 & 0x0F) << 6) | (b1 & 0x3F)
        mk = (b1 >> 6) & 1
        ts_j = np.flatnonzero((sid == 7) & (mk == 1))
        n_p = len(starts)
        j = ts_j[ts_j + 8 < n_p]
        whole = np.zeros(len(j), bool)
        if len(j):
            contiguous = starts[j + 8] - starts[j] == 2 * 8
            rows = j[:, None] + np.arange(1, 9)[None, :]
            ids_ok = np.all(sid[rows] == np.arange(8)[None, :], axis=1)
            whole = contiguous & ids_ok
        jw = j[whole]
        # keep what may still become a frame: a timestamp packet with too few bytes after it, or a lone first byte
        end_used = int(starts[jw[-1]] + FRAME_BYTES) if len(jw) else 0
        keep_from = len(buf)
        if len(ts_j) and int(starts[ts_j[-1]]) + FRAME_BYTES > len(buf) and int(starts[ts_j[-1]]) >= end_used:
            keep_from = int(starts[ts_j[-1]])
        elif b[-1] >= 0x80:
            keep_from = len(buf) - 1
        self._tail = bytes(buf[keep_from:])
        base = self._consumed             # where this chunk's buffer starts in the stream
        self._consumed += keep_from
        if len(jw) == 0:
            return Decoded.empty()
        t = lvl[jw]
        rows = jw[:, None] + np.arange(1, 9)[None, :]
        levels = lvl[rows]
        marker = mk[jw + 1].astype(bool)
        prev = np.concatenate([[self._t_prev], t[:-1]])
        self._check_cadence((t[1:] - t[:-1]) % TS_MOD)
        steps = self._steps((t - prev) % TS_MOD)
        first_known = self._k_prev >= 0
        # the first frame: 0, or one per frame's worth (or part) of bytes before it (a frame cut short)
        k_first = -(-(base + int(starts[jw[0]])) // FRAME_BYTES)
        if not first_known:
            steps[0] = k_first + 1   # relative to k = -1
        bad = steps == 0
        if bad.any():                 # a stamp no cadence explains: drop the frame, count it
            self.stats.frames_discarded += int(bad.sum())
            keep = ~bad
            t, levels, marker, steps = t[keep], levels[keep], marker[keep], steps[keep]
            if len(t) == 0:
                return Decoded.empty()
            steps = self._steps((t - np.concatenate([[self._t_prev], t[:-1]])) % TS_MOD)
            if not first_known:
                steps[0] = k_first + 1
            steps[steps == 0] = 1
        steps = self._on_grid(t, steps, first_known)
        if k_hint is not None and first_known:
            # the index of the chunk's last frame (a capture's hint, where the arrivals showed whole wraps lost):
            # the wraps go to the stamps' last discontinuity in the chunk (the frames before it were queued before
            # the loss; the chunk the arrivals chose ends fresh), else to its first frame (a device that sent
            # nothing for whole wraps); added where the hint is at least 3/4 of one past what the stamps say
            irregular = np.flatnonzero(steps > 1)
            i = int(irregular[-1]) if irregular.size else 0
            target = k_hint - int(np.sum(steps[i + 1:])) - self._k_prev - int(np.sum(steps[:i]))
            if steps[i] and target > steps[i] + 0.75 * self.cycle:
                steps[i] += math.floor(float(target - steps[i]) / self.cycle + 0.25) * self.cycle
        k = self._k_prev + np.cumsum(steps)
        self.stats.frames_missing += int(np.sum(steps - 1))
        self._k_prev = int(k[-1])
        self._t_prev = int(t[-1])
        self.stats.frames += len(k)
        self.stats.bytes_skipped = self._consumed - FRAME_BYTES * self.stats.frames
        self.stats.markers += int(marker.sum())
        clipped = ((levels >= LEVELS) & self._clip_hi) | ((levels <= 0) & self._clip_lo)
        self.stats.samples_clipped += int(np.count_nonzero(clipped[:, 0::2] | clipped[:, 1::2]))
        vals = value_from_level(levels, self.vref, self.sens)
        amps = vals[:, 0::2] * self.in_use
        volts = vals[:, 1::2] * self.in_use
        return Decoded(k.astype(np.int64), volts, amps, k[marker].astype(np.int64))


def frame_share(b: np.ndarray, min_frames: int) -> float:
    """The share of bytes ``b`` that lies in whole, well-formed frames (0 with fewer than ``min_frames``): what
    :func:`archline.powermon.stream.sniff.sniff_stream_kind` asks of a capture without its sidecar."""
    n_frames = 0
    i = 0
    hi = b >= 0x80
    n = len(b)
    # frame starts: a timestamp packet (sensor id 7 with the marker bit, as the decoder finds it)
    starts = np.flatnonzero(hi[:-1] & ~hi[1:] & (((b[:-1] >> 4) & 7) == 7) & (((b[1:] >> 6) & 1) == 1))
    ids = np.arange(N_SENSORS)
    for s in starts:
        if s < i or s + FRAME_BYTES > n:
            continue
        f = b[s:s + FRAME_BYTES]
        first, second = f[2::2], f[3::2]
        if np.all(first >= 0x80) and np.all(second < 0x80) and np.all(((first >> 4) & 7) == ids):
            n_frames += 1
            i = int(s) + FRAME_BYTES
    return n_frames * FRAME_BYTES / max(n, 1) if n_frames >= min_frames else 0.0
