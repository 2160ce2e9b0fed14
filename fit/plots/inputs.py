"""Turn the command line's mix of platform names, profiles, cost tables and result CSVs into plot inputs, and say
plainly (on the figure and, through the CLI, on stderr) whenever the figure cannot be what was asked for."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from archline.fit.plots.rooflines import KINDS, Curve, Measured, curves_for, plot_model
from archline.formats import schema
from archline.formats.platforms.profiles import Platform, load_platform
from archline.model.errors import ArchlineFitError
from archline.model.machine import Machine

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


def is_results(item: str) -> bool:
    """A results CSV (also a pipe, ``/dev/stdin`` or ``<(...)``), a Parquet file or a data set directory (not a
    platform name, profile or cost table)."""
    from archline.formats.results_read import is_results_csv

    return is_results_csv(item) or item.endswith(".parquet") or Path(item).is_dir()


def measured_from_results(path: Path, precision: str | None, notes: list[str] | None = None,
                          where: Sequence[str] = (), found: list[str] | None = None) -> list[Measured]:
    """Intensity-kernel rows of an archline.results/1 CSV, Parquet file or data set directory as points:
    I = flops/bytes_mem, rate, flop/J, power; ``where`` filters select rows (:mod:`archline.fit.io.select`).
    ``precision`` None: every precision the intensity rows have (sp, then dp), each added to ``found``; the file
    is read once (a pipe works).

    Rows whose energy_j is missing or not positive keep their time point; they are left out of the arch and power
    lines, and ``notes`` says how many."""
    from archline.formats.dataset import read_csv_frame, read_frame
    from archline.formats.results_read import is_results_csv

    csv = is_results_csv(str(path)) or not (path.is_dir() or path.suffix == ".parquet")
    df = read_csv_frame(path) if csv else read_frame(path)
    if where:
        from archline.fit.io.select import apply_where

        df = apply_where(df, where, str(path))
    need = {*schema.REQUIRED, "flops_sp", "flops_dp", "bytes_mem"}   # time-only rows plot too: no energy_j needed
    missing = need - set(df.columns)
    if missing:
        cols = ", ".join(sorted(missing))
        raise ArchlineFitError(f"{path}: not an {schema.SCHEMA} file (missing columns: {cols})")
    every = df
    df = df[df["kernel"] == "intensity"]
    present = [p for p in ("sp", "dp") if bool((df["precision"] == p).any())]
    out: list[Measured] = []
    for prec in [precision] if precision is not None else present:
        if found is not None and prec not in found:
            found.append(prec)
        out += _measured_points(path, df[df["precision"] == prec], prec, notes, every)
    return out


def _group_keys(df: pd.DataFrame) -> list[str]:
    return ["platform", "backend"] if "backend" in df else ["platform"]


def robust_roof(rows: pd.DataFrame, precision: str) -> tuple[float, float, str] | None:
    """(peak flop/s, DRAM byte/s, how) of one platform and back end's rows by the run summary's rule
    (archline.common.peaks.row_figures: peaks from the peak kernels' rows, DRAM from the rows that moved bytes_mem,
    each the median of its plateau), so the plot shows the summary's, roofline.json's and fit's figures; None
    where the rows measured no such peak or no DRAM."""
    from archline.common.peaks import row_figures

    peaks, bws = row_figures(rows.to_dict("records"))
    peak, dram = peaks.get(precision), bws.get("DRAM")
    if peak is None or dram is None:
        return None
    how = f"medians of {peak.points} and {dram.points} points"
    if peak.why_not_trusted or dram.why_not_trusted:
        how += ", NOT TRUSTED"
    return peak.value * 1e9, dram.value * 1e9, how


def _measured_points(path: Path, df: pd.DataFrame, precision: str, notes: list[str] | None,
                     every: pd.DataFrame | None = None) -> list[Measured]:
    """The points of one precision's intensity rows, one Measured per platform and back end, each with its
    robust roof from all of that platform and back end's rows in ``every`` (every kernel and precision)."""
    import pandas as pd

    from archline.formats.results_check import checksum_failed_rows, emulated_rows

    failed = checksum_failed_rows(df)
    out = []
    keys = _group_keys(df)
    groups = dict(iter(every.groupby(keys))) if every is not None else {}
    for key, all_rows in df.groupby(keys):
        platform = key[0] if isinstance(key, tuple) else key     # one Measured per platform and back end
        # a wrong answer is not a measurement: failed rows never feed a point, a peak or a bandwidth
        bad = failed.loc[all_rows.index]
        g = all_rows.loc[~bad]
        n_bad = int(bad.sum())
        if len(g) == 0:
            raise ArchlineFitError(f"{path}: every {precision} intensity row of {platform} failed its checksum; "
                                   "nothing to plot")
        flops = (g["flops_sp"].fillna(0) + g["flops_dp"].fillna(0)).to_numpy(float)
        # flop per byte of the level the row streamed: DRAM, or a cache for a row run on cache-resident data (the
        # quick roofline's peak points: bytes_l1 only)
        moved = g["bytes_mem"].fillna(0).to_numpy(float)
        for col in ("bytes_l3", "bytes_l2", "bytes_l1"):
            if col in g:
                moved = np.where(moved > 0, moved, pd.to_numeric(g[col], errors="coerce").fillna(0).to_numpy(float))
        inten = flops / moved
        t = g["time_s"].to_numpy(float)
        energy = pd.to_numeric(g["energy_j"], errors="coerce").to_numpy(float) if "energy_j" in g \
            else np.full(len(g), np.nan)
        has_e = bool(np.isfinite(energy).any())
        no_e = ~(energy > 0)
        if has_e and no_e.any() and notes is not None:
            notes.append(f"{path.name}: {int(no_e.sum())} of {len(g)} {platform} rows have a missing or non-positive "
                         "energy_j; they are left out of the arch and power lines")
        energy = np.where(no_e, np.nan, energy)
        emulated = bool(emulated_rows(g).any())
        if emulated and has_e and notes is not None:   # the energy is an emulator's or a schedule's: say so
            said = sorted({seg for n in g.get("note", pd.Series(dtype=str)).dropna().astype(str)
                           for seg in n.split("; ") if seg.startswith("emulated")})
            notes.append(f"{path.name}: {platform}'s energy is emulated, not measured"
                         + (f" ({'; '.join(said)})" if said else ""))
        group = groups.get(key)
        roof = robust_roof(group, precision) if group is not None else None
        tag = " [emulated]" if emulated else ""
        tag += f" [{n_bad} failed checksum, left out]" if n_bad else ""
        out.append(Measured(f"{platform} {precision.upper()}{tag}", inten, flops / t,
                            flops / energy if has_e else None, energy / t if has_e else None, left_out=n_bad,
                            roof=roof))
    return out


