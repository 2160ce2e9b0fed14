"""Elango et al.'s architecture design space (S2 §4-6; model.md §12.3).

A chip of area A gives alpha*A to a last-level cache of S words and the rest to cores of area A_core:
P_max = floor((A - area(S)) / A_core). For every LLC size, number of active cores p <= P_max and core
frequency f:

    perf  = min(p*F_flops(f), B_mem*OI(S))                                              (S2 eq.1)
    E_eff = [eps_flop(f) + eps_mem/OI(S) + (p*pi_cpu + pi_cache(S)) / perf]^-1          (S2 eq.3)

with OI(S) the algorithm's upper bound (fit/analyses/elango/oi_bounds.py). The default machine is the paper's Nehalem-EX
(S2 Tables III-VI, §4.2; fit/data/elango_*.csv).

Stated interpretations (the paper does not give them exactly):

* area(S): S2 Table V (CACTI) interpolated log-log between its sizes (4 KB - 8 MB); past 8 MB, extrapolated
  linearly at the 4 MB -> 8 MB marginal area (9.86 mm^2/MB), which puts 64 MB at 0.94 of the die and leaves one
  core, as S2 §4.2 says. Any result past 8 MB says so.
* pi_cache(S) = 21 W x area(S)/684 mm^2 (leakage is area-proportional, as pi_cpu is; model.md §12.3).
* F_flops(f) = 9.04 GFLOP/s x f/2.26 GHz per core (grows linearly with f, S2 §6).
* eps_flop(f): scaled from 1.3 nJ at 2.26 GHz / 1.1 V with the S2 Table VI voltage at f. The default scaling
  "v" (eps proportional to V) is the one of three that reproduces S2 §6's printed CG optimum, 0.373 GFLOP/J at
  4 KB, 3 cores, 1.26 GHz; "v2" (eps ~ V^2, S2 §6's "energy is proportional to V^2 f") and "table6" (Table VI
  per-core dynamic power / per-core flop rate, normalised to 1.3 nJ at 2.26 GHz) are available.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field

from archline.common.inputs import Strict, validate
from archline.fit.analyses.elango.oi_bounds import BoundResult, get_bound, oi_upper_bound
from archline.formats.platforms.profiles import read_toml
from archline.model.errors import ArchlineFitError, ProfileFormatError

DATA_DIR = Path(__file__).parent.parent / "data"
EPS_SCALINGS = ("v", "v2", "table6")
EPS_SCALING_NOTES = {
    "v": "eps proportional to V: reproduces S2 Sec. 6's CG optimum, 0.373 GFLOP/J at 4 KB, 3 cores, 1.26 GHz",
    "v2": "eps proportional to V^2, S2 Sec. 6's own law (power ~ V^2 f, so energy per operation ~ V^2): "
          "CG's optimum is then 0.408 GFLOP/J at the same point",
    "table6": "eps from S2 Table VI's per-core dynamic power over the per-core flop rate: CG 0.387 GFLOP/J",
}


def area_share_leakage_w(leakage_total_w: float, area_pct: float) -> float:
    """Static leakage of a unit taking ``area_pct`` % of the die, area-proportional (S2 Sec. 4.2): the core's
    3.9% of S2 Table IV times the 21 W of Table III is the 0.819 W S2 prints."""
    return leakage_total_w * area_pct / 100.0


class DesignSpaceError(ArchlineFitError):
    pass


@dataclass(frozen=True)
class VfPoint:
    voltage_v: float
    freq_hz: float
    core_dyn_w: float


@dataclass(frozen=True)
class DesignMachine:
    name: str
    die_area_mm2: float
    core_area_mm2: float
    flops_per_s_per_core_at_fmax: float
    b_mem_byte_per_s: float
    eps_flop_at_fmax_j: float
    eps_mem_j_per_byte: float
    pi_cpu_w: float
    leakage_total_w: float
    vf: tuple[VfPoint, ...]                      # sorted by frequency
    cacti: tuple[tuple[float, float], ...]       # (LLC bytes, area mm^2), sorted
    word_bytes: int = 8
    eps_scaling: str = "v"
    source: str = ""

    @property
    def f_min_hz(self) -> float:
        return self.vf[0].freq_hz

    @property
    def f_max_hz(self) -> float:
        return self.vf[-1].freq_hz

    def flops_per_core(self, f_hz: float) -> float:
        """F_flops(f): linear in f (S2 §6)."""
        return self.flops_per_s_per_core_at_fmax * f_hz / self.f_max_hz

    def voltage_v(self, f_hz: float) -> float:
        fs = [p.freq_hz for p in self.vf]
        return float(np.interp(f_hz, fs, [p.voltage_v for p in self.vf]))

    def eps_flop_j(self, f_hz: float) -> float:
        top = self.vf[-1]
        if self.eps_scaling == "v":
            return self.eps_flop_at_fmax_j * self.voltage_v(f_hz) / top.voltage_v
        if self.eps_scaling == "v2":
            return self.eps_flop_at_fmax_j * (self.voltage_v(f_hz) / top.voltage_v) ** 2
        fs = [p.freq_hz for p in self.vf]
        per_hz = float(np.interp(f_hz, fs, [p.core_dyn_w / p.freq_hz for p in self.vf]))
        return self.eps_flop_at_fmax_j * per_hz / (top.core_dyn_w / top.freq_hz)

    def llc_area_mm2(self, size_bytes: float) -> tuple[float, bool]:
        """CACTI area of an LLC of ``size_bytes``: log-log interpolation inside the table, linear extrapolation
        at the last interval's marginal area above it. Returns (area, extrapolated)."""
        sizes = [s for s, _ in self.cacti]
        areas = [a for _, a in self.cacti]
        if size_bytes <= sizes[-1]:
            if size_bytes < sizes[0]:
                return areas[0] * size_bytes / sizes[0], True
            a = float(np.exp(np.interp(np.log(size_bytes), np.log(sizes), np.log(areas))))
            return a, False
        slope = (areas[-1] - areas[-2]) / (sizes[-1] - sizes[-2])
        return areas[-1] + slope * (size_bytes - sizes[-1]), True

    def pi_cache_w(self, area_mm2: float) -> float:
        """Static leakage of the LLC, area-proportional from the chip's total (model.md §12.3, DERIVED)."""
        return self.leakage_total_w * area_mm2 / self.die_area_mm2

    def max_cores(self, llc_area_mm2: float) -> int:
        """P = floor((A - area(S)) / A_core) (model.md §12.3, DERIVED)."""
        return max(0, math.floor((self.die_area_mm2 - llc_area_mm2) / self.core_area_mm2 + 1e-9))

    def cores_at_alpha(self, alpha: float) -> int:
        return self.max_cores(alpha * self.die_area_mm2)


