"""The PowerMon 2 as a recorder meter: the driver plus its channel map (a ``[[meters]]`` entry), on a serial port
or on the emulator's pty. The stream can be restarted between windows (:meth:`PowerMonMeter.segment`), so that
each measured point has its own samples, clock map and raw capture and no call ever walks a whole night."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from archline.powermon.emulator.power import PowerCallable, PowerSource
from archline.powermon.emulator.pty_server import PtyServer
from archline.powermon.emulator.registry import Faults
from archline.powermon.errors import DeviceError, MeterError
from archline.powermon.powermon2.driver import PowerMon2
from archline.powermon.powermon2.emulator import PowerMon2Core
from archline.powermon.powermon2.protocol import half_lsb_w
from archline.powermon.record.integrate import integrate_series
from archline.powermon.record.meters import ChannelResult, MeterRegion, _devices
from archline.powermon.spec import MeterSpec
from archline.powermon.stream.meter import DriverMeter

#: how long the first samples of a (re)started stream may take to arrive (host seconds)
FIRST_SAMPLES_TIMEOUT_S = 5.0


class PowerMonMeter(DriverMeter):
    """A PowerMon 2 (real, or emulated on a pty) with its channel map, as a recorder meter.

    ``factory(n)`` makes the driver of stream segment ``n`` (its own raw capture); the pty server of an emulated
    meter lives across segments.
    """

    kind = "sampling"

    def __init__(self, factory: Callable[[int], PowerMon2], spec: MeterSpec, server: PtyServer | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.factory = factory
        self.spec = spec
        self.server = server
        self.clock = clock
        self._n = 0
        self.driver = factory(0)
        self.name = self.driver.name
        self._r_lut = np.ones(16)
        for c, r in spec.r_sense().items():
            self._r_lut[c] = r
        self._fresh = False
        self._running = False

    @property
    def core(self) -> PowerMon2Core | None:
        return self.server.core if self.server is not None else None

    def _host_period_s(self) -> float:
        return 1.0 / (self.driver.rate_hz * self.driver.speed)

    def _start_driver(self) -> None:
        self.driver.open()
        self.driver.start()
        self._running = True
        self._fresh = True
        try:
            ok = self.driver.wait_until(self.clock(), timeout_s=FIRST_SAMPLES_TIMEOUT_S)
        except BaseException:                  # interrupted while starting: the stream and its temp capture go
            try:
                self._stop_driver()
            finally:
                self.driver.discard_capture()
            raise
        if not ok:
            err = self.driver.error or DeviceError(f"PowerMon 2 on {self.driver.port} streams no samples")
            self._stop_driver()
            self.driver.discard_capture()      # a stream that never started leaves no capture behind
            raise err

    def _stop_driver(self) -> None:
        if self._running:
            self._running = False
            try:
                self.driver.stop()
            finally:
                self.driver.close()

    def start(self) -> None:
        if self.server is not None and self.server._thread is None:
            self.server.start()
        try:
            self._start_driver()
        except BaseException:
            if self.server is not None:
                self.server.stop()
            raise

    def segment(self) -> None:
        """Restart the stream (fresh samples, clock map and raw capture) unless nothing was marked since."""
        if self._fresh and self._running:
            return
        self._stop_driver()
        self._n += 1
        self.driver = self.factory(self._n)
        self._start_driver()

    def stop(self) -> None:
        try:
            self._stop_driver()
        finally:
            if self.server is not None:
                self.server.stop()

    def mark(self, t_s: float) -> None:
        self._fresh = False

    def wait_until(self, t_s: float, timeout_s: float = 2.0) -> bool:
        """Samples up to a few periods past ``t_s`` are in (the window's edge is interpolated, not held)."""
        margin = 3 * self._host_period_s()
        return self.driver.wait_until(t_s + margin, timeout_s + margin)

    def samples(self) -> Any:
        return self.driver.samples()

    def live_power_w(self) -> float | None:
        """Total power of the newest sample of each channel (for a progress display)."""
        if not self._running:
            return None
        try:
            s = self.driver.samples()
        except Exception:
            return None
        if len(s) == 0:
            return None
        recent = s.between(s.t_s[-1] - 2 * self._host_period_s(), s.t_s[-1])
        last = {int(c): float(p) for c, p in zip(recent.channel.tolist(), recent.power_w.tolist(), strict=False)}
        return sum(last.values()) if last else None

    def info(self) -> dict[str, Any]:
        meta = super().info()
        meta["segment"] = self._n
        return meta

    def region(self, t0_s: float, t1_s: float) -> MeterRegion:
        # integrate on the device's timeline (emulated seconds when the emulator runs faster than real time)
        cm = self.driver.clock_map()
        d0, d1 = cm.to_device(t0_s), cm.to_device(t1_s)
        period = 1.0 / self.driver.rate_hz
        warnings: list[str] = []
        if d0 < 0:    # the stream did not exist before device time 0: nothing there to measure, or to lose
            if d0 < -period:
                warnings.append(f"the window starts {-d0:.3g} s before the meter's stream; measured from its start")
            d0 = min(0.0, d1)
        s = self.driver.samples(d0 - 64 * period, d1 + 64 * period)
        t_dev_all = s.meta["t_dev_s"]
        valid = s.valid if s.valid is not None else np.ones(len(s), bool)
        # the cadence: sampling events e (device time e x period) inside the window, one record per channel each
        ev_lo, ev_hi = max(math.ceil(d0 / period - 1e-9), 0), math.floor(d1 / period + 1e-9)
        n_events = max(ev_hi - ev_lo + 1, 0)
        ev_all = np.rint(t_dev_all / period).astype(np.int64)
        chans: dict[str, ChannelResult] = {}
        gaps = lost = 0
        lost_s = 0.0
        n_in = 0
        for c in self.driver.channels:
            got = int(np.count_nonzero((s.channel == c) & (ev_all >= ev_lo) & (ev_all <= ev_hi)))
            lost_c = max(n_events - got, 0)
            lost += lost_c
            lost_s = max(lost_s, lost_c * period)      # the longest a channel of this meter saw nothing
            sel = np.flatnonzero((s.channel == c) & valid)
            t, p = t_dev_all[sel], s.power_w[sel]
            if t.size == 0:
                warnings.append(f"channel {c}: no samples")
                gaps = max(gaps, int(lost_c > 0))
                continue
            r = self._r_lut[c]
            # half an ADC step of V and of I, propagated to power
            half_lsb = half_lsb_w(s.current_a[sel], s.voltage_v[sel], r)
            ce = integrate_series(t, p, d0, d1, half_lsb, period)
            rail = self.spec.rail(c)
            chans[str(c)] = ChannelResult(ce.energy_j, ce.energy_err_j, ce.mean_power_w, ce.n_samples, rail)
            gaps = max(gaps, ce.gaps, int(lost_c > 0))
            n_in += ce.n_samples
            if t[0] > d0 + period or t[-1] < d1 - period:
                warnings.append(f"channel {c}: samples do not cover the region")
        dur = d1 - d0
        total = sum(c.energy_j for c in chans.values())
        err = sum(c.energy_err_j for c in chans.values())
        ovf = 0
        ovf_event = self.driver.decoder.first_overflow_event
        if ovf_event is not None:
            t_ovf = ovf_event * self.driver.period_ticks / 1024
            ovf = int(d0 - period <= t_ovf <= d1 + period)
        inside = s.take(np.flatnonzero((t_dev_all >= d0 - period) & (t_dev_all <= d1 + period)))
        if self.driver.error is not None:
            warnings.append(str(self.driver.error))
        expected = n_events * len(self.driver.channels)
        if lost:
            warnings.append(f"lost {lost} of {expected} samples ({lost_s:.3g} s); the energy bound covers them")
        return MeterRegion(self.name, self.kind, self.emulated, t0_s, t1_s, chans,
                           _devices(chans, self.spec.devices(), dur), total, err,
                           total / dur if dur > 0 else float("nan"), n_in, self.driver.rate_hz, ovf, gaps, lost,
                           inside, warnings, device_time_s=dur, expected_samples=expected, lost_s=lost_s,
                           device_window_s=(d0, d1))

    @property
    def raw_path(self) -> Path | None:
        """The raw capture of the current stream segment (None: not kept)."""
        return self.driver.raw_path


def _raw_path(raw_dir: str | Path | None, raw_path: str | Path | None, n: int) -> Path | None:
    if raw_dir is not None:
        return Path(raw_dir) / f"powermon-{n:04d}.raw"
    if raw_path is None:
        return None
    p = Path(raw_path)
    return p if n == 0 else p.with_name(f"{p.name.split('.')[0]}-{n:04d}.raw.bin")


def open_powermon(spec: MeterSpec, *, raw_dir: str | Path | None = None, raw_path: str | Path | None = None,
                  name: str | None = None, **driver_kw: Any) -> PowerMonMeter:
    """A PowerMon 2 on the port of ``spec``; raw captures go to ``raw_dir/powermon-NNNN.raw`` (or ``raw_path``)."""
    if spec.kind != "powermon2":
        raise MeterError(f"meter '{spec.name}' is a {spec.kind} meter, not a PowerMon 2")
    port = spec.port
    if not port:
        raise MeterError(f"meter '{spec.name}' has no port (e.g. port = \"/dev/ttyUSB0\")")

    def factory(n: int) -> PowerMon2:
        return PowerMon2(port, spec.r_sense(), rate_hz=spec.rate_hz, raw_path=_raw_path(raw_dir, raw_path, n),
                         name=name or spec.name, **driver_kw)

    return PowerMonMeter(factory, spec)


def emulated_powermon(spec: MeterSpec, power: PowerSource | PowerCallable | None = None, speed: float = 1.0,
                      faults: Faults | None = None, seed: int = 0, name: str | None = None,
                      raw_dir: str | Path | None = None, raw_path: str | Path | None = None,
                      **driver_kw: Any) -> PowerMonMeter:
    """A PowerMon 2 emulated on a real pty, playing ``power`` (callable t_s -> per-channel (V, A), a Script, or
    a source with ``sample``; a source with ``bind(core)`` is handed the device core, whose ``host_time_s`` maps
    emulated time onto the host clock), driven by the real driver. Labelled emulated. ``speed`` compresses time."""
    core = PowerMon2Core(power, faults, speed=speed, seed=seed, r_sense_ohm=spec.r_sense())
    bind = getattr(power, "bind", None)
    if callable(bind):
        bind(core)
    server = PtyServer(core)

    def factory(n: int) -> PowerMon2:
        return PowerMon2(server.port, spec.r_sense(), rate_hz=spec.rate_hz, raw_path=_raw_path(raw_dir, raw_path, n),
                         name=name or f"{spec.name}-emulated", speed=speed, emulated=True, **driver_kw)

    return PowerMonMeter(factory, spec, server)


def open_from_spec(spec: MeterSpec, *, raw_dir: str | Path | None = None, **kw: Any) -> PowerMonMeter:
    """The kind dispatch's entry (:func:`archline.powermon.spec.open_meter`)."""
    return open_powermon(spec, raw_dir=raw_dir, **kw)


def emulate_from_spec(spec: MeterSpec, power: PowerSource | PowerCallable | None, *, speed: float = 1.0,
                      seed: int = 0, raw_dir: str | Path | None = None, faults: Faults | None = None,
                      **kw: Any) -> PowerMonMeter:
    """The kind dispatch's entry (:func:`archline.powermon.spec.emulate_meter`)."""
    return emulated_powermon(spec, power, speed=speed, faults=faults, seed=seed, raw_dir=raw_dir, **kw)
