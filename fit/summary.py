"""What `archline model show|predict` report: the constants and derived quantities of a platform, keyed by the
symbol names of model.md §0 (B_tau, B_eps, eps_hat, pi0, delta_pi, …), in SI units."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from archline.formats.platforms.profiles import Platform
from archline.model import roofline as rl
from archline.model.errors import ArchlineFitError
from archline.model.machine import Machine

#: symbol -> (unit, meaning) for every key `model show` emits.
SYMBOLS: dict[str, tuple[str, str]] = {
    "tau_flop": ("s/flop", "time per flop (1 / peak flop rate)"),
    "tau_mem": ("s/byte", "time per byte (1 / peak bandwidth)"),
    "eps_flop": ("J/flop", "energy per flop"),
    "eps_mem": ("J/byte", "energy per byte from DRAM"),
    "pi0": ("W", "constant power"),
    "delta_pi": ("W", "usable power above pi0 (the cap); absent = uncapped"),
    "B_tau": ("flop/byte", "time balance tau_mem/tau_flop"),
    "B_eps": ("flop/byte", "energy balance eps_mem/eps_flop"),
    "balance_gap": ("-", "B_eps / B_tau"),
    "eps_0": ("J/flop", "constant energy per flop pi0*tau_flop"),
    "eps_hat": ("J/flop", "least energy per flop eps_flop + eps_0"),
    "eta_flop": ("-", "constant-flop energy efficiency eps_flop/eps_hat"),
    "Bhat_eps": ("flop/byte", "effective energy balance point (arch line = 1/2)"),
    "pi_flop": ("W", "flop power at peak rate, excluding pi0"),
    "pi_mem": ("W", "memory power at peak bandwidth, excluding pi0"),
    "P_max": ("W", "highest power the model draws: pi0 + min(delta_pi, pi_flop + pi_mem)"),
    "B_tau_minus": ("flop/byte", "below this the cap does not bind (eq.37)"),
    "B_tau_plus": ("flop/byte", "above this the cap does not bind (eq.36)"),
    "headroom": ("-", "pi0 / (pi0 + delta_pi)"),
    "peak_flop_per_s": ("flop/s", "1/tau_flop"),
    "peak_flop_per_j": ("flop/J", "1/eps_hat"),
    "streaming_energy_per_byte": ("J/byte", "eps_mem + tau_mem*pi0"),
}
#: per-level and per-access constants, shown where the platform has them (a fitted table, localhost's run)
LEVEL_SYMBOLS: dict[str, tuple[str, str]] = {
    "tau_l1": ("s/byte", "time per byte from L1 (1 / L1 bandwidth)"),
    "tau_l2": ("s/byte", "time per byte from L2"),
    "tau_l3": ("s/byte", "time per byte from L3"),
    "tau_rand": ("s/access", "time per random access"),
    "tau_int": ("s/op", "time per integer op"),
    "eps_l1": ("J/byte", "energy per byte from L1"),
    "eps_l2": ("J/byte", "energy per byte from L2"),
    "eps_l3": ("J/byte", "energy per byte from L3"),
    "eps_rand": ("J/access", "energy per random access"),
    "eps_int": ("J/op", "energy per integer op"),
}
SYMBOLS.update(LEVEL_SYMBOLS)


def machine_summary(m: Machine) -> dict[str, float]:
    out: dict[str, float] = {
        "tau_flop": m.tau_flop_s, "tau_mem": m.tau_mem_s_per_byte, "eps_flop": m.eps_flop_j,
        "eps_mem": m.eps_mem_j_per_byte, "pi0": m.pi0_w,
        "B_tau": m.B_tau, "B_eps": m.B_eps, "balance_gap": m.balance_gap, "eps_0": m.eps_0,
        "eps_hat": m.eps_hat, "eta_flop": m.eta_flop, "Bhat_eps": m.energy_balance_point,
        "pi_flop": m.pi_flop, "pi_mem": m.pi_mem, "P_max": m.peak_power_w,
        "peak_flop_per_s": 1.0 / m.tau_flop_s, "peak_flop_per_j": 1.0 / m.eps_hat,
        "streaming_energy_per_byte": m.streaming_energy_per_byte_j,
    }
    if m.capped:
        out.update(delta_pi=m.delta_pi_w, B_tau_minus=m.B_tau_minus, B_tau_plus=m.B_tau_plus, headroom=m.headroom)
    return out


#: derived symbol -> (the symbols it needs, its formula), in an order where needs come first (model.md §0-§4).
_DERIVED: dict[str, tuple[tuple[str, ...], Callable[[dict[str, float]], float]]] = {
    "B_tau": (("tau_flop", "tau_mem"), lambda v: v["tau_mem"] / v["tau_flop"]),
    "B_eps": (("eps_flop", "eps_mem"), lambda v: v["eps_mem"] / v["eps_flop"]),
    "balance_gap": (("B_eps", "B_tau"), lambda v: v["B_eps"] / v["B_tau"]),
    "eps_0": (("pi0", "tau_flop"), lambda v: v["pi0"] * v["tau_flop"]),
    "eps_hat": (("eps_flop", "eps_0"), lambda v: v["eps_flop"] + v["eps_0"]),
    "eta_flop": (("eps_flop", "eps_hat"), lambda v: v["eps_flop"] / v["eps_hat"]),
    "Bhat_eps": (("B_eps", "B_tau", "eta_flop"),
                 lambda v: float(rl.energy_balance_point_flop_per_byte(v["B_eps"], v["B_tau"], v["eta_flop"]))),
    "pi_flop": (("eps_flop", "tau_flop"), lambda v: v["eps_flop"] / v["tau_flop"]),
    "pi_mem": (("eps_mem", "tau_mem"), lambda v: v["eps_mem"] / v["tau_mem"]),
    "P_max": (("pi0", "pi_flop", "pi_mem"), lambda v: v["pi0"] + v["pi_flop"] + v["pi_mem"]),
    "peak_flop_per_s": (("tau_flop",), lambda v: 1.0 / v["tau_flop"]),
    "peak_flop_per_j": (("eps_hat",), lambda v: 1.0 / v["eps_hat"]),
    "streaming_energy_per_byte": (("eps_mem", "tau_mem", "pi0"), lambda v: v["eps_mem"] + v["tau_mem"] * v["pi0"]),
}


def partial_summary(platform: Platform, precision: str) -> dict[str, Any]:
    """What can be computed from the constants a platform has, and for each symbol that cannot, what it needs.

    Balances and powers need only some constants (B_tau only the time constants); the result holds those values
    (SI, as machine_summary) and ``missing``: symbol -> the first absent constant and its profile note."""
    base = {"tau_flop": f"tau_flop_{precision}", "tau_mem": "tau_mem", "eps_flop": f"eps_flop_{precision}",
            "eps_mem": "eps_mem", "pi0": "pi0"}
    vals: dict[str, float] = {s: v for s, k in base.items() if (v := platform.value(k)) is not None}
    missing: dict[str, str] = {}
    for sym, key in base.items():
        if sym not in vals:
            note = platform.source(key)
            missing[sym] = f"needs {key}" + (f" ({note})" if note else "")
    for sym, (needs, formula) in _DERIVED.items():
        absent = [n for n in needs if n not in vals]
        if absent:
            missing[sym] = missing.get(absent[0], f"needs {absent[0]}")
        else:
            vals[sym] = formula(vals)
    if "streaming_energy_per_byte" not in vals and platform.value("const_energy_per_byte") is not None \
            and "eps_mem" in vals:
        vals["streaming_energy_per_byte"] = vals["eps_mem"] + platform.value("const_energy_per_byte")  # type: ignore
        missing.pop("streaming_energy_per_byte", None)
    if time_only(platform):     # issue 34: each energy symbol null (a dash in the table), its reason in missing
        return {**vals, **dict.fromkeys(missing), "missing": missing}
    return {**vals, "missing": missing}


def time_only(platform: Platform) -> bool:
    """A platform with time constants and no energy constant at all (a time cost table, localhost's peaks)."""
    return bool(platform.precisions_timed()) and all(
        platform.value(k) is None for k in ("eps_flop_sp", "eps_flop_dp", "eps_mem", "pi0"))


def platform_summary(platform: Platform, precisions: Sequence[str] | None = None) -> dict[str, Any]:
    """Per precision the full summary, or, where constants are missing, what can be computed and what cannot
    (``missing``: symbol -> why). Without ``precisions``: the complete ones, else each with any constant."""
    complete = platform.precisions_available()
    if precisions:
        wanted = list(precisions)
    elif complete:
        wanted = complete
    else:
        wanted = [p for p in ("sp", "dp") if any(platform.value(f"{k}_{p}") is not None
                                                  for k in ("tau_flop", "eps_flop"))] or ["sp"]
    per = {p: machine_summary(platform.machine(p, needed_for=f"model show ({p})")) if p in complete
           else partial_summary(platform, p) for p in wanted}
    levels = {k: v for k in LEVEL_SYMBOLS if (v := platform.value(k)) is not None}
    for summary in per.values():
        summary.update(levels)
    return {"platform": platform.name, "title": platform.title, "emulated": platform.emulated,
            "origin": platform.origin, **per}


def parse_intensities(text: str) -> list[float]:
    """'0.25,1,4' or '0.25:64' (powers of two between) -> intensities; each must be > 0."""
    text = text.strip()
    try:
        if ":" in text:
            lo_s, hi_s = text.split(":", 1)
            lo, hi = float(lo_s), float(hi_s)
            if lo <= 0 or hi < lo:
                raise ArchlineFitError(f"intensity range '{text}' must be LOW:HIGH with 0 < LOW <= HIGH")
            return [float(x) for x in 2.0 ** np.arange(math.log2(lo), math.log2(hi) + 1e-9, 1.0)]
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ArchlineFitError(f"intensity list '{text}' is not a comma-separated list of numbers") from None
    if not values:
        raise ArchlineFitError("no intensities given")
    bad = [v for v in values if not (v > 0 and math.isfinite(v))]
    if bad:
        raise ArchlineFitError(f"intensities must be positive flop/byte, got {bad[0]:g}")
    return values


def predict_rows(m: Machine, intensities: Sequence[float], cap_divisor: float = 1.0) -> list[dict[str, Any]]:
    """For each intensity: gflop_per_s, gflop_per_j and power_w (capped model whenever delta_pi is known)."""
    if not cap_divisor > 0:
        raise ArchlineFitError(f"--cap-divisor must be > 0, got {cap_divisor:g}")
    if cap_divisor != 1.0 and not m.capped:
        raise ArchlineFitError("--cap-divisor needs delta_pi, which this platform does not have")
    mk = m.throttled(cap_divisor) if cap_divisor != 1.0 else m
    i = np.asarray(intensities, dtype=np.float64)
    perf = mk.performance_flop_per_s(i)
    eff = mk.efficiency_flop_per_j(i)
    power = mk.power_w(i)
    binds = mk.cap_binds(i)
    return [{"intensity": float(i[k]), "gflop_per_s": float(perf[k]) / 1e9, "gflop_per_j": float(eff[k]) / 1e9,
             "power_w": float(power[k]), "cap_binds": bool(binds[k]),
             "bound": "cap" if binds[k] else ("memory" if i[k] < mk.B_tau else "compute")}
            for k in range(len(i))]


#: what a time-only platform (a time cost table, localhost from its peaks) predicts: time answers; the energy
#: answers are None with the reason (model predict prints a dash and a note, JSON null plus ``energy_missing``)
ENERGY_ANSWERS: tuple[str, ...] = ("gflop_per_j", "power_w")


def energy_missing(platform: Platform, precision: str) -> str | None:
    """Why ``platform`` gives no energy answer at ``precision`` (the first absent energy constant and its note), or
    None when it gives them."""
    for key in (f"eps_flop_{precision}", "eps_mem", "pi0"):
        if platform.value(key) is None:
            note = platform.source(key)
            return f"no value for {key}" + (f" ({note})" if note else "")
    return None


def predict_time_rows(platform: Platform, precision: str, intensities: Sequence[float]) -> list[dict[str, Any]]:
    """The time roofline only (S0 eq.3: performance = min(1/tau_flop, I/tau_mem)) where the energy constants are
    absent; energy answers None. Needs tau_flop and tau_mem (MissingValueError naming the one absent)."""
    tau_flop = platform.require(f"tau_flop_{precision}", "model predict")
    tau_mem = platform.require("tau_mem", "model predict")
    b_tau = tau_mem / tau_flop
    out = []
    for x in intensities:
        perf = min(1.0 / tau_flop, float(x) / tau_mem)
        out.append({"intensity": float(x), "gflop_per_s": perf / 1e9, "gflop_per_j": None, "power_w": None,
                    "cap_binds": False, "bound": "memory" if x < b_tau else "compute"})
    return out
