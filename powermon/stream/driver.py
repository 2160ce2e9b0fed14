"""A byte-stream meter on a serial port (or a pyserial URL): one reader thread decodes whole chunks with the
protocol's vectorised decoder and keeps frames (index on the device's frame cadence, volts and amps per pair).

The device clock is mapped onto the host's as :mod:`archline.powermon.record.clock` does (lower envelope of
arrival - device time); a meter with in-band markers aligns it to them instead (:meth:`StreamDriver.clock_map`).
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np
import serial

from archline.powermon.errors import DeviceError, MeterError
from archline.powermon.record.bounds import half_lsb_power_w
from archline.powermon.record.clock import ClockMap, fit_clock
from archline.powermon.stream.frames import Decoded as Decoded  # re-exported: the protocols' decoders use them
from archline.powermon.stream.frames import StreamStats as StreamStats
from archline.powermon.stream.relocate import relocate
from archline.powermon.stream.serial_port import open_serial as open_serial  # re-exported: the drivers use it
from archline.powermon.stream.serial_port import register_handler as register_handler

log = logging.getLogger("archline.powermon")


class StreamDriver:
    """Reader thread and frame store; a protocol subclass gives ``handshake``, ``start_stream``, ``stop_stream``
    and a ``decoder`` with ``feed(data, k_hint) -> Decoded`` and ``stats``."""

    label = "meter"
    kind = "stream"
    baudrate = 115200
    n_pairs = 4
    real_rate_hz: float | None = None     #: what the real device streams, where it is fixed (an emulator may not)
    #: where the decoder's frame 0 is the first frame taken after the start command: how long before the command
    #: reached the device that frame's sample may have been taken (host s); None where frame 0 is not tied to the
    #: start (then only markers give the clock's lower bound)
    start_lead_s: float | None = None
    decoder: Any

    def __init__(self, port: str, rate_hz: float, *, name: str, speed: float = 1.0, emulated: bool = False,
                 timeout_s: float = 1.0, stall_s: float = 0.25, stall_error_s: float = 5.0,
                 clock: Callable[[], float] = time.monotonic, capture: Any = None) -> None:
        self.port = port
        self.rate_hz = float(rate_hz)
        self.name = name
        self.speed = float(speed)
        self.emulated = emulated
        self.timeout_s = timeout_s
        self.stall_s = stall_s
        self.stall_error_s = stall_error_s
        self.clock = clock
        self.error: MeterError | None = None
        self.version = ""
        self.stalls = 0
        self.started_host_s: float | None = None
        self.start_asked_host_s: float | None = None   #: host time just before the start command was written
        self._ser: Any = None
        self._thread: threading.Thread | None = None
        self._closing = threading.Event()
        self._lock = threading.Lock()
        self._k: list[np.ndarray] = []
        self._v: list[np.ndarray] = []
        self._a: list[np.ndarray] = []
        self._pairs_host: list[float] = []
        self._pairs_k: list[int] = []
        self._marks_sent: deque[float] = deque()
        self._marks: list[tuple[float, int]] = []          #: (host time the mark was asked, marked frame index)
        self._last_k = -1
        #: how well the clock map's offset is known (host s): half the distance between its upper bound (the
        #: arrival envelope) and its lower bound (the markers, or the start command); None where there is no
        #: lower bound (then the caller assumes one)
        self.clock_bound_s: float | None = None
        self.rate_note: str | None = None           #: an emulator at another rate than the real device's
        self.notes: list[str] = []                  #: warnings of the stop, after the window's were taken (meta)
        self.rate_warning: str | None = None        #: the rate note, logged once the stream starts
        self.config: Any = self.default_config()
        self.config_raw = b""                       #: the configuration bytes the handshake read (for a capture)
        #: the raw capture (:class:`archline.formats.meters.capture.RawCapture`, its one owner), or None
        self.capture = capture
        self._captured = 0
        #: (capture offsets of the chunk, its frame index hint) of each chunk after a silence
        self._hints: list[tuple[int, int, float]] = []
        #: per clock pair (chunk): its first frame's place in the frame store, its frames, its capture offsets
        self._chunks: list[tuple[int, int, int, int]] = []
        self._n_stored = 0
        self._shift = 0              #: frames added to every index decoded since: wraps the arrivals showed lost
        self._judged = 0             #: the first chunk whose silence before it is not yet judged
        self.frames_relocated = 0    #: frames counted lost so (added to the decoder's frames_missing)
        self.decoder = self.new_decoder()

    # ------------------------------------------------------------ to implement
    def default_config(self) -> Any:
        """The configuration assumed until the handshake reads the device's."""
        raise NotImplementedError

    def config_from_raw(self, raw: bytes) -> Any:
        """The configuration from the bytes the handshake read (an offline decode of a capture)."""
        raise NotImplementedError

    def new_decoder(self) -> Any:
        """The protocol's decoder for the configuration read so far (called at construction and after handshake)."""
        raise NotImplementedError

    def handshake(self) -> None:
        raise NotImplementedError

    def start_stream(self) -> None:
        raise NotImplementedError

    def stop_stream(self) -> None:
        raise NotImplementedError

    def lsb(self, pair: int) -> tuple[float, float]:
        """(volts, amps) per ADC step of ``pair`` in the configuration read (the device's sensitivities)."""
        raise NotImplementedError

    def half_lsb_w(self, volts: np.ndarray, amps: np.ndarray, pair: int) -> np.ndarray:
        """Each sample's resolution bound (W): half a step of V and of I (:func:`half_lsb_power_w`)."""
        lsb_v, lsb_a = self.lsb(pair)
        return np.asarray(half_lsb_power_w(volts, amps, lsb_v, lsb_a))

    def resolution(self) -> dict[str, dict[str, float]]:
        """Every pair's steps, as the samples sidecar keeps them (``info.resolution``) for ``meter integrate``; a
        pair whose configuration gives no finite step (an unused sensor, sensitivity 0) is left out."""
        steps = {str(p): self.lsb(p) for p in range(self.n_pairs)}
        return {p: {"lsb_v": v, "lsb_a": a} for p, (v, a) in steps.items() if math.isfinite(v + a)}

    # ------------------------------------------------------------ port
    def write(self, data: bytes) -> None:
        try:
            self._ser.write(data)
        except (serial.SerialException, OSError) as e:
            raise DeviceError(f"{self.label} on {self.port}: write failed ({e})") from None

    def read_exact(self, n: int, timeout_s: float | None = None) -> bytes:
        deadline = self.clock() + (self.timeout_s if timeout_s is None else timeout_s)
        out = bytearray()
        while len(out) < n and self.clock() < deadline:
            out += self._ser.read(n - len(out))
        if len(out) < n:
            raise DeviceError(f"{self.label} on {self.port} does not answer (got {len(out)} of {n} bytes); "
                              "is it the right port?")
        return bytes(out)

    def drain(self, quiet_s: float = 0.05, limit_s: float = 1.0, until: bytes | None = None) -> bytes:
        """Read until ``quiet_s`` of silence (or ``until`` seen, or ``limit_s``); what was read."""
        got = bytearray()
        end = self.clock() + limit_s
        old = self._ser.timeout
        self._ser.timeout = quiet_s
        try:
            while self.clock() < end:
                b = self._ser.read(4096)
                if not b:
                    break
                got += b
                if until is not None and until in got:
                    break
        finally:
            self._ser.timeout = old
        return bytes(got)

    def open(self) -> StreamDriver:
        self._ser = open_serial(self.port, self.label, self.baudrate, self.timeout_s)
        try:
            self.handshake()
        except BaseException:
            self.close()
            raise
        return self

    def start(self) -> None:
        with self.capture.starting() if self.capture is not None else contextlib.nullcontext():
            self.start_asked_host_s = self.clock()
            self.start_stream()
            self.started_host_s = self.clock()
            if self.capture is not None:     # a killed recording keeps what decodes its capture (kill -9)
                self.capture.note_open(self.capture_meta)
            self._closing.clear()
            self._thread = threading.Thread(target=self._reader, name=f"{self.kind} {self.port}", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._closing.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        self._thread = None
        if self._ser is not None and self.error is None:
            try:
                self.stop_stream()
            except (MeterError, serial.SerialException, OSError) as e:
                log.debug("%s: stopping the stream: %s", self.name, e)
        with self._lock:
            relocate(self, final=True)
        if self.capture is not None:
            self.capture.finish(self.capture_meta)

    def close(self) -> None:
        if self._ser is not None:
            try:
                self._ser.close()
            except (serial.SerialException, OSError):
                pass
            self._ser = None

    # ------------------------------------------------------------ stream
    def _reader(self) -> None:
        ser = self._ser
        last_data = self.clock()
        quiet = False
        try:
            ser.timeout = 0.02
            while not self._closing.is_set():
                data = ser.read(max(int(getattr(ser, "in_waiting", 0) or 0), 1))
                now = self.clock()
                if not data:
                    if now - last_data > self.stall_s and not quiet:
                        quiet = True
                        self.stalls += 1
                        log.debug("%s: no data for %.2g s", self.name, now - last_data)
                    if now - last_data > self.stall_error_s:
                        raise DeviceError(f"{self.label} on {self.port} stopped streaming "
                                          f"({now - last_data:.3g} s without data)")
                    continue
                if now - last_data > self.stall_s and not quiet:    # a stall that ended between two empty reads
                    self.stalls += 1
                more = ser.read(int(getattr(ser, "in_waiting", 0) or 0)) if getattr(ser, "in_waiting", 0) else b""
                if more:                 # the chunk's last frame arrived with `more`: its arrival time is now, not
                    now = self.clock()   # the first read's (else the envelope offset can precede the truth)
                chunk = data + more
                span = (self._captured, self._captured + len(chunk))
                if self.capture is not None:         # captured before it is decoded
                    if not self.capture.write(chunk):
                        raise MeterError(f"cannot write the raw capture {self.capture.path}: {self.capture.error}")
                    self._captured += len(chunk)
                # no index from the host clock here: after a silence of the reader (a stopped or loaded host) the
                # chunk holds frames the device queued before it, not frames of now; whole wraps lost in a silence
                # are placed at the stamps' discontinuity once the arrivals after it are seen (relocate)
                d = self.decoder.feed(chunk)
                quiet = False
                last_data = now
                self._store(d, now, span)
        except MeterError as e:
            self.error = e
        except (serial.SerialException, OSError, TypeError) as e:
            if self._closing.is_set():
                return
            if isinstance(e, TypeError):
                raise
            self.error = DeviceError(f"{self.label} on {self.port} disconnected while streaming ({e})")

    def _store(self, d: Decoded, now: float, span: tuple[int, int] = (0, 0)) -> None:
        newest = max(int(d.k[-1]) if d.k.size else -1, int(d.k_arrived))
        if newest < 0:
            return
        with self._lock:
            # (arrival, newest frame in hand): a frame held back for its successor arrived with this chunk too
            self._pairs_host.append(now)
            self._pairs_k.append(newest + self._shift)
            self._chunks.append((self._n_stored, int(d.k.size), *span))
            if d.k.size == 0:
                return
            self._n_stored += int(d.k.size)
            self._k.append(d.k + self._shift)
            self._v.append(d.volts)
            self._a.append(d.amps)
            self._last_k = int(d.k[-1])
            for km in d.markers.tolist():
                if self._marks_sent:
                    self._marks.append((self._marks_sent.popleft(), int(km) + self._shift))

    def send_marker(self, t_host_s: float, byte: bytes) -> None:
        """Ask for an in-band marker; the host time it was asked is matched to the frame that carries it."""
        with self._lock:
            self._marks_sent.append(t_host_s)
        self.write(byte)

    def markers(self) -> list[tuple[float, int]]:
        with self._lock:
            return list(self._marks)

    # ------------------------------------------------------------ results
    def clock_map(self, use_markers: bool = True) -> ClockMap:
        with self._lock:
            relocate(self)
            host = np.asarray(self._pairs_host)
            k = np.asarray(self._pairs_k, dtype=np.float64)
            marks = list(self._marks)
        cm = fit_clock(host, k / self.rate_hz, 1.0 / self.speed)
        self.clock_bound_s = None
        if cm is None:
            return ClockMap(self.started_host_s or 0.0, 1.0 / self.speed)
        # the read envelope is an upper bound of the offset (data arrive after they are taken); a marked frame is
        # taken after its mark was asked, and frame 0 of a device that starts on command after the command was
        # written, so each gives a lower bound: the offset is the middle of the two, to within half their distance
        # (:attr:`clock_bound_s`). The envelope alone sits late by the least transfer latency, which nothing bounds.
        lowers: list[float] = []
        if use_markers and marks:
            scale = cm.seconds_per_device_s * (1.0 + cm.drift_ppm * 1e-6)
            lowers.append(max(t - km / self.rate_hz * scale for t, km in marks))
        if self.start_lead_s is not None and self.start_asked_host_s is not None:
            lowers.append(self.start_asked_host_s - self.start_lead_s)
        upper = cm.offset_s
        if lowers and max(lowers) <= upper:
            lower = max(lowers)
            self.clock_bound_s = 0.5 * (upper - lower)
            return ClockMap(0.5 * (lower + upper), cm.seconds_per_device_s, cm.drift_ppm, cm.n_pairs)
        return cm

    def latest_k(self) -> int:
        with self._lock:
            return self._last_k

    def wait_until(self, t_host_s: float, timeout_s: float = 2.0) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            last = self.latest_k()
            if last >= 0 and float(self.clock_map().to_host(last / self.rate_hz)) >= t_host_s:
                return True
            if self.error is not None or self._thread is None or not self._thread.is_alive():
                return False
            time.sleep(0.002)
        return False

    def frames(self, k_lo: float | None = None, k_hi: float | None = None) -> tuple[np.ndarray, np.ndarray,
                                                                                    np.ndarray]:
        """(k, volts, amps) of the frames decoded (those with ``k_lo <= k <= k_hi``)."""
        with self._lock:
            relocate(self)
            if not self._k:
                z = np.zeros((0, self.n_pairs))
                return np.zeros(0, np.int64), z, z
            if len(self._k) > 1:       # compact once in a while: the reader appends per chunk
                self._k, self._v, self._a = [np.concatenate(self._k)], [np.concatenate(self._v)], \
                    [np.concatenate(self._a)]
            k, v, a = self._k[0], self._v[0], self._a[0]
        lo = 0 if k_lo is None else int(np.searchsorted(k, k_lo, "left"))
        hi = len(k) if k_hi is None else int(np.searchsorted(k, k_hi, "right"))
        return k[lo:hi], v[lo:hi], a[lo:hi]

    def replay(self, data: bytes, config_raw: bytes, hints: list[tuple[int, int, float]]) -> None:
        """Decode a raw capture as the reader decoded it live: the handshake's configuration, and each chunk after
        a silence fed alone with its frame index hint (elsewhere the decoder does not depend on the chunking)."""
        if config_raw:
            self.config = self.config_from_raw(config_raw)
        self.decoder = self.new_decoder()
        pos = 0
        for lo, hi, hint in [*hints, (len(data), len(data), None)]:
            if lo > pos:
                self._store(self.decoder.feed(data[pos:lo]), 0.0)
            if hi > lo:
                self._store(self.decoder.feed(data[lo:hi], hint), 0.0)
            pos = max(pos, hi)

    def capture_meta(self) -> dict[str, Any]:
        """The capture's sidecar: what :meth:`replay` needs, and the clock the live samples were written with."""
        return {**self.meta(), "config_hex": self.config_raw.hex(), "hints": [list(h) for h in self._hints]}

    def meta(self) -> dict[str, Any]:
        cm = self.clock_map()
        stats = self.decoder.stats.as_dict()
        return {"meter": self.name, "type": self.kind, "port": self.port, "version": self.version,
                "emulated": self.emulated, "rate_hz": self.rate_hz, "speed": self.speed,
                "clock": {"offset_s": cm.offset_s, "seconds_per_device_s": cm.seconds_per_device_s,
                          "drift_ppm": cm.drift_ppm, "markers": len(self.markers())},
                "stats": {**stats, "frames_missing": stats["frames_missing"] + self.frames_relocated},
                "stalls": self.stalls, "resolution": self.resolution(),
                "error": None if self.error is None else str(self.error),
                **({"rate_note": self.rate_note} if self.rate_note else {}),
                **({"notes": list(self.notes)} if self.notes else {})}
