"""A byte-stream meter (PowerSensor3, PMD-USB) as a recorder meter: frames on a fixed cadence, so a window's lost
samples are the cadence's frames that never arrived (or were discarded), as for the PowerMon 2."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from archline.formats.meters.samples import Samples
from archline.powermon.emulator.power import PowerCallable, PowerSource
from archline.powermon.emulator.pty_server import PtyServer
from archline.powermon.errors import DeviceError, MeterError
from archline.powermon.record.clock import ClockMap
from archline.powermon.record.integrate import integrate_series
from archline.powermon.record.meters import ChannelResult, MeterRegion, _devices
from archline.powermon.spec import MeterSpec
from archline.powermon.stream.core import StreamFaults
from archline.powermon.stream.driver import StreamDriver
from archline.powermon.stream.rate_note import note_rate, say_rate_warning
from archline.powermon.stream.url_rate import MAX_EMULATED_FRAMES_PER_S as MAX_EMULATED_FRAMES_PER_S  # re-exported
from archline.powermon.stream.url_rate import StreamKind as StreamKind
from archline.powermon.stream.url_rate import check_emulated_rate, rate_of, spec_port
from archline.powermon.stream.url_rate import url_rate_hz as url_rate_hz

FIRST_FRAMES_TIMEOUT_S = 5.0


def frames_to_samples(k: np.ndarray, v: np.ndarray, a: np.ndarray, ids: list[int], rate_hz: float, cm: Any,
                      name: str, emulated: bool) -> Samples:
    """Frames (index on the cadence, volts and amps per pair) as samples of channels ``ids``, on clock map ``cm``."""
    n = len(k)
    t = np.repeat(np.asarray(cm.to_host(k / rate_hz)), len(ids))
    ch = np.tile(np.array(ids, np.int16), n)
    vv, aa = v[:, ids].reshape(-1), a[:, ids].reshape(-1)
    return Samples(t, ch, vv, aa, vv * aa, np.ones(len(t), bool), name, emulated,
                   meta={"t_dev_s": np.repeat(k / rate_hz, len(ids))})


class DriverMeter:
    """What a serial meter (PowerMon 2, PowerSensor3, PMD-USB) as a recorder meter shares: a ``driver`` with its
    ``[[meters]]`` ``spec``, the pty ``server`` of an emulated one, and the driver's clock map (``clock_map``)."""

    driver: Any
    spec: MeterSpec
    server: PtyServer | None

    def clock_map(self) -> Any:
        return self.driver.clock_map()

    @property
    def emulated(self) -> bool:
        return bool(self.driver.emulated)

    @property
    def speed(self) -> float:
        """Device seconds per host second (an emulator may run faster than real time)."""
        return float(self.driver.speed)

    @property
    def update_hz(self) -> float:
        """Samples (frames) per device second per channel."""
        return float(self.driver.rate_hz)

    @property
    def error(self) -> MeterError | None:
        return self.driver.error  # type: ignore[no-any-return]

    @property
    def core(self) -> Any:
        return self.server.core if self.server is not None else None

    def info(self) -> dict[str, Any]:
        meta: dict[str, Any] = self.driver.meta()
        meta["rails"] = {str(c.id): c.rail for c in self.spec.channels}
        meta["devices"] = self.spec.devices()
        return meta

    def host_time_s(self, t_dev_s: float) -> float:
        """Host time of a device time of the current stream (the clock map the samples are written with)."""
        return float(self.clock_map().to_host(t_dev_s))

    def stream_start_s(self) -> float:
        """Host time of the stream's first sample (device time 0), less half a period, as the clock map now has it
        (its offset is the least arrival lag seen, so it moves earlier as data arrives: ask late)."""
        return float(self.clock_map().to_host(-0.5 / self.driver.rate_hz))


