"""The emulated PowerMon 2: command parser and record stream, independent of the transport.

``PowerMon2Core.write(bytes)`` takes what the host sends; ``read_available()`` returns every byte the device
has produced by now (host monotonic clock). Time runs ``speed`` times faster than the host clock, so a sweep
of emulated seconds finishes sooner. Faults are injected on the way out; ``truth`` keeps every record the
device generated so tests can check that each one was decoded or counted as lost.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from archline.powermon.emulator.byte_faults import ByteFaults
from archline.powermon.emulator.power import PowerCallable, PowerSource, as_power_source
from archline.powermon.emulator.registry import Faults
from archline.powermon.errors import MeterError
from archline.powermon.powermon2.decode import RecordArrays
from archline.powermon.powermon2.protocol import (
    DEFAULT_R_SENSE_OHM,
    FLAG_OVERFLOW,
    FLAG_TIME,
    PROMPT,
    TICK_HZ,
    TIME_COUNTER_MASK,
    VERSION_REPLY,
    channels_from_mask,
    code_from_amps,
    code_from_volts,
    encode_done,
)

EMULATED_LINE = b" EMULATED by archline\r\n"


@dataclass
class Truth:
    """Every record the device generated, and whether it left the device (before byte faults)."""

    parts: list[RecordArrays] = field(default_factory=list)
    sent: list[np.ndarray] = field(default_factory=list)
    time_records: int = 0

    def records(self) -> tuple[RecordArrays, np.ndarray]:
        if not self.parts:
            return RecordArrays.concat([]), np.zeros(0, bool)
        return RecordArrays.concat(self.parts), np.concatenate(self.sent)


class PowerMon2Core:
    def __init__(self, power: PowerSource | PowerCallable | None = None, faults: Faults | None = None,
                 speed: float = 1.0, seed: int = 0, clock: Callable[[], float] = time.monotonic,
                 r_sense_ohm: float | Mapping[int, float] = DEFAULT_R_SENSE_OHM) -> None:
        if not (math.isfinite(speed) and speed > 0):
            raise MeterError(f"emulator speed must be a positive number, got {speed:g}")
        self.power = as_power_source(power)
        self.faults = faults or Faults()
        self.speed = float(speed)
        self.clock = clock
        self.r_sense_ohm = r_sense_ohm
        self.rng = np.random.default_rng(seed)
        self.emulated = True
        self.mask = 0x00FF
        self.period_ticks = 8
        self.count = 0
        self.time_s = 0
        self.streaming = False
        self.disconnected = False
        self.truth = Truth()
        self._line = bytearray()
        self._out = bytearray()
        self._t0 = 0.0
        self._next_event = 0
        self._ovf = False
        self._bursts = sorted(self.faults.overflow)
        # armed once: a restarted stream counts offsets from 0 again, but spent faults stay spent
        self._faults = ByteFaults(self.faults.drop_bytes, self.faults.noise, self.faults.partial_first, self.rng)
        self.stream_bytes_out = 0
        self._lock = threading.RLock()

    # ------------------------------------------------------------ host side
    def write(self, data: bytes) -> None:
        with self._lock:
            self._write(data)

    def _write(self, data: bytes) -> None:
        if self.disconnected or self.faults.silent:
            return
        self._advance()
        for b in data:
            ch = bytes([b])
            if self.streaming:
                if ch == b"d":
                    self._stop()
                continue
            if ch in b"\r\n":
                line = self._line.decode("ascii", "replace").strip()
                self._line.clear()
                if line:
                    self._command(line)
            else:
                self._line += ch

    def read_available(self) -> bytes:
        with self._lock:
            self._advance()
            out = bytes(self._out)
            self._out.clear()
            return out

    def next_due_s(self) -> float | None:
        """Host time at which the next record is due, or None when idle."""
        if not self.streaming:
            return None
        return self._t0 + self._next_event * self.period_ticks / TICK_HZ / self.speed

    def host_time_s(self, t_s: Any) -> Any:
        """Host monotonic time of emulated time ``t_s`` (seconds since streaming started); arrays work."""
        return self._t0 + t_s / self.speed

    def emulated_time_s(self) -> float:
        return (self.clock() - self._t0) * self.speed if self.streaming else 0.0

    # ------------------------------------------------------------ commands
    def _reply(self, text: str) -> None:
        self._out += text.encode("ascii") + b"\r\n" + PROMPT

    def _command(self, line: str) -> None:
        parts = line.split()
        cmd, args = parts[0], parts[1:]
        try:
            if cmd == "v":
                self._out += VERSION_REPLY + EMULATED_LINE + PROMPT
            elif cmd == "t":
                if args:
                    self.time_s = int(args[0]) & TIME_COUNTER_MASK
                self._reply(f"T={self.time_s}")
            elif cmd == "s":
                self.period_ticks = max(1, int(args[0]))
                self.count = int(args[1]) if len(args) > 1 else 0
                self._reply(f"S={self.period_ticks},{self.count}")
            elif cmd == "m":
                self.mask = int(args[0], 0) & 0xFFFF
                self._reply(f"M={self.mask}")
            elif cmd == "e":
                self._start()
            elif cmd == "P":
                self.mask, self.period_ticks, self.count, self.time_s = 0x00FF, 8, 0, 0
                self._out += PROMPT
            else:
                self._out += b"?\r\n" + PROMPT
        except (ValueError, IndexError):
            self._out += b"?\r\n" + PROMPT

    def _start(self) -> None:
        self.streaming = True
        self._t0 = self.clock()
        self._next_event = 0
        self._ovf = False
        self._faults.restart(rearm=False)

    def _stop(self) -> None:
        self._advance()
        self.streaming = False
        self._emit(encode_done(self._ovf))
        self._out += PROMPT

    # ------------------------------------------------------------ stream
    def _advance(self) -> None:
        if not self.streaming or self.disconnected:
            return
        t_dev = (self.clock() - self._t0) * self.speed
        f = self.faults
        if f.disconnect_s is not None and t_dev >= f.disconnect_s:
            t_dev = f.disconnect_s
        last = math.floor(t_dev * TICK_HZ / self.period_ticks + 1e-9)
        if self.count:
            last = min(last, self.count - 1)
        if last >= self._next_event:
            self._generate(self._next_event, last + 1)
            self._next_event = last + 1
        if self.count and self._next_event >= self.count:
            self._stop()
        elif f.disconnect_s is not None and t_dev >= f.disconnect_s:
            self.disconnected = True

    def _generate(self, k0: int, k1: int) -> None:
        chans = channels_from_mask(self.mask)
        n = len(chans)
        ks = np.arange(k0, k1, dtype=np.int64)
        t_s = ks * self.period_ticks / TICK_HZ
        volts, amps = self.power.sample(t_s, chans)
        vcode = code_from_volts(volts)
        rs = self.r_sense_ohm
        r = np.array([rs.get(c, DEFAULT_R_SENSE_OHM) for c in chans]) if isinstance(rs, Mapping) else rs
        icode = code_from_amps(amps, r)
        if self.faults.adc_noise_lsb:
            vcode = np.clip(np.rint(vcode + self.rng.normal(0, self.faults.adc_noise_lsb, vcode.shape)), 1, 4095)
            icode = np.clip(np.rint(icode + self.rng.normal(0, self.faults.adc_noise_lsb, icode.shape)), 1, 4095)
        vcode = vcode.astype(np.uint32)
        icode = icode.astype(np.uint32)
        sens = np.broadcast_to(np.array(chans, dtype=np.uint32), (len(ks), n))
        words = (sens << 24) | ((vcode >> 4) << 16) | ((icode >> 4) << 8) | ((vcode & 0xF) << 4) | (icode & 0xF)
        # which events start a new device second (time record first)
        sec_before = (ks * self.period_ticks - 1) // TICK_HZ
        sec_now = (ks * self.period_ticks) // TICK_HZ
        new_sec = (sec_now > sec_before) & (ks > 0)
        sent = np.ones((len(ks), n), dtype=bool)
        # time window of a stall (emulated seconds) -> records lost
        stall = self.faults.stall
        if stall is not None:
            in_stall = (t_s >= stall[0]) & (t_s < stall[0] + stall[1])
            sent[in_stall] = False
        carry: list[tuple[int, int]] = []
        for b_ev, b_n in self._bursts:
            if k0 <= b_ev < k1:
                row = b_ev - k0
                flat = sent.reshape(-1)
                flat[row * n: row * n + b_n] = False
                left = b_n - (len(flat) - row * n)
                if left > 0:            # the burst runs past this batch of events
                    carry.append((k1, left))
        self._bursts = sorted([b for b in self._bursts if b[0] >= k1] + carry)
        # assemble: [time record] + samples per event, skipping lost ones, flagging after the first loss
        flat_sent = sent.reshape(-1)
        flat_words = words.reshape(-1).copy()
        lost_before = np.cumsum(~flat_sent) > 0
        if self._ovf:
            flat_words |= np.uint32(FLAG_OVERFLOW)
        else:
            flat_words[lost_before] |= np.uint32(FLAG_OVERFLOW)
        out_words: list[int] = []
        starts = np.flatnonzero(new_sec)
        prev = 0
        ovf_state = self._ovf
        for e in [*starts.tolist(), len(ks)]:
            seg = slice(prev * n, e * n)
            out_words.extend(flat_words[seg][flat_sent[seg]].tolist())
            if not ovf_state and np.any(~flat_sent[seg]):
                ovf_state = True
            if e < len(ks):
                self.time_s = (self.time_s + 1) & TIME_COUNTER_MASK
                t_in_stall = stall is not None and stall[0] <= t_s[e] < stall[0] + stall[1]
                if t_in_stall:
                    ovf_state = True
                else:
                    self.truth.time_records += 1
                    out_words.append(FLAG_TIME | self.time_s | (FLAG_OVERFLOW if ovf_state else 0))
            prev = e
        if not self._ovf and (ovf_state or not flat_sent.all()):
            self._ovf = True
        self.truth.parts.append(RecordArrays(np.repeat(ks, n), sens.reshape(-1).astype(np.int16),
                                             vcode.reshape(-1).astype(np.uint16),
                                             icode.reshape(-1).astype(np.uint16), flat_words >= FLAG_OVERFLOW))
        self.truth.sent.append(flat_sent.copy())
        data = np.array(out_words, dtype=">u4").tobytes()
        self._emit(data)

    def _emit(self, data: bytes) -> None:
        """Apply byte faults (drops, garbage, partial first record) to clean stream bytes and queue them."""
        out = self._faults.apply(data)
        self._out += out
        self.stream_bytes_out += len(out)
