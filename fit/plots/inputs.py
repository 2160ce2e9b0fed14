"""Turn the command line's mix of platform names, profiles, cost tables and result CSVs into plot inputs."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from archline.fit.errors import ArchlineFitError
from archline.fit.model.machine import Machine
from archline.fit.platforms.profiles import Platform, load_platform
from archline.fit.plots.rooflines import KINDS, Curve, Measured, curves_for, plot_model

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


def measured_from_results(path: Path, precision: str) -> list[Measured]:
    """Intensity-kernel rows of an archline.results/1 CSV as points: I = flops/bytes_mem, rate, flop/J, power."""
    import pandas as pd

    try:
        df = pd.read_csv(path)
    except (OSError, ValueError) as e:
        raise ArchlineFitError(f"cannot read results {path}: {e}") from None
    need = {"schema", "platform", "kernel", "precision", "time_s", "flops_sp", "flops_dp", "bytes_mem"}
    missing = need - set(df.columns)
    if missing:
        cols = ", ".join(sorted(missing))
        raise ArchlineFitError(f"{path}: not an archline.results/1 file (missing columns: {cols})")
    df = df[(df["kernel"] == "intensity") & (df["precision"] == precision)]
    failed = _checksum_failed(df)
    out = []
    for (platform, backend), all_rows in df.groupby(["platform", "backend"] if "backend" in df else ["platform"] * 2):
        # a wrong answer is not a measurement: failed rows never feed a point, a peak or a bandwidth
        bad = failed.loc[all_rows.index]
        g = all_rows.loc[~bad]
        n_bad = int(bad.sum())
        if len(g) == 0:
            raise ArchlineFitError(f"{path}: every {precision} intensity row of {platform} failed its checksum; "
                                   "nothing to plot")
        flops = (g["flops_sp"].fillna(0) + g["flops_dp"].fillna(0)).to_numpy(float)
        inten = flops / g["bytes_mem"].to_numpy(float)
        t = g["time_s"].to_numpy(float)
        energy = g["energy_j"].to_numpy(float) if "energy_j" in g else np.full(len(g), np.nan)
        has_e = bool(np.isfinite(energy).any())
        tag = " [emulated]" if backend == "emulated" else ""
        tag += f" [{n_bad} failed checksum, left out]" if n_bad else ""
        out.append(Measured(f"{platform} {precision.upper()}{tag}", inten, flops / t,
                            flops / energy if has_e else None, energy / t if has_e else None, left_out=n_bad))
    return out


def _checksum_failed(df: pd.DataFrame) -> pd.Series:
    """True for rows whose checksum_ok says false (missing column or empty cell: not failed)."""
    import pandas as pd

    if "checksum_ok" not in df:
        return pd.Series(False, index=df.index)
    ck = df["checksum_ok"].astype("string").str.strip().str.lower()
    return ck.isin({"false", "0", "no"}).fillna(False).astype(bool)


def observed_curve(m: Measured) -> Curve:
    """The time roofline the points themselves show: fastest flop rate and fastest bandwidth observed
    (S0 §II-C with tau_flop = 1/max(W/T), tau_mem = 1/max(Q/T)); used where no energy was measured."""
    rate = np.asarray(m.flop_per_s, dtype=np.float64)
    if rate.size == 0 or not np.isfinite(rate).any():
        raise ArchlineFitError(f"{m.label}: no rows with work, bytes and time to draw a roofline from")
    peak = float(np.nanmax(rate))
    bandwidth = float(np.nanmax(rate / m.intensity_flop_per_byte))
    machine = Machine(1.0 / peak, 1.0 / bandwidth, 0.0, 0.0, 0.0)
    return Curve(f"{m.label} observed ({peak / 1e9:.3g} GFLOP/s, {bandwidth / 1e9:.3g} GB/s)", machine,
                 time_only=True)


def load_plot_inputs(items: Sequence[str], precision: str) -> tuple[list[Curve], list[Measured]]:
    """Names/profiles/cost tables become model curves; result CSVs become points. Results with no model to
    draw under get their observed time roofline instead."""
    platforms: list[Platform] = []
    measured: list[Measured] = []
    for item in items:
        if item.endswith(".csv"):
            measured += measured_from_results(Path(item), precision)
        else:
            platforms.append(load_platform(item))
    if not platforms and not measured:
        raise ArchlineFitError(f"no {precision} intensity rows in the given results to plot")
    if not platforms:
        return [observed_curve(m) for m in measured], measured
    return curves_for(platforms, [precision]), measured


def plot_results(results: Sequence[Path], out_path: Path, precision: str,
                 kinds: Sequence[str] = KINDS, platforms: Sequence[str] = ()) -> Path:
    """Measured rows over the model of ``platforms``, or over their own observed time roofline."""
    curves, measured = load_plot_inputs([*platforms, *map(str, results)], precision)
    if all(c.time_only for c in curves):
        kinds = [k for k in kinds if k == "roofline"] or ["roofline"]
    return plot_model(curves, out_path, kinds=kinds, measured=measured)
