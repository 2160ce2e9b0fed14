"""The emulated device: its clock (``time_compression`` device seconds per host second), the power it draws over
host time, and the power source that makes powermon's PowerMon 2 emulator play that power on the meter's rails.

Everything here is labelled ``emulated``. A run of ``reps`` repetitions sleeps T/compression on the host and
reports the exact device time T; the emulator asks for power at emulated times, which the device core maps onto
the host clock, where the schedule of kernel intervals lives.
"""

from __future__ import annotations

import bisect
import math
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from archline.bench.emulated.model import EmulatedModel, EmulationError
from archline.bench.kernels import Counts
from archline.powermon.kinds import default_emulated
from archline.powermon.spec import ChannelSpec, MeterSpec

F64 = npt.NDArray[np.float64]


class PowerSchedule:
    """Device power over host time as a step function: each event sets the power from its time on.

    A kernel run sets its power when it starts and the device keeps drawing it until the next run or until it
    is told to idle: gaps between back-to-back runs are host scheduling (microseconds on real hardware, but
    milliseconds of GIL hand-over here, i.e. a large slice of compressed device time), not device idleness.
    An event's time is read under the lock, so an emulator thread that samples concurrently never sees a
    time after the event with the power before it. Thread-safe.
    """

    def __init__(self, idle_w: float, clock: Callable[[], float] = time.monotonic, keep: int = 100_000) -> None:
        self.idle_w = idle_w
        self._clock = clock
        self._times: list[float] = []
        self._power: list[float] = []
        self._lock = threading.Lock()
        self._keep = keep

    def set_now(self, power_w: float) -> float:
        """From now on the device draws ``power_w``; returns the event's host time."""
        with self._lock:
            t = self._clock()
            self._times.append(t)
            self._power.append(power_w)
            if len(self._times) > self._keep:
                drop = len(self._times) - self._keep // 2
                del self._times[:drop], self._power[:drop]
            return t

    def power_at(self, t_s: float) -> float:
        with self._lock:
            i = bisect.bisect_right(self._times, t_s) - 1
            return self._power[i] if i >= 0 else self.idle_w

    def power_array(self, t_s: np.ndarray) -> np.ndarray:
        with self._lock:
            times = np.asarray(self._times)
            power = np.asarray(self._power)
        t = np.asarray(t_s, dtype=np.float64)
        out = np.full(t.shape, self.idle_w)
        if times.size:
            i = np.searchsorted(times, t, side="right") - 1
            ok = i >= 0
            out[ok] = power[i[ok]]
        return out


def default_meter(peak_power_w: float) -> MeterSpec:
    """A profile without a PowerMon 2 section: enough 12 V channels (stock shunt) to carry 1.3 x the peak."""
    full_w = 12.0 * ChannelSpec(id=0, rail="x").full_scale_a
    n = min(8, max(1, math.ceil(1.3 * peak_power_w / full_w)))
    return MeterSpec(name="powermon", kind=default_emulated().name, channels=tuple(
        ChannelSpec(id=i, rail=f"device_12v_{i}", device="device", nominal_v=12.0, share=1.0 / n) for i in range(n)))


def rail_split(meter: MeterSpec | None, peak_power_w: float) -> MeterSpec:
    """The meter whose channels carry the device's power (``share`` each, at nominal volts)."""
    if meter is None or not meter.channels:
        return default_meter(peak_power_w)
    return meter.with_even_shares()


def check_range(meter: MeterSpec, peak_power_w: float, platform: str, low_power_w: float | None = None) -> None:
    """Each shunt channel's current, as the emulator plays it (a calibrated entry: ``gain x`` its share ``+`` its
    part of ``offset_w``), within the channel's range from the device's lowest power (``low_power_w``, default
    the peak) to its peak: the emulated meter would clip it silently (a counter or BMC meter has no range)."""
    from archline.bench.emulated.meters import has_shunt, played_range_a, played_w

    if not has_shunt(meter.kind):
        return
    cal = dict(meter.calibration or {})
    levels = [("the peak", peak_power_w)] + ([("the lowest power", low_power_w)] if low_power_w is not None else [])
    for c in meter.channels:
        lo_a, hi_a = played_range_a(meter, c)
        for what, p_w in levels:
            w = played_w(meter, c, p_w)
            amps = w / c.nominal_v
            if lo_a <= amps <= hi_a:
                continue
            limit = f"above the meter's {hi_a:.1f} A full scale" if amps > hi_a else \
                f"below the {lo_a:.1f} A the meter reads down to"
            if cal:
                gain, offset_w = float(cal.get("gain", 1.0)), float(cal.get("offset_w", 0.0))
                raise EmulationError(
                    f"emulated {platform}: meter '{meter.name}' is calibrated with gain {gain:g}, "
                    f"offset_w {offset_w:g} W, so at {what} of {p_w:.4g} W channel {c.id} "
                    f"({c.rail}) would play {w:.4g} W ({amps:.1f} A at {c.nominal_v:g} V), {limit} "
                    f"({hi_a * c.nominal_v:.4g} W); the emulator would clip it: lower the emulated power (measure: "
                    f"--busy-w), the channel's share, or the entry's gain/offset_w")
            raise EmulationError(
                f"emulated {platform}: channel {c.id} ({c.rail}) would carry {amps:.1f} A at {what} of "
                f"{p_w:.0f} W, {limit}; lower its share or its r_sense_ohm")


