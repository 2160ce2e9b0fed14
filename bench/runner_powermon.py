"""The runner's view of ``archline.powermon``: the real PowerMon 2 driver, on a serial port or on the emulator's
pseudo-terminal, with regions integrated by ``powermon.integrate`` (trapezoid, interpolated edges, bound).

For ``--emulate`` the emulated PowerMon 2 (``powermon.emulator``) is served on a real pty and plays the
emulated device's power (:class:`ModelPowerSource`); the driver opens the pty's slave end like
``/dev/ttyUSB0``. Time runs ``speed`` times faster on the emulated device: regions are marked on the host clock
and their durations and energies are converted back to device seconds and joules (x ``speed``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from archline.bench.profile_sections import ChannelSpec, MeterSpec
from archline.bench.runner_meters import RegionEnergy
from archline.powermon.emulator.device import PowerMon2Core
from archline.powermon.emulator.pty_server import PtyServer
from archline.powermon.errors import MeterError
from archline.powermon.powermon2.driver import PowerMon2
from archline.powermon.powermon2.protocol import DEFAULT_R_SENSE_OHM
from archline.powermon.record.integrate import integrate_samples
from archline.powermon.record.samples import Samples

F64 = npt.NDArray[np.float64]
#: how long past a region's end the runner waits for its samples (host seconds, on top of a few periods)
WAIT_TIMEOUT_S = 5.0


class ModelPowerSource:
    """A powermon emulator power source playing an emulated device: emulated time -> host time -> schedule ->
    per-channel (volts, amps) by the rail shares. Vectorised (the emulator asks for whole batches)."""

    def __init__(self, device: Any, channels: Sequence[ChannelSpec], r_sense_core_ohm: float = DEFAULT_R_SENSE_OHM,
                 seed: int = 0) -> None:
        self.device = device
        self.by_id = {c.id: c for c in channels}
        self.core: PowerMon2Core | None = None
        self.r_core = r_sense_core_ohm
        self.rng = np.random.default_rng(seed)

    def sample(self, t_s: F64, channels: Sequence[int]) -> tuple[F64, F64]:
        assert self.core is not None
        host = self.core._t0 + np.asarray(t_s, dtype=np.float64) / self.core.speed
        p = self.device.schedule.power_array(host)
        if self.device.noise_rel > 0:
            p = p * (1.0 + self.device.noise_rel * self.rng.standard_normal(p.shape))
        volts = np.zeros((len(p), len(channels)))
        amps = np.zeros((len(p), len(channels)))
        for j, c in enumerate(channels):
            spec = self.by_id.get(int(c))
            if spec is None:
                continue
            volts[:, j] = spec.nominal_v
            # the emulator encodes with one shunt; scale so the driver's per-channel shunt decodes the truth
            amps[:, j] = p * (spec.share or 0.0) / spec.nominal_v * (spec.r_sense_ohm / self.r_core)
        return volts, amps


class DriverMeter:
    """Regions over a running :class:`PowerMon2`: device seconds and joules per region, per device too.

    The stream is restarted for every point (:meth:`start_point`): each point's samples, clock map and raw
    capture stand alone, and no call ever goes through the whole night's records.
    """

    def __init__(self, factory: Callable[[int], PowerMon2], spec: MeterSpec, *, speed: float = 1.0,
                 emulated: bool = False, server: PtyServer | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.factory = factory
        self.spec = spec
        self.speed = speed
        self.emulated = emulated
        self.server = server
        self.clock = clock
        self.pm: PowerMon2 | None = None
        self._fresh = False
        self._n = 0
        self.name = f"{spec.name}:powermon2" + ("-emulated" if emulated else "")
        self.sample_hz: float | None = spec.rate_hz
        self.reason = "PowerMon 2 " + ("(emulated on a pty), " if emulated else "") + "channels " + ", ".join(
            f"{c.id}={c.rail}" for c in spec.channels)
        self._open: dict[str, float] = {}
        self._dev_of = {str(c.id): c.device for c in spec.channels}
        self.start_point()

    def start_point(self) -> None:
        """(Re)start streaming: a fresh driver, handshake, stream, first samples in hand."""
        if self.pm is not None and self._fresh:
            return
        self.end_point()
        pm = self.factory(self._n)
        self._n += 1
        pm.open()
        pm.start()
        self.pm = pm
        self._fresh = True
        if not pm.wait_until(self.clock(), timeout_s=WAIT_TIMEOUT_S):
            err = pm.error or MeterError(f"PowerMon 2 on {pm.port} streams no samples")
            self.end_point()
            raise err

    def end_point(self) -> None:
        if self.pm is not None:
            pm, self.pm = self.pm, None
            try:
                pm.stop()
            finally:
                pm.close()

    def _pm(self) -> PowerMon2:
        if self.pm is None:
            self.start_point()
        assert self.pm is not None
        return self.pm

    def _host_period_s(self) -> float:
        return 1.0 / (self.spec.rate_hz * self.speed)

    def begin(self, name: str) -> None:
        if name in self._open:
            raise ValueError(f"region '{name}' is already open")
        self._pm()
        self._fresh = False
        self._open[name] = self.clock()

    def _samples_until(self, h1: float) -> Samples:
        pm = self._pm()
        if pm.error is not None:
            raise pm.error
        margin = 3 * self._host_period_s()
        if not pm.wait_until(h1 + margin, timeout_s=WAIT_TIMEOUT_S + margin):
            if pm.error is not None:
                raise pm.error
            raise MeterError(f"PowerMon 2 on {pm.port}: no samples arrived for the end of a region "
                             f"(waited {WAIT_TIMEOUT_S:g} s)")
        return pm.samples()

    def end(self, name: str, t0_host_s: float | None = None, t1_host_s: float | None = None) -> RegionEnergy:
        h0 = self._open.pop(name)
        h1 = self.clock()
        if t0_host_s is not None and t1_host_s is not None:
            h0, h1 = t0_host_s, t1_host_s
        s = self._samples_until(h1)
        pad = 4 * self._host_period_s()
        s = s.between(h0 - pad, h1 + pad)
        if len(s) == 0:
            raise MeterError(f"PowerMon 2 on {self._pm().port}: no samples inside region '{name}'")
        integ = integrate_samples(s, h0, h1, period_s=self._host_period_s())
        per_dev: dict[str, float] = {}
        for ch, ce in integ.channels.items():
            d = self._dev_of.get(ch, "device")
            per_dev[d] = per_dev.get(d, 0.0) + ce.energy_j * self.speed
        n = min((ce.n_samples for ce in integ.channels.values()), default=0)
        return RegionEnergy(duration_s=(h1 - h0) * self.speed, energy_j=integ.total_energy_j * self.speed,
                            energy_err_j=integ.energy_err_j * self.speed, n_samples=n, per_device_j=per_dev)

    def live_power_w(self) -> float | None:
        if self.pm is None:
            return None
        try:
            s = self.pm.samples()
        except Exception:
            return None
        if len(s) == 0:
            return None
        last = s.t_s[-1]
        recent = s.between(last - 2 * self._host_period_s(), last)
        by_ch: dict[int, float] = {}
        for c, p in zip(recent.channel.tolist(), recent.power_w.tolist(), strict=False):
            by_ch[int(c)] = float(p)
        return sum(by_ch.values()) if by_ch else None

    def save_trace(self, path: Path, t0_host_s: float, t1_host_s: float) -> Path | None:
        from archline.powermon.record.traces import write_samples

        s = self._pm().samples().between(t0_host_s, t1_host_s)
        if len(s) == 0:
            return None
        t_dev = (s.t_s - t0_host_s) * self.speed
        out = Samples(t_dev, s.channel, s.voltage_v, s.current_a, s.power_w, s.valid, s.meter, s.emulated,
                      "device_s_from_region_start", dict(s.meta))
        return write_samples(out, path, {"speed": self.speed, "t0_host_s": t0_host_s, "t1_host_s": t1_host_s,
                                         "rails": {str(c.id): c.rail for c in self.spec.channels}})

    def close(self) -> None:
        try:
            self.end_point()
        finally:
            if self.server is not None:
                self.server.stop()


def open_emulated_powermon(device: Any, spec: MeterSpec, *, seed: int = 0,
                           raw_dir: Path | None = None) -> tuple[DriverMeter, Callable[[], None]]:
    """Serve the emulated PowerMon 2 on a pty playing ``device``'s power; open it with the real driver."""
    source = ModelPowerSource(device, spec.channels, seed=seed)
    core = PowerMon2Core(power=source, speed=device.time_compression, seed=seed)
    source.core = core
    server = PtyServer(core).start()

    def factory(n: int) -> PowerMon2:
        return PowerMon2(server.port, {c.id: c.r_sense_ohm for c in spec.channels}, rate_hz=spec.rate_hz,
                         raw_path=None if raw_dir is None else raw_dir / f"powermon-{n:04d}.raw",
                         name=spec.name, speed=device.time_compression, emulated=True, stall_error_s=30.0)

    try:
        meter = DriverMeter(factory, spec, speed=device.time_compression, emulated=True, server=server)
    except BaseException:
        server.stop()
        raise
    return meter, meter.close


