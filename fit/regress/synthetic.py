"""Synthetic ``archline.results/1`` data made from the papers' coefficients, with seeded noise.

For tests of the fit and for end-to-end checks without hardware. Every row is labelled ``backend = emulated``.
Coefficients come from S1 Table 4 (eps_s, eps_d, eps_mem, pi0) and Table 5 (GTX 580 eps_L1, eps_L2);
sustained rates from S0 §IV-B (the profiles' ``[emulate]`` tables). Values the seeds do not give (cache rates,
eps_rand, i7-950 cache costs, delta_pi, every DVFS coefficient and voltage) are ASSUMED and marked so.
This module never imports archline.bench.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from archline.formats import schema
from archline.formats.results_check import EMULATED_BACKEND

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

RESULT_COLUMNS: tuple[str, ...] = schema.COLUMNS


@dataclass(frozen=True)
class SyntheticPlatform:
    """Ground truth for a synthetic data set (SI units)."""

    name: str
    eps_flop_sp_j: float
    eps_flop_dp_j: float
    eps_mem_j_per_byte: float
    pi0_w: float
    flop_per_s_sp: float
    flop_per_s_dp: float
    byte_per_s: float
    eps_l1_j_per_byte: float
    eps_l2_j_per_byte: float
    eps_rand_j: float
    byte_per_s_l1: float
    byte_per_s_l2: float
    rand_per_s: float
    delta_pi_w: float = math.inf
    sources: dict[str, str] = field(default_factory=dict)

    def truth(self) -> dict[str, float]:
        """The coefficients a fit should recover, by archline.costs/1 name."""
        d = {"eps_flop_sp": self.eps_flop_sp_j, "eps_flop_dp": self.eps_flop_dp_j, "eps_mem": self.eps_mem_j_per_byte,
             "pi0": self.pi0_w, "eps_l1": self.eps_l1_j_per_byte, "eps_l2": self.eps_l2_j_per_byte,
             "eps_rand": self.eps_rand_j, "tau_flop_sp": 1 / self.flop_per_s_sp,
             "tau_flop_dp": 1 / self.flop_per_s_dp, "tau_mem": 1 / self.byte_per_s}
        if math.isfinite(self.delta_pi_w):
            d["delta_pi"] = self.delta_pi_w
        return d


GTX580 = SyntheticPlatform(
    name="gtx580", eps_flop_sp_j=99.7e-12, eps_flop_dp_j=212e-12, eps_mem_j_per_byte=513e-12, pi0_w=122.0,
    flop_per_s_sp=1398e9, flop_per_s_dp=196e9, byte_per_s=170e9,
    eps_l1_j_per_byte=149e-12, eps_l2_j_per_byte=257e-12, eps_rand_j=8.2e-9,
    byte_per_s_l1=1.2e12, byte_per_s_l2=0.5e12, rand_per_s=3.0e9,
    sources={"eps/pi0": "S1 Table 4", "eps_l1/eps_l2": "S1 Table 5", "rates": "S0 Sec. IV-B observed",
             "eps_rand, L1/L2/random rates": "assumed (no value in the papers; eps_rand >= 10x eps_mem, S1 4.4.2)"},
)
I7_950 = SyntheticPlatform(
    name="i7-950", eps_flop_sp_j=371e-12, eps_flop_dp_j=670e-12, eps_mem_j_per_byte=795e-12, pi0_w=122.0,
    flop_per_s_sp=99.4e9, flop_per_s_dp=49.7e9, byte_per_s=18.9e9,
    eps_l1_j_per_byte=300e-12, eps_l2_j_per_byte=450e-12, eps_rand_j=40e-9,
    byte_per_s_l1=200e9, byte_per_s_l2=90e9, rand_per_s=0.4e9,
    sources={"eps/pi0": "S1 Table 4", "rates": "S0 Sec. IV-B observed",
             "eps_l1, eps_l2, eps_rand, cache/random rates": "assumed (the papers give no value)"},
)
#: GTX 580 with an ASSUMED power cap that binds around B_tau (pi_flop + pi_mem = 226 W > 150 W).
GTX580_CAPPED = replace(GTX580, name="gtx580-capped", delta_pi_w=150.0)


def _frame(rows: dict[str, np.ndarray | list[object]], n: int, platform: str) -> pd.DataFrame:
    import pandas as pd

    df = pd.DataFrame({c: rows.get(c, [np.nan] * n if c not in _TEXT_DEFAULTS else [_TEXT_DEFAULTS[c]] * n)
                       for c in RESULT_COLUMNS})
    df["platform"] = platform
    return df


_TEXT_DEFAULTS: dict[str, object] = {
    "schema": schema.SCHEMA, "run_id": "synthetic", "started_at": "2026-01-01T00:00:00Z", "host": "synthetic",
    "device": "synthetic", "backend": EMULATED_BACKEND, "level": "", "meter": "synthetic", "checksum_ok": "true",
    "reps": 100, "sample_hz": 1024, "n_samples": 1000,
}


def _intensities(n: int, lo_log2: float = -4.0, hi_log2: float = 8.0) -> np.ndarray:
    return 2.0 ** np.linspace(lo_log2, hi_log2, n)


def synthetic_results(platform: SyntheticPlatform = GTX580, *, n_sp: int = 25, n_dp: int = 36, n_l1: int = 16,
                      n_l2: int = 16, n_rand: int = 8, noise: float = 0.01, seed: int = 0,
                      bytes_per_point: float = 2.0**30, efficiency_spread: float = 0.3,
                      n_repeats: int = 1) -> pd.DataFrame:
    """Intensity points (25 SP and 36 DP by default, as S1 §5.3.1), L1/L2 cache points and random-access
    points. Time follows eq.34 (eq.3 when uncapped); energy eq.32 plus the cache and random terms of §3.1 with
    the *measured* (noisy) time. ``noise`` is the relative s.d. of independent Gaussian noise on T and E.

    ``efficiency_spread``: each point reaches a fraction u ~ U(1 - spread, 1) of the model's throughput, as real
    kernels do (stalls, occupancy; pi0 absorbs that time, S1 §3.1.5). That spread of T at fixed (W, Q) is what
    lets eq.9 tell pi0*T from the intercept and the Q term; with spread 0 the free model's T is a function of
    (W, Q) alone and pi0 is only weakly identified. Use 0 for the capped data (time must follow eq.34)."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    p = platform
    parts: list[pd.DataFrame] = []
    for prec, n_conf in (("sp", n_sp), ("dp", n_dp)):
        if n_conf <= 0:
            continue
        i = np.repeat(_intensities(n_conf), n_repeats)
        n = i.size
        q = np.full(n, bytes_per_point)
        w = i * q
        eps = p.eps_flop_sp_j if prec == "sp" else p.eps_flop_dp_j
        rate = p.flop_per_s_sp if prec == "sp" else p.flop_per_s_dp
        dyn = w * eps + q * p.eps_mem_j_per_byte
        t_true = np.maximum(np.maximum(w / rate, q / p.byte_per_s),
                            dyn / p.delta_pi_w if math.isfinite(p.delta_pi_w) else 0.0)
        u = 1.0 - efficiency_spread * rng.random(n)
        t = t_true / u * (1 + noise * rng.standard_normal(n))
        e = (dyn + p.pi0_w * t) * (1 + noise * rng.standard_normal(n))
        rows: dict[str, np.ndarray | list[object]] = {
            "kernel": ["intensity"] * n, "precision": [prec] * n, "level": ["mem"] * n, "time_s": t, "energy_j": e,
            "flops_sp": w if prec == "sp" else np.zeros(n), "flops_dp": w if prec == "dp" else np.zeros(n),
            "bytes_mem": q}
        if math.isfinite(p.delta_pi_w):
            rows["power_cap_w"] = np.full(n, p.pi0_w + p.delta_pi_w)
        parts.append(_frame(rows, n, p.name))
    for level, n_conf, eps, bw in (("l1", n_l1, p.eps_l1_j_per_byte, p.byte_per_s_l1),
                                   ("l2", n_l2, p.eps_l2_j_per_byte, p.byte_per_s_l2)):
        if n_conf <= 0:
            continue
        qc = np.repeat(bytes_per_point * np.linspace(0.5, 4.0, n_conf), n_repeats)
        n = qc.size
        t = qc / bw / (1.0 - efficiency_spread * rng.random(n)) * (1 + noise * rng.standard_normal(n))
        e = (qc * eps + p.pi0_w * t) * (1 + noise * rng.standard_normal(n))
        parts.append(_frame({"kernel": ["cache"] * n, "precision": ["sp"] * n, "level": [level] * n,
                             "time_s": t, "energy_j": e, f"bytes_{level}": qc}, n, p.name))
    if n_rand > 0:
        na = np.repeat(np.linspace(1.0, 4.0, n_rand) * 2.0**24, n_repeats)
        n_rand = na.size
        u = 1.0 - efficiency_spread * rng.random(n_rand)
        t = na / p.rand_per_s / u * (1 + noise * rng.standard_normal(n_rand))
        e = (na * p.eps_rand_j + p.pi0_w * t) * (1 + noise * rng.standard_normal(n_rand))
        parts.append(_frame({"kernel": ["chase"] * n_rand, "precision": [""] * n_rand, "level": ["mem"] * n_rand,
                             "time_s": t, "energy_j": e, "rand_accesses": na}, n_rand, p.name))
    df = pd.concat(parts, ignore_index=True)
    for c in ("flops_sp", "flops_dp", "int_ops", "bytes_mem", "bytes_l1", "bytes_l2", "bytes_l3", "bytes_shared",
              "rand_accesses"):
        df[c] = df[c].fillna(0.0)
    return df


