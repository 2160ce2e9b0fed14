"""The PowerSensor3 host driver over pyserial: open sequence (X, wait for the sentinel or silence, flush, V, R with
per-record acknowledgements), S to stream, M for markers, X to stop (the sentinel honoured only then, and the
frame that may trail it flushed). Before X it waits for the markers it asked for to come back (at most
:data:`MARKER_WAIT_S`), as the reference host does: firmware 1.5.0 on blocks for good on an X that arrives while
a marker is pending."""

from __future__ import annotations

import logging
import math
import time

from archline.powermon.errors import DeviceError, MeterError
from archline.powermon.powersensor3.protocol import (
    ADC_V,
    LEVELS,
    MCU_RATE_HZ,
    MIN_FIRMWARE,
    N_SENSORS,
    REAL_RATE_HZ,
    RECORD_BYTES,
    SENTINEL,
    Decoder,
    SensorConfig,
    config_problem,
    default_config,
    parse_version,
)
from archline.powermon.stream.driver import StreamDriver, register_handler
from archline.powermon.stream.rate_note import WARNING

register_handler("archline.powermon.powersensor3")
log = logging.getLogger("archline.powermon")

#: how long stopping waits for the pending markers (host s): the reference host's waitForMarkers(500) ("ms")
MARKER_WAIT_S = 0.5
#: how long the start waits for the first stamps' cadence to be judged (host s; a slower stream is judged later)
CADENCE_WAIT_S = 1.0


class PowerSensor3(StreamDriver):
    label = "PowerSensor3"
    kind = "powersensor3"
    baudrate = 115200          # meaningless on CDC-ACM; pyserial wants one
    real_rate_hz = REAL_RATE_HZ

    config: tuple[SensorConfig, ...]
    mcu: str | None = None           #: the board's MCU from ``V`` (F411, F401, F407)
    checks_own_rate = True           #: the handshake checks the rate against the board's MCU (not note_rate)

    def default_config(self) -> tuple[SensorConfig, ...]:
        return default_config()

    def config_from_raw(self, raw: bytes) -> tuple[SensorConfig, ...]:
        """The 8 records; a wrong length or a configuration no measurement can use is a :class:`MeterError`."""
        if len(raw) != N_SENSORS * RECORD_BYTES:
            raise MeterError(f"the configuration is {len(raw)} bytes, not {N_SENSORS} records of {RECORD_BYTES}")
        config = tuple(SensorConfig.unpack(raw[i:i + RECORD_BYTES]) for i in range(0, len(raw), RECORD_BYTES))
        problem = config_problem(config)
        if problem:
            raise MeterError(f"impossible calibration: {problem}")
        return config

    def check_version(self) -> None:
        """Refuse firmware before 1.5.0 (another protocol), and a board whose MCU streams another rate than the one
        it is told (an F401 streams 17500 frames/s, not 20000: the frames would be placed on the wrong cadence)."""
        mcu, ver = parse_version(self.version)
        if ver is None:
            log.warning("%s%s: PowerSensor3 on %s answers V with %r, not <MCU>-<version>; its firmware is not "
                        "checked", WARNING, self.name, self.port, self.version)
            return
        if ver < MIN_FIRMWARE:
            raise DeviceError(f"PowerSensor3 on {self.port} runs firmware {'.'.join(map(str, ver))} ({self.version!r}):"
                              " firmware before 1.5.0 is not supported (25-byte config records, markers that "
                              "collapse); flash 1.6.1 or later")
        self.mcu = mcu
        board_hz = MCU_RATE_HZ.get(mcu or "")
        if board_hz is not None and not self.emulated and not math.isclose(board_hz, self.rate_hz, rel_tol=1e-6):
            raise MeterError(f"PowerSensor3 on {self.port} is an {mcu} board ({self.version}), which streams "
                             f"{board_hz:g} frames/s, but it is told {self.rate_hz:g}: set rate_hz = {board_hz:g} "
                             "in its [[meters]] entry (or --rate)")

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
        self.check_version()
        self.write(b"R")
        recs = []
        for i in range(N_SENSORS):
            recs.append(self.read_exact(RECORD_BYTES))
            self.write(b"s")
            del i
        if self.read_exact(1) != b"D":
            raise DeviceError(f"PowerSensor3 on {self.port}: config read did not end with D")
        self.config_raw = b"".join(recs)
        try:
            self.config = self.config_from_raw(self.config_raw)
        except MeterError as e:       # the device's own state: exit 4, as a device that cannot be used
            raise DeviceError(f"PowerSensor3 on {self.port}: {e}; configure it with psconfig") from None
        for p in range(N_SENSORS // 2):
            a, b = self.config[2 * p], self.config[2 * p + 1]
            if a.in_use != b.in_use:
                raise DeviceError(f"PowerSensor3 on {self.port}: pair {p} has only one sensor in use "
                                  "(configure both with psconfig)")
        self.decoder = self.new_decoder()

    def start(self) -> None:
        """Start, then wait (at most :data:`CADENCE_WAIT_S`) until the first stamps have shown the board's cadence,
        so that a board told another rate than its own is refused before anything is measured."""
        super().start()
        deadline = self.clock() + CADENCE_WAIT_S
        while not self.decoder._cadence_judged and self.error is None and self.clock() < deadline:
            time.sleep(0.005)
        if self.error is not None:
            raise self.error

    def start_stream(self) -> None:
        self.write(b"S")

    def stop(self) -> None:
        self.wait_for_markers(MARKER_WAIT_S)
        super().stop()
        clipped = int(getattr(self.decoder.stats, "samples_clipped", 0))
        if clipped:        # a saturated sensor reads its full scale whatever flows: the energy there is too low
            note = (f"{self.name}: {clipped} pair sample(s) with a sensor at the ADC's full scale (clipped: the "
                    "current or voltage was beyond the sensor's range, the energy there is too low); use a sensor "
                    "with a larger range, or check its vref with psconfig")
            log.warning("%s%s", WARNING, note)
            self.notes.append(note)

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
                note = (f"{self.name}: {pending} marker(s) not back after {timeout_s:.2g} s (the device lost their "
                        "frames, or ignores M); stopping anyway")
                log.warning("%s%s", WARNING, note)
                self.notes.append(note)      # the summary's warnings too (the stop comes after the window's)
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
