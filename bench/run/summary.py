"""What a run found, from its rows: peak GFLOP/s per precision, bandwidth per level, balance point and checksum
status -- the numbers likwid-bench and clpeak users read first. Pure: rows in (as read from the CSV, strings or
numbers), a dict out; the cli prints it as a table or JSON."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

# Level column -> the name users know (ERT's names: DRAM, L1, L2, L3).
LEVELS: tuple[tuple[str, str], ...] = (("bytes_mem", "DRAM"), ("bytes_l3", "L3"), ("bytes_l2", "L2"),
                                       ("bytes_l1", "L1"))
PRECISION_FLOPS = (("sp", "flops_sp"), ("dp", "flops_dp"))
#: kernels whose flop rate is a compute peak; the others' adds (a cache sum, a memory ceiling) only move data
PEAK_KERNELS = frozenset({"intensity", "ceil_flop"})
_TRUE = frozenset({"1", "true", "yes", "y", "t"})


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


def summarize(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Peaks (GFLOP/s) per precision, the best bandwidth (GB/s) per level the rows measured, balance points
    (flop per DRAM byte) and the checksum count. Rows with a failed checksum count in the status only."""
    peaks: dict[str, float] = {}
    bandwidths: dict[str, float] = {}
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
        time_s = _num(row, "time_s")
        if ok is False or not time_s > 0:
            continue
        for prec, col in PRECISION_FLOPS if row.get("kernel") in PEAK_KERNELS else ():
            f = _num(row, col)
            if f > 0:
                peaks[prec] = max(peaks.get(prec, 0.0), f / time_s / 1e9)
        if row.get("kernel") == "chase":  # latency, not bandwidth
            continue
        for col, level in LEVELS:
            b = _num(row, col)
            if b > 0:
                bandwidths[level] = max(bandwidths.get(level, 0.0), b / time_s / 1e9)
    dram = bandwidths.get("DRAM")
    balance = {p: g / dram for p, g in peaks.items() if dram}
    return {"peaks_gflop_per_s": peaks, "bandwidths_gb_per_s": bandwidths, "balance_flop_per_byte": balance,
            "checksums": {"ok": n_ok, "checked": n_checked, "rows": n}, "backends": sorted(backends),
            "emulated": emulated}


def summary_rows(summary: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(quantity, value, unit) rows for a table, values rounded to 4 significant digits."""
    out: list[tuple[str, str, str]] = []
    for p, g in summary["peaks_gflop_per_s"].items():
        out.append((f"peak {p.upper()}", f"{g:.4g}", "GFLOP/s"))
    for lvl, b in summary["bandwidths_gb_per_s"].items():
        out.append((f"bandwidth {lvl}", f"{b:.4g}", "GB/s"))
    for p, x in summary["balance_flop_per_byte"].items():
        out.append((f"balance {p.upper()}", f"{x:.3g}", "flop/B (peak / DRAM)"))
    if not summary["peaks_gflop_per_s"]:
        out.append(("peak", "none", "no compute kernel ran (intensity or ceilings)"))
    c = summary["checksums"]
    if c["checked"] == 0:
        why = "emulated" if summary["emulated"] else "no checksum column"
        out.append(("checksums", f"not computed ({why})", f"of {c['rows']} rows"))
    else:
        status = "ok" if c["ok"] == c["checked"] else "FAILED"
        left = c["rows"] - c["checked"]
        out.append(("checksums", f"{c['ok']}/{c['checked']} {status}",
                    f"of {c['rows']} rows" + (f" ({left} not computed)" if left else "")))
    out.append(("source", "emulated" if summary["emulated"] else "measured", ", ".join(summary["backends"])))
    return out