def observed_curve(m: Measured) -> Curve:
    """The time roofline the rows show, used where no model was given: the run summary's robust figures
    (:func:`robust_roof`) where the rows measured the peak and DRAM; else the fastest flop rate and fastest
    bandwidth of the points (S0 §II-C with tau_flop = 1/max(W/T), tau_mem = 1/max(Q/T)), said so."""
    if m.roof is not None:
        peak, bandwidth, how = m.roof
        return Curve(f"{m.label} observed ({peak / 1e9:.4g} GFLOP/s, {bandwidth / 1e9:.4g} GB/s; {how})",
                     Machine(1.0 / peak, 1.0 / bandwidth, 0.0, 0.0, 0.0), time_only=True, observed=True)
    rate = np.asarray(m.flop_per_s, dtype=np.float64)
    if rate.size == 0 or not np.isfinite(rate).any():
        raise ArchlineFitError(f"{m.label}: no rows with work, bytes and time to draw a roofline from")
    peak = float(np.nanmax(rate))
    bandwidth = float(np.nanmax(rate / m.intensity_flop_per_byte))
    machine = Machine(1.0 / peak, 1.0 / bandwidth, 0.0, 0.0, 0.0)
    return Curve(f"{m.label} observed ({peak / 1e9:.3g} GFLOP/s, {bandwidth / 1e9:.3g} GB/s; best points)", machine,
                 time_only=True, observed=True)


