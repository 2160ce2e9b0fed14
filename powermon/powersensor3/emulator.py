"""The emulated PowerSensor3 (labelled emulated): the command bytes of the firmware (S X T I M R W V Q, others
ignored), 18-byte frames on the emulated clock with in-band markers, the stop sentinel followed by one trailing
frame (as firmware >= 1.5.0 may send), and the config record handshakes. Faults come from the stream core."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from archline.powermon.emulator.power import PowerCallable, PowerSource
from archline.powermon.powersensor3.protocol import (
    FRAME_BYTES,
    N_PAIRS,
    RECORD_BYTES,
    SENTINEL,
    VERSION,
    SensorConfig,
    cal_arrays,
    default_config,
    encode_frames,
    level_from_value,
    timestamp_us,
)
from archline.powermon.stream.core import StreamCore, StreamFaults


class PowerSensor3Core(StreamCore):
    frame_bytes = FRAME_BYTES
    label = "PowerSensor3"

    def __init__(self, power: PowerSource | PowerCallable | None = None, rate_hz: float = 20_000.0,
                 faults: StreamFaults | None = None, speed: float = 1.0, seed: int = 0,
                 config: tuple[SensorConfig, ...] | None = None, **kw: Any) -> None:
        super().__init__(power, rate_hz, faults, speed=speed, seed=seed, **kw)
        self.config = config or default_config()
        self.pending_markers = 0
        self.conversions = 0
        self._reading: int | None = None         #: R: the record whose acknowledgement is awaited
        self._writing: int | None = None         #: W: the record being received
        self._wbuf = bytearray()
        self._new: list[SensorConfig] = []

    def command(self, data: bytes) -> None:
        for b in data:
            ch = bytes([b])
            if self._writing is not None:
                self._wbuf.append(b)
                if len(self._wbuf) == RECORD_BYTES:
                    self._new.append(SensorConfig.unpack(bytes(self._wbuf)))
                    self._wbuf.clear()
                    self.send(b"S")
                    self._writing += 1
                    if self._writing == 8:
                        self.config, self._writing = tuple(self._new), None
                        self.send(b"D")
                continue
            if self._reading is not None:             # any byte acknowledges a record
                self._reading += 1
                if self._reading < 8:
                    self.send(self.config[self._reading].pack())
                else:
                    self._reading = None
                    self.send(b"D")
                continue
            if ch == b"S":
                self.conversions = 0
                self.start_stream()
            elif ch in b"XT":
                was = self.streaming
                if was:
                    self.stop_stream()
                if ch == b"X":
                    self.send(SENTINEL)
                    if was:                            # the frame the main loop had ready still goes out
                        self.send(self.frames(self._next, self._next + 1))
            elif ch == b"I" and not self.streaming:
                self.send(self.frames(0, 1))
            elif ch == b"M":
                self.pending_markers += 1
            elif ch == b"R" and not self.streaming:
                self._reading = 0
                self.send(self.config[0].pack())
            elif ch == b"W" and not self.streaming:
                self._writing, self._new = 0, []
            elif ch == b"V":
                self.send(VERSION.encode() + b"\r\n")
            elif ch == b"Q":
                self.send(struct.pack("<I", self.conversions & 0xFFFFFFFF))

    def frames(self, k0: int, k1: int) -> bytes:
        k = np.arange(k0, k1, dtype=np.int64)
        volts, amps = self.power_at(k, list(range(N_PAIRS)))
        vref, sens = cal_arrays(self.config)
        values = np.empty((len(k), 2 * N_PAIRS))
        values[:, 0::2] = amps
        values[:, 1::2] = volts
        levels = level_from_value(values, vref, sens)
        marker = np.zeros(len(k), bool)
        n_mark = min(self.pending_markers, len(k))
        if n_mark:
            marker[:n_mark] = True
            self.pending_markers -= n_mark
            self.truth.markers_sent += n_mark
            self.truth.marker_frames.extend(k[:n_mark].tolist())
        self.conversions += 8 * len(k)
        return encode_frames(timestamp_us(k, self.rate_hz), levels, marker)
