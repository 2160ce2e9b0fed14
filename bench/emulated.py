"""The emulated platform: a back end whose kernels take the time the capped model says, and the power function
that an emulated meter plays while they run.

Everything here is labelled ``emulated``. The model is the capped energy roofline (model.md §1, §3.1, §4) with a
profile's constants, generalised to every count column of ``archline.results/1``::

    T = max( max_c(count_c / rate_c) , sum_c(count_c * eps_c) / delta_pi )      (eq.34, perfect overlap)
    E = sum_c(count_c * eps_c) + pi0 * T                                           (eq.32 / S1 eq.10)
    P = E / T while the kernel runs; idle_w when nothing runs

``rate_c`` is the profile's ``[emulate]`` observed rate where given (S0 §IV-B observed maxima for the GTX 580),
else the vendor peak (1/tau). Cache, random-access and integer rates that a profile does not give are derived
from the memory or flop rate with the stated factors in :data:`DERIVED_RATE_FACTORS`; only the energy of those
kernels matters to the fit, and their time enters only through pi0*T.

The device runs on its own clock: ``time_compression`` device seconds pass per host second, so a sweep of a few
hundred device seconds takes seconds. A run of ``reps`` repetitions sleeps T/compression on the host and reports
the exact device time T; the power function is asked for power at host times and answers with the power the
device draws then (schedule of kernel intervals on the host clock).
"""

from __future__ import annotations

import bisect
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from archline.powermon.emulator import Script

from archline.bench.errors import BenchError, UnsupportedError
from archline.bench.kernels import Counts, KernelSpec, RunResult
from archline.bench.profile_sections import (
    DEFAULT_RANGES,
    QUICK_RANGES,
    BenchProfile,
    ChannelSpec,
    MeterSpec,
    SweepRange,
    load_bench_profile,
)

BACKEND_NAME = "emulated"

#: count column -> (observed-rate key in [emulate], profile constant for its time cost, energy constant)
COUNT_COSTS: dict[str, tuple[str, str | None, str]] = {
    "flops_sp": ("observed_flop_per_s_sp", "tau_flop_sp", "eps_flop_sp"),
    "flops_dp": ("observed_flop_per_s_dp", "tau_flop_dp", "eps_flop_dp"),
    "int_ops": ("observed_int_per_s", "tau_int", "eps_int"),
    "bytes_mem": ("observed_byte_per_s", "tau_mem", "eps_mem"),
    "bytes_l1": ("observed_l1_byte_per_s", None, "eps_l1"),
    "bytes_l2": ("observed_l2_byte_per_s", None, "eps_l2"),
    "bytes_l3": ("observed_l3_byte_per_s", None, "eps_l3"),
    "bytes_shared": ("observed_shared_byte_per_s", None, "eps_shared"),
    "rand_accesses": ("observed_rand_per_s", None, "eps_rand"),
}
#: IMPL NOTE (not from the seeds): rates an emulated profile does not give, as multiples of a known rate.
DERIVED_RATE_FACTORS: dict[str, tuple[str, float]] = {
    "bytes_l1": ("bytes_mem", 8.0), "bytes_l2": ("bytes_mem", 3.0), "bytes_l3": ("bytes_mem", 2.0),
    "bytes_shared": ("bytes_mem", 8.0), "rand_accesses": ("bytes_mem", 1.0 / 128.0),
    "int_ops": ("flops_sp", 0.5),
}
#: IMPL NOTE: idle power when neither the profile nor [emulate] gives one, as a fraction of pi0 (the GTX 580's
#: measured idle is 39.6 W against a fitted pi0 of 122 W, S0 §V-A: about a third).
IDLE_FRACTION_OF_PI0 = 0.3
#: Device seconds one repetition of a sweep point takes, about (the runner picks the repetitions).
TARGET_REP_S = 0.01
#: Cache kernels: (level, count column, working set as a fraction of "fits in that level").
CACHE_LEVELS: tuple[tuple[str, str], ...] = (("l1", "bytes_l1"), ("l2", "bytes_l2"), ("l3", "bytes_l3"),
                                             ("shared", "bytes_shared"))
ELEM_BYTES = {"sp": 4, "dp": 8, "int32": 4}


class EmulationError(BenchError):
    """The profile cannot be emulated (a constant is missing) or a cap is outside the allowed range."""


