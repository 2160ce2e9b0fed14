"""The emulated PowerSensor3 (labelled emulated), as firmware 1.6.1 behaves: the command bytes (S X T I M R W V Q,
others ignored), 18-byte frames with in-band markers, and the config record handshakes. Faults come from the stream
core.

Timing as the firmware makes it (``nlesc-recruit/PowerSensor3: device/PowerSensor/PowerSensor.ino`` and
``device_specific/BLACKPILL_F401CC_F411CE.hpp``): the ADC scans free-run from boot and the DMA interrupt completes
a frame every period whether or not the host streams; its 10-bit stamp is ``micros()`` read in that interrupt, so
the first frame after ``S`` carries whatever the free-running clock says (a random phase here, not 0) and every
stamp lands up to ``late_us`` (default :data:`LATE_MAX_US`) late. ``Q`` answers the conversions since the last
``S`` (8 per frame), counting on after ``X``. ``X`` waits 100 ms (``delay(100)``) before the sentinel, then the frame
the main loop had ready follows it; commands that arrive meanwhile wait. An ``X`` or ``T`` that arrives while a
requested marker is still pending blocks the firmware for good (it waits inside the command handler for the main
loop that sends markers): the emulated device then goes silent and ignores everything, as the real one would.
The output queue is bounded (:data:`QUEUE_BYTES`): frames that find it full are lost whole, as a real CDC device
loses them when the host stops reading."""

from __future__ import annotations

import math
import struct
from typing import Any

import numpy as np

from archline.powermon.emulator.power import PowerCallable, PowerSource
from archline.powermon.powersensor3.protocol import (
    FRAME_BYTES,
    LATE_MAX_US,
    N_PAIRS,
    RECORD_BYTES,
    SENTINEL,
    TS_MOD,
    VERSION,
    SensorConfig,
    cal_arrays,
    default_config,
    encode_frames,
    level_from_value,
)
from archline.powermon.stream.core import StreamCore, StreamFaults

#: the firmware's ``delay(100)`` between ``X`` and the sentinel (device seconds)
STOP_DELAY_S = 0.1
#: bytes that can wait unread before frames are lost: the device's transmit queue (6 USB packets of 64 bytes with
#: the project's ``patch/cdc_queue.patch``) plus the 64 KiB a Linux tty buffers for a reader that does not read
#: (``TTYB_DEFAULT_MEM_LIMIT``); past it the host stops taking USB packets, the firmware's ``Serial.write`` gives
#: up after ``USB_CDC_TRANSMIT_TIMEOUT`` (3 ms) and the interrupt overwrites the frames the main loop cannot send
QUEUE_BYTES = 6 * 64 + 65536
#: the device's microsecond clock wraps at 2^32 (``micros()`` is a uint32)
MICROS_WRAP = 2 ** 32


