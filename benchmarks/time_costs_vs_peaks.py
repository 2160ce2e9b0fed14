"""The time cost table of a meterless run against the run's own peaks (issue 34), and of synthetic time-only rows
against the rates they were made with.

    python benchmarks/time_costs_vs_peaks.py results/quick          # a `bench run --platform localhost --quick` dir
    python benchmarks/time_costs_vs_peaks.py --synthetic             # emulated GTX 580 rates, energy blanked
    python benchmarks/time_costs_vs_peaks.py results/quick --json

For a run directory: `archline fit` of its CSV rows (model "time"), and for every tau the rate it stands for
(GFLOP/s, GB/s), its 95% interval, the peak the run's roofline.json gives, and whether that peak lies in the
interval. Timings and peaks taken on a machine shared with other work are noisy; rerun on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

#: tau name -> (ERT name in roofline.json, factor from 1/tau to the ERT unit)
ERT_OF_TAU = {"tau_flop_dp": "FP64 GFLOPs", "tau_flop_sp": "FP32 GFLOPs", "tau_mem": "DRAM", "tau_l1": "L1",
              "tau_l2": "L2", "tau_l3": "L3"}


def _rows_of(table: Any, truth_rate: dict[str, float]) -> list[dict[str, Any]]:
    out = []
    for name, c in table.tau.items():
        rate = 1e-9 / c.value
        ci = (1e-9 / c.ci95[1], 1e-9 / c.ci95[0]) if c.ci95 else None
        ref = truth_rate.get(name)
        out.append({"tau": name, "rate_g_per_s": rate, "ci95_g_per_s": list(ci) if ci else [None, None],
                    "reference_g_per_s": ref,
                    "reference_in_ci95": None if ref is None or ci is None else bool(ci[0] <= ref <= ci[1]),
                    "off_pct": None if ref is None else 100 * (rate - ref) / ref})
    return out


def run_dir(path: Path) -> dict[str, Any]:
    from archline.fit.regress.api import fit_files
    from archline.formats.ert_roofline import read_ert

    csvs = sorted(path.glob("*.csv"))
    if not csvs:
        raise SystemExit(f"{path}: no result CSV")
    (table,) = fit_files(csvs)
    roofs = sorted(path.glob("*.roofline.json")) or sorted(path.glob("roofline.json"))
    peaks: dict[str, float] = {}
    if roofs:
        roof = read_ert(roofs[0])
        both = {**roof.gflops, **roof.gbytes}
        peaks = {t: both[e] for t, e in ERT_OF_TAU.items() if e in both}
    return {"source": str(path), "model": table.model, "rows": table.n_points,
            "reference": "the run's roofline.json peaks" if peaks else "none", "taus": _rows_of(table, peaks)}


def run_synthetic() -> dict[str, Any]:
    import numpy as np

    from archline.fit.regress.api import fit_frame, prepare_frame
    from archline.fit.regress.synthetic import GTX580, synthetic_results

    frame = synthetic_results(GTX580, seed=3, noise=0.01, efficiency_spread=0.0, n_repeats=2)
    frame["energy_j"], frame["meter"] = np.nan, ""
    table = fit_frame(prepare_frame(frame), platform="gtx580", emulated=True)
    truth = {"tau_flop_sp": GTX580.flop_per_s_sp, "tau_flop_dp": GTX580.flop_per_s_dp, "tau_mem": GTX580.byte_per_s,
             "tau_l1": GTX580.byte_per_s_l1, "tau_l2": GTX580.byte_per_s_l2, "tau_rand": GTX580.rand_per_s}
    return {"source": "synthetic GTX 580 (emulated rates, 1% noise), energy blanked", "model": table.model,
            "rows": table.n_points, "reference": "the rates the rows were made with",
            "taus": _rows_of(table, {k: v / 1e9 for k, v in truth.items()})}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", nargs="?", type=Path, help="a bench run --out directory")
    ap.add_argument("--synthetic", action="store_true", help="synthetic time-only rows of the emulated GTX 580")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if a.dir is None and not a.synthetic:
        ap.error("give a run directory or --synthetic")
    report = run_synthetic() if a.synthetic else run_dir(a.dir)
    if a.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{report['source']}: model={report['model']}, {report['rows']} rows; reference: {report['reference']}")
    print(f"{'tau':<12} {'G/s':>9} {'95% CI':>21} {'reference':>10} {'off %':>7}  in CI")
    for r in report["taus"]:
        lo, hi = r["ci95_g_per_s"]
        ci = f"[{lo:.4g}, {hi:.4g}]" if lo is not None else "-"
        ref = f"{r['reference_g_per_s']:.4g}" if r["reference_g_per_s"] is not None else "-"
        off = f"{r['off_pct']:+.2f}" if r["off_pct"] is not None else "-"
        print(f"{r['tau']:<12} {r['rate_g_per_s']:>9.4g} {ci:>21} {ref:>10} {off:>7}  {r['reference_in_ci95']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
