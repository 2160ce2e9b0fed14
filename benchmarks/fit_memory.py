"""Peak memory of `archline fit` on a 10-million-row Parquet data set (issue 18: < 2 GB RSS).

Writes a hive-partitioned data set as the lab sweeps lay it out, platform=gtx580/host=<h>/run_id=<r>/
part-0.parquet, each part a million synthetic GTX 580 rows (emulated; archline.fit.regress.synthetic, one seed
per part) without the partition columns in the files, then runs `archline fit DIR --format json` in a fresh
process and reports its wall time and peak RSS (wait4). Every part is written with its own seed (distinct
rows, so this costs a million rows of disk per part); no floor is measured here.

    python benchmarks/fit_memory.py [--parts 10] [--model auto] [--keep DIR]

Issue 18's acceptance: 10 M rows under 2 GB peak RSS. Issue 28's (100 M rows: peak RSS under 1 GB, time
within 2x of the pyarrow scan floor measured in the same run, coefficients equal to the row-keeping fit of
1 M rows to 1e-9 relative) is measured by benchmarks/fit_bounded.py, whose docstring defines the floor (a
pyarrow scan of the same part files reading the same columns, the same way, as the fit's reader).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROWS_PER_PART = 1_000_000


def write_dataset(root: Path, parts: int) -> int:
    from archline.fit.regress.synthetic import GTX580, synthetic_results

    n = 0
    for k in range(parts):
        d = root / "platform=gtx580" / f"host=node{k % 4:02d}" / f"run_id=night{k:03d}"
        target = d / "part-0.parquet"
        if not target.exists():
            d.mkdir(parents=True, exist_ok=True)
            f = synthetic_results(GTX580, seed=100 + k, n_repeats=9901).iloc[:ROWS_PER_PART]
            f.drop(columns=["platform", "host", "run_id"]).to_parquet(target, index=False)
        n += ROWS_PER_PART
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parts", type=int, default=10)
    ap.add_argument("--model", default="auto")
    ap.add_argument("--keep", type=Path)
    args = ap.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="archline-fit-ds-"))
    n = write_dataset(root, args.parts)
    size = sum(p.stat().st_size for p in root.rglob("*.parquet"))
    out = root.parent / (root.name + "-costs.json")
    cmd = [sys.executable, "-c", "import sys; from archline.cli.main import main; sys.exit(main())", "fit",
           str(root), "--model", args.model, "--format", "json", "--out", str(out)]
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit("archline fit failed")
    doc = json.loads(out.read_text())
    print(f"{n:,} rows in {args.parts} Parquet parts ({size / 1e6:.0f} MB) -> {doc['model']} fit of "
          f"{doc['n_points']:,} rows in {doc['quality']['n_configurations']} configurations")
    print(f"archline fit DIR --model {args.model}: {wall:.1f} s, peak RSS {usage.ru_maxrss / 1024:.0f} MB "
          f"(goal < 2048 MB)")


if __name__ == "__main__":
    main()