def _read_csv(name: str) -> list[dict[str, str]]:
    with (DATA_DIR / name).open() as f:
        return list(csv.DictReader(f))


def nehalem_ex(eps_scaling: str = "v") -> DesignMachine:
    """S2's testbed: Tables III-VI and §4.2 (fit/data/elango_*.csv)."""
    p = {r["parameter"]: r["value"] for r in _read_csv("elango_testbed_params.csv")}
    vf = sorted((VfPoint(float(r["voltage_v"]), float(r["clock_mhz"]) * 1e6, float(r["peak_core_dyn_w"]))
                 for r in _read_csv("elango_table6_vf_power.csv")), key=lambda v: v.freq_hz)
    cacti = tuple((float(r["size_kb"]) * 1024, float(r["area_mm2"])) for r in _read_csv("elango_table5_cacti_llc.csv"))
    leak = next(float(r["value"]) for r in _read_csv("elango_table3_nehalem_ex_spec.csv")
                if r["parameter"] == "Leakage (total)")
    core_pct = next(float(r["area_pct"]) for r in _read_csv("elango_table4_die_dimensions.csv") if r["unit"] == "Core")
    return DesignMachine(
        name="nehalem-ex", die_area_mm2=float(p["A (die area)"]), core_area_mm2=float(p["A_core"]),
        flops_per_s_per_core_at_fmax=float(p["F_flops(f) per core"]) * 1e9,
        b_mem_byte_per_s=float(p["B_mem"]) * 1e9, eps_flop_at_fmax_j=float(p["eps_flop(f)"]) * 1e-9,
        eps_mem_j_per_byte=float(p["eps_mem"]) * 1e-9, leakage_total_w=leak,
        pi_cpu_w=area_share_leakage_w(leak, core_pct),
        vf=tuple(vf), cacti=cacti, eps_scaling=_check_scaling(eps_scaling),
        source="S2 Tables III-VI, Sec. 4.2 (Intel Nehalem-EX, 45 nm; McPAT and CACTI)")


