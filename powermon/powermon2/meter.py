"""The PowerMon 2 as a recorder meter: the driver plus its rail map, on a serial port or on the emulator's pty."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from archline.powermon.emulator.device import Faults, PowerMon2Core
from archline.powermon.emulator.power import PowerCallable, PowerSource
from archline.powermon.emulator.pty_server import PtyServer
from archline.powermon.errors import MeterError
from archline.powermon.powermon2.driver import PowerMon2
from archline.powermon.powermon2.protocol import SENSE_FULL_SCALE_V, VOLTAGE_FULL_SCALE_V
from archline.powermon.rails import RailMap
from archline.powermon.record.integrate import integrate_series
from archline.powermon.record.meters import ChannelResult, MeterRegion, _devices
from archline.powermon.record.samples import Samples


class PowerMonMeter:
    """A PowerMon 2 (real, or emulated on a pty) with its rail map, as a recorder meter."""

    kind = "sampling"

    def __init__(self, driver: PowerMon2, rails: RailMap, server: PtyServer | None = None) -> None:
        self.driver = driver
        self.rails = rails
        self.server = server
        self.name = driver.name
        self._r_lut = np.array([rails.channels[c].r_sense_ohm if c in rails.channels else 1.0 for c in range(16)])

    @property
    def emulated(self) -> bool:
        return self.driver.emulated

    @property
    def core(self) -> PowerMon2Core | None:
        return self.server.core if self.server is not None else None

    def start(self) -> None:
        if self.server is not None and self.server._thread is None:
            self.server.start()
        self.driver.open()
        self.driver.start()

    def stop(self) -> None:
        try:
            self.driver.stop()
        finally:
            if self.server is not None:
                self.server.stop()

    def mark(self, t_s: float) -> None:
        pass

    def wait_until(self, t_s: float, timeout_s: float = 2.0) -> bool:
        return self.driver.wait_until(t_s, timeout_s)

    def samples(self) -> Samples:
        return self.driver.samples()

    def info(self) -> dict[str, Any]:
        meta = self.driver.meta()
        meta["rails"] = {str(c): s.rail for c, s in self.rails.channels.items()}
        meta["devices"] = self.rails.devices
        return meta

    def region(self, t0_s: float, t1_s: float) -> MeterRegion:
        # integrate on the device's timeline (emulated seconds when the emulator runs faster than real time)
        cm = self.driver.clock_map()
        d0, d1 = cm.to_device(t0_s), cm.to_device(t1_s)
        period = 1.0 / self.driver.rate_hz
        s = self.driver.samples(d0 - 64 * period, d1 + 64 * period)
        t_dev_all = s.meta["t_dev_s"]
        valid = s.valid if s.valid is not None else np.ones(len(s), bool)
        chans: dict[str, ChannelResult] = {}
        gaps = lost = 0
        warnings: list[str] = []
        n_in = 0
        for c in self.driver.channels:
            sel = np.flatnonzero((s.channel == c) & valid)
            t, p = t_dev_all[sel], s.power_w[sel]
            if t.size == 0:
                warnings.append(f"channel {c}: no samples")
                continue
            r = self._r_lut[c]
            # half an ADC step of V and of I, propagated to power
            half_lsb_w = 0.5 * (s.current_a[sel] * VOLTAGE_FULL_SCALE_V / 4096 +
                                s.voltage_v[sel] * SENSE_FULL_SCALE_V / 4096 / r)
            ce = integrate_series(t, p, d0, d1, half_lsb_w, period)
            rail = self.rails.rail(c) if c in self.rails.channels else f"ch{c}"
            chans[str(c)] = ChannelResult(ce.energy_j, ce.energy_err_j, ce.mean_power_w, ce.n_samples, rail)
            gaps = max(gaps, ce.gaps)
            lost += ce.lost_samples
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
        return MeterRegion(self.name, self.kind, self.emulated, t0_s, t1_s, chans,
                           _devices(chans, self.rails.devices, dur), total, err,
                           total / dur if dur > 0 else float("nan"), n_in, self.driver.rate_hz, ovf, gaps, lost,
                           inside, warnings)


def powermon_from_section(section: Mapping[str, Any], name: str = "powermon2", raw_path: str | Path | None = None,
                          **driver_kw: Any) -> PowerMonMeter:
    """A PowerMon 2 meter from a platform's meter section (see :mod:`archline.powermon.rails`)."""
    if section.get("type", "powermon2") not in ("powermon2", "powermon2-emulated"):
        raise MeterError(f"not a PowerMon 2 meter section (type {section.get('type')!r})")
    port = section.get("port")
    if not port:
        raise MeterError("the PowerMon 2 meter section has no port (e.g. port = \"/dev/ttyUSB0\")")
    rails = RailMap.from_section(section)
    driver = PowerMon2(str(port), rails.r_sense(), rate_hz=float(section.get("rate_hz", 128)), raw_path=raw_path,
                       name=name, **driver_kw)
    return PowerMonMeter(driver, rails)


def emulated_powermon(section: Mapping[str, Any], power: PowerSource | PowerCallable | None = None,
                      speed: float = 1.0, faults: Faults | None = None, seed: int = 0,
                      name: str = "powermon2-emulated", raw_path: str | Path | None = None,
                      **driver_kw: Any) -> PowerMonMeter:
    """A PowerMon 2 emulated on a real pty, playing ``power`` (callable t_s -> per-channel (V, A), or a Script),
    driven by the real driver. Labelled emulated. ``speed`` compresses time."""
    rails = RailMap.from_section(section)
    core = PowerMon2Core(power, faults, speed=speed, seed=seed, r_sense_ohm=rails.r_sense())
    server = PtyServer(core)
    driver = PowerMon2(server.port, rails.r_sense(), rate_hz=float(section.get("rate_hz", 128)),
                       raw_path=raw_path, name=name, speed=speed, emulated=True, **driver_kw)
    return PowerMonMeter(driver, rails, server)