class StreamMeter(DriverMeter):
    """A stream driver with its ``[[meters]]`` channel map (channel id = the meter's pair / rail number)."""

    kind = "sampling"

    def __init__(self, driver: StreamDriver, spec: MeterSpec, server: PtyServer | None = None,
                 marker_byte: bytes | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.driver = driver
        self.spec = spec
        self.server = server
        self.name = driver.name
        self.marker_byte = marker_byte
        self.use_markers = marker_byte is not None
        self.clock = clock
        self._running = False

    @property
    def clock_err_s(self) -> float | None:
        """How well the clock is aligned with the host's: the driver's bound where it has a lower bound of the offset
        (markers that came back, or a stream that starts on command), else None (the monitor then takes half a
        sample period)."""
        self.driver.clock_map(self.use_markers)
        return self.driver.clock_bound_s

    def start(self) -> None:
        if self.server is not None and self.server._thread is None:
            self.server.start()
        try:
            self.driver.open()
            self.driver.start()
            self._running = True
            if not self.driver.wait_until(self.clock(), FIRST_FRAMES_TIMEOUT_S):
                raise self.driver.error or DeviceError(f"{self.driver.label} on {self.driver.port} streams no "
                                                       "frames")
            say_rate_warning(self.driver)
        except BaseException:
            if self.driver.capture is not None:   # a stream that never started leaves no capture (nor replaces one)
                self.driver.capture.abandon()
            self.stop()
            raise

    def stop(self) -> None:
        try:
            if self._running:
                self._running = False
                try:
                    self.driver.stop()
                finally:
                    self.driver.close()
        finally:
            if self.server is not None:
                self.server.stop()

    def mark(self, t_s: float) -> None:
        """A window mark: an in-band marker where the meter has them (the clock is then aligned to them)."""
        if self.marker_byte is not None and self._running and self.driver.error is None:
            self.driver.send_marker(t_s, self.marker_byte)

    def wait_until(self, t_s: float, timeout_s: float = 2.0) -> bool:
        margin = 3.0 / (self.driver.rate_hz * self.driver.speed)
        return self.driver.wait_until(t_s + margin, timeout_s + margin)

    def clock_map(self) -> Any:
        return self.driver.clock_map(self.use_markers)

    def samples(self) -> Samples:
        k, v, a = self.driver.frames()
        return self._samples(k, v, a)

    def _samples(self, k: np.ndarray, v: np.ndarray, a: np.ndarray) -> Samples:
        return frames_to_samples(k, v, a, [c.id for c in self.spec.channels], self.driver.rate_hz,
                                 self.clock_map(), self.name, self.emulated)

    @property
    def raw_path(self) -> Path | None:
        """The raw capture of the stream (None: not kept)."""
        return None if self.driver.capture is None else self.driver.capture.path

    def live_power_w(self) -> float | None:
        k, v, a = self.driver.frames(max(self.driver.latest_k(), 0), None)
        if len(k) == 0:
            return None
        ids = [c.id for c in self.spec.channels]
        return float(np.sum(v[-1, ids] * a[-1, ids]))

    def region(self, t0_s: float, t1_s: float) -> MeterRegion:
        cm = self.clock_map()
        rate = self.driver.rate_hz
        period = 1.0 / rate
        d0, d1 = cm.to_device(t0_s), cm.to_device(t1_s)
        warnings: list[str] = []
        if d0 < 0:
            # within the clock map's own bound of the start is the start: a start placed by the map before the end
            # mark's marker came back may sit that much early once the marker moves it (97 us seen at 20 kHz)
            if d0 < -period - (self.driver.clock_bound_s or 0.0):
                warnings.append(f"the window starts {-d0:.3g} s before the meter's stream; measured from its start")
            d0 = min(0.0, d1)
        k, v, a = self.driver.frames(d0 * rate - 64, d1 * rate + 64)
        t_dev = k * period
        ev_lo, ev_hi = max(math.ceil(d0 * rate - 1e-9), 0), math.floor(d1 * rate + 1e-9)
        n_events = max(ev_hi - ev_lo + 1, 0)
        got = int(np.count_nonzero((k >= ev_lo) & (k <= ev_hi)))
        lost_frames = max(n_events - got, 0)
        # the longest stretch without a frame inside the window
        inside = np.concatenate([[ev_lo - 1], k[(k >= ev_lo) & (k <= ev_hi)], [ev_hi + 1]])
        lost_s = float(max(int(np.max(np.diff(inside))) - 1, 0) * period) if n_events else 0.0
        chans: dict[str, ChannelResult] = {}
        gaps = int(lost_frames > 0)
        n_in = 0
        for c in self.spec.channels:
            p = v[:, c.id] * a[:, c.id]
            if t_dev.size == 0:
                warnings.append(f"channel {c.id}: no samples")
                continue
            ce = integrate_series(t_dev, p, d0, d1, self.driver.half_lsb_w(v[:, c.id], a[:, c.id], c.id), period)
            chans[str(c.id)] = ChannelResult(ce.energy_j, ce.energy_err_j, ce.mean_power_w, ce.n_samples, c.rail)
            gaps = max(gaps, ce.gaps)
            n_in += ce.n_samples
            if t_dev[0] > d0 + period or t_dev[-1] < d1 - period:
                warnings.append(f"channel {c.id}: samples do not cover the region")
        dur = d1 - d0
        total = sum(c.energy_j for c in chans.values())
        err = sum(c.energy_err_j for c in chans.values())
        if self.driver.error is not None:
            warnings.append(str(self.driver.error))
        n_ch = len(self.spec.channels)
        lost = lost_frames * n_ch
        expected = n_events * n_ch
        if lost:
            warnings.append(f"lost {lost} of {expected} samples ({lost_s:.3g} s); the energy bound covers them")
        sel = np.flatnonzero((t_dev >= d0 - period) & (t_dev <= d1 + period))
        return MeterRegion(self.name, self.kind, self.emulated, t0_s, t1_s, chans,
                           _devices(chans, self.spec.devices(), dur), total, err,
                           total / dur if dur > 0 else float("nan"), n_in, rate, 0, gaps, lost,
                           self._samples(k[sel], v[sel], a[sel]), warnings, device_time_s=dur,
                           expected_samples=expected, lost_s=lost_s, device_window_s=(d0, d1))


def open_stream(spec: MeterSpec, driver: type[StreamDriver], scheme: str, default_hz: float, example: str, *,
                name: str | None = None, marker_byte: bytes | None = None, capture: Any = None,
                **kw: Any) -> StreamMeter:
    """A stream meter on ``spec.port`` (a ``scheme://`` URL opens the emulator in-process)."""
    if spec.kind != driver.kind:
        raise MeterError(f"meter '{spec.name}' is a {spec.kind} meter, not a {driver.label}")
    port = spec_port(spec, scheme, default_hz, example)
    if port.startswith(f"{scheme}://"):
        check_emulated_rate(port, scheme, rate_of(spec, scheme, default_hz), driver)
    drv = driver(port, rate_of(spec, scheme, default_hz), name=name or spec.name,
                 emulated=port.startswith(f"{scheme}://"), capture=capture, **kw)
    note_rate(drv)
    return StreamMeter(drv, spec, marker_byte=marker_byte)


def emulate_stream(spec: MeterSpec, driver: type[StreamDriver], core: Callable[..., Any], rate_hz: float,
                   power: PowerSource | PowerCallable | None, *, speed: float = 1.0, seed: int = 0,
                   faults: StreamFaults | None = None, name: str | None = None, marker_byte: bytes | None = None,
                   capture: Any = None, **kw: Any) -> StreamMeter:
    """A stream meter emulated on a real pty playing ``power``, driven by the real driver; labelled emulated.
    ``core(power, rate_hz, faults, speed=, seed=)`` builds the protocol's emulator; ``speed`` compresses time."""
    dev = core(power, rate_hz, faults, speed=speed, seed=seed)
    bind = getattr(power, "bind", None)
    if callable(bind):
        bind(dev)
    server = PtyServer(dev)
    drv = driver(server.port, rate_hz, name=name or f"{spec.name}-emulated", speed=speed, emulated=True,
                 capture=capture, **kw)
    note_rate(drv)
    return StreamMeter(drv, spec, server, marker_byte=marker_byte)


def decode_capture(driver: type[StreamDriver], data: bytes, side: dict[str, Any],
                   channels: Sequence[int] | None = None) -> tuple[Samples, dict[str, int]]:
    """The samples of a raw capture (its bytes and its sidecar), decoded as the live reader decoded them and put
    on the clock the live samples were written with, and the decoder's counts; ``channels``: the pair ids to keep
    (default all)."""
    rate = float(side["rate_hz"])
    drv = driver(str(side.get("port") or ""), rate, name=str(side.get("meter") or driver.kind),
                 speed=float(side.get("speed") or 1.0), emulated=bool(side.get("emulated")))
    try:
        config_raw = bytes.fromhex(str(side.get("config_hex") or ""))
    except ValueError:
        raise MeterError("the capture's sidecar key config_hex is not hex bytes; it was edited or damaged: "
                         "restore it from the recording") from None
    try:
        drv.replay(data, config_raw, [(int(lo), int(hi), float(h)) for lo, hi, h in side.get("hints") or []])
    except MeterError as e:
        raise MeterError(f"the capture's sidecar key config_hex: {e}; it was edited or damaged (or the device was "
                         "never configured: configure it with psconfig and record again)") from None
    k, v, a = drv.frames()
    clock = side.get("clock") or {}
    cm = ClockMap(float(clock.get("offset_s", 0.0)), float(clock.get("seconds_per_device_s", 1.0 / drv.speed)),
                  float(clock.get("drift_ppm", 0.0)))
    ids = list(channels) if channels else list(range(drv.n_pairs))
    bad = [c for c in ids if not 0 <= c < drv.n_pairs]
    if bad:
        raise MeterError(f"a {driver.label} has channels 0..{drv.n_pairs - 1}; --channels names {bad[0]}")
    samples = frames_to_samples(k, v, a, ids, rate, cm, drv.name, drv.emulated)
    # what the decode needs to say besides the samples: the device timeline (an emulator's speed) for integrate,
    # and the bytes left undecoded at the end (a capture cut mid-frame)
    samples.meta.update({"speed": drv.speed, "rate_hz": rate, "bytes": len(data),
                         "bytes_trailing": len(drv.decoder._tail), "resolution": drv.resolution()})
    return samples, drv.decoder.stats.as_dict()


def decode_capture_to_file(raw: str | Path, out: str | Path, kind: str, channels: Sequence[int] | None = None,
                           rate_hz: float | None = None, r_sense_ohm: float | None = None, *,
                           partial: bool = False) -> tuple[int, bool, dict[str, Any]]:
    """``archline meter decode`` of a byte-stream meter's capture: (samples written, emulated, meta)."""
    import importlib

    from archline.common.outputs import show
    from archline.formats.meters.samples_file import write_samples
    from archline.powermon.spec import METER_MODULES

    if r_sense_ohm is not None:     # Hall sensors or the device's own scale: no shunt of ours to set
        raise MeterError(f"--r-sense {r_sense_ohm:g}: {show(raw)} is a {kind} capture, whose currents come from the "
                         "device's own calibration (in its sidecar), not from a shunt (leave out --rate and "
                         "--r-sense: its sidecar says both)")
    mod = importlib.import_module(METER_MODULES[kind])
    samples, stats = mod.decode_capture(raw, channels)
    recorded = float(samples.meta.get("rate_hz", 0.0))
    if rate_hz is not None and not math.isclose(rate_hz, recorded, rel_tol=1e-9):
        raise MeterError(f"--rate {rate_hz:g} disagrees with the capture's sidecar ({show(str(raw) + '.json')}), "
                         f"which says the {kind} streamed {recorded:g} frames/s: the frames would be put on the "
                         "wrong times; leave --rate out")
    stats = {**stats, "bytes_trailing": int(samples.meta.get("bytes_trailing", 0))}
    if stats.get("frames", 0) == 0:
        raise MeterError(f"not a {kind} capture: no plausible sample records found in {show(raw)} "
                         f"({samples.meta.get('bytes', 0)} bytes, {stats.get('bytes_skipped', 0)} skipped, "
                         f"{stats['bytes_trailing']} trailing)")
    warnings: list[str] = []
    trailing = int(stats.get("bytes_trailing", 0))
    if trailing % mod.FRAME_BYTES:      # PMD-USB keeps its last whole frame until a successor vouches for it
        if not partial:
            raise MeterError(f"capture {show(raw)} ends mid-frame ({trailing % mod.FRAME_BYTES} byte(s) of a "
                             f"{mod.FRAME_BYTES}-byte frame): it was cut short; pass --partial to decode what "
                             "is there")
        warnings.append(f"capture {show(raw)} ends mid-frame: {trailing} trailing byte(s) not decoded")
    if stats.get("bytes_skipped") or stats.get("frames_discarded") or stats.get("frames_missing"):
        warnings.append(f"{stats.get('bytes_skipped', 0)} byte(s) skipped, {stats.get('frames_discarded', 0)} "
                        f"frame(s) discarded, {stats.get('frames_missing', 0)} frame(s) missing on the cadence")
    meta = {"source": show(raw), "type": kind, "stats": stats, "warnings": warnings,
            "resolution": samples.meta.get("resolution"),
            "speed": float(samples.meta.get("speed", 1.0)), "rate_hz": float(samples.meta.get("rate_hz", 0.0))}
    write_samples(samples, out, meta)
    return len(samples), samples.emulated, meta