class PowerSensor3Core(StreamCore):
    frame_bytes = FRAME_BYTES
    label = "PowerSensor3"

    def __init__(self, power: PowerSource | PowerCallable | None = None, rate_hz: float = 20_000.0,
                 faults: StreamFaults | None = None, speed: float = 1.0, seed: int = 0,
                 config: tuple[SensorConfig, ...] | None = None, late_us: float = LATE_MAX_US,
                 boot_us: float | None = None, queue_bytes: int = QUEUE_BYTES, **kw: Any) -> None:
        super().__init__(power, rate_hz, faults, speed=speed, seed=seed, **kw)
        self.config = config or default_config()
        #: what V answers (a test may play an older firmware's line): the MCU whose rate it streams (F411 20 kHz,
        #: F401 17.5 kHz), else the F407, whose cadence only its stamps tell, so that a driver on its pty (psinfo,
        #: meter record on `meter emulate --kind powersensor3`) takes it at its rate
        mcu = {20_000.0: "F411", 17_500.0: "F401"}.get(float(self.rate_hz), "F407")
        self.version = VERSION.replace("F411", mcu)
        self.pending_markers = 0
        self.period_us = 1e6 / self.rate_hz
        self.late_us = float(late_us)
        self.queue_bytes = int(queue_bytes)
        # its own generator, so that the lateness does not change the byte faults' garbage of a given seed
        self._late_rng = np.random.default_rng([seed, 35])
        #: the device's micros() when the core was made (a board booted a while ago), and the ADC grid's phase in it
        self._boot_host_s = self.clock()
        self._boot_us = float(self._late_rng.uniform(0, MICROS_WRAP)) if boot_us is None else float(boot_us)
        self._grid_us = float(self._late_rng.uniform(0, self.period_us))
        self._first_us = 0.0                  #: device µs of the current stream's frame 0
        self._counter_from_us = -math.inf     #: device µs of the last S (Q counts conversions from it)
        self.hung = False                     #: an X/T arrived with a marker pending: the firmware waits for good
        self.frames_overflowed = 0            #: frames lost because the output queue was full
        self._later: list[tuple[float, bytes]] = []   #: (host s, bytes): replies the firmware sends after a delay
        self._busy_until = -math.inf          #: host s until which the firmware is inside delay(): commands wait
        self._backlog = bytearray()
        self._reading: int | None = None         #: R: the record whose acknowledgement is awaited
        self._writing: int | None = None         #: W: the record being received
        self._wbuf = bytearray()
        self._new: list[SensorConfig] = []

    # ------------------------------------------------------------ the device clock
    def device_us(self, t_host_s: float) -> float:
        """The free-running micros() (unwrapped) at host time ``t_host_s``."""
        return self._boot_us + (t_host_s - self._boot_host_s) * self.speed * 1e6

    def _next_grid_us(self, dev_us: float) -> float:
        """Device µs of the first frame the interrupt completes at or after ``dev_us``."""
        return self._grid_us + math.ceil((dev_us - self._grid_us) / self.period_us) * self.period_us

    def conversions(self) -> int:
        """What ``Q`` answers now: 8 per frame completed since the last ``S`` (since boot before any)."""
        dev = self.device_us(self.clock())
        since = self._counter_from_us if math.isfinite(self._counter_from_us) else self._grid_us
        n = math.floor((dev - since) / self.period_us) if dev >= since else 0
        return (8 * max(n, 0)) & 0xFFFFFFFF

    def start_stream(self) -> None:
        super().start_stream()
        dev = self.device_us(self._t0)
        self._counter_from_us = dev
        self._first_us = self._next_grid_us(dev)
        self._t0 += (self._first_us - dev) / (self.speed * 1e6)   # frame 0 leaves when the interrupt makes it

    # ------------------------------------------------------------ host side
    def write(self, data: bytes) -> None:
        with self._lock:
            self._release()
            super().write(data)

    def read_available(self) -> bytes:
        with self._lock:
            self._release()
            return super().read_available()

    def next_due_s(self) -> float | None:
        due = super().next_due_s()
        later = min((t for t, _ in self._later), default=None)
        if later is None:
            return due
        return later if due is None else min(due, later)

    def _release(self) -> None:
        """Send the delayed replies that are due, then run the commands that waited for them."""
        now = self.clock()
        while self._later and self._later[0][0] <= now:
            self.send(self._later.pop(0)[1])
        if self._backlog and now >= self._busy_until:
            data, self._backlog = bytes(self._backlog), bytearray()
            self.command(data)

    def command(self, data: bytes) -> None:
        for i, b in enumerate(data):
            if self.hung:
                return
            if self.clock() < self._busy_until:        # still inside delay(): the rest waits in the USB buffer
                self._backlog += data[i:]
                return
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
                self.start_stream()
            elif ch in b"XT":
                self._stop(ch == b"X")
            elif ch == b"I" and not self.streaming:
                self.send(self._frames_at(np.zeros(1, np.int64), self._next_grid_us(self.device_us(self.clock()))))
            elif ch == b"M":
                self.pending_markers += 1
            elif ch == b"R" and not self.streaming:
                self._reading = 0
                self.send(self.config[0].pack())
            elif ch == b"W" and not self.streaming:
                self._writing, self._new = 0, []
            elif ch == b"V":
                self.send(self.version.encode() + b"\r\n")
            elif ch == b"Q":
                self.send(struct.pack("<I", self.conversions()))

    def _stop(self, tell: bool) -> None:
        was = self.streaming
        if was:
            self.stop_stream()
            if self.pending_markers > 0:
                # `while (sendMarkers > 0) delay(1);` inside serialEvent(): only loop() sends markers, so it never ends
                self.hung = True
                return
        if not tell:
            return
        # delay(100), the sentinel, then the frame the main loop had ready (the next one after the stop)
        out = SENTINEL + (self.frames(self._next, self._next + 1) if was else b"")
        self._busy_until = self.clock() + STOP_DELAY_S / self.speed
        self._later.append((self._busy_until, out))

    # ------------------------------------------------------------ frames
    def frames(self, k0: int, k1: int) -> bytes:
        return self._frames_at(np.arange(k0, k1, dtype=np.int64), self._first_us)

    def _frames_at(self, k: np.ndarray, first_us: float) -> bytes:
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
        late = self._late_rng.uniform(0.0, self.late_us, len(k)) if self.late_us > 0 else 0.0
        # micros() truncates; the stamp is its low 10 bits (first_us is kept small: a whole 1024 µs less is the same)
        ts = np.floor(math.fmod(first_us, TS_MOD) + k * self.period_us + late).astype(np.int64) % TS_MOD
        return encode_frames(ts, levels, marker)

    def _emit(self, data: bytes) -> None:
        """Frames that find the output queue full are lost whole (the host is not reading)."""
        room = max(self.queue_bytes - len(self._out), 0)
        if len(data) <= room:
            super()._emit(data)
            return
        keep = room // self.frame_bytes * self.frame_bytes
        lost = (len(data) - keep) // self.frame_bytes
        self.frames_overflowed += lost
        self.truth.frames_stalled += lost           # generated, never sent
        if keep:
            super()._emit(data[:keep])
