"""Alarm rates of ``archline compare --by host`` before and after issue 28, on emulated GTX 580 fleets.

Fleets of 8 nodes x 4 runs (61 intensity points x 3 repeats per run, 1% row noise, every energy coefficient
drifting 1% (s.d.) from run to run); node effects on eps_mem none, ±2% (one node +2%, one -2%) and ±5%.
"before" is the pooled comparison (one fit per node, its own standard errors: ``--method pooled``); "after" is
the two-stage random-effects comparison (the default). Two simulations (fit/analyses/choi/compare_sim.py):

* ``fast``: stage 1 drawn at the standard error a run's fit has, ``--fleets`` fleets per scenario;
* ``rows``: every fleet's rows generated and compared end to end (the real fits), ``--row-fleets`` per scenario.

    python benchmarks/compare_alarms.py [--fleets 2000] [--row-fleets 40] [--alpha 0.05]
"""

from __future__ import annotations

import argparse
import math
import time


def _pct(x: float) -> str:
    return "-" if math.isnan(x) else f"{100 * x:.1f}%"


def _ci(k: int, n: int) -> str:
    """Wilson 95% interval of k/n."""
    if not n:
        return ""
    p, z = k / n, 1.96
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return f"[{100 * max(c - h, 0):.1f}, {100 * min(c + h, 1):.1f}]"


def main() -> None:
    from archline.fit.analyses.choi.compare_sim import SCENARIOS, simulate_fast, simulate_rows

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fleets", type=int, default=2000)
    ap.add_argument("--row-fleets", type=int, default=40)
    ap.add_argument("--alpha", type=float, default=0.05)
    args = ap.parse_args()
    s0 = SCENARIOS[0]
    print(f"emulated GTX 580 fleets: {s0.n_hosts} nodes x {s0.n_runs} runs, 61 points x {s0.n_repeats} repeats per "
          f"run, row noise {100 * s0.noise:g}%, run drift {100 * s0.run_sd:g}% (s.d.), alpha {args.alpha:g} "
          f"(Holm over the nodes), coefficient eps_mem")
    head = (f"{'simulation':<6} {'node effect':<11} {'method':<22} {'fleets':>6}  {'identical node flagged':<24}"
            f"{'fleets with a false alarm':<27}{'real node found'}")
    print(head)
    print("-" * len(head))
    for kind, n, fn in (("fast", args.fleets, simulate_fast), ("rows", args.row_fleets, simulate_rows)):
        if n <= 0:
            continue
        for s in SCENARIOS:
            t0 = time.perf_counter()
            res = fn(s, n, alpha=args.alpha, seed=1)
            for m, label in (("pooled", "before (pooled fit)"), ("two-stage", "after (two-stage RE)")):
                r = res[m]
                print(f"{kind:<6} {s.name:<11} {label:<22} {n:>6}  "
                      f"{_pct(r.false_alarm_rate):>6} {_ci(r.identical_flagged, r.identical_nodes):<17}"
                      f"{_pct(r.familywise_rate):>6} {_ci(r.fleets_with_false_alarm, n):<20}"
                      f"{_pct(r.power):>6} {_ci(r.effect_found, r.effect_nodes)}")
            print(f"{'':<6} ({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
