"""What `archline plot --kind ceilings` reads: platforms, cost tables, result rows and a user's table of ceilings.

* A platform name, profile .toml or cost-table .json gives its peak ceilings (SP, DP, DRAM) and its model's
  kernels as points (``power_roofline.model_points``).
* An archline.results/1 .csv: rows of the ceiling kernels (``ceil_flop``, ``ceil_mem``; their ``params`` column
  names the ceiling, e.g. ``ceiling=FMA+ILP``) become ceilings: rate = W/T (or Q/T), P_peak = E/T, the median over
  repeated rows. Every row with a positive energy is placed as a point: flops at (E/W, P), DRAM traffic at
  (E/Q, P). Rows without energy give ceilings without P_peak and no points; a note says so.
* A .toml holding ``[[ceiling]]`` (and optionally ``[[point]]``) tables is the user's own table, in SI units::

      [[ceiling]]
      label = "FMA+ILP"
      kind = "compute"            # compute (rate in flop/s) or memory (rate in byte/s)
      rate_per_s = 3.4e12
      peak_power_w = 148.0        # optional
      [[point]]
      label = "my stencil"
      kind = "memory"
      energy_per_unit_j = 4.1e-10 # J per byte (memory) or per flop (compute)
      power_w = 121.0
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from archline.common.files import read_toml
from archline.fit.analyses.s4.power_roofline import KINDS, Ceiling, KernelPoint, ceilings_from_platform, model_points
from archline.formats.platforms.profiles import load_platform
from archline.formats.results_check import checksum_failed_rows, emulated_rows
from archline.model.errors import ArchlineFitError, ProfileFormatError

CEILING_KERNELS = ("ceil_flop", "ceil_mem")
_MEMORY_POINT_KERNELS = ("intensity", "cache", "ceil_mem")   # rows whose bytes_mem is their DRAM stream


@dataclass
class CeilingInputs:
    ceilings: list[Ceiling] = field(default_factory=list)
    points: list[KernelPoint] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def load_ceiling_inputs(items: Sequence[str], precision: str | None = None) -> CeilingInputs:
    """Every item's ceilings and points (``precision`` None: both sp and dp)."""
    from archline.common.files import unique_inputs
    from archline.formats.results_check import warn
    from archline.formats.results_read import is_results_csv

    precs = ("sp", "dp") if precision is None else (precision,)
    out = CeilingInputs()
    results = {str(p) for p in unique_inputs([i for i in items if is_results_csv(i)], warn)}  # a file twice: once
    for item in items:
        path = Path(item)
        if is_results_csv(item):
            if str(path) in results:
                results.discard(str(path))
                _from_results(path, precs, out)
        elif item.endswith(".toml") and path.is_file() and "ceiling" in (table := _toml(path)):
            _from_table(path, table, out)
        else:
            pl = load_platform(item)
            tag = " [emulated]" if pl.emulated else ""
            found = ceilings_from_platform(pl, precs)
            if not found:
                out.notes.append(f"{pl.name}: no ceiling (a ceiling needs tau and eps of flops or of DRAM; "
                                 f"`archline model show {pl.name}` lists what is known)")
            out.ceilings += [Ceiling(f"{pl.name}{tag} {c.label}", c.kind, c.rate_per_s, c.peak_power_w, c.source)
                             for c in found]
            out.points += model_points(pl, precs)
    if not out.ceilings and not out.points:
        raise ArchlineFitError("nothing to draw: the inputs hold no ceilings and no points with energy "
                               f"({', '.join(items)})")
    no_power = [c.label for c in out.ceilings if c.peak_power_w is None]
    if no_power:
        out.notes.append(f"{len(no_power)} ceiling(s) were measured without power (time only): drawn from their "
                         "rate alone (P = F·E/W), without their P_peak; run with a meter for the caps")
    return out