# --- DVFS (S1 Ch. 5): a Jetson-TK1-like GPU; every number here is ASSUMED (S1 Table 7 is missing) ---------

#: Ground-truth eq.48 coefficients for the synthetic DVFS set (ASSUMED, Tegra-K1-like magnitudes).
DVFS_TRUTH: dict[str, float] = {
    "c0_core_single": 28e-12, "delta_c0_core_double": 160e-12, "c0_mem": 220e-12, "c0_core_integer": 22e-12,
    "c0_core_sm": 9e-12, "c0_core_l2": 35e-12, "c1_core": 2.2, "c1_mem": 0.8, "pi_misc": 1.4,
}
#: 16 (core MHz, mem MHz) settings drawn from the TK1's 15 x 7 grid (S1 §5.2.2; Table 10 lists 8 of them).
DVFS_SETTINGS_MHZ: tuple[tuple[float, float], ...] = (
    (852, 924), (756, 924), (180, 924), (852, 792), (612, 528), (540, 528), (612, 396), (852, 204),
    (72, 924), (396, 792), (468, 600), (684, 600), (324, 396), (252, 528), (804, 300), (108, 204),
)


def core_volt_v(core_mhz: float) -> float:
    """ASSUMED V(f) for the core: 0.80 V at 72 MHz rising linearly to 1.10 V at 852 MHz."""
    return 0.80 + 0.30 * (core_mhz - 72.0) / (852.0 - 72.0)


