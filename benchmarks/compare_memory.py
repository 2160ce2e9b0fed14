"""Peak RSS of ``archline compare DIR --by host|run|platform`` against the number of rows (the fit of each cell
from configuration statistics, memory bounded by configurations), and its coefficients against a saved run.

Writes a hive-partitioned data set (DIR/platform=gtx580/host=node0<h>/run_id=run<r>/part-0.parquet, partition
columns in the directory names only, as ``archline lab collect`` writes them): ``--hosts`` x ``--runs`` cells,
each one seeded emulated GTX 580 sweep of 40 intensity configurations (20 SP, 20 DP) repeated until the data set
holds ``--rows`` rows; node03's eps_mem is 5% high. Then runs ``archline compare DIR --by BY --format json`` in
a fresh process (wait4 for peak RSS, written in a child first so the parent's pandas does not set a floor).

    python benchmarks/compare_memory.py --rows 1000000 4000000 [--by host] [--save OUT.json] [--against OLD.json]

``--save`` writes every compare output (per row count); ``--against`` compares each coefficient value, group by
group, with such a file (e.g. one saved by the code before the bounded reader) and prints the worst relative
difference.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

CONFIGS = 40


def write_dataset(root: Path, rows: int, hosts: int, runs: int) -> None:
    from archline.fit.regress.synthetic import GTX580, synthetic_results

    repeats = max(rows // (hosts * runs * CONFIGS), 1)
    for h in range(hosts):
        plat = replace(GTX580, eps_mem_j_per_byte=GTX580.eps_mem_j_per_byte * (1.05 if h == 3 else 1.0))
        for r in range(runs):
            d = root / "platform=gtx580" / f"host=node{h:02d}" / f"run_id=run{r}"
            d.mkdir(parents=True, exist_ok=True)
            f = synthetic_results(plat, n_sp=CONFIGS // 2, n_dp=CONFIGS // 2, n_l1=0, n_l2=0, n_rand=0,
                                  seed=100 * h + r, n_repeats=repeats)
            f.drop(columns=["platform", "host", "run_id"]).to_parquet(d / "part-0.parquet", index=False)


def _run(cmd: list[str]) -> tuple[float, float, str]:
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = p.stdout.read() if p.stdout else ""
    err = p.stderr.read() if p.stderr else ""
    _, status, usage = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{err[-2000:]}")
    return time.perf_counter() - t0, usage.ru_maxrss / 1024, out


def values(doc: dict[str, Any]) -> dict[str, float]:
    """(block, coefficient, group) -> value of one compare JSON."""
    return {f"{b['scope']}/{c['name']}/{v['group']}": float(v["value"])
            for b in doc["blocks"] for c in b["coefficients"] for v in c["values"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 4_000_000])
    ap.add_argument("--hosts", type=int, default=4)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--by", default="host", choices=["host", "run", "platform"])
    ap.add_argument("--keep", type=Path, help="write the data sets here (DIR/rows-N) and keep them")
    ap.add_argument("--save", type=Path, help="write every compare output here (JSON, by row count)")
    ap.add_argument("--against", type=Path, help="a --save file to compare the coefficients with")
    ap.add_argument("--write-only", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.write_only:
        write_dataset(args.keep, args.write_only, args.hosts, args.runs)
        return
    base = args.keep or Path(tempfile.mkdtemp(prefix="archline-compare-memory-"))
    py = sys.executable
    saved: dict[str, Any] = {}
    old = json.loads(args.against.read_text()) if args.against else {}
    print(f"{'rows':>12} {'wall s':>8} {'peak RSS MB':>12} {'bytes/row':>10}  worst rel. diff vs --against")
    try:
        for n in args.rows:
            root = base / f"rows-{n}"
            if not root.exists():
                subprocess.run([py, __file__, "--keep", str(root), "--write-only", str(n), "--hosts",
                                str(args.hosts), "--runs", str(args.runs)], check=True)
            wall, rss, out = _run([py, "-c", "import sys; from archline.cli.main import main; sys.exit(main())",
                                   "compare", str(root), "--by", args.by, "--format", "json"])
            doc = json.loads(out)
            saved[str(n)] = doc
            diff = ""
            if str(n) in old:
                a, b = values(old[str(n)]), values(doc)
                if set(a) != set(b):
                    diff = f"different coefficients/groups: {sorted(set(a) ^ set(b))}"
                else:
                    diff = f"{max(abs(b[k] / a[k] - 1) if a[k] else abs(b[k]) for k in a):.1e}"
            print(f"{n:>12,} {wall:>8.1f} {rss:>12.0f} {rss * 2**20 / n:>10.0f}  {diff}")
    finally:
        if args.save:
            args.save.write_text(json.dumps(saved, default=float))
        if not args.keep:
            import shutil

            shutil.rmtree(base)


if __name__ == "__main__":
    main()
