"""PowerMon 2 wire protocol: constants, record encoding and vectorised decoding of 4-byte records.

Everything here follows ``shared/reference/powermon2_protocol.md``. Records are 32-bit big-endian words:

* bit 31 overflow (sticky), bit 30 time record (low 30 bits = device seconds), bit 29 done;
* otherwise a sample: sensor id in the low nibble of byte 0, 12-bit voltage code ``(b1 << 4) | (b3 >> 4)``,
  12-bit current code ``(b2 << 4) | (b3 & 0xF)``.
"""

from __future__ import annotations

import math
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from archline.formats.meters.versions import RAW_TICK_HZ
from archline.powermon.errors import MeterError
from archline.powermon.shunts import DEFAULT_R_SENSE_OHM as DEFAULT_R_SENSE_OHM  # the board's stock shunt
from archline.powermon.shunts import SENSE_FULL_SCALE_V as SENSE_FULL_SCALE_V  # its ADC's sense range

BAUD_RATE = 1_000_000
TICK_HZ = RAW_TICK_HZ               #: device sample tick (32.768 kHz crystal / 32): what a capture's sidecar counts
PROMPT = b"OK\r\n"
VERSION_REPLY = b"PowerMon\r\n HW v2.0\r\n SW v2.2\r\n"
RECORD_BYTES = 4
N_SENSORS = 16
MAX_CHANNELS = 8                    #: ADM1191 monitors on the board
MAX_AGGREGATE_RECORDS_PER_S = 3072  #: the thesis' aggregate limit
MAX_CHANNEL_HZ = 1024

FLAG_OVERFLOW = 0x8000_0000
FLAG_TIME = 0x4000_0000
FLAG_DONE = 0x2000_0000
BIT_28 = 0x1000_0000
TIME_COUNTER_MASK = 0x3FFF_FFFF

VOLTAGE_FULL_SCALE_V = 26.52        #: volts per 4096 codes

U32 = npt.NDArray[np.uint32]


def volts_from_code(code: npt.ArrayLike) -> npt.NDArray[np.float64]:
    return np.asarray(code, dtype=np.float64) * (VOLTAGE_FULL_SCALE_V / 4096.0)


def amps_from_code(code: npt.ArrayLike, r_sense_ohm: npt.ArrayLike = DEFAULT_R_SENSE_OHM) -> npt.NDArray[np.float64]:
    return np.asarray(code, dtype=np.float64) * (SENSE_FULL_SCALE_V / 4096.0) / np.asarray(r_sense_ohm)


def code_from_volts(volts_v: npt.ArrayLike) -> npt.NDArray[np.int64]:
    codes = np.rint(np.asarray(volts_v, dtype=np.float64) * (4096.0 / VOLTAGE_FULL_SCALE_V))
    return np.clip(codes, 0, 4095).astype(np.int64)


def code_from_amps(current_a: npt.ArrayLike, r_sense_ohm: npt.ArrayLike = DEFAULT_R_SENSE_OHM) -> npt.NDArray[np.int64]:
    codes = np.rint(np.asarray(current_a, dtype=np.float64) * np.asarray(r_sense_ohm) * (4096.0 / SENSE_FULL_SCALE_V))
    return np.clip(codes, 0, 4095).astype(np.int64)


def mask_from_channels(channels: list[int] | tuple[int, ...]) -> int:
    mask = 0
    for c in channels:
        mask |= 1 << int(c)
    return mask


def channels_from_mask(mask: int) -> list[int]:
    return [i for i in range(N_SENSORS) if mask >> i & 1]


def encode_samples(sensor: npt.ArrayLike, vcode: npt.ArrayLike, icode: npt.ArrayLike, overflow: bool = False) -> bytes:
    """Sample records for arrays of sensor ids and 12-bit codes (vectorised)."""
    s = np.asarray(sensor, dtype=np.uint32) & 0xF
    v = np.asarray(vcode, dtype=np.uint32) & 0xFFF
    i = np.asarray(icode, dtype=np.uint32) & 0xFFF
    w = (s << 24) | ((v >> 4) << 16) | ((i >> 4) << 8) | ((v & 0xF) << 4) | (i & 0xF)
    if overflow:
        w |= np.uint32(FLAG_OVERFLOW)
    return w.astype(">u4").tobytes()


def encode_time(seconds: int, overflow: bool = False) -> bytes:
    w = FLAG_TIME | (seconds & TIME_COUNTER_MASK) | (FLAG_OVERFLOW if overflow else 0)
    return w.to_bytes(4, "big")


def encode_done(overflow: bool = False) -> bytes:
    return (FLAG_DONE | (FLAG_OVERFLOW if overflow else 0)).to_bytes(4, "big")


