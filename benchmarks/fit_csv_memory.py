"""Peak RSS of ``archline fit FILE.csv --model basic`` and ``archline compare FILE.csv --by host`` against the
number of rows of one plain (uncompressed, regular) CSV file (breaker 28c): every CSV is read a block of whole
lines at a time (formats/results_file.py, line_blocks.py), so memory should be flat in rows beyond the fit's
fixed reservoir of at most 1 M rows.

Writes, per row count, one CSV of 4 hosts x 2 runs of a seeded emulated GTX 580 sweep of 40 intensity
configurations (20 SP, 20 DP), its 320 lines repeated until the file holds ``--rows`` rows (so 40 configurations
per cell however many rows), then runs each command in a fresh process (wait4 for peak RSS) and prints rows,
file size, wall time and peak RSS.

    python benchmarks/fit_csv_memory.py --rows 250000 1000000 2000000 [--compare] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
from pathlib import Path

CONFIGS = 40


def write_csv(path: Path, rows: int, hosts: int = 4, runs: int = 2) -> None:
    import pandas as pd

    from archline.fit.regress.synthetic import GTX580, synthetic_results, write_results_csv

    frames = []
    for h in range(hosts):
        for r in range(runs):
            f = synthetic_results(GTX580, n_sp=CONFIGS // 2, n_dp=CONFIGS // 2, n_l1=0, n_l2=0, n_rand=0,
                                  seed=100 * h + r)
            f["host"], f["run_id"], f["config_hash"] = f"node{h:02d}", f"run{r}", "hash"
            f["point_id"] = [f"p{i:03d}" for i in range(len(f))]
            frames.append(f)
    base = path.with_suffix(".base.csv")
    write_results_csv(pd.concat(frames), base)
    header, body = base.read_bytes().split(b"\n", 1)
    base.unlink()
    per = body.count(b"\n")
    with open(path, "wb") as out:
        out.write(header + b"\n")
        for _ in range(max(rows // per, 1)):
            out.write(body)


def run(cmd: list[str]) -> tuple[float, float]:
    """(wall s, peak RSS MB) of ``cmd`` in a fresh process."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = p.stderr.read() if p.stderr else b""
    _, status, usage = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{err.decode(errors='replace')[-2000:]}")
    return time.perf_counter() - t0, usage.ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[250_000, 1_000_000, 2_000_000])
    ap.add_argument("--compare", action="store_true", help="also archline compare FILE --by host")
    ap.add_argument("--keep", type=Path, help="write the CSVs here (kept) instead of a temporary directory")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        d = a.keep or Path(tmp)
        d.mkdir(parents=True, exist_ok=True)
        print(f"{'rows':>10} {'MB file':>8} {'command':>8} {'wall s':>7} {'peak MB':>8}")
        for rows in a.rows:
            f = d / f"rows{rows}.csv"
            if not f.exists():
                write_csv(f, rows)
            size = f.stat().st_size / 1e6
            cmds = {"fit": ["archline", "fit", str(f), "--model", "basic", "--format", "json", "--out",
                            str(d / "fit.json")]}
            if a.compare:
                cmds["compare"] = ["archline", "compare", str(f), "--by", "host", "--format", "json"]
            for name, cmd in cmds.items():
                wall, peak = run(cmd)
                print(f"{rows:>10} {size:>8.0f} {name:>8} {wall:>7.2f} {peak:>8.0f}", flush=True)


if __name__ == "__main__":
    main()