@dataclass(frozen=True)
class EmulatedModel:
    """The capped model with per-count rates and energies; ``delta_pi_w = inf`` is the free model."""

    platform: str
    pi0_w: float
    idle_w: float
    idle_source: str
    delta_pi_w: float
    rate_per_s: dict[str, float]          # count column -> operations per device second
    eps_j: dict[str, float]               # count column -> joules per operation
    rate_source: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_profile(cls, prof: BenchProfile, power_cap_w: float | None = None) -> EmulatedModel:
        plat, emu = prof.platform, prof.emulate
        pi0 = plat.value("pi0")
        if pi0 is None:
            raise EmulationError(f"platform '{plat.name}' cannot be emulated: it has no value for pi0 "
                                 f"({plat.source('pi0') or 'missing'})")
        rates: dict[str, float] = {}
        eps: dict[str, float] = {}
        src: dict[str, str] = {}
        for col, (obs_key, tau_key, eps_key) in COUNT_COSTS.items():
            e = plat.value(eps_key)
            if e is None:
                continue
            eps[col] = e
            obs = getattr(emu, obs_key)
            if obs is not None:
                rates[col], src[col] = obs, f"[emulate] {obs_key}"
            elif tau_key is not None and (tau := plat.value(tau_key)) is not None:
                rates[col], src[col] = 1.0 / tau, f"1/{tau_key}"
        for col, (base, factor) in DERIVED_RATE_FACTORS.items():
            if col in eps and col not in rates and base in rates:
                rates[col], src[col] = rates[base] * factor, f"assumed: {factor:g} x rate of {base}"
        eps = {c: v for c, v in eps.items() if c in rates}
        if "bytes_mem" not in eps:
            raise EmulationError(f"platform '{plat.name}' cannot be emulated: it needs eps_mem and a memory rate "
                                 "(tau_mem, peak_byte_per_s or [emulate] observed_byte_per_s)")
        if not any(c in eps for c in ("flops_sp", "flops_dp")):
            raise EmulationError(f"platform '{plat.name}' cannot be emulated: it needs eps_flop_sp or eps_flop_dp "
                                 "with a flop rate")
        if emu.idle_w is not None:
            idle, idle_src = emu.idle_w, "[emulate] idle_w"
        elif (iw := plat.value("idle_w")) is not None:
            idle, idle_src = iw, f"constants.idle_w ({plat.source('idle_w')})"
        else:
            idle, idle_src = IDLE_FRACTION_OF_PI0 * pi0, f"assumed: {IDLE_FRACTION_OF_PI0:g} x pi0 (no idle_w given)"
        delta = plat.value("delta_pi")
        model = cls(platform=plat.name, pi0_w=pi0, idle_w=idle, idle_source=idle_src,
                    delta_pi_w=math.inf if delta is None else delta, rate_per_s=rates, eps_j=eps, rate_source=src)
        if power_cap_w is not None:
            model = model.with_cap(power_cap_w)
        return model

    # --- the cap ---
    @property
    def free_peak_power_w(self) -> float:
        """Highest power the free model reaches: pi0 + pi_flop + pi_mem at the time balance point."""
        pflop = max((self.eps_j[c] * self.rate_per_s[c] for c in ("flops_sp", "flops_dp") if c in self.eps_j),
                    default=0.0)
        return self.pi0_w + pflop + self.eps_j["bytes_mem"] * self.rate_per_s["bytes_mem"]

    def cap_range_w(self) -> tuple[float, float]:
        """Caps the emulated device accepts: above pi0 (some dynamic power) up to its free peak power."""
        return self.pi0_w * 1.01, self.free_peak_power_w

    def with_cap(self, power_cap_w: float) -> EmulatedModel:
        lo, hi = self.cap_range_w()
        if not lo <= power_cap_w <= hi:
            raise EmulationError(f"power cap {power_cap_w:g} W is outside the emulated {self.platform}'s allowed "
                                 f"range {lo:.1f}-{hi:.1f} W (pi0 = {self.pi0_w:g} W)")
        return EmulatedModel(**{**{f.name: getattr(self, f.name) for f in fields(self)},
                                "delta_pi_w": power_cap_w - self.pi0_w})

    # --- time, energy, power of counted work ---
    def supports(self, counts: Counts) -> bool:
        return all(v == 0 or c in self.eps_j for c, v in counts.as_row().items() if c != "bus_bytes")

    def dynamic_energy_j(self, counts: Counts) -> float:
        row = counts.as_row()
        return float(sum(row[c] * self.eps_j[c] for c in self.eps_j if row.get(c)))

    def time_s(self, counts: Counts) -> float:
        row = counts.as_row()
        t = max((row[c] / self.rate_per_s[c] for c in self.rate_per_s if row.get(c)), default=0.0)
        if not math.isinf(self.delta_pi_w):
            t = max(t, self.dynamic_energy_j(counts) / self.delta_pi_w)
        return t

    def energy_j(self, counts: Counts) -> float:
        return self.dynamic_energy_j(counts) + self.pi0_w * self.time_s(counts)

    def power_w(self, counts: Counts) -> float:
        t = self.time_s(counts)
        return self.pi0_w + (self.dynamic_energy_j(counts) / t if t > 0 else 0.0)


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