def load_plot_inputs(items: Sequence[str], precision: str | None, notes: list[str] | None = None,
                     where: Sequence[str] = ()) -> tuple[list[Curve], list[Measured]]:
    """Names/profiles/cost tables become model curves; result CSVs become points. Results with no model to
    draw under get their observed time roofline instead. ``precision`` None (issue 34): the precisions the result
    rows have (both when both are there), else sp, or dp for platforms that have dp only."""
    from archline.common.files import unique_inputs
    from archline.formats.results_check import warn

    platforms: list[Platform] = []
    measured: list[Measured] = []
    found: list[str] = []
    results = {str(p) for p in unique_inputs([i for i in items if is_results(i)], warn)}  # a file given twice: once
    for item in items:
        if is_results(item):
            if str(Path(item)) in results:
                results.discard(str(Path(item)))
                measured += measured_from_results(Path(item), precision, notes, where, found)
        else:
            platforms.append(load_platform(item))
    if not platforms and not measured:
        if precision is None and not found:
            raise ArchlineFitError("no sp or dp intensity rows in the given results to plot")
        raise ArchlineFitError(f"no {precision or ' or '.join(found)} intensity rows in the given results to plot")
    if not platforms:
        return [observed_curve(m) for m in measured], measured
    precs = [precision] if precision is not None else sorted(found, key=("sp", "dp").index) or \
        _platform_precisions(platforms)
    return curves_for(platforms, precs), measured


def _platform_precisions(platforms: Sequence[Platform]) -> list[str]:
    """sp, unless every platform gives dp and not sp (a time table of localhost's dp-only quick run)."""
    only_dp = all(pl.value("tau_flop_sp") is None and pl.value("tau_flop_dp") is not None for pl in platforms)
    return ["dp"] if only_dp else ["sp"]


@dataclass
class PlotPlan:
    curves: list[Curve]
    measured: list[Measured]
    kinds: tuple[str, ...]
    notes: list[str] = field(default_factory=list)


def plot_plan(items: Sequence[str], precision: str | None, kinds: Sequence[str] = KINDS,
              where: Sequence[str] = ()) -> PlotPlan:
    """What `archline plot` draws for ``items``, with a note for every way it falls short of the request."""
    notes: list[str] = []
    if where:
        from archline.fit.io.select import WhereError, parse_where

        parse_where(where)     # a malformed filter is an error even where it would select nothing
        if not any(is_results(i) for i in items):
            raise WhereError("--where selects result rows, and none are given (a .csv, .parquet or data set "
                             "directory)")
    curves, measured = load_plot_inputs(items, precision, notes, where)
    kinds = tuple(kinds)
    if all(c.time_only for c in curves):
        has_energy = any(m.flop_per_j is not None for m in measured)
        if not has_energy and kinds != ("roofline",):
            if len(kinds) == 1:      # the one panel asked for cannot be drawn
                raise ArchlineFitError("these results carry time only (no energy was measured): only --kind "
                                       "roofline can be drawn; give a platform or cost table with energy "
                                       "constants for the arch and power lines")
            kinds = ("roofline",)
            notes.append("the results carry time only (no energy_j), so only the time roofline is drawn, observed "
                         "from the rows" if all(c.observed for c in curves) else
                         "the platform or cost table has time constants only (no energy: no meter), so only the "
                         "time roofline is drawn")
        elif has_energy and kinds != ("roofline",):
            notes.append("no platform or cost table given: the arch and power lines show the measured points "
                         "only (add a platform name or a cost table from `archline fit` for the model's lines)")
    return PlotPlan(curves, measured, kinds, notes)


def plot_results(results: Sequence[Path], out_path: Path, precision: str,
                 kinds: Sequence[str] = KINDS, platforms: Sequence[str] = (),
                 roof: tuple[float, float, str] | None = None, notes: Sequence[str] = ()) -> Path:
    """Measured rows over the model of ``platforms``, or over their own observed time roofline; ``roof``
    (peak flop/s, bandwidth byte/s, how they were reached), where given, replaces the observed one (bench run's
    robust summary, never one lucky point); ``notes`` go under the title."""
    plan = plot_plan([*platforms, *map(str, results)], precision, kinds)
    curves = plan.curves
    if roof is not None and not platforms:
        peak, bandwidth, how = roof
        curves = [Curve(f"{m.label}: {peak / 1e9:.4g} GFLOP/s, {bandwidth / 1e9:.4g} GB/s ({how})",
                        Machine(1.0 / peak, 1.0 / bandwidth, 0.0, 0.0, 0.0), time_only=True, observed=True)
                  for m in plan.measured]
    return plot_model(curves, out_path, kinds=plan.kinds, measured=plan.measured, notes=[*plan.notes, *notes])
