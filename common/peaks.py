"""The one rule that turns many measured rates of one figure into its peak: the reference is the first rate (from the
fastest down) that another rate supports within :data:`PLATEAU_REL`, so one lucky point cannot set it; the rows
within that share of it on either side are the plateau, and a row further above is an outlier, left out. The run
summary (bench/run/summary.py) and the time cost table (fit/regress/timing.py) both call it, so a run's printed
peaks and its fitted taus agree.

:func:`row_figures` applies it to result rows (the run summary's choice: peaks from the peak kernels' rows, each
level's bandwidth from the rows aimed at that level, never a peak kernel's for a cache; noisy rows give way to
clean ones): the run summary, roofline.json and `archline plot`'s observed roofline (fit/plots/inputs.py) all show
its figures."""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# Level column -> the name users know (ERT's names: DRAM, L1, L2, L3).
LEVELS: tuple[tuple[str, str], ...] = (("bytes_mem", "DRAM"), ("bytes_l3", "L3"), ("bytes_l2", "L2"),
                                       ("bytes_l1", "L1"))
PRECISION_FLOPS = (("sp", "flops_sp"), ("dp", "flops_dp"))
#: kernels whose flop rate is a compute peak; the others' adds (a cache sum, a memory ceiling) only move data
PEAK_KERNELS = frozenset({"intensity", "ceil_flop"})
TRUE_WORDS = frozenset({"1", "true", "yes", "y", "t"})

#: fewest points a figure may rest on and be trusted
MIN_POINTS = 2
#: a row whose regions' time spread ((max - min) / median) exceeds this is noisy; a figure whose points' median
#: spread exceeds it is not trusted
NOISY_SPREAD_REL = 0.10
#: a cache level must be at least this much faster than the level outside it to be that cache (else its working set
#: spilled: a VM's reported L3 that is not there, an L2 share that is not private)
DISTINCT_REL = 0.05
#: the plateau's half-width around the reference (a VM's clock hiccup once gave 146.9 GFLOP/s on a 2-core Zen 3
#: that peaks near 100: 47% above, far outside)
PLATEAU_REL = 0.10


@dataclass(frozen=True)
class Plateau:
    reference: float             #: the fastest rate another rate supports
    indices: tuple[int, ...]     #: positions (in the rates given) of the plateau's rates, fastest first
    outliers: int                #: rates above the plateau

    def rates(self, rates: Sequence[float]) -> list[float]:
        return [rates[i] for i in self.indices]


def plateau(rates: Sequence[float]) -> Plateau:
    """The plateau of ``rates`` (finite and positive; at least one): going down from the fastest, the first rate
    that another rate supports (within :data:`PLATEAU_REL` of it) is the reference, its window the plateau, and the
    rates above that window outliers. Where no two rates agree (a sparse sweep whose top is one point), the fastest
    is the reference alone, with no outlier: a figure resting on one point, which the caller says."""
    if not rates:
        raise ValueError("plateau of no rates")
    order = sorted(range(len(rates)), key=lambda i: -rates[i])

    def window(ref: float) -> tuple[int, ...]:
        return tuple(i for i in order if ref * (1 - PLATEAU_REL) <= rates[i] <= ref * (1 + PLATEAU_REL))

    for i in order:
        if len(members := window(rates[i])) >= 2:
            hi = rates[i] * (1 + PLATEAU_REL)
            return Plateau(rates[i], members, sum(rates[j] > hi for j in order))
    return Plateau(rates[order[0]], (order[0],), 0)


def _num(row: Mapping[str, Any], key: str) -> float:
    v = row.get(key)
    if v is None or v == "":
        return math.nan
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def checksum_state(row: Mapping[str, Any]) -> bool | None:
    """checksum_ok read once: True, False, or None where it was not computed (an emulated row, an empty cell)."""
    v = row.get("checksum_ok")
    if v is None or v == "" or (isinstance(v, float) and math.isnan(v)):    # a data frame's empty cell: NaN
        return None
    if isinstance(v, bool):
        return v
    return str(v).strip().lower() in TRUE_WORDS


def row_noise(row: Mapping[str, Any]) -> str:
    """Why a row is noisy ('' when clean): throttling suspected, its CI not reached, its regions' spread."""
    if str(row.get("throttled", "")).strip().lower() in TRUE_WORDS:
        return "throttled"
    if "CI not below" in str(row.get("note") or ""):
        return "CI not reached"
    spread = _num(row, "time_spread_rel")
    if spread > NOISY_SPREAD_REL:
        return f"spread {spread:.0%}"
    return ""


@dataclass(frozen=True)
class Figure:
    """One summary figure and what it rests on. Every candidate is accounted for: ``points + outliers +
    below_plateau + noisy_left_out == candidates``."""

    value: float              #: GFLOP/s or GB/s (the unit is the figure's kind's)
    points: int               #: rows the value is the median of
    candidates: int           #: rows that measured it (checksum not failed)
    spread_rel: float         #: the figure's uncertainty: points_spread_rel, or for one point regions_spread_rel
    outliers: int             #: rows above the plateau, left out
    noisy_points: int         #: of ``points``, rows that are noisy (used only where too few were clean)
    why_not_trusted: str      #: '' when trusted
    below_plateau: int = 0    #: rows below the plateau (not at the peak: a lower intensity, a spilled working set)
    noisy_left_out: int = 0   #: plateau rows left out as noisy because enough clean ones were there
    points_spread_rel: float = math.nan    #: (max - min) / median across the points; NaN for one point
    regions_spread_rel: float = math.nan   #: median of the points' own regions' time spread

    def as_json(self, unit_key: str) -> dict[str, Any]:
        def num(x: float) -> float | None:
            return x if math.isfinite(x) else None
        return {unit_key: self.value, "points": self.points, "candidates": self.candidates,
                "spread_rel": num(self.spread_rel), "points_spread_rel": num(self.points_spread_rel),
                "regions_spread_rel": num(self.regions_spread_rel), "outliers": self.outliers,
                "below_plateau": self.below_plateau, "noisy_left_out": self.noisy_left_out,
                "noisy_points": self.noisy_points,
                "trusted": not self.why_not_trusted, "why_not_trusted": self.why_not_trusted or None}