@dataclass(frozen=True)
class RailSplit:
    """How the device's power is drawn through the meter's channels (``share`` per channel, at nominal volts)."""

    channels: tuple[ChannelSpec, ...]

    @classmethod
    def for_meter(cls, meter: MeterSpec | None, peak_power_w: float = 300.0) -> RailSplit:
        if meter is None or not meter.channels:
            return cls(default_channels(peak_power_w))
        chans = meter.channels
        if all(c.share is None for c in chans):  # no shares: split evenly
            n = len(chans)
            chans = tuple(ChannelSpec(c.id, c.rail, c.device, c.nominal_v, c.r_sense_ohm, 1.0 / n) for c in chans)
        return cls(tuple(chans))

    def check_range(self, peak_power_w: float, platform: str) -> None:
        for c in self.channels:
            amps = peak_power_w * (c.share or 0.0) / c.nominal_v
            if amps > c.full_scale_a:
                raise EmulationError(
                    f"emulated {platform}: channel {c.id} ({c.rail}) would carry {amps:.1f} A at the peak of "
                    f"{peak_power_w:.0f} W, above the meter's {c.full_scale_a:.1f} A full scale; lower its share or "
                    f"its r_sense_ohm")

    def readings(self, power_w: float) -> list[tuple[int, float, float]]:
        """(channel id, volts, amps) whose products sum to ``power_w``."""
        return [(c.id, c.nominal_v, power_w * (c.share or 0.0) / c.nominal_v) for c in self.channels]


def default_channels(peak_power_w: float) -> tuple[ChannelSpec, ...]:
    """A profile without a PowerMon 2 section: enough 12 V channels (stock shunt) to carry 1.3 x the peak."""
    full_w = 12.0 * ChannelSpec(0, "", "", 12.0).full_scale_a
    n = min(8, max(1, math.ceil(1.3 * peak_power_w / full_w)))
    return tuple(ChannelSpec(i, f"device_12v_{i}", "device", 12.0, share=1.0 / n) for i in range(n))


def default_meter(peak_power_w: float) -> MeterSpec:
    return MeterSpec(name="powermon", kind="powermon2", channels=default_channels(peak_power_w))