def mem_volt_v(mem_mhz: float, spread_v: float) -> float:
    """ASSUMED V(f) for memory: 1.20 V at 204 MHz rising by ``spread_v`` at 924 MHz."""
    return 1.20 + spread_v * (mem_mhz - 204.0) / (924.0 - 204.0)


def synthetic_dvfs(*, n_settings: int = 16, mem_v_spread: float = 0.15, noise: float = 0.01, seed: int = 0,
                   n_sp: int = 25, n_dp: int = 36, n_int: int = 23, n_sm: int = 16, n_l2: int = 16,
                   coefficients: dict[str, float] | None = None) -> pd.DataFrame:
    """S1 §5.3.1's design: per setting 25 SP + 36 DP intensity, 23 integer, 16 shared-memory and 16 L2 samples
    (116 per setting, 1856 for 16 settings). Energy is eq.48 (un-normalised) with the noisy measured time.
    ``mem_v_spread`` small (e.g. 0.002 V) makes C1,mem and pi_misc indistinguishable."""
    import pandas as pd

    c = dict(DVFS_TRUTH if coefficients is None else coefficients)
    rng = np.random.default_rng(seed)
    parts: list[pd.DataFrame] = []
    n_cores = 192
    for core_mhz, mem_mhz in DVFS_SETTINGS_MHZ[:n_settings]:
        vc, vm = core_volt_v(core_mhz), mem_volt_v(mem_mhz, mem_v_spread)
        flop_rate = 2 * n_cores * core_mhz * 1e6            # tau_flop = 1/(2 N f) (S1 below eq.47)
        dp_rate = flop_rate / 24.0                           # ASSUMED Kepler GK20A DP:SP throughput
        byte_rate = 16.0 * mem_mhz * 1e6                     # ASSUMED 16 B per memory cycle
        int_rate, sm_rate, l2_rate = flop_rate / 2, 4.0 * byte_rate, 2.0 * byte_rate
        pi0 = c["c1_core"] * vc + c["c1_mem"] * vm + c["pi_misc"]
        q0 = 2.0**26

        def emit(kernel: str, prec: str, level: str, t_true: np.ndarray, dyn: np.ndarray,
                 counts: dict[str, np.ndarray], n: int, vc: float = vc, vm: float = vm, pi0: float = pi0,
                 core_mhz: float = core_mhz, mem_mhz: float = mem_mhz) -> None:
            t = t_true * (1 + noise * rng.standard_normal(n))
            e = (dyn + pi0 * t) * (1 + noise * rng.standard_normal(n))
            rows: dict[str, np.ndarray | list[object]] = {
                "kernel": [kernel] * n, "precision": [prec] * n, "level": [level] * n, "time_s": t, "energy_j": e,
                "core_mhz": np.full(n, core_mhz), "mem_mhz": np.full(n, mem_mhz), "core_v": np.full(n, vc),
                "mem_v": np.full(n, vm), **counts}
            parts.append(_frame(rows, n, "jetson-tk1"))

        for prec, n in (("sp", n_sp), ("dp", n_dp)):
            if n <= 0:
                continue
            i = _intensities(n, -3.0, 6.0)
            q = np.full(n, q0)
            w = i * q
            rate = flop_rate if prec == "sp" else dp_rate
            eps = c["c0_core_single"] * vc**2 + (c["delta_c0_core_double"] * vc**2 if prec == "dp" else 0.0)
            dyn = w * eps + q * c["c0_mem"] * vm**2
            emit("intensity", prec, "mem", np.maximum(w / rate, q / byte_rate), dyn,
                 {f"flops_{prec}": w, "bytes_mem": q}, n)
        if n_int > 0:
            wi = q0 * np.linspace(1, 8, n_int)
            emit("int", "int32", "", wi / int_rate, wi * c["c0_core_integer"] * vc**2, {"int_ops": wi}, n_int)
        if n_sm > 0:
            qs = q0 * np.linspace(1, 8, n_sm)
            emit("cache", "sp", "shared", qs / sm_rate, qs * c["c0_core_sm"] * vc**2, {"bytes_shared": qs}, n_sm)
        if n_l2 > 0:
            ql = q0 * np.linspace(1, 8, n_l2)
            emit("cache", "sp", "l2", ql / l2_rate, ql * c["c0_core_l2"] * vc**2, {"bytes_l2": ql}, n_l2)
    df = pd.concat(parts, ignore_index=True)
    for col in ("flops_sp", "flops_dp", "int_ops", "bytes_mem", "bytes_l1", "bytes_l2", "bytes_l3", "bytes_shared",
                "rand_accesses"):
        df[col] = df[col].fillna(0.0)
    return df


def dvfs_pi0_truth(coefficients: dict[str, float] | None = None, *, mem_v_spread: float = 0.15,
                   n_settings: int = 16) -> dict[tuple[float, float], float]:
    """pi0 = C1,core*Vcore + C1,mem*Vmem + pi_misc (eq.46) at each synthetic setting, keyed (core_mhz, mem_mhz)."""
    c = dict(DVFS_TRUTH if coefficients is None else coefficients)
    return {(fc, fm): c["c1_core"] * core_volt_v(fc) + c["c1_mem"] * mem_volt_v(fm, mem_v_spread) + c["pi_misc"]
            for fc, fm in DVFS_SETTINGS_MHZ[:n_settings]}


def write_results_csv(frame: pd.DataFrame, path: str | Path) -> Path:
    """Write rows as an archline.results/1 CSV (atomic: temp file + rename), through the format's owner."""
    from archline.formats.results_file import ResultsFile

    return ResultsFile.dump_frame(frame, path)