def _check_scaling(s: str) -> str:
    if s not in EPS_SCALINGS:
        raise DesignSpaceError(f"eps_flop scaling must be one of {', '.join(EPS_SCALINGS)}, got '{s}'")
    return s


class _Vf(Strict):
    voltage_v: float = Field(gt=0)
    freq_hz: float = Field(gt=0)
    core_dyn_w: float = Field(ge=0)


class _Cacti(Strict):
    size_bytes: float = Field(gt=0)
    area_mm2: float = Field(gt=0)


class MachineFile(Strict):
    """A user's machine file (TOML): any scalar of DesignMachine; missing keys take the Nehalem-EX values."""

    name: str | None = None
    source: str | None = None
    die_area_mm2: float | None = Field(default=None, gt=0)
    core_area_mm2: float | None = Field(default=None, gt=0)
    flops_per_s_per_core_at_fmax: float | None = Field(default=None, gt=0)
    b_mem_byte_per_s: float | None = Field(default=None, gt=0)
    eps_flop_at_fmax_j: float | None = Field(default=None, gt=0)
    eps_mem_j_per_byte: float | None = Field(default=None, gt=0)
    pi_cpu_w: float | None = Field(default=None, gt=0)
    leakage_total_w: float | None = Field(default=None, gt=0)
    word_bytes: int | None = Field(default=None, ge=1)
    eps_scaling: str | None = None
    vf: tuple[_Vf, ...] | None = Field(default=None, min_length=1)
    cacti: tuple[_Cacti, ...] | None = Field(default=None, min_length=2)


MACHINE_KEYS = set(MachineFile.model_fields)


def load_machine(path: Path) -> DesignMachine:
    """A user's machine as TOML: the scalar keys of DesignMachine (SI units, areas in mm^2), ``vf`` as a list of
    {voltage_v, freq_hz, core_dyn_w} and ``cacti`` as a list of {size_bytes, area_mm2}. Missing keys take the
    Nehalem-EX values."""
    data = read_toml(path, MACHINE_KEYS, "machine file", DesignSpaceError)
    f = validate(MachineFile, data, f"{path}:", error=ProfileFormatError)
    kw: dict[str, Any] = {k: v for k, v in f.model_dump(exclude={"vf", "cacti"}).items() if v is not None}
    kw["name"], kw["source"] = f.name or path.stem, f.source or str(path)
    if f.eps_scaling is not None:
        kw["eps_scaling"] = _check_scaling(f.eps_scaling)
    if f.vf is not None:
        kw["vf"] = tuple(sorted((VfPoint(v.voltage_v, v.freq_hz, v.core_dyn_w) for v in f.vf), key=lambda v: v.freq_hz))
    if f.cacti is not None:
        kw["cacti"] = tuple(sorted((c.size_bytes, c.area_mm2) for c in f.cacti))
    return replace(nehalem_ex(), **kw)


