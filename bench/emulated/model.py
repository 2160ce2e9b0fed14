"""The model an emulated platform runs: fit's capped energy roofline (model.md §1, §3.1, §4) with a profile's
constants, one term per count column of ``archline.results/1``. The equations are fit's
(:func:`archline.model.hierarchy.time_s` = eq.34 with one term per count, :func:`~archline.model.hierarchy.
energy_j` = eq.32 / S1 eq.10); this module only picks the rates and costs::

    T = max( max_c(count_c / rate_c) , sum_c(count_c * eps_c) / delta_pi )      (eq.34, perfect overlap)
    E = sum_c(count_c * eps_c) + pi0 * T                                           (eq.32 / S1 eq.10)
    P = E / T while the kernel runs; idle_w when nothing runs

``rate_c`` is the profile's ``[emulate]`` observed rate where given (S0 §IV-B observed maxima for the GTX 580),
else the vendor peak (1/tau). Cache, random-access and integer rates that a profile does not give are derived
from the memory or flop rate with the stated factors in :data:`DERIVED_RATE_FACTORS`; only the energy of those
kernels matters to the fit, and their time enters only through pi0*T.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

from archline.bench.config.profile import BenchProfile
from archline.bench.errors import BenchError
from archline.bench.kernels import Counts
from archline.model import hierarchy
from archline.model.roofline import flop_power_w, mem_power_w

#: count column -> (observed-rate key in [emulate], profile constant for its time cost)
COUNT_RATES: dict[str, tuple[str, str | None]] = {
    "flops_sp": ("observed_flop_per_s_sp", "tau_flop_sp"), "flops_dp": ("observed_flop_per_s_dp", "tau_flop_dp"),
    "int_ops": ("observed_int_per_s", "tau_int"), "bytes_mem": ("observed_byte_per_s", "tau_mem"),
    "bytes_l1": ("observed_l1_byte_per_s", None), "bytes_l2": ("observed_l2_byte_per_s", None),
    "bytes_l3": ("observed_l3_byte_per_s", None), "bytes_shared": ("observed_shared_byte_per_s", None),
    "rand_accesses": ("observed_rand_per_s", None),
}
#: IMPL NOTE (not from the seeds): rates an emulated profile does not give, as multiples of a known rate.
DERIVED_RATE_FACTORS: dict[str, tuple[str, float]] = {
    "bytes_l1": ("bytes_mem", 8.0), "bytes_l2": ("bytes_mem", 3.0), "bytes_l3": ("bytes_mem", 2.0),
    "bytes_shared": ("bytes_mem", 8.0), "rand_accesses": ("bytes_mem", 1.0 / 128.0),
    "int_ops": ("flops_sp", 0.5),
}
#: IMPL NOTE: the rates an emulated device may run at (operations per second, from [emulate] or 1/tau): no device
#: archline measures is slower than a million operations a second or faster than 10^18 (an exascale system). Outside
#: this the emulator would sleep for ages (or overflow the sleep) or repeat a kernel without end.
RATE_RANGE_PER_S = (1e6, 1e18)
#: IMPL NOTE: the most power an emulated device may draw (W): beyond it a profile's constants are not a device.
MAX_POWER_W = 1e7
#: IMPL NOTE: idle power when neither the profile nor [emulate] gives one, as a fraction of pi0 (the GTX 580's
#: measured idle is 39.6 W against a fitted pi0 of 122 W, S0 §V-A: about a third).
IDLE_FRACTION_OF_PI0 = 0.3


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
        for col, (obs_key, tau_key) in COUNT_RATES.items():
            e = plat.value(hierarchy.COUNT_TO_COST[col])
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
        lo, hi = RATE_RANGE_PER_S
        for col, r in rates.items():
            if not lo <= r <= hi and not src[col].startswith("assumed"):
                raise EmulationError(f"platform '{plat.name}' cannot be emulated: its {col} rate {r:g}/s (from "
                                     f"{src[col]}) is outside {lo:g} to {hi:g} per second")
        for col, e in eps.items():
            if not (math.isfinite(e) and e * rates[col] <= MAX_POWER_W):
                raise EmulationError(f"platform '{plat.name}' cannot be emulated: {hierarchy.COUNT_TO_COST[col]} = "
                                     f"{e:g} J at {rates[col]:g}/s would draw {e * rates[col]:g} W (more than "
                                     f"{MAX_POWER_W:g} W is not a device)")
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
        for what, w in (("pi0", pi0), (f"idle power ({idle_src})", idle), ("peak power", model.free_peak_power_w)):
            if not (math.isfinite(w) and w <= MAX_POWER_W):
                raise EmulationError(f"platform '{plat.name}' cannot be emulated: its {what} would be {w:g} W "
                                     f"(more than {MAX_POWER_W:g} W is not a device)")
        return model if power_cap_w is None else model.with_cap(power_cap_w)

    # --- the cap ---
    @property
    def free_peak_power_w(self) -> float:
        """Highest power the free model reaches: pi0 + pi_flop + pi_mem at the time balance point (eq.9-ish)."""
        pflop = max((float(flop_power_w(self.eps_j[c], 1.0 / self.rate_per_s[c])) for c in ("flops_sp", "flops_dp")
                     if c in self.eps_j), default=0.0)
        return self.pi0_w + pflop + float(mem_power_w(self.eps_j["bytes_mem"], 1.0 / self.rate_per_s["bytes_mem"]))

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

    # --- time, energy, power of counted work: fit's model ---
    def _counts(self, counts: Counts) -> dict[str, int]:
        return {c: v for c, v in counts.as_row().items() if c != "bus_bytes" and v}

    def _costs(self) -> dict[str, float]:
        return {hierarchy.COUNT_TO_COST[c]: v for c, v in self.eps_j.items()}

    def supports(self, counts: Counts) -> bool:
        return all(c in self.eps_j for c in self._counts(counts))

    def dynamic_energy_j(self, counts: Counts) -> float:
        return float(hierarchy.energy_j(self._counts(counts), self._costs(), 0.0, 0.0))

    def time_s(self, counts: Counts) -> float:
        return float(hierarchy.time_s(self._counts(counts), self.rate_per_s, self._costs(), self.delta_pi_w))

    def energy_j(self, counts: Counts) -> float:
        return float(hierarchy.energy_j(self._counts(counts), self._costs(), self.time_s(counts), self.pi0_w))

    def power_w(self, counts: Counts) -> float:
        t = self.time_s(counts)
        return self.pi0_w + (self.dynamic_energy_j(counts) / t if t > 0 else 0.0)
