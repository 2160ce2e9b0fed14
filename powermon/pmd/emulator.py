"""The emulated PMD-USB (labelled emulated): the command table (welcome, ID, sensors, values, config read/write,
raw ADC, continuous TX with any timestamp size and channel mask, UART rate, reset, no-op), raw words with the
config's ADC offsets, and a free-running 3 MHz counter. Faults come from the stream core."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from archline.powermon.emulator.power import PowerCallable, PowerSource
from archline.powermon.pmd.protocol import (
    ALL_CHANNELS,
    AMP_PER_CODE,
    CMD_CONT_TX,
    CMD_ID,
    CMD_READ_ADC,
    CMD_READ_CONFIG,
    CMD_SENSORS,
    CMD_UART,
    CMD_VALUES,
    CMD_WELCOME,
    CMD_WRITE_CONFIG,
    FIRMWARE,
    PARAM_BYTES,
    PRODUCT,
    RAIL_NAMES,
    TICK_HZ,
    TS_BYTES,
    VENDOR,
    VOLT_PER_CODE,
    WELCOME,
    PmdConfig,
    encode_frames,
    words_from_codes,
)
from archline.powermon.stream.core import StreamCore, StreamFaults

#: the emulated board's ADC offsets (counts), so that a driver that forgets them reads wrong values
EMULATED_OFFSETS = (2, -3, 1, 0, -1, 2, 0, -2)


class PmdCore(StreamCore):
    frame_bytes = TS_BYTES + 16
    label = "PMD-USB"

    def __init__(self, power: PowerSource | PowerCallable | None = None, rate_hz: float = 1000.0,
                 faults: StreamFaults | None = None, speed: float = 1.0, seed: int = 0,
                 config: PmdConfig | None = None, tick0: int | None = None, **kw: Any) -> None:
        super().__init__(power, rate_hz, faults, speed=speed, seed=seed, **kw)
        self.config = config or PmdConfig(EMULATED_OFFSETS)
        self.tick0 = int(self.rng.integers(0, 1 << 32)) if tick0 is None else tick0   # free-running counter
        self.ts_bytes = TS_BYTES
        self.mask = ALL_CHANNELS
        self.baud = 115200
        self._cmd: int | None = None
        self._param = bytearray()

    def _need(self, cmd: int) -> int:
        if cmd == CMD_WRITE_CONFIG:
            return PmdConfig.size(FIRMWARE)
        return PARAM_BYTES.get(cmd, 0)

    def command(self, data: bytes) -> None:
        for b in data:
            if self._cmd is not None:
                self._param.append(b)
                if len(self._param) == self._need(self._cmd):
                    self._run(self._cmd, bytes(self._param))
                    self._cmd = None
                continue
            if self._need(b):
                self._cmd, self._param = b, bytearray()
            else:
                self._run(b, b"")

    def _codes(self, k: np.ndarray) -> np.ndarray:
        """Raw codes (n, 8) of frames ``k`` (what the ADC reads less the board's offset)."""
        volts, amps = self.power_at(k, [0, 1, 2, 3])
        vals = np.empty((len(k), 8))
        vals[:, 0::2] = volts / VOLT_PER_CODE
        vals[:, 1::2] = amps / AMP_PER_CODE
        return np.rint(vals).astype(np.int64) - np.array(self.config.adc_offset, np.int64)[None, :]

    def _run(self, cmd: int, param: bytes) -> None:
        now_k = np.array([max(self._next - 1, 0)])
        if cmd == CMD_WELCOME:
            self.send(WELCOME)
        elif cmd == CMD_ID:
            self.send(bytes([VENDOR, PRODUCT, FIRMWARE]))
        elif cmd in (CMD_SENSORS, CMD_VALUES):
            codes = self._codes(now_k)[0] + np.array(self.config.adc_offset)
            v, i = codes[0::2] * VOLT_PER_CODE, codes[1::2] * AMP_PER_CODE
            if cmd == CMD_VALUES:
                self.send(b"".join(struct.pack("<hh", round(a * 100), round(c * 10)) for a, c in zip(v, i,
                                                                                                       strict=True)))
            else:
                self.send(b"".join(struct.pack("<6sHHH", n.encode(), max(round(a * 100), 0), max(round(c * 10), 0),
                                               max(round(a * c), 0)) for n, a, c in zip(RAIL_NAMES, v, i,
                                                                                         strict=True)))
        elif cmd == CMD_READ_CONFIG:
            self.send(self.config.pack())
        elif cmd == CMD_WRITE_CONFIG:
            self.config = PmdConfig.unpack(param)
        elif cmd == CMD_READ_ADC:
            self.send(words_from_codes(self._codes(now_k)[0]).astype("<i2").tobytes())
        elif cmd == CMD_CONT_TX:
            enable, ts_bytes, mask = param
            if enable:
                self.ts_bytes = ts_bytes if ts_bytes in (0, 1, 2, 4) else TS_BYTES
                self.mask = mask
                self.frame_bytes = self.ts_bytes + 2 * bin(mask).count("1")
                self.start_stream()
            elif self.streaming:
                self.stop_stream()
        elif cmd == CMD_UART:
            self.baud = struct.unpack("<I", param[:4])[0]

    def frames(self, k0: int, k1: int) -> bytes:
        k = np.arange(k0, k1, dtype=np.int64)
        ticks = self.tick0 + np.floor(k * (TICK_HZ / self.rate_hz)).astype(np.int64)
        return encode_frames(ticks, words_from_codes(self._codes(k)), self.ts_bytes, self.mask)