# --- the sweep --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Point:
    llc_bytes: float
    llc_area_mm2: float
    alpha: float
    max_cores: int
    cores: int
    freq_hz: float
    oi_flop_per_byte: float
    perf_flop_per_s: float
    flop_per_j: float
    bandwidth_bound: bool
    extrapolated: bool


@dataclass
class DesignSpace:
    algorithm: str
    machine: DesignMachine
    points: list[Point]
    llc_sizes_bytes: list[float]
    freqs_hz: list[float]
    notes: list[str] = field(default_factory=list)
    reading: str = "full"

    def best(self, objective: str = "energy") -> Point:
        key = (lambda p: p.flop_per_j) if objective == "energy" else (lambda p: (p.perf_flop_per_s, p.flop_per_j))
        return max(self.points, key=key)

    def best_per_llc(self, objective: str = "energy") -> list[Point]:
        out = []
        for s in self.llc_sizes_bytes:
            ps = [p for p in self.points if p.llc_bytes == s]
            if ps:
                out.append(max(ps, key=(lambda p: p.flop_per_j) if objective == "energy"
                               else (lambda p: (p.perf_flop_per_s, p.flop_per_j))))
        return out


def case_of(m: DesignMachine, oi_flop_per_byte: float, cores: int) -> str:
    """S2 §6's cases for p = ``cores`` active cores:
    I   bandwidth-bound on one core at f_min;
    II  compute-bound with p cores at every f;
    III compute-bound at f_min, bandwidth-bound at f_max (an f_cutoff in between);
    IV  compute-bound with p at every f and bandwidth-bound with p+1 at every f (q*F(f_min) > B_mem*OI);
    else bandwidth-bound with p cores at every f."""
    roof = m.b_mem_byte_per_s * oi_flop_per_byte
    fmin, fmax = m.flops_per_core(m.f_min_hz), m.flops_per_core(m.f_max_hz)
    if roof < fmin:
        return "I"
    if cores * fmax <= roof:
        return "IV" if (cores + 1) * fmin > roof else "II"
    if cores * fmin <= roof:
        return "III"
    return "bandwidth-bound"


def llc_bytes_at_area(m: DesignMachine, area_mm2: float) -> float:
    """The LLC size whose (interpolated or extrapolated) CACTI area is ``area_mm2``: the inverse of llc_area_mm2."""
    lo, hi = 1.0, 2.0**40
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        if m.llc_area_mm2(mid)[0] < area_mm2:
            lo = mid
        else:
            hi = mid
    return math.sqrt(lo * hi)


def at_alpha(algorithm: str, alpha: float, m: DesignMachine | None = None, *, freq_hz: float | None = None,
             reading: str | None = None) -> Point:
    """The chip with alpha of its area in LLC and every core that fits (P_max) running at ``freq_hz`` (default
    f_max): the roofline point of S2 Sec. 5 / Fig. 5-6 (bandwidth_bound says which roof holds)."""
    m = m or nehalem_ex()
    if not 0 < alpha < 1:
        raise DesignSpaceError(f"alpha must lie in (0, 1), got {alpha:g}")
    f = m.f_max_hz if freq_hz is None else freq_hz
    area = alpha * m.die_area_mm2
    s = llc_bytes_at_area(m, area)
    p = m.max_cores(area)
    if p < 1:
        raise DesignSpaceError(f"alpha = {alpha:g} leaves no room for a core")
    oi = oi_upper_bound(algorithm, s, m.word_bytes, reading).oi_upper_flop_per_byte
    compute, bw = p * m.flops_per_core(f), m.b_mem_byte_per_s * oi
    perf = min(compute, bw)
    e = m.eps_flop_j(f) + m.eps_mem_j_per_byte / oi + (p * m.pi_cpu_w + m.pi_cache_w(area)) / perf
    return Point(s, area, alpha, p, p, f, oi, perf, 1.0 / e, bw < compute, m.llc_area_mm2(s)[1])