class EmulatedDevice:
    """The device one emulated run drives: its model, its clock and the power it draws."""

    def __init__(self, model: EmulatedModel, *, time_compression: float = 50.0,
                 rails: RailSplit | None = None, noise_rel: float = 0.0, seed: int = 0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not time_compression > 0:
            raise EmulationError(f"time compression must be positive, got {time_compression!r}")
        self.model = model
        self.time_compression = time_compression
        self.rails = rails or RailSplit.for_meter(None, model.free_peak_power_w)
        self.noise_rel = noise_rel
        self.clock = clock
        self.schedule = PowerSchedule(model.idle_w, clock)
        self._rng = np.random.default_rng(seed)
        self.rails.check_range(model.free_peak_power_w * (1 + 4 * noise_rel), model.platform)

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

    def rail_readings(self, t_host_s: float) -> list[tuple[int, float, float]]:
        p = self.power_w(t_host_s)
        if self.noise_rel > 0:
            p *= 1.0 + self.noise_rel * float(self._rng.standard_normal())
        return self.rails.readings(p)

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

    def host_to_device_s(self, host_s: float) -> float:
        return host_s * self.time_compression


def _sleep_until(t_end: float, clock: Callable[[], float]) -> None:
    while True:
        left = t_end - clock()
        if left <= 0:
            return
        time.sleep(left - 0.002 if left > 0.003 else 0.0)  # sleep, then yield-spin the last 2 ms


# --- the back end -----------------------------------------------------------------------------------------

@dataclass
class EmulatedKernel:
    spec: KernelSpec
    counts_per_rep: Counts
    device: EmulatedDevice

    def run(self, reps: int) -> RunResult:
        if reps < 1:
            raise BenchError(f"repetitions must be at least 1, got {reps}")
        counts = self.counts_per_rep.scaled(reps)
        t_dev, t0, t1 = self.device.run_counts(counts)
        return RunResult(time_s=t_dev, reps=reps, counts=counts, checksum_ok=True,
                         extra={"emulated": True, "power_w": self.device.model.power_w(counts),
                                "t0_host_s": t0, "t1_host_s": t1})

    def close(self) -> None:
        pass


def intensity_counts(precision: str, intensity_flop_per_byte: float, bytes_per_rep: int) -> Counts:
    """Exact counts of one repetition: ``bytes_per_rep`` streamed, round(I * bytes) flops (integers)."""
    flops = round(intensity_flop_per_byte * bytes_per_rep)
    if precision == "sp":
        return Counts(flops_sp=flops, bytes_mem=bytes_per_rep)
    if precision == "dp":
        return Counts(flops_dp=flops, bytes_mem=bytes_per_rep)
    if precision == "int32":
        return Counts(int_ops=flops, bytes_mem=bytes_per_rep)
    raise BenchError(f"unknown precision '{precision}'")


class EmulatedBackend:
    """Back end ``emulated``: kernels that take the model's time on an emulated device."""

    name = BACKEND_NAME

    def __init__(self, profile: BenchProfile | str = "gtx580", *, power_cap_w: float | None = None,
                 time_compression: float | None = None, meter: MeterSpec | None = None, seed: int = 0,
                 noise_rel: float | None = None) -> None:
        self.profile = load_bench_profile(profile) if isinstance(profile, str) else profile
        self.model = EmulatedModel.from_profile(self.profile, power_cap_w)
        if meter is None:
            meter = next((m for m in self.profile.meters if m.kind == "powermon2"), None)
        if meter is None:
            meter = default_meter(self.model.free_peak_power_w)
        self.meter = meter
        emu = self.profile.emulate
        self.device = EmulatedDevice(
            self.model, time_compression=time_compression or emu.time_compression,
            rails=RailSplit.for_meter(meter, self.model.free_peak_power_w),
            noise_rel=emu.noise_rel if noise_rel is None else noise_rel, seed=seed)

    def availability(self) -> tuple[bool, str]:
        return True, f"emulated {self.profile.name} (capped model with the profile's constants; no hardware)"

    def _precisions(self) -> list[str]:
        out = []
        if "flops_sp" in self.model.eps_j:
            out.append("sp")
        if "flops_dp" in self.model.eps_j:
            out.append("dp")
        if "int_ops" in self.model.eps_j:
            out.append("int32")
        return out

    def describe(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for p in ("sp", "dp"):
            ok = p in self._precisions()
            out.append({"name": "intensity", "precision": p, "level": "mem", "available": ok,
                        "reason": "emulated" if ok else f"profile has no eps_flop_{p}"})
        for level, col in CACHE_LEVELS:
            ok = col in self.model.eps_j
            out.append({"name": "cache", "precision": "sp", "level": level, "available": ok,
                        "reason": "emulated" if ok else f"profile has no eps_{level}"})
        ok = "rand_accesses" in self.model.eps_j
        out.append({"name": "chase", "precision": "int32", "level": "mem", "available": ok,
                    "reason": "emulated" if ok else "profile has no eps_rand"})
        ok = "int_ops" in self.model.eps_j
        out.append({"name": "int", "precision": "int32", "level": "mem", "available": ok,
                    "reason": "emulated" if ok else "profile has no eps_int"})
        return out

    def _bytes_per_rep(self, precision: str, intensity: float) -> int:
        """Streamed bytes so that one repetition takes about TARGET_REP_S device seconds (a multiple of 4 KiB)."""
        col = "flops_sp" if precision == "sp" else "flops_dp" if precision == "dp" else "int_ops"
        per_byte_s = max(1.0 / self.model.rate_per_s["bytes_mem"], intensity / self.model.rate_per_s[col])
        return max(4096, int(TARGET_REP_S / per_byte_s) // 4096 * 4096)

    def sweep(self, kernel: str, precision: str, *, quick: bool = False,
              ranges: dict[str, SweepRange] | None = None) -> list[KernelSpec]:
        ranges = ranges or (QUICK_RANGES if quick else DEFAULT_RANGES)
        if kernel == "intensity":
            if precision not in self._precisions() or precision == "int32":
                raise UnsupportedError(f"emulated {self.profile.name}: no intensity kernel at precision "
                                       f"'{precision}' (profile has no eps_flop_{precision})")
            rng = ranges.get(f"intensity_{precision}", DEFAULT_RANGES[f"intensity_{precision}"])
            specs = []
            for i in rng.values():
                q = self._bytes_per_rep(precision, i)
                specs.append(KernelSpec(self.name, "intensity", precision, "mem",
                                        {"intensity": round(i, 6), "bytes_per_rep": q}))
            return specs
        if kernel == "cache":
            specs = []
            for level, col in CACHE_LEVELS:
                if col not in self.model.eps_j:
                    continue
                rate = self.model.rate_per_s[col]
                # a few working points per level: pure cache reads, and with some flops on top
                for fpb in ((0.0, 0.5) if quick else (0.0, 0.25, 1.0)):
                    q = max(4096, int(TARGET_REP_S * rate) // 4096 * 4096)
                    specs.append(KernelSpec(self.name, "cache", "sp", level,
                                            {"bytes_per_rep": q, "flops_per_byte": fpb}))
            return specs
        if kernel == "chase":
            if "rand_accesses" not in self.model.eps_j:
                return []
            n = max(1024, int(TARGET_REP_S * self.model.rate_per_s["rand_accesses"]))
            return [KernelSpec(self.name, "chase", "int32", "mem", {"accesses_per_rep": n * k})
                    for k in ((1, 4) if quick else (1, 2, 4))]
        if kernel == "int":
            if "int_ops" not in self.model.eps_j:
                return []
            return [KernelSpec(self.name, "int", "int32", "mem",
                               {"intensity": round(i, 6), "bytes_per_rep": self._bytes_per_rep("int32", i)})
                    for i in (ranges.get("intensity_sp", DEFAULT_RANGES["intensity_sp"]).values())]
        raise UnsupportedError(f"emulated back end has no kernel '{kernel}' (known: intensity, cache, chase, int)")

    def counts(self, spec: KernelSpec) -> Counts:
        p = spec.params
        if spec.kernel in ("intensity", "int"):
            return intensity_counts(spec.precision, float(p["intensity"]), int(p["bytes_per_rep"]))
        if spec.kernel == "cache":
            col = dict(CACHE_LEVELS)[spec.level]
            q = int(p["bytes_per_rep"])
            return Counts(**{col: q, "flops_sp": round(float(p.get("flops_per_byte", 0.0)) * q)})
        if spec.kernel == "chase":
            return Counts(rand_accesses=int(p["accesses_per_rep"]))
        raise UnsupportedError(f"emulated back end has no kernel '{spec.kernel}'")

    def prepare(self, spec: KernelSpec, device: str | None = None) -> EmulatedKernel:
        counts = self.counts(spec)
        if not self.model.supports(counts):
            raise UnsupportedError(f"emulated {self.profile.name} cannot run {spec.label}: a cost is missing")
        return EmulatedKernel(spec, counts, self.device)


def steady_power_script(profile: BenchProfile | str, intensity_flop_per_byte: float | None = None,
                        precision: str = "sp") -> tuple[Script, str]:
    """A constant power for ``archline meter emulate --platform``: the platform's model power while a kernel of
    the given intensity runs (idle power when none is given), split onto the profile's PowerMon 2 rails."""
    from archline.bench.profile_sections import load_bench_profile
    from archline.powermon.emulator import Script

    prof = load_bench_profile(profile) if isinstance(profile, str) else profile
    model = EmulatedModel.from_profile(prof)
    if intensity_flop_per_byte is None:
        power_w, what = model.idle_w, f"idle, {model.idle_w:.4g} W ({model.idle_source})"
    else:
        if not intensity_flop_per_byte > 0:
            raise EmulationError(f"intensity must be > 0 flop/byte, got {intensity_flop_per_byte:g}")
        counts = intensity_counts(precision, intensity_flop_per_byte, 1 << 24)
        if not model.supports(counts):
            raise EmulationError(f"platform '{model.platform}' has no {precision} flop cost to emulate")
        power_w = model.power_w(counts)
        what = f"{precision} kernel at I = {intensity_flop_per_byte:g} flop/B, {power_w:.4g} W (capped model)"
    meter = next((m for m in prof.meters if m.kind == "powermon2"), None)
    split = RailSplit.for_meter(meter, model.free_peak_power_w)
    split.check_range(power_w, model.platform)
    step = {ch: (volts, amps) for ch, volts, amps in split.readings(power_w)}
    return Script([(0.0, step)]), f"{model.platform} [emulated]: {what}"
