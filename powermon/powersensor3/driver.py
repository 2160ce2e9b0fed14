"""The PowerSensor3 host driver over pyserial: open sequence (X, wait for the sentinel or silence, flush, V, R with
per-record acknowledgements), S to stream, M for markers, X to stop (the sentinel honoured only then, and the
frame that may trail it flushed). Before X it waits for the markers it asked for to come back (at most
:data:`MARKER_WAIT_S`), as the reference host does: firmware 1.5.0 on blocks for good on an X that arrives while
a marker is pending."""

from __future__ import annotations

import logging
import math
import time

from archline.powermon.errors import DeviceError
from archline.powermon.powersensor3.protocol import (
    ADC_V,
    LEVELS,
    N_SENSORS,
    REAL_RATE_HZ,
    RECORD_BYTES,
    SENTINEL,
    Decoder,
    SensorConfig,
    default_config,
)
from archline.powermon.stream.driver import StreamDriver, register_handler

register_handler("archline.powermon.powersensor3")
log = logging.getLogger("archline.powermon")

#: how long stopping waits for the pending markers (host s): the reference host's waitForMarkers(500) ("ms")
MARKER_WAIT_S = 0.5


class PowerSensor3(StreamDriver):
    label = "PowerSensor3"
    kind = "powersensor3"
    baudrate = 115200          # meaningless on CDC-ACM; pyserial wants one
    real_rate_hz = REAL_RATE_HZ

    config: tuple[SensorConfig, ...]

    def default_config(self) -> tuple[SensorConfig, ...]:
        return default_config()

    def config_from_raw(self, raw: bytes) -> tuple[SensorConfig, ...]:
        return tuple(SensorConfig.unpack(raw[i:i + RECORD_BYTES]) for i in range(0, len(raw), RECORD_BYTES))

    def new_decoder(self) -> Decoder:
        return Decoder(self.config, self.rate_hz)

    def handshake(self) -> None:
        self.write(b"X")
        self.drain(quiet_s=0.3 / max(self.speed, 1.0) + 0.02, limit_s=1.0, until=SENTINEL)
        time.sleep(0.01)
        self._ser.reset_input_buffer()
        self.write(b"V")
        line = bytearray()
        deadline = self.clock() + self.timeout_s
        while not line.endswith(b"\n") and self.clock() < deadline:
            line += self._ser.read(1)
        self.version = line.decode("ascii", "replace").strip()
        if not self.version:
            raise DeviceError(f"PowerSensor3 on {self.port} does not answer V (is it a PowerSensor3?)")
        self.write(b"R")
        recs = []
        for i in range(N_SENSORS):
            recs.append(self.read_exact(RECORD_BYTES))
            self.write(b"s")
            del i
        if self.read_exact(1) != b"D":
            raise DeviceError(f"PowerSensor3 on {self.port}: config read did not end with D")
        self.config_raw = b"".join(recs)
        self.config = self.config_from_raw(self.config_raw)
        for p in range(N_SENSORS // 2):
            a, b = self.config[2 * p], self.config[2 * p + 1]
            if a.in_use != b.in_use:
                raise DeviceError(f"PowerSensor3 on {self.port}: pair {p} has only one sensor in use "
                                  "(configure both with psconfig)")
        self.decoder = self.new_decoder()

    def start_stream(self) -> None:
        self.write(b"S")

    def stop(self) -> None:
        self.wait_for_markers(MARKER_WAIT_S)
        super().stop()

    def wait_for_markers(self, timeout_s: float) -> bool:
        """Wait (the reader still running) until every marker asked for has come back, at most ``timeout_s``;
        whether they all did. One that never does is left to the stop: its frame was lost, or the device hangs."""
        deadline = self.clock() + timeout_s
        while True:
            with self._lock:
                pending = len(self._marks_sent)
            if pending == 0:
                return True
            alive = self._thread is not None and self._thread.is_alive() and self.error is None
            if not alive or self.clock() >= deadline:
                log.warning("%s: %d marker(s) not back after %.2g s; stopping anyway", self.name, pending,
                            timeout_s)
                return False
            time.sleep(0.002)

    def stop_stream(self) -> None:
        self.write(b"X")
        self.drain(quiet_s=0.3, limit_s=1.0, until=SENTINEL)
        time.sleep(0.01)
        self._ser.reset_input_buffer()       # the frame that may follow the sentinel

    def lsb(self, pair: int) -> tuple[float, float]:
        step = ADC_V / LEVELS          # one level in sensor volts; the sensitivity turns it into V or A
        sens_v, sens_a = abs(self.config[2 * pair + 1].sens), abs(self.config[2 * pair].sens)
        return (step / sens_v if sens_v else math.inf), (step / sens_a if sens_a else math.inf)
