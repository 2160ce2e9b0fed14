"""What a run found, from its rows: peak GFLOP/s per precision, bandwidth per level, balance point and checksum
status -- the numbers likwid-bench and clpeak users read first. Pure: rows in (as read from the CSV, strings or
numbers), a dict out; the cli prints it as a table or JSON.

Each figure is robust, never a single lucky point: the rows that measure it (checksum not failed, a positive time)
give its plateau by the one rule of archline.common.peaks (the median of the best three is the reference; a row
more than PLATEAU_REL above it is an outlier, left out), and its value is the median of the plateau's rows (the flat
top of the intensity sweep, the bandwidth-bound low end, a cache level's working sets), taken over the clean ones
(not throttled, CI reached, spread small) where at least MIN_POINTS are clean. A figure that rests on fewer than
MIN_POINTS points, on noisy rows only, or whose rows' own spread exceeds NOISY_SPREAD_REL, or a cache level not
faster than the level outside it (its working set did not stay in that cache), is marked not
trusted, with the reason and what to do."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from archline.common.peaks import plateau

# Level column -> the name users know (ERT's names: DRAM, L1, L2, L3).
LEVELS: tuple[tuple[str, str], ...] = (("bytes_mem", "DRAM"), ("bytes_l3", "L3"), ("bytes_l2", "L2"),
                                       ("bytes_l1", "L1"))
PRECISION_FLOPS = (("sp", "flops_sp"), ("dp", "flops_dp"))
#: kernels whose flop rate is a compute peak; the others' adds (a cache sum, a memory ceiling) only move data
PEAK_KERNELS = frozenset({"intensity", "ceil_flop"})
_TRUE = frozenset({"1", "true", "yes", "y", "t"})

#: fewest points a figure may rest on and be trusted
MIN_POINTS = 2
#: a row whose regions' time spread ((max - min) / median) exceeds this is noisy; a figure whose points' median
#: spread exceeds it is not trusted
NOISY_SPREAD_REL = 0.10
#: a cache level must be at least this much faster than the level outside it to be that cache (else its working set
#: spilled: a VM's reported L3 that is not there, an L2 share that is not private)
DISTINCT_REL = 0.05
#: what to do about a figure not trusted: options `bench run` has (check cli/bench.py before naming another)
ADVICE = ("rerun at a quieter moment (other programs share these cores: `uptime` shows the load), with longer "
          "regions (--min-time 0.2), or pinned to cores nothing else uses (--cpus)")


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
    if v is None or v == "":
        return None
    if isinstance(v, bool):
        return v
    return str(v).strip().lower() in _TRUE


def row_noise(row: Mapping[str, Any]) -> str:
    """Why a row is noisy ('' when clean): throttling suspected, its CI not reached, its regions' spread."""
    if str(row.get("throttled", "")).strip().lower() in _TRUE:
        return "throttled"
    if "CI not below" in str(row.get("note") or ""):
        return "CI not reached"
    spread = _num(row, "time_spread_rel")
    if spread > NOISY_SPREAD_REL:
        return f"spread {spread:.0%}"
    return ""