def ceiling_rows(ceilings: Sequence[Ceiling]) -> list[list[str]]:
    """The ceilings as a table for people: label, kind, rate (GFLOP/s or GB/s), P_peak, EE, source."""
    rows = []
    for c in ceilings:
        unit = ("GFLOP/s", "GFLOP/J") if c.kind == "compute" else ("GB/s", "GB/J")
        ee = c.efficiency_per_j
        rows.append([c.label, c.kind, f"{c.rate_per_s / 1e9:.4g} {unit[0]}",
                     "-" if c.peak_power_w is None else f"{c.peak_power_w:.4g}",
                     "-" if ee is None else f"{ee / 1e9:.4g} {unit[1]}", c.source])
    return rows


def _toml(path: Path) -> dict[str, Any]:
    return read_toml(path, error=ProfileFormatError, what="ceilings file")


def _number(entry: dict[str, Any], key: str, where: str, required: bool = True) -> float | None:
    v = entry.get(key)
    if v is None and not required:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not float(v) > 0 or not np.isfinite(v):
        raise ProfileFormatError(f"{where}: '{key}' must be a positive number, got {v!r}")
    return float(v)


def _from_table(path: Path, data: dict[str, Any], out: CeilingInputs) -> None:
    """A user's [[ceiling]] / [[point]] table."""
    unknown = set(data) - {"ceiling", "point", "title"}
    if unknown:
        raise ProfileFormatError(f"{path}: unknown key(s) {', '.join(sorted(unknown))} (known: ceiling, point)")
    for what in ("ceiling", "point"):
        entries = data.get(what, [])
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            raise ProfileFormatError(f"{path}: '{what}' must be an array of tables ([[{what}]])")
        for n, e in enumerate(entries, 1):
            where = f"{path}: [[{what}]] #{n}"
            fields = {"label", "kind", "rate_per_s", "peak_power_w"} if what == "ceiling" else \
                {"label", "kind", "energy_per_unit_j", "power_w"}
            extra = set(e) - fields
            if extra:
                raise ProfileFormatError(f"{where}: unknown field(s) {', '.join(sorted(extra))} "
                                         f"(known: {', '.join(sorted(fields))})")
            if e.get("kind") not in KINDS:
                raise ProfileFormatError(f"{where}: 'kind' must be compute or memory, got {e.get('kind')!r}")
            label = str(e.get("label", f"{what} {n}"))
            if what == "ceiling":
                out.ceilings.append(Ceiling(label, e["kind"], _number(e, "rate_per_s", where) or 0.0,
                                            _number(e, "peak_power_w", where, required=False), path.name))
            else:
                out.points.append(KernelPoint(label, e["kind"], _number(e, "energy_per_unit_j", where) or 0.0,
                                              _number(e, "power_w", where) or 0.0, f"{label} ({path.name})"))


def _params_label(params: Any) -> str:
    for part in str(params if isinstance(params, str) else "").split(";"):
        k, _, v = part.partition("=")
        if k.strip() == "ceiling" and v.strip():
            return v.strip()
    return ""


