"""PowerMon 2 serial driver: handshake, configure, stream on a reader thread, stop cleanly.

Ports are opened with :func:`serial.serial_for_url`, so ``/dev/ttyUSB0``, a pty such as ``/dev/pts/7``,
``spy:///dev/ttyUSB0`` and the in-process emulator ``powermon://default?speed=10`` all work. Every byte read
while streaming is appended to the raw capture (when ``raw_path`` is given; callers put it beside the results that
use it) before it is decoded, with a JSON sidecar (``RAW.json``) holding what an offline decode needs. The capture
is written under a hidden temporary name and renamed when the stream stops, so a killed process never leaves a
truncated capture under the final name; without a ``raw_path`` nothing is written.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np
import serial

from archline.formats.meters.capture import RawCapture
from archline.formats.meters.capture import sidecar_path as sidecar_path  # re-exported: the sidecar's name
from archline.formats.meters.samples import Samples
from archline.formats.meters.versions import RAW_FORMAT as RAW_FORMAT  # re-exported: the capture sidecar's format
from archline.powermon.errors import DeviceError, MeterError
from archline.powermon.powermon2.decode import DecodeStats, StreamDecoder
from archline.powermon.powermon2.protocol import (
    BAUD_RATE,
    DEFAULT_R_SENSE_OHM,
    MAX_AGGREGATE_RECORDS_PER_S,
    MAX_CHANNEL_HZ,
    PROMPT,
    TICK_HZ,
    amps_from_code,
    mask_from_channels,
    period_for_rate,
    volts_from_code,
)
from archline.powermon.record.clock import ClockMap, fit_clock
from archline.powermon.stream.driver import open_serial

EMULATOR_PACKAGE = "archline.powermon.powermon2"   #: its protocol_powermon.py: pyserial's powermon:// handler
if EMULATOR_PACKAGE not in serial.protocol_handler_packages:
    serial.protocol_handler_packages.append(EMULATOR_PACKAGE)



def open_port(port: str, timeout_s: float) -> Any:
    """Open a port by name or URL with PowerMon 2 line settings; one-line errors for the usual failures."""
    return open_serial(port, "meter", BAUD_RATE, timeout_s, ("bad powermon:// URL", "expected a URL"),
                       bytesize=serial.EIGHTBITS, parity=serial.PARITY_NONE, stopbits=serial.STOPBITS_TWO)


class PowerMon2:
    """One PowerMon 2 on one port.

    ``channels``: sensor id -> shunt resistance in ohms (the per-channel calibration), or a list of ids
    (stock 0.00422 ohm shunts). ``speed``: device seconds per host second (an emulator's time compression;
    1 for real hardware). Use as a context manager, or ``open()``, ``start()``, ``stop()``.
    """

    def __init__(self, port: str, channels: Mapping[int, float] | Sequence[int], rate_hz: float = 128.0,
                 raw_path: str | Path | None = None, name: str = "powermon2", timeout_s: float = 1.0,
                 speed: float = 1.0, poll_s: float = 0.02, batch_s: float = 0.15, stall_s: float = 0.5,
                 stall_error_s: float = 10.0,
                 emulated: bool = False, clock: Callable[[], float] = time.monotonic) -> None:
        r_sense = dict(channels) if isinstance(channels, Mapping) else {int(c): DEFAULT_R_SENSE_OHM for c in channels}
        if not r_sense:
            raise MeterError("no PowerMon 2 channels given")
        for c, r in r_sense.items():
            if not 0 <= int(c) < 8:
                raise MeterError(f"PowerMon 2 has channels 0..7; the channel map names channel {c}")
            if not float(r) > 0:
                raise MeterError(f"shunt resistance of channel {c} must be > 0 ohm, got {r}")
        self.r_sense_ohm = {int(c): float(r) for c, r in sorted(r_sense.items())}
        self.channels = list(self.r_sense_ohm)
        self.period_ticks = period_for_rate(rate_hz)
        self.rate_hz = TICK_HZ / self.period_ticks
        if self.rate_hz > MAX_CHANNEL_HZ:
            raise MeterError(f"PowerMon 2 samples a channel at most {MAX_CHANNEL_HZ} Hz, asked {rate_hz}")
        agg = self.rate_hz * len(self.channels)
        self.over_aggregate_limit = agg > MAX_AGGREGATE_RECORDS_PER_S
        self.port = port
        self.name = name
        self.timeout_s = timeout_s
        self.speed = float(speed)
        self.poll_s = poll_s
        self.batch_s = max(batch_s, poll_s)
        self.stall_s = stall_s
        self.stall_error_s = stall_error_s
        self.emulated = emulated or port.startswith("powermon://")
        self.clock = clock
        # the raw capture is written as it streams, under a hidden name until the stream stops
        self.raw_path = Path(raw_path) if raw_path is not None else None
        self.capture = RawCapture(self.raw_path) if self.raw_path is not None else None
        self.version = ""
        self.time_set_s = 0
        self.stalls = 0
        self.error: MeterError | None = None
        self.started_host_s: float | None = None
        self.stopped_host_s: float | None = None
        self._ser: Any = None
        self._thread: threading.Thread | None = None
        self._stop_evt = threading.Event()
        self._wake = threading.Event()   # set by stop() and wait_until(): read now, do not batch
        self._lock = threading.Lock()
        self._closing = threading.Event()  # set before the port closes: a read that then fails is not a fault
        self._pairs_host: list[float] = []
        self._pairs_ev: list[int] = []
        self.decoder = StreamDecoder(self.channels, self.period_ticks, self.time_set_s)
        self._r_lut = np.full(16, DEFAULT_R_SENSE_OHM)
        for c, r in self.r_sense_ohm.items():
            self._r_lut[c] = r

    # ------------------------------------------------------------------ command mode
    def open(self) -> PowerMon2:
        self._closing.clear()
        self._ser = open_port(self.port, self.timeout_s)
        try:
            self._handshake()
        except BaseException:
            self._close_port()
            raise
        return self

    def _handshake(self) -> None:
        ser = self._ser
        assert ser is not None
        try:
            ser.write(b"d\r")                       # in case it was left streaming
            time.sleep(0.05)
            ser.reset_input_buffer()
        except serial.SerialException as e:
            raise DeviceError(f"cannot talk to {self.port}: {e}") from None
        reply = self.command("v")
        if "PowerMon" not in reply:
            raise DeviceError(f"the device on {self.port} is not a PowerMon 2 (version reply {reply.strip()!r})")
        self.version = " ".join(x.strip() for x in reply.splitlines() if x.strip())
        if "EMULATED" in reply:
            self.emulated = True
        self._expect(f"t {self.time_set_s}", f"T={self.time_set_s}")
        mask = mask_from_channels(self.channels)
        self._expect(f"m {mask}", f"M={mask}")
        self._expect(f"s {self.period_ticks} 0", f"S={self.period_ticks},0")

    def _expect(self, cmd: str, want: str) -> None:
        reply = self.command(cmd)
        if want not in reply:
            raise DeviceError(f"PowerMon 2 on {self.port} answered {reply.strip()!r} to {cmd!r} (expected {want!r})")

    def command(self, cmd: str) -> str:
        """Send one command line and return the reply text before the prompt."""
        ser = self._ser
        if ser is None:
            raise MeterError("port is not open")
        try:
            ser.write(cmd.encode("ascii") + b"\r")
            buf = bytearray()
            deadline = time.monotonic() + self.timeout_s
            while PROMPT not in buf:
                if time.monotonic() > deadline:
                    raise DeviceError(f"no PowerMon 2 answers on {self.port} (no reply to {cmd!r} within "
                                      f"{self.timeout_s:g} s): check the cable, the meter's power and the port")
                buf += ser.read(max(1, ser.in_waiting))
        except serial.SerialException as e:
            raise DeviceError(f"lost the PowerMon 2 on {self.port}: {e}") from None
        return buf[: buf.index(PROMPT)].decode("ascii", "replace")

    # ------------------------------------------------------------------ streaming
    def start(self) -> None:
        if self._ser is None:
            self.open()
        assert self._ser is not None
        with self.capture.starting() if self.capture is not None else contextlib.nullcontext():
            self._stop_evt.clear()
            self._ser.write(b"e\r")
            self.started_host_s = self.clock()
            self._thread = threading.Thread(target=self._reader, name=f"powermon2 {self.port}", daemon=True)
            self._thread.start()

    def _reader(self) -> None:
        ser = self._ser
        assert ser is not None
        last_data = self.clock()
        in_stall = False
        try:
            ser.timeout = max(self.poll_s * 5, 0.05)
            while True:
                first = ser.read(1)
                now = self.clock()
                if not first:
                    quiet = now - last_data
                    if quiet > self.stall_s and not in_stall:
                        in_stall = True
                        self.stalls += 1
                    if quiet > self.stall_error_s:
                        raise DeviceError(f"PowerMon 2 on {self.port} sent nothing for {quiet:.1f} s")
                    if self._stop_evt.is_set() and quiet > self.timeout_s:
                        break
                    continue
                in_stall = False
                # let bytes gather: batch_s while nobody waits for them (each wake-up costs a decode call: at
                # 3072 records/s that is most of the recorder's CPU), poll_s once someone does
                if not self._stop_evt.is_set() and self._wake.wait(self.batch_s):
                    self._stop_evt.wait(self.poll_s)
                self._wake.clear()
                chunk = first + ser.read(ser.in_waiting)
                t_r = self.clock()
                last_data = t_r
                if self.capture is not None and not self.capture.write(chunk):   # a full disk: the recording stops
                    raise MeterError(f"cannot write the raw capture {self.raw_path}: {self.capture.error}")
                with self._lock:
                    self.decoder.feed(chunk)
                    if self.decoder.last_event >= 0:
                        self._pairs_host.append(t_r)
                        self._pairs_ev.append(self.decoder.last_event)
                if self.decoder.done:
                    break
        except MeterError as e:
            self.error = e
        except (serial.SerialException, OSError, TypeError, ValueError) as e:
            # stop() waited its timeout out (a busy host) and closed the port under a read in flight: pyserial then
            # fails in select() on a closed fd (TypeError). That is the end of this stream, not a fault or a bug.
            if self._closing.is_set():
                return
            if isinstance(e, (TypeError, ValueError)):
                raise
            self.error = DeviceError(f"PowerMon 2 on {self.port} disconnected while streaming ({e})")

    def stop(self) -> DecodeStats:
        """Stop streaming (``d``), drain to the done record, close the port and the raw capture."""
        try:
            if self._ser is not None and self._thread is not None and self.error is None:
                with contextlib.suppress(serial.SerialException, OSError):
                    self._ser.write(b"d\r")
            self._stop_evt.set()
            self._wake.set()
            if self._thread is not None:
                self._thread.join(timeout=self.timeout_s + 2 * self.poll_s + 1.0)
        finally:
            self.stopped_host_s = self.clock()
            with self._lock:
                self.decoder.finish()
            self._close_port()
            if self.capture is not None:
                self.capture.finish(self.meta)
        return self.decoder.stats

    def discard_capture(self) -> None:
        """Remove this stream's raw capture and its sidecar (a stream that never delivered a sample)."""
        if self.capture is not None:
            self.capture.discard()

    def _close_port(self) -> None:
        self._closing.set()
        if self._ser is not None:
            with contextlib.suppress(Exception):
                self._ser.close()
            self._ser = None

    def close(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            self.stop()
        self._close_port()

    def __enter__(self) -> PowerMon2:
        self.open()
        self.start()
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    # ------------------------------------------------------------------ results
    @property
    def stats(self) -> DecodeStats:
        return self.decoder.stats

    def clock_map(self) -> ClockMap:
        with self._lock:
            ev = np.asarray(self._pairs_ev, dtype=np.float64)
            host = np.asarray(self._pairs_host)
        cm = fit_clock(host, ev * (self.period_ticks / TICK_HZ), 1.0 / self.speed)
        if cm is None:
            start = self.started_host_s if self.started_host_s is not None else 0.0
            return ClockMap(start, 1.0 / self.speed)
        return cm

    def latest_host_s(self) -> float | None:
        """Host time of the newest decoded sample, or None."""
        with self._lock:
            last = self.decoder.last_event
        if last < 0:
            return None
        return float(self.clock_map().to_host(last * self.period_ticks / TICK_HZ))

    def wait_until(self, t_host_s: float, timeout_s: float = 2.0) -> bool:
        """Block until samples up to ``t_host_s`` (and the hole accounting of their second) are decoded."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self._wake.set()
            latest = self.latest_host_s()
            alive = self._thread is not None and self._thread.is_alive()
            if latest is not None and latest >= t_host_s and not self.decoder.has_open_hole:
                return True
            # after an overflow every second may hide a loss until its time record: enough that the second
            # holding t_host_s is closed (a stream that keeps streaming always has an open second)
            closed = self.decoder.open_second_event * (self.period_ticks / TICK_HZ)
            if latest is not None and latest >= t_host_s and float(self.clock_map().to_host(closed)) > t_host_s:
                return True
            if not alive:
                return latest is not None and latest >= t_host_s
            time.sleep(self.poll_s)
        return False

    def samples(self, t_dev_lo_s: float | None = None, t_dev_hi_s: float | None = None) -> Samples:
        """Decoded samples (all, or those between two device times, which touches only that stretch)."""
        with self._lock:
            if t_dev_lo_s is None and t_dev_hi_s is None:
                rec = self.decoder.records()
            else:
                per = self.period_ticks / TICK_HZ
                lo = -1 if t_dev_lo_s is None else int(np.floor(t_dev_lo_s / per))
                hi = 2**62 if t_dev_hi_s is None else int(np.ceil(t_dev_hi_s / per))
                rec = self.decoder.records_between(lo, hi)
        cm = self.clock_map()
        t_dev = rec.event * (self.period_ticks / TICK_HZ)
        return samples_from_records(rec.event, rec.channel, rec.vcode, rec.icode, self._r_lut,
                                    cm.to_host(t_dev), self.name, self.emulated, "host_monotonic",
                                    {"t_dev_s": t_dev})

    def meta(self) -> dict[str, Any]:
        cm = self.clock_map()
        return {"format": RAW_FORMAT, "meter": self.name, "type": "powermon2", "port": self.port,
                "version": self.version, "emulated": self.emulated, "channels": self.channels,
                "r_sense_ohm": {str(c): r for c, r in self.r_sense_ohm.items()},
                "period_ticks": self.period_ticks, "rate_hz": self.rate_hz, "time_set_s": self.time_set_s,
                "speed": self.speed, "clock": {"offset_s": cm.offset_s, "seconds_per_device_s":
                                               cm.seconds_per_device_s, "drift_ppm": cm.drift_ppm},
                "started_host_s": self.started_host_s, "stopped_host_s": self.stopped_host_s,
                "stats": self.decoder.stats.as_dict(), "stalls": self.stalls,
                "error": None if self.error is None else str(self.error)}

def samples_from_records(event: np.ndarray, channel: np.ndarray, vcode: np.ndarray, icode: np.ndarray,
                         r_lut: np.ndarray, t_s: np.ndarray, meter: str, emulated: bool, clock: str,
                         meta: dict[str, Any] | None = None) -> Samples:
    volts = volts_from_code(vcode)
    amps = amps_from_code(icode, r_lut[channel])
    valid = (vcode != 0) | (icode != 0)
    return Samples(np.asarray(t_s, dtype=np.float64), channel.astype(np.int16), volts, amps, volts * amps, valid,
                   meter, emulated, clock, dict(meta or {}))