@dataclass(frozen=True)
class Figure:
    """One summary figure and what it rests on."""

    value: float              #: GFLOP/s or GB/s (the unit is the figure's kind's)
    points: int               #: rows the value is the median of
    candidates: int           #: rows that measured it (checksum not failed)
    spread_rel: float         #: (max - min) / median over the points; one point: its own regions' spread
    outliers: int             #: rows above the plateau, left out
    noisy_points: int         #: of ``points``, rows that are noisy (used only where too few were clean)
    why_not_trusted: str      #: '' when trusted

    def as_json(self, unit_key: str) -> dict[str, Any]:
        return {unit_key: self.value, "points": self.points, "candidates": self.candidates,
                "spread_rel": self.spread_rel, "outliers": self.outliers, "noisy_points": self.noisy_points,
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
    spread = (max(rates) - min(rates)) / value if len(rates) > 1 else (own[0] if own else math.nan)
    noisy = sum(bool(row_noise(row)) for _, row in used)
    why = ""
    if len(used) < MIN_POINTS:
        why = f"rests on {len(used)} point"
    elif noisy == len(used):
        why = f"every point is noisy ({row_noise(used[0][1])})"
    elif own and statistics.median(own) > NOISY_SPREAD_REL:
        why = f"its points' regions spread {statistics.median(own):.0%}"
    return Figure(value, len(used), len(samples), spread, outliers, noisy, why)


def _figures(rows: list[Mapping[str, Any]]) -> tuple[dict[str, Figure], dict[str, Figure]]:
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
            if b > 0:
                bws.setdefault(level, []).append((b / time_s / 1e9, row))
    peak_figs = {p: fig for p in ("sp", "dp") if (fig := robust_figure(peaks.get(p, [])))}
    bw_figs = {lvl: fig for _, lvl in LEVELS if (fig := robust_figure(bws.get(lvl, [])))}
    outer = None     # DRAM, then L3, L2, L1: each cache level must beat the level outside it
    for _, lvl in LEVELS:
        fig = bw_figs.get(lvl)
        if fig is None:
            continue
        if outer is not None and fig.value < bw_figs[outer].value * (1 + DISTINCT_REL) and not fig.why_not_trusted:
            bw_figs[lvl] = Figure(fig.value, fig.points, fig.candidates, fig.spread_rel, fig.outliers,
                                  fig.noisy_points, f"not faster than {outer} ({bw_figs[outer].value:.4g} GB/s): "
                                  "the working set did not stay in this cache")
        outer = lvl
    return peak_figs, bw_figs


def summarize(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Robust peaks (GFLOP/s) per precision and bandwidths (GB/s) per level the rows measured (see the module's
    doc), each with its points and spread under ``figures``; balance points (flop per DRAM byte) and the checksum
    count. Rows with a failed checksum count in the status only."""
    rows = list(rows)
    n = n_ok = n_checked = 0
    emulated = False
    backends: set[str] = set()
    for row in rows:
        n += 1
        ok = checksum_state(row)
        if ok is not None:
            n_checked += 1
            n_ok += ok
        if str(row.get("emulated", "")).strip().lower() in _TRUE:
            emulated = True
        if row.get("backend"):
            backends.add(str(row["backend"]))
    peak_figs, bw_figs = _figures(rows)
    peaks = {p: f.value for p, f in peak_figs.items()}
    bandwidths = {lvl: f.value for lvl, f in bw_figs.items()}
    dram = bandwidths.get("DRAM")
    balance = {p: g / dram for p, g in peaks.items() if dram}
    figures = {**{f"peak {p.upper()}": f.as_json("gflop_per_s") for p, f in peak_figs.items()},
               **{f"bandwidth {lvl}": f.as_json("gb_per_s") for lvl, f in bw_figs.items()}}
    noisy = [name for name, f in figures.items() if not f["trusted"]]
    return {"peaks_gflop_per_s": peaks, "bandwidths_gb_per_s": bandwidths, "balance_flop_per_byte": balance,
            "figures": figures, "not_trusted": noisy, "advice": ADVICE if noisy else None,
            "checksums": {"ok": n_ok, "checked": n_checked, "rows": n}, "backends": sorted(backends),
            "emulated": emulated, "energy_source": _energy_source(rows)}


def _energy_source(rows: Iterable[Mapping[str, Any]]) -> str | None:
    """Where the rows' energy came from when it is not the program's (``bench run --emulate`` on a platform with
    no power model: a busy/idle schedule x the measured time, its words in each row's note); None otherwise."""
    from archline.bench.emulated.schedule import NOTE

    found = {seg for row in rows for seg in str(row.get("note") or "").split("; ") if seg.startswith(NOTE)}
    return "; ".join(sorted(found)) or None


def _basis(fig: Mapping[str, Any] | None) -> str:
    """How a figure was reached, in words: its points, their spread, what was left out, whether to trust it."""
    if not fig:
        return ""
    n = fig["points"]
    text = f"median of {n} points" if n > 1 else "1 point"
    if math.isfinite(fig["spread_rel"]):
        text += f", spread {fig['spread_rel']:.1%}"
    if fig["outliers"]:
        text += f", {fig['outliers']} outlier(s) left out"
    if fig["noisy_points"]:
        text += f", {fig['noisy_points']} noisy"
    if not fig["trusted"]:
        text += f"; NOT TRUSTED: {fig['why_not_trusted']}"
    return text


def summary_rows(summary: Mapping[str, Any]) -> list[tuple[str, str, str, str]]:
    """(quantity, value, unit, basis) rows for a table, values rounded to 4 significant digits; a last row says
    what to do when a figure is not trusted."""
    figs = summary.get("figures", {})
    out: list[tuple[str, str, str, str]] = []
    for p, g in summary["peaks_gflop_per_s"].items():
        out.append((f"peak {p.upper()}", f"{g:.4g}", "GFLOP/s", _basis(figs.get(f"peak {p.upper()}"))))
    for lvl, b in summary["bandwidths_gb_per_s"].items():
        out.append((f"bandwidth {lvl}", f"{b:.4g}", "GB/s", _basis(figs.get(f"bandwidth {lvl}"))))
    for p, x in summary["balance_flop_per_byte"].items():
        out.append((f"balance {p.upper()}", f"{x:.3g}", "flop/B", "peak / DRAM"))
    if not summary["peaks_gflop_per_s"]:
        out.append(("peak", "none", "", "no compute kernel ran (intensity or ceilings)"))
    c = summary["checksums"]
    if c["checked"] == 0:
        why = "emulated" if summary["emulated"] else "no checksum column"
        out.append(("checksums", f"not computed ({why})", "", f"of {c['rows']} rows"))
    else:
        status = "ok" if c["ok"] == c["checked"] else "FAILED"
        left = c["rows"] - c["checked"]
        out.append(("checksums", f"{c['ok']}/{c['checked']} {status}", "",
                    f"of {c['rows']} rows" + (f" ({left} not computed)" if left else "")))
    out.append(("source", "emulated" if summary["emulated"] else "measured", "", ", ".join(summary["backends"])))
    if summary.get("energy_source"):      # real kernels' times, an emulated schedule's energy: say which is which
        out.append(("energy", "emulated", "", str(summary["energy_source"])))
    if summary.get("not_trusted"):
        out.append(("not trusted", ", ".join(summary["not_trusted"]), "", str(summary["advice"])))
    return out


def plot_roof(summary: Mapping[str, Any], precision: str) -> tuple[tuple[float, float, str] | None, list[str]]:
    """The roofline a run's figure draws for ``precision`` (peak flop/s, DRAM byte/s, how they were reached) from
    the summary, so the PNG shows the table's figures; None where the run measured no such peak or no DRAM. The
    notes name the cache levels' bandwidths and every figure not trusted."""
    figs = summary.get("figures", {})
    peak = summary["peaks_gflop_per_s"].get(precision)
    dram = summary["bandwidths_gb_per_s"].get("DRAM")
    notes = []
    caches = [f"{lvl} {b:.4g} GB/s" for lvl, b in summary["bandwidths_gb_per_s"].items() if lvl != "DRAM"]
    if caches:
        notes.append("cache bandwidths: " + ", ".join(caches))
    if summary.get("not_trusted"):     # one line: the reasons are in the summary table and roofline.json
        notes.append(f"NOT TRUSTED (too noisy or too few points): {', '.join(summary['not_trusted'])}")
    if peak is None or dram is None:
        return None, notes
    n_peak = figs.get(f"peak {precision.upper()}", {}).get("points", 1)
    n_dram = figs.get("bandwidth DRAM", {}).get("points", 1)
    return (peak * 1e9, dram * 1e9, f"medians of {n_peak} and {n_dram} points"), notes
