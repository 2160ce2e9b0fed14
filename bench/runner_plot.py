"""A time-only roofline from result rows: measured flop/s against intensity, with the observed ceilings.

``archline plot`` draws measurements over a platform's model, which needs energy constants; a machine measured
without a meter (``bench run --platform localhost`` with no RAPL) has none, so ``bench run`` draws this plot
beside its rows instead: the fastest compute rate and the fastest bandwidth seen, and every point.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

from archline.bench.errors import BenchError

_WORK = ("flops_sp", "flops_dp", "int_ops")
_BYTES = ("bytes_mem", "bytes_l1", "bytes_l2", "bytes_l3", "bytes_shared")


def _num(row: dict[str, str], key: str) -> float:
    v = row.get(key, "")
    try:
        return float(v) if v not in ("", None) else 0.0
    except ValueError:
        return 0.0


def points_by_precision(csv_path: Path) -> dict[str, list[tuple[float, float]]]:
    """(intensity flop/byte, flop/s) of every row with work and bytes, per precision."""
    out: dict[str, list[tuple[float, float]]] = defaultdict(list)
    with open(csv_path, newline="") as f:
        for row in csv.DictReader(f):
            work = sum(_num(row, k) for k in _WORK)
            q = sum(_num(row, k) for k in _BYTES)
            t = _num(row, "time_s")
            if work > 0 and q > 0 and t > 0 and row.get("checksum_ok", "true") != "false":
                out[row.get("precision") or "?"].append((work / q, work / t))
    return dict(out)


def time_roofline_png(csv_path: Path, out_png: Path, title: str = "") -> Path:
    """Draw the observed time roofline of ``csv_path`` into ``out_png`` (log2 axes, S0 §II-C)."""
    pts = points_by_precision(csv_path)
    if not pts:
        raise BenchError(f"{csv_path}: no rows with work, bytes and time to draw a roofline from")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for prec, xy in sorted(pts.items()):
        xs = [x for x, _ in xy]
        ys = [y / 1e9 for _, y in xy]
        peak = max(ys)
        bw = max(y / x for x, y in zip(xs, ys, strict=True))
        lo, hi = min(xs) / 2, max(xs) * 2
        grid = [lo * (hi / lo) ** (k / 200) for k in range(201)]
        line = ax.plot(grid, [min(peak, bw * g) for g in grid], lw=1.5,
                       label=f"{prec}: {peak:.3g} GFLOP/s, {bw:.3g} GB/s observed")
        ax.scatter(xs, ys, s=14, color=line[0].get_color())
        ax.axvline(peak / bw, color=line[0].get_color(), ls=":", lw=0.8)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("intensity (flop/byte)")
    ax.set_ylabel("performance (GFLOP/s)")
    ax.set_title(title or f"time roofline (observed): {csv_path.name}", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(True, which="both", lw=0.3, alpha=0.5)
    fig.tight_layout()
    out_png.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_png.with_name(f".{out_png.stem}.tmp{out_png.suffix}")
    fig.savefig(tmp, dpi=120)
    plt.close(fig)
    tmp.replace(out_png)
    return out_png