def robust_figure(samples: list[tuple[float, Mapping[str, Any]]]) -> Figure | None:
    """The figure of ``samples`` ((rate, row) of every row that measured it); None without any."""
    if not samples:
        return None
    found = plateau([r for r, _ in samples])
    outliers = found.outliers
    plateau_rows = [samples[i] for i in found.indices]
    clean = [(r, row) for r, row in plateau_rows if not row_noise(row)]
    used = clean if len(clean) >= MIN_POINTS else plateau_rows
    rates = [r for r, _ in used]
    value = statistics.median(rates)
    own = [s for _, row in used if math.isfinite(s := _num(row, "time_spread_rel"))]
    points_spread = (max(rates) - min(rates)) / value if len(rates) > 1 else math.nan
    regions_spread = statistics.median(own) if own else math.nan
    spread = points_spread if len(rates) > 1 else regions_spread
    noisy = sum(bool(row_noise(row)) for _, row in used)
    why = ""
    if len(used) < MIN_POINTS:
        why = f"rests on {len(used)} point"
    elif noisy == len(used):
        why = f"every point is noisy ({row_noise(used[0][1])})"
    elif own and regions_spread > NOISY_SPREAD_REL:
        why = f"its points' regions spread {regions_spread:.0%}"
    return Figure(value, len(used), len(samples), spread, outliers, noisy, why,
                  below_plateau=len(samples) - len(found.indices) - outliers,
                  noisy_left_out=len(plateau_rows) - len(used), points_spread_rel=points_spread,
                  regions_spread_rel=regions_spread)


#: the ``level`` cell of a row aimed at each figure's level
LEVEL_CELLS = {"DRAM": "mem", "L3": "l3", "L2": "l2", "L1": "l1"}


def _aims_at(row: Mapping[str, Any], level: str) -> bool:
    """Whether ``row`` measures ``level``'s bandwidth: its ``level`` cell names it (a row without one counts for
    every level it moved bytes at, as rows written before the column did), and for a cache level it is no peak
    kernel's row (the quick roofline's peak points run on L1-resident data: their L1 loads, 1 GB/s beside the
    cache kernel's 70, are incidental to the flops, not L1's bandwidth)."""
    cell = str(row.get("level") or "").strip().lower()
    if level != "DRAM" and row.get("kernel") in PEAK_KERNELS:
        return False
    return cell in ("", LEVEL_CELLS[level])


def row_figures(rows: list[Mapping[str, Any]]) -> tuple[dict[str, Figure], dict[str, Figure]]:
    """Peaks from the peak kernels' rows; each level's bandwidth from the rows that measure it (:func:`_aims_at`).
    A cache level not faster than the level outside it, or slower than DRAM (non-physical), is not trusted, with
    the reason."""
    peaks: dict[str, list[tuple[float, Mapping[str, Any]]]] = {}
    bws: dict[str, list[tuple[float, Mapping[str, Any]]]] = {}
    for row in rows:
        time_s = _num(row, "time_s")
        if checksum_state(row) is False or not time_s > 0:
            continue
        for prec, col in PRECISION_FLOPS if row.get("kernel") in PEAK_KERNELS else ():
            f = _num(row, col)
            if f > 0:
                peaks.setdefault(prec, []).append((f / time_s / 1e9, row))
        if row.get("kernel") == "chase":  # latency, not bandwidth
            continue
        for col, level in LEVELS:
            b = _num(row, col)
            if b > 0 and _aims_at(row, level):
                bws.setdefault(level, []).append((b / time_s / 1e9, row))
    peak_figs = {p: fig for p in ("sp", "dp") if (fig := robust_figure(peaks.get(p, [])))}
    bw_figs = {lvl: fig for _, lvl in LEVELS if (fig := robust_figure(bws.get(lvl, [])))}
    outer = None     # DRAM, then L3, L2, L1: each cache level must beat the level outside it
    dram = bw_figs.get("DRAM")
    for _, lvl in LEVELS:
        fig = bw_figs.get(lvl)
        if fig is None:
            continue
        why = ""
        if dram is not None and lvl != "DRAM" and fig.value < dram.value:
            why = (f"slower than DRAM ({dram.value:.4g} GB/s), which no cache is: non-physical (a noisy or "
                   "misplaced run)")
        elif outer is not None and fig.value < bw_figs[outer].value * (1 + DISTINCT_REL):
            why = (f"not faster than {outer} ({bw_figs[outer].value:.4g} GB/s): the working set did not stay in "
                   "this cache")
        if why:
            bw_figs[lvl] = dataclasses.replace(
                fig, why_not_trusted="; ".join(w for w in (fig.why_not_trusted, why) if w))
        outer = lvl
    return peak_figs, bw_figs
