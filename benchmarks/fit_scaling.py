"""How `archline fit` scales with the number of result rows: read + validate + fit + 10-fold CV.

Writes synthetic GTX 580 rows (fit.synthetic: intensity SP/DP, L1, L2 and random-access points, 1% noise) at
10^4 .. 10^6 rows, times each phase, and prints rows/s and the log-log slope of time against rows (1.0 = linear).

    python benchmarks/fit_scaling.py [--sizes 10000,30000,100000,300000,1000000] [--model auto]
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

import numpy as np

from archline.fit.io.results import group_rows, read_results
from archline.fit.regress.api import FitOptions, fit_group
from archline.fit.regress.synthetic import GTX580, synthetic_results, write_results_csv

CONFIGS_PER_REPEAT = 25 + 36 + 16 + 16 + 8


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,30000,100000,300000,1000000")
    ap.add_argument("--models", default="basic,cache,auto")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    models = args.models.split(",")
    results: dict[str, list[tuple[int, float]]] = {m: [] for m in models}
    read_times: list[tuple[int, float]] = []
    with tempfile.TemporaryDirectory() as d:
        # warm-up: imports (statsmodels, scipy) and first-call costs are not per-row costs
        warm = write_results_csv(synthetic_results(GTX580, seed=1), Path(d) / "warm.csv")
        for m in models:
            fit_group(group_rows(read_results([warm]))[0], FitOptions(model=m, folds=10))
        print(f"{'rows':>9} {'phase':>10} {'seconds':>9} {'rows/s':>12}")
        for target in sizes:
            reps = max(1, math.ceil(target / CONFIGS_PER_REPEAT))
            frame = synthetic_results(GTX580, seed=0, n_repeats=reps).iloc[:target]
            path = write_results_csv(frame, Path(d) / f"rows{target}.csv")
            n = len(frame)
            t0 = time.perf_counter()
            rs = read_results([path])
            (group,) = group_rows(rs)
            t_read = time.perf_counter() - t0
            read_times.append((n, t_read))
            print(f"{n:>9} {'read':>10} {t_read:>9.3f} {n / t_read:>12,.0f}")
            for m in models:
                t0 = time.perf_counter()
                r = fit_group(group, FitOptions(model=m, folds=10))
                dt = time.perf_counter() - t0
                results[m].append((n, dt))
                print(f"{n:>9} {m:>10} {dt:>9.3f} {n / dt:>12,.0f}   ({r.model}, "
                      f"eps_mem={r.coefficients['eps_mem'].value * 1e12:.2f} pJ/B, "
                      f"CV MAPE {r.quality.get('cv_mape_pct', float('nan')):.3f}%)")
    print()

    def slope(pts: list[tuple[int, float]]) -> float:
        x = np.log([p[0] for p in pts])
        y = np.log([p[1] for p in pts])
        return float(np.polyfit(x, y, 1)[0])

    print(f"scaling slope d log(time) / d log(rows): read {slope(read_times):.2f}, "
          + ", ".join(f"{m} {slope(v):.2f}" for m, v in results.items()) + "  (1.00 = linear)")
    big = sizes[-1]
    for m, v in results.items():
        n, t = v[-1]
        rt = dict(read_times)[n]
        print(f"{m}: {n:,} rows read + fit + 10-fold CV in {rt + t:.2f} s ({n / (rt + t):,.0f} rows/s)")
    del big


if __name__ == "__main__":
    main()