def _from_results(path: Path, precs: tuple[str, ...], out: CeilingInputs) -> None:
    import pandas as pd

    from archline.formats.dataset import read_csv_frame

    df = read_csv_frame(path)
    need = {"schema", "platform", "kernel", "precision", "time_s", "flops_sp", "flops_dp", "bytes_mem"}
    missing = need - set(df.columns)
    if missing:
        cols = ", ".join(sorted(missing))
        raise ArchlineFitError(f"{path}: not an archline.results/1 file (missing columns: {cols})")
    df = df[df["precision"].isin(precs)]
    failed = checksum_failed_rows(df)
    if failed.any():     # a wrong answer is not a measurement
        out.notes.append(f"{path.name}: {int(failed.sum())} row(s) failed their checksum and are left out")
    df = df[~failed].copy()
    if df.empty:
        out.notes.append(f"{path.name}: no {'/'.join(precs)} rows")
        return
    work = df["flops_sp"].fillna(0).to_numpy(float) + df["flops_dp"].fillna(0).to_numpy(float)
    q = pd.to_numeric(df["bytes_mem"], errors="coerce").fillna(0).to_numpy(float)
    t = pd.to_numeric(df["time_s"], errors="coerce").to_numpy(float)
    e = pd.to_numeric(df["energy_j"], errors="coerce").to_numpy(float) if "energy_j" in df else np.full(len(df),
                                                                                                        np.nan)
    df["_work"], df["_q"], df["_t"], df["_e"] = work, q, t, e
    df["_tag"] = np.where(emulated_rows(df), " [emulated]", "")
    df["_label"] = [_params_label(p) or k for p, k in zip(df.get("params", pd.Series("", index=df.index)),
                                                          df["kernel"], strict=True)]
    bad_energy = int(((e <= 0) & np.isfinite(e)).sum())
    if bad_energy:
        out.notes.append(f"{path.name}: {bad_energy} row(s) with a non-positive energy_j are not placed")
    ok_e = np.isfinite(e) & (e > 0)
    ceil = df[df["kernel"].isin(CEILING_KERNELS) & (df["_t"] > 0)]
    for (platform, tag, prec, kernel, label), g in ceil.groupby(["platform", "_tag", "precision", "kernel", "_label"],
                                                                 sort=False):
        kind = "compute" if kernel == "ceil_flop" else "memory"
        amount = g["_work"] if kind == "compute" else g["_q"]
        rate = float(np.median(amount / g["_t"]))
        ge = g["_e"].to_numpy(float)
        power = float(np.median(ge / g["_t"])) if np.all(np.isfinite(ge) & (ge > 0)) else None
        out.ceilings.append(Ceiling(f"{platform}{tag} {str(prec).upper()} {label}", kind, rate, power,
                                    f"{path.name} ({len(g)} row{'s' if len(g) > 1 else ''})"))
    no_energy = int((~ok_e & ~df["kernel"].isin(CEILING_KERNELS).to_numpy()).sum())
    if no_energy and not bad_energy:
        out.notes.append(f"{path.name}: {no_energy} row(s) carry no energy_j (time only) and are not placed")
    # an intensity row sits on the plot of the resource that bounds it: I >= the balance its own sweep shows
    # (fastest flop rate / fastest bandwidth, as the observed roofline), compute; I <= it, memory
    inten = df["kernel"].eq("intensity") & (df["_q"] > 0) & (df["_t"] > 0)
    df["_side"] = "both"
    for _, g in df[inten].groupby(["platform", "precision"]):
        balance = (g["_work"] / g["_t"]).max() / (g["_q"] / g["_t"]).max()
        i = g["_work"] / g["_q"]
        df.loc[g.index, "_side"] = np.where(i >= balance, "compute", "memory")
        df.loc[g.index[np.isclose(i, balance)], "_side"] = "both"
    placed = df[ok_e & (df["_t"] > 0)]
    for _, r in placed.iterrows():
        grp = (f"{r['platform']}{r['_tag']} {str(r['precision']).upper()} "
               + (r["_label"] if r["kernel"] in CEILING_KERNELS else f"{r['kernel']}"
                  + ("" if str(r.get("level", "mem")) in ("mem", "nan") else f" {r['level']}")))
        p = r["_e"] / r["_t"]
        if r["_work"] > 0 and r["kernel"] != "ceil_mem" and r["_side"] != "memory":
            out.points.append(KernelPoint(grp, "compute", r["_e"] / r["_work"], p, f"{grp} (measured)"))
        if r["_q"] > 0 and r["kernel"] in _MEMORY_POINT_KERNELS and str(r.get("level", "mem")) in ("mem", "nan") \
                and r["_side"] != "compute":
            out.points.append(KernelPoint(grp, "memory", r["_e"] / r["_q"], p, f"{grp} (measured)"))
