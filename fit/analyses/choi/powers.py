"""Power across platforms (S1 Ch. 4, §4.4.3-4.4.4): the comparison of S1 Fig. 12, the throttling spread of
S1 Fig. 14 and the pi0-share correlation (S1 §4.4.3, "not shown").

* ``compare`` (S1 Fig. 12): each platform's modelled power against intensity, ordered by decreasing peak energy
  efficiency (the figure's order), with the constant power pi0, the cap pi0 + delta_pi, the streaming energy
  eps_mem + tau_mem*pi0 per byte and the "memory" efficiency 1/(that) (S1 §4.4.3). The streaming energy needs
  only eps_mem and tau_mem*pi0, which the shipped titan, arndale-gpu and xeon-phi profiles carry.
* ``throttle_spread`` (S1 Fig. 14a/b): performance and energy efficiency at delta_pi/k relative to delta_pi, per
  platform and intensity (S1 §4.4.4; model.md §4), for every platform that has delta_pi.
* ``pi0_share`` (S1 §4.4.3): pi0/(pi0 + delta_pi) per platform, how many exceed 50% (the thesis: 7 of 12) and
  its Pearson correlation with peak energy efficiency (the thesis: about -0.6).

S1 Table 6, which holds every platform's pi0, delta_pi and eps_flop, is absent from the thesis's text, so the
shipped profiles give no platform a complete capped model; a user gives the constants with the command's
``--set PLATFORM:KEY=VALUE`` (``cluster.with_constants``), a profile entry, or a cost table from
``archline fit --model capped``. A platform without them is listed with what it lacks, never guessed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from archline.formats.platforms.profiles import Platform
from archline.model.errors import ArchlineFitError
from archline.model.machine import Machine

#: the twelve platforms of S1 Table 6 / Fig. 12, as shipped profiles
S1_TABLE6 = ("titan", "gtx680", "gtx580", "xeon-phi", "i7-950", "nuc-cpu", "nuc-gpu", "arndale-cpu", "arndale-gpu",
             "apu-cpu", "apu-gpu", "pandaboard-es")
#: intensity standing in for I -> infinity (peak energy efficiency, flop/J)
PEAK_INTENSITY = 2.0 ** 20


class PowersError(ArchlineFitError):
    pass


def model_keys(precision: str) -> tuple[str, ...]:
    return (f"tau_flop_{precision}", "tau_mem", f"eps_flop_{precision}", "eps_mem", "pi0")


@dataclass(frozen=True)
class PlatformPower:
    """What the model says about one platform's power, as far as its constants go."""

    name: str
    emulated: bool
    machine: Machine | None
    missing: tuple[str, ...]          # model constants it lacks (delta_pi listed when absent)
    streaming_j_per_byte: float | None  # eps_mem + tau_mem*pi0 (S1 §4.4.3)
    pi0_w: float | None = None         # the platform's pi0 (profile or --set), shown even without a full model

    @property
    def capped(self) -> bool:
        return self.machine is not None and self.machine.capped

    @property
    def pi0_share(self) -> float | None:
        return self.machine.headroom if self.capped and self.machine is not None else None

    @property
    def peak_flop_per_j(self) -> float | None:
        return None if self.machine is None else float(self.machine.efficiency_flop_per_j(PEAK_INTENSITY))

    @property
    def memory_flop_per_j(self) -> float | None:
        """Efficiency at I = 1 of a pure streaming computation, 1/(eps_mem + tau_mem*pi0) (S1 §4.4.3)."""
        return None if self.streaming_j_per_byte is None else 1.0 / self.streaming_j_per_byte

    def as_dict(self) -> dict[str, Any]:
        m = self.machine
        return {"platform": self.name, "emulated": self.emulated, "missing": list(self.missing),
                "pi0_w": self.pi0_w if m is None else m.pi0_w,
                "delta_pi_w": m.delta_pi_w if self.capped and m else None,
                "pi0_share": self.pi0_share, "peak_flop_per_j": self.peak_flop_per_j,
                "streaming_j_per_byte": self.streaming_j_per_byte, "memory_flop_per_j": self.memory_flop_per_j}


def platform_power(pl: Platform, precision: str = "sp") -> PlatformPower:
    missing = [k for k in model_keys(precision) if pl.value(k) is None]
    m = None if missing else pl.machine(precision, needed_for="the power comparison")
    if pl.value("delta_pi") is None:
        missing.append("delta_pi")
    eps_mem = pl.value("eps_mem")
    const = pl.value("const_energy_per_byte")
    if m is not None:
        const = m.const_energy_per_byte_j
    stream = None if eps_mem is None or const is None else eps_mem + const
    return PlatformPower(pl.name, pl.emulated, m, tuple(missing), stream, pl.value("pi0"))


def by_peak_efficiency(pps: Sequence[PlatformPower]) -> list[PlatformPower]:
    """S1 Fig. 12's order: decreasing peak energy efficiency; platforms without a model last, as given."""
    return sorted(pps, key=lambda p: -(p.peak_flop_per_j or -math.inf))


@dataclass(frozen=True)
class Comparison:
    """S1 Fig. 12: modelled power against intensity, per platform with a model."""

    platforms: list[PlatformPower]
    intensities: np.ndarray
    power_w: dict[str, np.ndarray]    # name -> P(I)

    def power_range(self, name: str) -> tuple[float, float]:
        p = self.power_w[name]
        return float(p.min()), float(p.max())

    def as_dict(self) -> dict[str, Any]:
        return {"source": "S1 Sec. 4.4.3, Fig. 12", "intensities": self.intensities.tolist(),
                "platforms": [p.as_dict() | ({"power_w": self.power_w[p.name].tolist()}
                                            if p.name in self.power_w else {}) for p in self.platforms]}