class CounterMeter:
    """A powermon counter meter (RAPL, NVML) seen by the runner: regions read at the kernel's own marks."""

    emulated = False

    def __init__(self, meter: Any, spec: MeterSpec, sample_hz: float = 1000.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.meter = meter
        self.spec = spec
        self.name = f"{spec.name}:{spec.kind}"
        self.sample_hz: float | None = sample_hz       # counter update rate (RAPL ~1 kHz): sizes the regions
        self.reason = f"{spec.kind} counter ({', '.join(spec.zones) or 'all zones'})"
        self.clock = clock
        self._open: dict[str, float] = {}
        meter.start()

    def begin(self, name: str) -> None:
        t = self.clock()
        self.meter.mark(t)
        self._open[name] = t

    def end(self, name: str, t0_host_s: float | None = None, t1_host_s: float | None = None) -> RegionEnergy:
        t0 = self._open.pop(name)
        t1 = self.clock()
        self.meter.mark(t1)
        self.meter.wait_until(t1, WAIT_TIMEOUT_S)
        r = self.meter.region(t0, t1)
        return RegionEnergy(duration_s=t1 - t0, energy_j=r.energy_j, energy_err_j=r.energy_err_j,
                            n_samples=r.n_samples, per_device_j={k: d.energy_j for k, d in r.devices.items()})

    def live_power_w(self) -> float | None:
        return None

    def save_trace(self, path: Path, t0_host_s: float, t1_host_s: float) -> Path | None:
        return None

    def close(self) -> None:
        self.meter.stop()


def open_real_meter(spec: MeterSpec, raw_dir: Path | None = None) -> tuple[Any, Callable[[], None]]:
    """A meter from a profile's [[meters]] entry on real hardware: PowerMon 2 through the driver, RAPL and NVML
    through powermon's counter meters."""
    if spec.kind == "rapl":
        import os

        from archline.powermon.counters.rapl import RaplMeter

        root = os.environ.get("ARCHLINE_POWERCAP_ROOT", "/sys/class/powercap")
        cm = CounterMeter(RaplMeter(list(spec.zones) or None, root=root, name=spec.name), spec)
        return cm, cm.close
    if spec.kind == "nvml":
        from archline.powermon.counters.nvml import NvmlMeter

        cm = CounterMeter(NvmlMeter(spec.index, name=spec.name), spec, sample_hz=50.0)
        return cm, cm.close
    if not spec.port:
        raise MeterError(f"meter '{spec.name}' has no 'port' in the profile")
    port = spec.port

    def factory(n: int) -> PowerMon2:
        return PowerMon2(port, {c.id: c.r_sense_ohm for c in spec.channels}, rate_hz=spec.rate_hz,
                         raw_path=None if raw_dir is None else raw_dir / f"powermon-{n:04d}.raw", name=spec.name)

    meter = DriverMeter(factory, spec)
    return meter, meter.close
