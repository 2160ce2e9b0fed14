"""An emulated byte-stream meter, independent of its protocol: frames at a fixed rate on an emulated clock
(``speed`` times the host's), faults injected on the way out, and a truth count of what was generated and sent.

A protocol subclass implements :meth:`StreamCore.command` (bytes the host sends) and :meth:`StreamCore.frames`
(the clean bytes of frames ``k0 <= k < k1``). The core has the interface :class:`~archline.powermon.emulator.
pty_server.PtyServer` serves (``write``, ``read_available``, ``next_due_s``, ``disconnected``).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from archline.powermon.emulator.byte_faults import ByteFaults
from archline.powermon.emulator.power import PowerCallable, PowerSource, as_power_source
from archline.powermon.errors import MeterError


@dataclass
class StreamFaults:
    """Faults to inject. Byte offsets count bytes of the clean stream since the last start (0 = first frame byte)."""

    drop_bytes: tuple[int, ...] = ()                 #: clean-stream offsets of bytes that never arrive
    noise: tuple[tuple[int, int], ...] = ()          #: (offset, n): n random bytes inserted before offset
    cut_first: int = 0                               #: bytes missing from the start of the first frame
    stall: tuple[float, float] | None = None         #: (emulated s, duration s): frames in it are never sent
    disconnect_s: float | None = None                #: emulated s at which the device vanishes mid-frame

    @property
    def any(self) -> bool:
        return bool(self.drop_bytes or self.noise or self.cut_first or self.stall or self.disconnect_s is not None)


@dataclass
class StreamTruth:
    """What the emulator did: every frame generated, which were sent whole, and the byte faults applied."""

    frames_generated: int = 0
    frames_stalled: int = 0                 #: generated inside a stall, never sent
    frames_cut: int = 0                     #: sent cut short (first frame, or the one a disconnect interrupts)
    bytes_dropped: int = 0
    bytes_inserted: int = 0
    markers_sent: int = 0
    marker_frames: list[int] = field(default_factory=list)


class StreamCore:
    """Timing, faults and truth of an emulated frame stream; the protocol lives in a subclass."""

    frame_bytes = 0
    label = "meter"

    def __init__(self, power: PowerSource | PowerCallable | None, rate_hz: float, faults: StreamFaults | None = None,
                 speed: float = 1.0, seed: int = 0, clock: Callable[[], float] = time.monotonic) -> None:
        if not (math.isfinite(speed) and speed > 0):
            raise MeterError(f"emulator speed must be a positive number, got {speed:g}")
        if not (math.isfinite(rate_hz) and rate_hz > 0):
            raise MeterError(f"emulator frame rate must be a positive number, got {rate_hz:g}")
        self.power = as_power_source(power)
        self.rate_hz = float(rate_hz)
        self.faults = faults or StreamFaults()
        self.speed = float(speed)
        self.clock = clock
        self.rng = np.random.default_rng(seed)
        self.emulated = True
        self.streaming = False
        self.disconnected = False
        self.truth = StreamTruth()
        self._out = bytearray()
        self._t0 = 0.0
        self._next = 0
        self._faults = ByteFaults(self.faults.drop_bytes, self.faults.noise, self.faults.cut_first, self.rng)
        self._cut_frames = 0                #: frames a disconnect cut short
        self._lock = threading.RLock()

    # ------------------------------------------------------------ host side
    def write(self, data: bytes) -> None:
        with self._lock:
            if self.disconnected:
                return
            self._advance()
            self.command(bytes(data))

    def read_available(self) -> bytes:
        with self._lock:
            self._advance()
            out = bytes(self._out)
            self._out.clear()
            return out

    def next_due_s(self) -> float | None:
        if not self.streaming:
            return None
        return self._t0 + self._next / self.rate_hz / self.speed

    def host_time_s(self, t_s: Any) -> Any:
        """Host monotonic time of emulated time ``t_s`` (seconds since streaming started); arrays work."""
        return self._t0 + t_s / self.speed

    # ------------------------------------------------------------ for the protocol
    def command(self, data: bytes) -> None:
        raise NotImplementedError

    def frames(self, k0: int, k1: int) -> bytes:
        raise NotImplementedError

    def send(self, data: bytes) -> None:
        """A reply outside the stream (no faults)."""
        self._out += data

    def start_stream(self) -> None:
        self.streaming = True
        self._t0 = self.clock()
        self._next = 0
        self._faults.restart(rearm=True)

    def stop_stream(self) -> None:
        self._advance()
        self.streaming = False

    def power_at(self, k: np.ndarray, channels: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """(volts, amps), shape (len(k), len(channels)), of frames ``k``."""
        return self.power.sample(k / self.rate_hz, channels)

    # ------------------------------------------------------------ stream
    def _advance(self) -> None:
        if not self.streaming or self.disconnected:
            return
        t_dev = (self.clock() - self._t0) * self.speed
        cut_at = self.faults.disconnect_s
        gone = cut_at is not None and t_dev >= cut_at
        if gone:
            t_dev = float(cut_at)  # type: ignore[arg-type]
        last = math.floor(t_dev * self.rate_hz + 1e-9)
        if last >= self._next:
            self._generate(self._next, last + 1)
            self._next = last + 1
        if gone:
            # the frame in flight when the cable goes: its first half arrives, the rest never
            half = self.frames(self._next, self._next + 1)[: self.frame_bytes // 2]
            self.truth.frames_generated += 1
            self._cut_frames += 1
            self._emit(half)
            self.disconnected = True

    def _generate(self, k0: int, k1: int) -> None:
        self.truth.frames_generated += k1 - k0
        stall = self.faults.stall
        if stall is None:
            self._emit(self.frames(k0, k1))
            return
        a = math.ceil(stall[0] * self.rate_hz - 1e-9)
        b = math.ceil((stall[0] + stall[1]) * self.rate_hz - 1e-9)
        for lo, hi, sent in ((k0, min(k1, a), True), (max(k0, a), min(k1, b), False), (max(k0, b), k1, True)):
            if hi <= lo:
                continue
            if sent:
                self._emit(self.frames(lo, hi))
            else:
                self.frames(lo, hi)                 # generated (markers pending are spent) but never sent
                self.truth.frames_stalled += hi - lo

    def _emit(self, data: bytes) -> None:
        self._out += self._faults.apply(data)
        self.truth.bytes_dropped = self._faults.bytes_dropped
        self.truth.bytes_inserted = self._faults.bytes_inserted
        self.truth.frames_cut = self._cut_frames + self._faults.cuts