def readings(meter: MeterSpec, power_w: float) -> dict[int, tuple[float, float]]:
    """{channel id: (volts, amps)} whose products sum to ``power_w``."""
    return {c.id: (c.nominal_v, power_w * (c.share or 0.0) / c.nominal_v) for c in meter.channels}


class EmulatedDevice:
    """The device one emulated run drives: its model, its clock and the power it draws."""

    def __init__(self, model: EmulatedModel, *, time_compression: float = 50.0,
                 meter: MeterSpec | None = None, noise_rel: float = 0.0, seed: int = 0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not time_compression > 0:
            raise EmulationError(f"time compression must be positive, got {time_compression!r}")
        self.model = model
        self.time_compression = time_compression
        self.meter = rail_split(meter, model.free_peak_power_w)
        self.noise_rel = noise_rel
        self.clock = clock
        self.schedule = PowerSchedule(model.idle_w, clock)
        self._rng = np.random.default_rng(seed)
        check_range(self.meter, model.free_peak_power_w * (1 + 4 * noise_rel), model.platform,
                    model.idle_w * max(0.0, 1 - 4 * noise_rel))

    def set_cap(self, power_cap_w: float | None) -> None:
        base = self.model if power_cap_w is None else self.model.with_cap(power_cap_w)
        self.model = base
        self.schedule.idle_w = base.idle_w

    # --- the power function handed to an emulated meter (host time in, watts or rails out) ---
    def power_w(self, t_host_s: float) -> float:
        return self.schedule.power_at(t_host_s)

    def power_w_array(self, t_host_s: np.ndarray) -> np.ndarray:
        p = self.schedule.power_array(t_host_s)
        if self.noise_rel > 0:
            p = p * (1.0 + self.noise_rel * self._rng.standard_normal(p.shape))
        return p

    # --- running work ---
    def run_counts(self, counts: Counts) -> tuple[float, float, float]:
        """Occupy the device with this work: draw its power for its compressed time and sleep until it is done.

        Returns (device seconds, host start, host end): the interval is exact, whatever the host's wake-up lag.
        """
        t_dev = self.model.time_s(counts)
        t0 = self.schedule.set_now(self.model.power_w(counts))
        t1 = t0 + t_dev / self.time_compression
        _sleep_until(t1, self.clock)
        return t_dev, t0, t1

    def idle(self, device_s: float) -> None:
        """Nothing runs: the device draws its idle power from now on, for ``device_s`` device seconds."""
        t0 = self.schedule.set_now(self.model.idle_w)
        _sleep_until(t0 + device_s / self.time_compression, self.clock)


def _sleep_until(t_end: float, clock: Callable[[], float]) -> None:
    while True:
        left = t_end - clock()
        if left <= 0:
            return
        time.sleep(left - 0.002 if left > 0.003 else 0.0)  # sleep, then yield-spin the last 2 ms


class ModelPowerSource:
    """What the PowerMon 2 emulator plays for an emulated device: emulated time -> host time (the device core's
    map) -> the device's power schedule -> per-channel (volts, amps) by the rail shares. Vectorised."""

    def __init__(self, device: EmulatedDevice) -> None:
        self.device = device
        self.by_id = {c.id: c for c in device.meter.channels}
        self.core: Any = None

    def bind(self, core: Any) -> None:
        self.core = core

    def sample(self, t_s: F64, channels: Sequence[int]) -> tuple[F64, F64]:
        assert self.core is not None, "bind() the emulator core first"
        p = self.device.power_w_array(self.core.host_time_s(np.asarray(t_s, dtype=np.float64)))
        volts = np.zeros((len(p), len(channels)))
        amps = np.zeros((len(p), len(channels)))
        for j, c in enumerate(channels):
            spec = self.by_id.get(int(c))
            if spec is not None:
                volts[:, j] = spec.nominal_v
                amps[:, j] = p * (spec.share or 0.0) / spec.nominal_v
        return volts, amps