class Words:
    """Fields of an array of records, each computed once when first used, from the (m, 4) byte matrix."""

    def __init__(self, b: npt.NDArray[np.uint8]) -> None:
        self.b = b

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview, offset: int = 0) -> Words:
        n = max((len(data) - offset) // RECORD_BYTES, 0)
        if n == 0:            # fewer bytes than one record past ``offset`` (numpy refuses an offset past the end)
            return cls(np.zeros((0, RECORD_BYTES), dtype=np.uint8))
        b = np.frombuffer(data, dtype=np.uint8, count=n * RECORD_BYTES, offset=offset).reshape(n, RECORD_BYTES)
        return cls(b.copy())

    def __len__(self) -> int:
        return len(self.b)

    def head(self, n: int) -> Words:
        out = Words(self.b[:n])
        for k, v in self.__dict__.items():
            if k != "b":
                out.__dict__[k] = v[:n]
        return out

    @cached_property
    def b0(self) -> npt.NDArray[np.uint8]:
        return np.ascontiguousarray(self.b[:, 0])

    @cached_property
    def word(self) -> U32:
        return np.ascontiguousarray(self.b).view(">u4").reshape(-1).astype(np.uint32)

    @cached_property
    def overflow(self) -> npt.NDArray[np.bool_]:
        return self.b0 >= 0x80

    @cached_property
    def is_time(self) -> npt.NDArray[np.bool_]:
        return (self.b0 & 0x40) != 0

    @cached_property
    def is_done(self) -> npt.NDArray[np.bool_]:
        return (self.b0 & 0x60) == 0x20

    @cached_property
    def is_sample(self) -> npt.NDArray[np.bool_]:
        return (self.b0 & 0x60) == 0

    @cached_property
    def bit28(self) -> npt.NDArray[np.bool_]:
        return (self.b0 & 0x10) != 0

    @cached_property
    def done_clean(self) -> npt.NDArray[np.bool_]:
        """Done records whose other bits (below the overflow flag) are all zero."""
        b = self.b
        return self.is_done & ((self.b0 & 0x1F) == 0) & ((b[:, 1] | b[:, 2] | b[:, 3]) == 0)

    @cached_property
    def sensor(self) -> npt.NDArray[np.uint8]:
        return np.asarray(self.b0 & 0x0F, dtype=np.uint8)

    @cached_property
    def vcode(self) -> npt.NDArray[np.uint16]:
        b = self.b
        return np.asarray((b[:, 1].astype(np.uint16) << 4) | (b[:, 3] >> 4), dtype=np.uint16)

    @cached_property
    def icode(self) -> npt.NDArray[np.uint16]:
        b = self.b
        return np.asarray((b[:, 2].astype(np.uint16) << 4) | (b[:, 3] & 0x0F), dtype=np.uint16)

    @cached_property
    def counter(self) -> U32:
        return np.asarray(self.word & TIME_COUNTER_MASK, dtype=np.uint32)

    def counter_at(self, idx: npt.NDArray[np.intp]) -> npt.NDArray[np.int64]:
        """Time-record counters (low 30 bits) of the records at ``idx`` only."""
        b = self.b[idx].astype(np.int64)
        return ((b[:, 0] & 0x3F) << 24) | (b[:, 1] << 16) | (b[:, 2] << 8) | b[:, 3]


def words_from_bytes(data: bytes | bytearray | memoryview, offset: int = 0) -> U32:
    """The whole 4-byte records of ``data`` starting at byte ``offset``, as native uint32."""
    n = (len(data) - offset) // RECORD_BYTES
    if n <= 0:
        return np.zeros(0, dtype=np.uint32)
    return np.frombuffer(data, dtype=">u4", count=n, offset=offset).astype(np.uint32)


def split_words(w: U32) -> Words:
    return Words(np.asarray(w, dtype=">u4").view(np.uint8).reshape(-1, RECORD_BYTES))


def period_for_rate(rate_hz: float) -> int:
    """The ``s`` period (1/1024 s ticks) for a per-channel rate; it must divide evenly."""
    if not (isinstance(rate_hz, (int, float)) and math.isfinite(rate_hz) and rate_hz > 0):
        raise MeterError(f"rate must be a positive number of Hz, got {rate_hz}")
    period = round(TICK_HZ / rate_hz)
    if period < 1 or abs(TICK_HZ / period - rate_hz) > 1e-9 * rate_hz:
        raise MeterError(f"rate {rate_hz} Hz is not 1024/N Hz for a whole N (try 1024, 512, 256, 128, 64, ...)")
    return period


def half_lsb_w(current_a: Any, voltage_v: Any, r_sense_ohm: Any) -> Any:
    """Half an ADC step of V and of I, propagated to power (W): the resolution bound of each sample, the one the
    live meter and ``meter integrate`` both use (arrays or scalars, ``r_sense_ohm`` per sample or one)."""
    return 0.5 * (current_a * VOLTAGE_FULL_SCALE_V / 4096 + voltage_v * SENSE_FULL_SCALE_V / 4096 / r_sense_ohm)
