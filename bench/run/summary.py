"""What a run found, from its rows: peak GFLOP/s per precision, bandwidth per level, balance point and checksum
status -- the numbers likwid-bench and clpeak users read first. Pure: rows in (as read from the CSV, strings or
numbers), a dict out; the cli prints it as a table or JSON.

Each figure is robust, never a single lucky point: the rows that measure it (checksum not failed, a positive time)
give its plateau by the one rule of archline.common.peaks (the fastest rate another supports is the reference; a row
more than PLATEAU_REL above it is an outlier, left out), and its value is the median of the plateau's rows (the flat
top of the intensity sweep, the bandwidth-bound low end, a cache level's working sets), taken over the clean ones
(not throttled, CI reached, spread small) where at least MIN_POINTS are clean. A figure that rests on fewer than
MIN_POINTS points, on noisy rows only, or whose rows' own spread exceeds NOISY_SPREAD_REL, or a cache level not
faster than the level outside it (its working set did not stay in that cache), is marked not
trusted, with the reason and what to do."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from archline.common.peaks import (  # noqa: F401  (the figures' rule lives there; export.py reads these here)
    DISTINCT_REL,
    LEVELS,
    MIN_POINTS,
    NOISY_SPREAD_REL,
    PEAK_KERNELS,
    PRECISION_FLOPS,
    Figure,
    checksum_state,
    robust_figure,
    row_figures,
    row_noise,
)
from archline.common.peaks import TRUE_WORDS as _TRUE

#: what to do about a figure not trusted: options `bench run` has (check cli/bench.py before naming another);
#: ADVICE_CPUS only where every row's back end takes --cpus (the registry's BackendInfo.options)
ADVICE = ("rerun at a quieter moment (other programs share these cores: `uptime` shows the load), with longer "
          "regions (--min-time 0.2)")
ADVICE_CPUS = ", or pinned to cores nothing else uses (--cpus)"


def advice(backends: Iterable[str]) -> str:
    """What to do about a figure not trusted, naming only options the run's back ends take."""
    from archline.bench.registry import taking

    found = set(backends)
    return ADVICE + (ADVICE_CPUS if found and found <= set(taking("cpus")) else "")


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
    peak_figs, bw_figs = row_figures(rows)
    peaks = {p: f.value for p, f in peak_figs.items()}
    bandwidths = {lvl: f.value for lvl, f in bw_figs.items()}
    dram = bandwidths.get("DRAM")
    balance = {p: g / dram for p, g in peaks.items() if dram}
    figures = {**{f"peak {p.upper()}": f.as_json("gflop_per_s") for p, f in peak_figs.items()},
               **{f"bandwidth {lvl}": f.as_json("gb_per_s") for lvl, f in bw_figs.items()}}
    noisy = [name for name, f in figures.items() if not f["trusted"]]
    return {"peaks_gflop_per_s": peaks, "bandwidths_gb_per_s": bandwidths, "balance_flop_per_byte": balance,
            "figures": figures, "not_trusted": noisy, "advice": advice(backends) if noisy else None,
            "checksums": {"ok": n_ok, "checked": n_checked, "rows": n}, "backends": sorted(backends),
            "emulated": emulated, "energy_source": _energy_source(rows)}


def _energy_source(rows: Iterable[Mapping[str, Any]]) -> str | None:
    """Where the rows' energy came from when it is not the program's (``bench run --emulate`` on a platform with
    no power model: a busy/idle schedule x the measured time, its words in each row's note); None otherwise."""
    from archline.bench.emulated.schedule import NOTE

    found = {seg for row in rows for seg in str(row.get("note") or "").split("; ") if seg.startswith(NOTE)}
    return "; ".join(sorted(found)) or None


def _basis(fig: Mapping[str, Any] | None) -> str:
    """How a figure was reached, in words: its points, their spread (across the points; for one point its own
    regions' spread, named so), where every other candidate went, whether to trust it."""
    if not fig:
        return ""
    n = fig["points"]
    text = f"median of {n} points" if n > 1 else "1 point"
    pts, regions = fig.get("points_spread_rel"), fig.get("regions_spread_rel")
    if "points_spread_rel" not in fig:      # a figure written before the two spreads were told apart
        pts, regions = (fig.get("spread_rel"), None) if n > 1 else (None, fig.get("spread_rel"))
    if n > 1 and isinstance(pts, (int, float)) and math.isfinite(pts):
        text += f", points spread {pts:.1%}"
    elif n == 1 and isinstance(regions, (int, float)) and math.isfinite(regions):
        text += f", its regions spread {regions:.1%}"
    left = [(fig.get("outliers") or 0, "above the plateau"), (fig.get("below_plateau") or 0, "below the plateau"),
            (fig.get("noisy_left_out") or 0, "noisy (enough clean ones)")]
    if any(k for k, _ in left):
        text += f"; of {fig['candidates']} candidates, left out: " + ", ".join(f"{k} {w}" for k, w in left if k)
    if fig["noisy_points"]:
        text += f"; {fig['noisy_points']} of the points noisy"
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
    source = "emulated" if summary["emulated"] else "measured"     # the rows' provenance, then their back ends
    out.append(("source", source, "", ", ".join(summary["backends"])))
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
