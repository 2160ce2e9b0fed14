"""Running a probe or a calibration: one :class:`Recorder` with the reference meter and the sensor, a step load
driven inside one window, then the analysis of what both recorded (:mod:`.probe`, :mod:`.response`).

The step load comes from the caller (a kernel on the device, or an emulated device's busy/idle switch: powermon
never imports bench). :func:`emulated_pair` builds the emulated set-up for tests and ``--emulate``: a PowerMon 2
emulated on a pty (the reference) and an emulated on-board sensor reading the same power on the same timeline.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from archline.powermon import kinds
from archline.powermon.bmc.kind import REDFISH
from archline.powermon.errors import DeviceError, MeterError
from archline.powermon.monitor import open_windows
from archline.powermon.sensor.calibration import Calibration
from archline.powermon.sensor.probe import (
    ProbeResult,
    StepLoad,
    analyse,
    drive_steps,
    edge_limits,
    quantum,
    quantum_resolved,
    quantum_warning,
    reading_times,
    rounding_bound_w,
    series,
    step_plan,
    update_period,
)
from archline.powermon.sensor.response import Response, fit_response
from archline.powermon.spec import ChannelSpec, MeterSpec


class EdgeLoad:
    """A step load from a phase switch ``edge("begin" | "end")`` (an emulated device's busy/idle schedule)."""

    def __init__(self, edge: Callable[[str], Any]) -> None:
        self.edge = edge
        self._high = False

    def high(self) -> None:
        if not self._high:
            self.edge("begin")
            self._high = True

    def low(self) -> None:
        if self._high:
            self.edge("end")
            self._high = False


def _reference_kind() -> str:
    """The emulated reference's kind: archline's kind that is a reference and emulated by default (the PowerMon 2)."""
    return next(k.name for k in kinds.builtin_kinds() if k.reference and k.emulated_by_default)


#: the emulated reference: one 12 V channel of the PowerMon 2 at its fastest per-channel rate (about 1 ms)
REFERENCE_SPEC = MeterSpec(name="reference", kind=_reference_kind(), rate_hz=1024.0,
                           channels=(ChannelSpec(id=0, rail="device_12v", device="device", share=1.0),))


def emulated_pair(model: Any, power: Any, *, speed: float = 1.0, seed: int = 0, name: str = "sensor",
                  spec: MeterSpec = REFERENCE_SPEC) -> tuple[Any, Any]:
    """(reference, sensor): the emulated PowerMon 2 of ``spec`` playing ``power`` (a PowerSource, optionally with
    ``bind(core)``) and an emulated sensor given ``model`` (a SensorModel) on the same core. Start the reference
    first (a Recorder starts them in order)."""
    from archline.powermon.sensor.emulated import EmulatedSensorMeter
    from archline.powermon.spec import emulate_meter

    ref = emulate_meter(spec, power, speed=speed, seed=seed)        # its kind's emulator (the PowerMon 2's)
    sensor = EmulatedSensorMeter(name, model, power, [c.id for c in spec.channels], ref.core)
    return ref, sensor


def emulated_bmc_pair(model: Any, power: Any, *, speed: float = 1.0, seed: int = 0, name: str = "bmc",
                      spec: MeterSpec = REFERENCE_SPEC) -> tuple[Any, Any]:
    """(reference, BMC): the emulated PowerMon 2 as in :func:`emulated_pair`, and the node's BMC over Redfish: an
    emulated Redfish service on 127.0.0.1 serving ``model``'s readings of the same power on the reference's device
    clock, read by the real Redfish client and :class:`~archline.powermon.bmc.bmc_meter.BmcMeter` (its poller, its
    ReadingTime handling). Its server stops when the meter stops. Start the reference first."""
    from archline.powermon.bmc.emulator import EPOCH
    from archline.powermon.bmc.meter import emulate_from_spec
    from archline.powermon.spec import emulate_meter

    ref = emulate_meter(spec, power, speed=speed, seed=seed)
    bmc = emulate_from_spec(MeterSpec(name=name, kind=REDFISH, channels=spec.channels), power, sensor=model,
                            timeline=ref.core, name=name)
    bmc.clock_zero_s = EPOCH.timestamp()          # the emulated BMC's clock reads EPOCH at device time 0
    return ref, bmc


def counter_readings(samples: Any) -> tuple[Any, Any]:
    """(times, power) of a polled energy counter's updates (RAPL, NVML, AMD SMI, hwmon): an update is a poll
    interval in which the cumulative energy (all channels) moved, stamped at that interval's middle (so within
    half a poll of the true instant); its reading is the energy since the previous update over the time between
    them. Polled faster than it updates, a counter's per-poll power is spikes and zeros, which no window fits."""
    e = np.asarray(samples.meta["cumulative_energy_j"], dtype=np.float64)
    e = e.reshape(e.shape[0], -1).sum(axis=1)
    n_ch = max(1, len(samples.meta.get("channel_names") or [0]))
    tm = np.asarray(samples.t_s, dtype=np.float64)[::n_ch]
    moved = np.flatnonzero(np.diff(e)[:tm.size] != 0)
    if moved.size < 2:
        raise DeviceError(f"meter '{samples.meter}': its energy counter moved {moved.size} time(s) during the "
                         "probe: too few updates (record longer, or check that the counter counts)")
    t_up, e_up = tm[moved], e[moved + 1]
    return t_up[1:], np.diff(e_up) / np.diff(t_up)


def _sensor_series(sensor: Any, device_time: bool) -> tuple[Any, Any]:
    """(times, readings) of the sensor: a BMC's distinct readings at their ReadingTime, a counter's updates
    (:func:`counter_readings`), else its samples."""
    own = getattr(sensor, "reading_samples", None)
    sen = own(getattr(sensor, "clock_zero_s", 0.0)) if callable(own) else sensor.samples()
    if sen.meta.get("cumulative_energy_j") is not None:
        return counter_readings(sen)
    t = np.asarray(sen.meta.get("t_dev_s", sen.t_s) if device_time else sen.t_s, dtype=np.float64)
    return t, np.asarray(sen.power_w, dtype=np.float64)


def reference_resolution(samples: Any, info: dict[str, Any], device_time: bool) -> Any:
    """Half a step of the reference at each instant of :func:`~archline.powermon.sensor.probe.series` (its
    channels' half steps summed, as their powers are), from the meter's own resolution bound
    (:func:`archline.powermon.record.resolution.resolution_w`); None where the meter does not state one."""
    from archline.powermon.record.resolution import resolution_w

    try:
        half = resolution_w(samples, info)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    if half is None:
        return None
    t = samples.meta.get("t_dev_s") if device_time else None
    t = np.asarray(samples.t_s if t is None else t, dtype=np.float64)
    half = np.broadcast_to(np.asarray(half, dtype=np.float64), t.shape)
    if samples.valid is not None:
        t, half = t[samples.valid], half[samples.valid]
    if t.size == 0 or not np.isfinite(half).all():
        return None
    ut, inv = np.unique(t, return_inverse=True)
    return np.asarray(np.bincount(inv, weights=np.abs(half), minlength=ut.size), dtype=np.float64)


@dataclass
class Recorded:
    ref_t_s: Any
    ref_power_w: Any
    read_t_s: Any
    read_w: Any
    reference_period_s: float
    n_steps: int
    ref_resolution_w: Any = None     #: half a step of the reference at each of its instants (None: not stated)


def record_steps(reference: Any, sensor: Any, load: StepLoad, *, n_steps: int, step_s: float, seed: int = 0,
                 device_time: bool = True, labels: Mapping[str, str] | None = None) -> Recorded:
    """Both meters in one Recorder while the load steps ``n_steps`` times (device seconds of ``step_s`` +-30%).
    ``labels``: each meter's name -> what a failure of it is called (``reference meter 'pm' (powermon2) of
    platform 'P'``): a meter that cannot start says which one it is, not only its port."""
    if n_steps < 2:
        raise MeterError(f"a probe needs at least 2 steps, got {n_steps}")
    speed = float(getattr(reference, "speed", 1.0) or 1.0)
    plan = step_plan(n_steps, step_s, seed)
    rec = open_windows([reference, sensor], settle_timeout_s=5.0, start=True, labels=labels)
    try:                   # started above: stopped however the steps end (as ``with Recorder(...)`` would)
        rec.begin("steps")
        drive_steps(load, plan, speed)
        rec.end("steps", strict=True)
        ref_samples = reference.samples()
        ref_t, ref_p = series(ref_samples, device_time)
        ref_res = reference_resolution(ref_samples, reference.info(), device_time)
        read_t, read_w = _sensor_series(sensor, device_time)
    finally:
        rec.stop()
    rate = float(getattr(reference, "update_hz", 0.0) or 0.0)
    period = 1.0 / rate if rate > 0 else float(np.median(np.diff(ref_t)))
    return Recorded(ref_t, ref_p, read_t, read_w, period, n_steps,
                    ref_res if ref_res is not None and ref_res.shape == ref_t.shape else None)


def probe(reference: Any, sensor: Any, load: StepLoad, *, n_steps: int = 20, step_s: float = 0.5, seed: int = 0,
          device_time: bool = True, labels: Mapping[str, str] | None = None) -> ProbeResult:
    """Measure the sensor (window and lag searched up to a step's shortest stretch)."""
    r = record_steps(reference, sensor, load, n_steps=n_steps, step_s=step_s, seed=seed, device_time=device_time,
                     labels=labels)
    longest = 0.7 * step_s
    return analyse(r.ref_t_s, r.ref_power_w, r.read_t_s, r.read_w, reference_period_s=r.reference_period_s,
                   max_window_s=longest, max_lag_s=longest, n_steps=n_steps, ref_resolution_w=r.ref_resolution_w)


def calibrate(reference: Any, sensor: Any, load: StepLoad, *, n_steps: int = 20, step_s: float = 0.5,
              seed: int = 0, window_s: float | None = None, device_time: bool = True,
              labels: Mapping[str, str] | None = None) -> tuple[Calibration, Response]:
    """Gain, offset and lag of the sensor against the reference (the window from a sensor profile when given,
    else fitted too), with their uncertainties."""
    r = record_steps(reference, sensor, load, n_steps=n_steps, step_s=step_s, seed=seed, device_time=device_time,
                     labels=labels)
    longest = 0.7 * step_s
    q, _ = quantum(r.read_w)
    resolved = quantum_resolved(r.read_w)
    resp = fit_response(r.ref_t_s, r.ref_power_w, r.read_t_s, r.read_w, max_window_s=longest, max_lag_s=longest,
                        resolution_s=r.reference_period_s / 4, window_s=window_s,
                        reference_period_s=r.reference_period_s, quantum_w=q,
                        ref_resolution_w=r.ref_resolution_w,
                        level_rounding_w=None if resolved else rounding_bound_w(r.read_w))
    try:
        period, _ = update_period(reading_times(r.read_t_s, r.read_w))
    except MeterError:            # no lattice to pin the lag with: the fit's own uncertainty stands
        period = 0.0
    warnings: list[str] = quantum_warning(resolved, r.read_w)
    if period > 0:
        resp, _, more = edge_limits(resp, r.read_w, period_s=period, n_steps=n_steps,
                                    reference_period_s=r.reference_period_s, quantum_w=q,
                                    fixed_window=window_s is not None)
        warnings += more
    resp = replace(resp, warnings=(*resp.warnings, *warnings))
    return Calibration(resp.gain, resp.gain_err, resp.offset_w, resp.offset_err_w, resp.lag_s, resp.lag_err_s), resp
