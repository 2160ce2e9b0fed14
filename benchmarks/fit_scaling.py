"""`archline fit` of a million rows against its floor, measured in the same run (issue 18).

Floor: ``pyarrow.csv.read_csv`` of the same file plus one ``numpy.linalg.lstsq`` on the 1,000,000 x 7 design
matrix (flops_sp, flops_dp, bytes_mem, bytes_l1, bytes_l2, rand_accesses, time_s -> energy_j), timed inside a
fresh process after its imports. Each `archline fit` variant is timed end to end as the user runs it (a fresh
process: interpreter start, imports, read, fit, cross-validation, output), with its peak RSS from wait4.
Rounds interleave the floor and the variants; the best of the rounds is kept for each.

Rows: synthetic GTX 580 (emulated; archline.fit.regress.synthetic): 25 SP + 36 DP intensity, 16 L1, 16 L2 and
8 random-access configurations, each repeated, 1% noise, cut at --rows.

``--check`` also fits the same rows row by row with statsmodels (columns scaled; configurations weighted by
their mean fitted value, the estimator's definition) and prints the largest relative difference of the
coefficients from the grouped fit's JSON.

    python benchmarks/fit_scaling.py [--rows 1000000] [--rounds 3] [--check] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FLOOR = r"""
import sys, time
import numpy as np, pyarrow.csv as pcsv
t0 = time.perf_counter()
tab = pcsv.read_csv(sys.argv[1])
cols = ["flops_sp", "flops_dp", "bytes_mem", "bytes_l1", "bytes_l2", "rand_accesses", "time_s"]
x = np.column_stack([tab.column(c).to_numpy() for c in cols])
np.linalg.lstsq(x, tab.column("energy_j").to_numpy(), rcond=None)
print(time.perf_counter() - t0)
"""
CLI = [sys.executable, "-c", "import sys; from archline.cli.main import main; sys.exit(main())"]


def run(cmd: list[str]) -> tuple[float, float, str]:
    """Wall seconds, peak RSS in MB, stdout of one fresh process."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out = p.stdout.read() if p.stdout else ""
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}")
    return wall, usage.ru_maxrss / 1024, out


def make_rows(path: Path, rows: int) -> None:
    from archline.fit.regress.synthetic import GTX580, synthetic_results, write_results_csv

    per_repeat = 25 + 36 + 16 + 16 + 8
    frame = synthetic_results(GTX580, seed=0, n_repeats=math.ceil(rows / per_repeat)).iloc[:rows]
    write_results_csv(frame, path)


def check(path: Path, basic_json: Path) -> float:
    """Largest relative difference between the grouped basic fit and statsmodels on every row."""
    import numpy as np
    import pandas as pd
    from statsmodels.regression.linear_model import OLS, WLS

    f = pd.read_csv(path, usecols=["kernel", "precision", "flops_sp", "flops_dp", "bytes_mem", "time_s",
                                   "energy_j"], engine="pyarrow")
    f = f[f["kernel"] == "intensity"]
    w = (f["flops_sp"] + f["flops_dp"]).to_numpy()
    x = np.column_stack([np.ones_like(w), f["bytes_mem"] / w, f["time_s"] / w, f["flops_dp"] / w])
    y = f["energy_j"].to_numpy() / w
    config = f.groupby(["precision", "flops_sp", "flops_dp", "bytes_mem"]).ngroup().to_numpy()
    s = np.linalg.norm(x, axis=0)
    fitted = np.asarray(OLS(y, x / s).fit().fittedvalues)
    yhat = pd.Series(fitted).groupby(config).transform("mean").to_numpy()
    beta = WLS(y, x / s, weights=1.0 / yhat**2).fit().params / s
    doc = json.loads(basic_json.read_text())["coefficients"]
    ref = {"eps_flop_sp": beta[0], "eps_mem": beta[1], "pi0": beta[2], "eps_flop_dp": beta[0] + beta[3]}
    worst = 0.0
    for k, v in ref.items():
        d = abs(doc[k]["value"] / v - 1)
        print(f"  {k:12s} grouped {doc[k]['value']:.15g}  row-wise {v:.15g}  rel. diff {d:.1e}")
        worst = max(worst, d)
    return worst


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--keep", type=Path)
    args = ap.parse_args()
    d = args.keep or Path(tempfile.mkdtemp(prefix="archline-fit-"))
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"rows{args.rows}.csv"
    if not path.exists():
        make_rows(path, args.rows)
    out = {"auto": d / "auto.json", "basic": d / "basic.json", "figure": d / "figure.json"}
    variants = {
        "`archline fit`, CLI default (--model auto), JSON out": (
            [*CLI, "fit", str(path), "--format", "json", "--out", str(out["auto"])], 3.0),
        "the same with --model basic": (
            [*CLI, "fit", str(path), "--model", "basic", "--format", "json", "--out", str(out["basic"])], 2.0),
        "the same (auto) with the report figure": (
            [*CLI, "fit", str(path), "--format", "json", "--out", str(out["figure"]), "--figure",
             str(d / "fit.png")], 4.0),
    }
    floor = math.inf
    best = dict.fromkeys(variants, math.inf)
    peak = dict.fromkeys(variants, 0.0)
    for _ in range(args.rounds):
        floor = min(floor, float(run([sys.executable, "-c", FLOOR, str(path)])[2]))
        for name, (cmd, _) in variants.items():
            wall, rss, _ = run(cmd)
            best[name], peak[name] = min(best[name], wall), max(peak[name], rss)
    cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")), "?") if Path("/proc/cpuinfo").exists() else "?"
    print(f"{args.rows:,} rows ({path.stat().st_size / 1e6:.0f} MB CSV) on {cpu}, {os.cpu_count()} CPUs; "
          f"best of {args.rounds}")
    print(f"floor: pyarrow.csv.read_csv + numpy.linalg.lstsq on {args.rows:,} x 7: {floor:.2f} s")
    print(f"| {'what':<55} | {'seconds':>7} | {'x floor':>7} | {'goal':>5} | {'peak RSS':>9} |")
    for name, (_, goal) in variants.items():
        print(f"| {name:<55} | {best[name]:7.2f} | {best[name] / floor:7.2f} | {goal:4.0f}x | {peak[name]:6.0f} MB |")
    doc = json.loads(out["auto"].read_text())
    q = doc["quality"]
    print(f"auto chose {doc.get('auto', {}).get('chosen')}: {doc['n_points']:,} rows in "
          f"{q['n_configurations']} configurations; {q['cv_folds']}-fold CV ({q['cv_split']}) "
          f"{q['cv_mape_pct']:.3f}%")
    if args.check:
        print("grouped fit vs statsmodels on every row (--model basic):")
        print(f"largest relative difference: {check(path, out['basic']):.1e}")


if __name__ == "__main__":
    main()