def compare(pps: Sequence[PlatformPower], intensities: Sequence[float]) -> Comparison:
    i = np.asarray(intensities, dtype=np.float64)
    ordered = by_peak_efficiency(pps)
    return Comparison(ordered, i, {p.name: np.asarray(p.machine.power_w(i)) for p in ordered if p.machine})


@dataclass(frozen=True)
class Spread:
    """S1 Fig. 14: performance (a) and energy efficiency (b) at delta_pi/k relative to delta_pi."""

    divisor: float
    intensities: np.ndarray
    rel_perf: dict[str, np.ndarray]
    rel_eff: dict[str, np.ndarray]
    power_drop: dict[str, np.ndarray]  # P(k)/P(1): below 1 but above 1/k where pi0 > 0 (S1 §4.4.4)
    skipped: dict[str, tuple[str, ...]]

    def as_dict(self) -> dict[str, Any]:
        return {"source": "S1 Sec. 4.4.4, Fig. 14", "divisor": self.divisor,
                "intensities": self.intensities.tolist(),
                "platforms": [{"platform": n, "rel_perf": self.rel_perf[n].tolist(),
                               "rel_eff": self.rel_eff[n].tolist(), "rel_power": self.power_drop[n].tolist()}
                              for n in self.rel_perf],
                "skipped": {n: list(v) for n, v in self.skipped.items()}}


def throttle_spread(pps: Sequence[PlatformPower], intensities: Sequence[float], divisor: float = 8.0) -> Spread:
    if not divisor > 1:
        raise PowersError(f"the cap divisor must be > 1, got {divisor:g}")
    i = np.asarray(intensities, dtype=np.float64)
    perf: dict[str, np.ndarray] = {}
    eff: dict[str, np.ndarray] = {}
    pw: dict[str, np.ndarray] = {}
    skipped: dict[str, tuple[str, ...]] = {}
    for p in by_peak_efficiency(pps):
        if p.machine is None or not p.capped:
            skipped[p.name] = p.missing
            continue
        m, t = p.machine, p.machine.throttled(divisor)
        perf[p.name] = np.asarray(t.performance_flop_per_s(i) / m.performance_flop_per_s(i))
        eff[p.name] = np.asarray(t.efficiency_flop_per_j(i) / m.efficiency_flop_per_j(i))
        pw[p.name] = np.asarray(t.power_w(i) / m.power_w(i))
    if not perf:
        raise PowersError(no_model_message(pps, "the throttling spread (S1 Fig. 14)"))
    return Spread(float(divisor), i, perf, eff, pw, skipped)


@dataclass(frozen=True)
class Pi0Share:
    """S1 §4.4.3: pi0/(pi0 + delta_pi), the count above 50% and its correlation with peak efficiency."""

    platforms: list[PlatformPower]     # those with a capped model
    skipped: dict[str, tuple[str, ...]]
    above_half: int
    correlation: float | None          # Pearson r of share against peak flop/J; None below 3 platforms

    def as_dict(self) -> dict[str, Any]:
        return {"source": "S1 Sec. 4.4.3 (7 of 12 above 50%; correlation about -0.6)",
                "platforms": [p.as_dict() for p in self.platforms], "above_half": self.above_half,
                "correlation": self.correlation, "skipped": {n: list(v) for n, v in self.skipped.items()}}


def pi0_share(pps: Sequence[PlatformPower]) -> Pi0Share:
    have = [p for p in by_peak_efficiency(pps) if p.capped]
    skipped = {p.name: p.missing for p in pps if not p.capped}
    shares = np.array([p.pi0_share for p in have], dtype=np.float64)
    peaks = np.array([p.peak_flop_per_j for p in have], dtype=np.float64)
    r = None
    if len(have) >= 3 and np.ptp(shares) > 0 and np.ptp(peaks) > 0:
        r = float(np.corrcoef(shares, peaks)[0, 1])
    return Pi0Share(have, skipped, int(np.sum(shares > 0.5)), r)


def no_model_message(pps: Sequence[PlatformPower], what: str) -> str:
    lacks = "; ".join(f"{p.name}: no {', '.join(p.missing)}" for p in pps if p.missing)
    return (f"no platform has the constants {what} needs ({lacks}). S1 Table 6 is absent from the thesis; give "
            "them with --set PLATFORM:KEY=VALUE (e.g. --set titan:pi0=120 --set titan:delta_pi=160), a profile "
            "entry under [constants], or a cost table from 'archline fit --model capped'")


def settings_by_platform(names: Sequence[str],
                         settings: Sequence[tuple[str, str, float]]) -> dict[str, dict[str, float]]:
    """--set PLATFORM:KEY=VALUE triples grouped by the platform argument they name (which must be given)."""
    out: dict[str, dict[str, float]] = {n: {} for n in names}
    for name, key, v in settings:
        if name not in out:
            raise PowersError(f"--set names platform '{name}', which is not among the arguments "
                              f"({', '.join(names)})")
        if key in out[name]:
            raise PowersError(f"--set gives {name}:{key} twice ({out[name][key]:g} and {v:g}); give it once")
        out[name][key] = v
    return out


def load(names: Sequence[str], settings: Mapping[str, Mapping[str, float]], precision: str) -> list[PlatformPower]:
    from archline.fit.analyses.choi.cluster import with_constants
    from archline.formats.platforms.profiles import load_platform

    if len(set(names)) != len(names):
        raise PowersError("a platform is named twice")
    return [platform_power(with_constants(load_platform(n), settings.get(n, {})), precision) for n in names]