def default_llc_sizes() -> list[float]:
    """4 KB to 64 MB in powers of two (S2 §5)."""
    return [4096.0 * 2**k for k in range(15)]


def sweep(algorithm: str, machine: DesignMachine | None = None, *, llc_sizes_bytes: Sequence[float] | None = None,
          freqs_hz: Sequence[float] | None = None, reading: str | None = None) -> DesignSpace:
    """Every (LLC size, active cores, frequency) of the design space with its perf and flop/J bounds; ``reading``
    names the bound's reading (FFT: "full" or "half", fit/analyses/elango/oi_bounds.py)."""
    m = machine or nehalem_ex()
    sizes = list(llc_sizes_bytes or default_llc_sizes())
    freqs = sorted(freqs_hz or [p.freq_hz for p in m.vf])
    if any(f < m.f_min_hz * (1 - 1e-9) or f > m.f_max_hz * (1 + 1e-9) for f in freqs):
        raise DesignSpaceError(f"frequencies must lie in the V/f table's range "
                               f"{m.f_min_hz / 1e6:g}-{m.f_max_hz / 1e6:g} MHz")
    pts: list[Point] = []
    notes: list[str] = []
    extrap: list[float] = []
    for s in sizes:
        area, ext = m.llc_area_mm2(s)
        if ext:
            extrap.append(s)
        pmax = m.max_cores(area)
        if pmax < 1:
            notes.append(f"LLC of {_fmt_bytes(s)} ({area:.0f} mm^2) leaves no room for a core: skipped")
            continue
        b: BoundResult = oi_upper_bound(algorithm, s, m.word_bytes, reading)
        oi = b.oi_upper_flop_per_byte
        pi_cache = m.pi_cache_w(area)
        for f in freqs:
            eps_f = m.eps_flop_j(f)
            per_core = m.flops_per_core(f)
            for p in range(1, pmax + 1):
                compute, bw = p * per_core, m.b_mem_byte_per_s * oi
                perf = min(compute, bw)
                e = eps_f + m.eps_mem_j_per_byte / oi + (p * m.pi_cpu_w + pi_cache) / perf
                pts.append(Point(s, area, area / m.die_area_mm2, pmax, p, f, oi, perf, 1.0 / e, bw < compute, ext))
    if not pts:
        raise DesignSpaceError("no LLC size leaves room for a core on this chip")
    if extrap:
        top = m.cacti[-1][0]
        notes.append(f"LLC areas above {_fmt_bytes(top)} ({', '.join(_fmt_bytes(s) for s in extrap if s > top)}) are "
                     f"EXTRAPOLATED linearly past the CACTI table (S2 Table V ends at {_fmt_bytes(top)}) at "
                     f"{(m.cacti[-1][1] - m.cacti[-2][1]) / ((m.cacti[-1][0] - m.cacti[-2][0]) / 2**20):.2f} "
                     "mm^2/MB")
    notes.append(f"eps_flop(f) scaled by '{m.eps_scaling}' ({EPS_SCALING_NOTES[m.eps_scaling]}) from "
                 f"{m.eps_flop_at_fmax_j * 1e9:g} nJ at {m.f_max_hz / 1e9:g} GHz")
    bound = get_bound(algorithm)
    name, _ = bound.reading_factor(reading)
    if len(bound.readings) > 1:
        why = next(w for n, _, w in bound.readings if n == name)
        notes.append(f"{algorithm} bound read '{name}': {why}")
    return DesignSpace(algorithm, m, pts, sizes, freqs, notes, name)


def _fmt_bytes(b: float) -> str:
    for unit, k in (("MB", 2**20), ("KB", 2**10)):
        if b >= k and b % k == 0:
            return f"{b / k:g} {unit}"
    return f"{b:g} B"
