"""Byte faults on an emulated meter's outgoing stream, for every emulator (PowerMon 2, PowerSensor3, PMD-USB):
bytes dropped and random bytes inserted at given offsets of the clean stream, and the first bytes of the stream cut
off. Offsets count clean-stream bytes since :meth:`ByteFaults.restart`."""

from __future__ import annotations

import numpy as np


class ByteFaults:
    """Applies drops, garbage and a cut start to clean stream bytes, chunk by chunk, and counts what it did."""

    def __init__(self, drop_bytes: tuple[int, ...], noise: tuple[tuple[int, int], ...], cut_first: int,
                 rng: np.random.Generator) -> None:
        self.drop_bytes, self.noise, self.cut_first, self.rng = drop_bytes, noise, cut_first, rng
        self.bytes_dropped = 0
        self.bytes_inserted = 0
        self.cuts = 0
        self.clean = 0
        self._drops = sorted(drop_bytes)
        self._noise = sorted(noise)

    def restart(self, rearm: bool) -> None:
        """A new stream: offsets count from 0 again; ``rearm``: the faults apply again (else the spent stay spent)."""
        self.clean = 0
        if rearm:
            self._drops = sorted(self.drop_bytes)
            self._noise = sorted(self.noise)

    def apply(self, data: bytes) -> bytes:
        """The bytes that leave the device for the next ``data`` of the clean stream."""
        lo = self.clean
        hi = lo + len(data)
        self.clean = hi
        cut = self.cut_first if lo == 0 else 0
        if cut:
            self.cuts += 1
        if not (self._drops or self._noise or cut):
            return data
        buf = bytearray()
        marks = sorted({lo + cut, hi, *(d for d in self._drops if lo <= d < hi),
                        *(o for o, _ in self._noise if lo <= o < hi)})
        pos = lo + cut
        for m in marks:
            if m < pos:
                continue
            buf += data[pos - lo: m - lo]
            pos = m
            for o, nb in self._noise:
                if o == m < hi:           # an offset at the chunk's end belongs to the next chunk
                    buf += self.rng.integers(0, 256, nb, dtype=np.uint8).tobytes()
                    self.bytes_inserted += nb
            if m in self._drops and m < hi:
                pos = m + 1
                self.bytes_dropped += 1
        buf += data[pos - lo:]
        self._drops = [d for d in self._drops if d >= hi]
        self._noise = [x for x in self._noise if x[0] >= hi]
        return bytes(buf)
