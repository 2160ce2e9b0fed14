"""PowerMon 2 wire protocol: constants, record encoding and vectorised decoding of 4-byte records.

Everything here follows ``shared/reference/powermon2_protocol.md``. Records are 32-bit big-endian words:

* bit 31 overflow (sticky), bit 30 time record (low 30 bits = device seconds), bit 29 done;
* otherwise a sample: sensor id in the low nibble of byte 0, 12-bit voltage code ``(b1 << 4) | (b3 >> 4)``,
  12-bit current code ``(b2 << 4) | (b3 & 0xF)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

BAUD_RATE = 1_000_000
TICK_HZ = 1024                      #: device sample tick (32.768 kHz crystal / 32)
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
SENSE_FULL_SCALE_V = 0.10584        #: shunt volts per 4096 codes
DEFAULT_R_SENSE_OHM = 0.00422       #: stock board shunt (full scale about 25.1 A)

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


@dataclass
class Words:
    """Fields of an array of records, decoded at once."""

    word: U32
    overflow: npt.NDArray[np.bool_]
    is_time: npt.NDArray[np.bool_]
    is_done: npt.NDArray[np.bool_]
    is_sample: npt.NDArray[np.bool_]
    sensor: npt.NDArray[np.uint32]
    vcode: npt.NDArray[np.uint32]
    icode: npt.NDArray[np.uint32]
    counter: npt.NDArray[np.uint32]


def words_from_bytes(data: bytes | bytearray | memoryview, offset: int = 0) -> U32:
    """The whole 4-byte records of ``data`` starting at byte ``offset`` (no copy)."""
    n = (len(data) - offset) // RECORD_BYTES
    if n <= 0:
        return np.zeros(0, dtype=np.uint32)
    return np.frombuffer(data, dtype=">u4", count=n, offset=offset).astype(np.uint32)


def split_words(w: U32) -> Words:
    is_time = (w & FLAG_TIME) != 0
    is_done = ~is_time & ((w & FLAG_DONE) != 0)
    b3 = w & 0xFF
    return Words(
        word=w,
        overflow=(w & FLAG_OVERFLOW) != 0,
        is_time=is_time,
        is_done=is_done,
        is_sample=~is_time & ~is_done,
        sensor=((w >> 24) & 0xF).astype(np.uint32),
        vcode=((((w >> 16) & 0xFF) << 4) | (b3 >> 4)).astype(np.uint32),
        icode=((((w >> 8) & 0xFF) << 4) | (b3 & 0xF)).astype(np.uint32),
        counter=(w & TIME_COUNTER_MASK).astype(np.uint32),
    )
