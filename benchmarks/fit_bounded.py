"""`archline fit` in bounded memory (issue 28): time and peak RSS against the pyarrow scan floor of the same data,
and the coefficients against today's row-keeping reader.

Writes a hive-partitioned data set as benchmarks/fit_memory.py does (platform=gtx580/host=<h>/run_id=<r>/
part-0.parquet, a million emulated GTX 580 rows per part, one seeded synthetic sweep written once and
hard-linked, so 100 parts cost one part's disk). As a sweep writes them, each configuration's repeats are
consecutive rows (101 configurations, 61 of them the basic model's, each one run of 9,901 rows per part).
Then, in fresh processes (wait4 for peak RSS), alternating floor and fit --repeat times (best and every run
reported, since other jobs share the machine):

1. the floor: pyarrow reads every part file with exactly the columns and calls the fit's reader uses
   (pyarrow.parquet.ParquetFile per file with read_dictionary= the text columns and the same buffered stream,
   iter_batches with the same batch size and use_threads=True; columns: the configuration keys
   platform/kernel/precision/level, the flags schema/backend/emulated/checksum_ok, the nine counts, the five
   settings, time_s and energy_j, those the file has) and sums time_s and energy_j (a scan, nothing kept). It
   is the cost of getting the fit's bytes into Arrow, nothing more; the fit does all of this plus its own work;
2. `archline fit DIR --model basic --format json --out FILE`, the whole command (start-up, imports, the fit
   and the JSON written): the same ParquetFile/iter_batches read as the floor, in a read-ahead thread (the
   next batch is decoded while this one is reduced; two batches alive at most), plus, on the main thread: the
   partition's platform as a constant column, every row checked (schema, text, numbers, checksum), each
   batch's rows keyed into configurations (run by run when rows come in runs of one configuration,
   fit/io/configs.py run_starts; row by row otherwise), each batch's per-configuration statistics merged
   into running ones and a uniform reservoir of 1 M rows kept for the per-row error figures;
3. the same fit of the first part alone (--where run_id=night000) with and without the bound: coefficients
   equal to 1e-9 relative.

With ``--configs N`` instead: one Parquet file of N rows, every row its own configuration (its own working set),
fitted with ARCHLINE_FIT_MAX_CONFIGS=N, beside the same for N/10: peak RSS and the bytes each configuration adds.

    python benchmarks/fit_bounded.py [--parts 100] [--repeat 3] [--keep DIR]
    python benchmarks/fit_bounded.py --configs 100000
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

FLOOR = """
import sys, numpy as np, pyarrow.parquet as pq, pyarrow.compute as pc
from pathlib import Path
from archline.formats.dataset import PARQUET_BATCH_ROWS, PARQUET_BUFFER_BYTES
from archline.formats.results_check import COUNT_COLUMNS, FLAG_COLUMNS, SETTING_COLUMNS, TEXT_KEYS
text, num = (*TEXT_KEYS, *FLAG_COLUMNS), (*COUNT_COLUMNS, *SETTING_COLUMNS, "time_s", "energy_j")
n, s = 0, 0.0
for f in sorted(Path(sys.argv[1]).glob("platform=*/host=*/run_id=*/part-*.parquet")):
    names = set(pq.ParquetFile(f).schema_arrow.names)
    pf = pq.ParquetFile(f, read_dictionary=[c for c in text if c in names], buffer_size=PARQUET_BUFFER_BYTES,
                        pre_buffer=False)
    cols = [c for c in (*text, *num) if c in names]
    for b in pf.iter_batches(batch_size=PARQUET_BATCH_ROWS, columns=cols, use_threads=True):
        n += b.num_rows
        s += pc.sum(b.column("time_s")).as_py() + pc.sum(b.column("energy_j")).as_py()
print(n, s)
"""


EQUAL = """
import json, sys
from archline.fit.io.results import read_results, group_rows
from archline.fit.regress.api import FitOptions, fit_group
out = {}
for label, mr in (("rows", None), ("bounded", 200_000)):
    rs = read_results([sys.argv[1]], ["run_id=night000"], carry=(), max_rows=mr)
    (g,) = group_rows(rs)
    r = fit_group(g, FitOptions(model="basic", validate=False))
    out[label] = {k: c.value for k, c in r.coefficients.items()}
    out[label + "_sampled"] = rs.data.sampled
print(json.dumps(out))
"""


def write_dataset(root: Path, parts: int) -> int:
    from archline.fit.regress.synthetic import GTX580, synthetic_results

    first: Path | None = None
    for k in range(parts):
        d = root / "platform=gtx580" / f"host=node{k % 4:02d}" / f"run_id=night{k:03d}"
        target = d / "part-0.parquet"
        if target.exists():
            first = first or target
            continue
        d.mkdir(parents=True, exist_ok=True)
        if first is None:
            f = synthetic_results(GTX580, seed=100, n_repeats=9901).iloc[:ROWS_PER_PART]
            f.drop(columns=["platform", "host", "run_id"]).to_parquet(target, index=False)
            first = target
        else:
            os.link(first, target)
    return parts * ROWS_PER_PART


CONFIGS = """
import sys, numpy as np
from archline.fit.regress.synthetic import GTX580, synthetic_results
n, out = int(sys.argv[1]), sys.argv[2]
base = synthetic_results(GTX580, seed=1, n_repeats=1, n_l1=0, n_l2=0, n_rand=0)
base = base[base.kernel == "intensity"].reset_index(drop=True)
f = base.iloc[np.arange(n) % len(base)].reset_index(drop=True)
scale = 1.0 + np.arange(n) * 1e-7              # every row its own working set, time and energy with it
for c in ("flops_sp", "flops_dp", "bytes_mem", "time_s", "energy_j"):
    f[c] = f[c] * scale
f.to_parquet(out, index=False)
"""


def configs_main(n: int, root: Path) -> None:
    """Peak RSS of `archline fit` on n and n/10 distinct configurations (one row each)."""
    py = sys.executable
    root.mkdir(parents=True, exist_ok=True)
    rss: dict[int, float] = {}
    for m in (max(n // 10, 1), n):
        src, out = root / f"configs-{m}.parquet", root / f"configs-{m}.json"
        subprocess.run([py, "-c", CONFIGS, str(m), str(src)], check=True)
        wall, rss[m], _ = _run([py, "-c", "import sys; from archline.cli.main import main; sys.exit(main())", "fit",
                                str(src), "--model", "basic", "--format", "json", "--out", str(out)],
                               env={**os.environ, "ARCHLINE_FIT_MAX_CONFIGS": str(m)})
        print(f"{m:>10,} configurations: wall {wall:6.1f} s, peak RSS {rss[m]:7.0f} MB")
    lo = max(n // 10, 1)
    print(f"peak RSS grows by {(rss[n] - rss[lo]) * 2**20 / (n - lo):,.0f} bytes per configuration "
          f"(reader and model fit together)")


def _run(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, str]:
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    out = p.stdout.read() if p.stdout else ""
    err = p.stderr.read() if p.stderr else ""
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{err[-2000:]}")
    return wall, usage.ru_maxrss / 1024, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parts", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3, help="alternating floor/fit runs; the best of each is compared")
    ap.add_argument("--keep", type=Path)
    ap.add_argument("--configs", type=int, help="instead: peak RSS of N distinct configurations (one row each)")
    ap.add_argument("--write-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.configs:
        tmp = Path(tempfile.mkdtemp(prefix="archline-fit-configs-"))
        try:
            configs_main(args.configs, args.keep or tmp)
        finally:
            import shutil

            shutil.rmtree(tmp)
        return
    if args.write_only:        # the child that writes the data set (see below)
        write_dataset(args.keep, args.parts)
        return
    root = args.keep or Path(tempfile.mkdtemp(prefix="archline-fit-bounded-"))
    # Written in a child: Linux carries a process's peak RSS over fork and exec into the child's ru_maxrss, so a
    # parent grown by pandas while writing would set a floor under every peak wait4 reports.
    subprocess.run([sys.executable, __file__, "--parts", str(args.parts), "--keep", str(root), "--write-only"],
                   check=True)
    n = args.parts * ROWS_PER_PART
    size = sum(p.stat().st_size for p in root.rglob("*.parquet"))
    out = root.parent / (root.name + "-costs.json")
    py = sys.executable
    fit_cmd = [py, "-c", "import sys; from archline.cli.main import main; sys.exit(main())", "fit",
               str(root), "--model", "basic", "--format", "json", "--out", str(out)]
    floors: list[tuple[float, float]] = []
    fits: list[tuple[float, float]] = []
    for _ in range(args.repeat):       # alternating, so a busy spell on the machine hits both sides
        t_floor, rss_floor, floor_out = _run([py, "-c", FLOOR, str(root)])
        assert int(floor_out.split()[0]) == n, floor_out
        floors.append((t_floor, rss_floor))
        t_fit, rss_fit, _ = _run(fit_cmd)
        fits.append((t_fit, rss_fit))
    t_floor, t_fit = min(f[0] for f in floors), min(f[0] for f in fits)
    rss_floor, rss_fit = max(f[1] for f in floors), max(f[1] for f in fits)
    doc = json.loads(out.read_text())
    _, _, eq = _run([py, "-c", EQUAL, str(root)])
    e = json.loads(eq)
    worst = max(abs(e["bounded"][k] / v - 1) for k, v in e["rows"].items())
    print(f"{n:,} rows in {args.parts} Parquet parts ({size / 1e6:.0f} MB as read; parts hard-linked) -> "
          f"{doc['model']} fit of {doc['n_points']:,} rows in {doc['quality']['n_configurations']} configurations")
    print(f"{'':<50}{'wall s':>8}{'peak RSS MB':>13}")
    for i, ((tf, rf), (tt, rt)) in enumerate(zip(floors, fits, strict=True)):
        print(f"{f'run {i + 1}: floor':<50}{tf:>8.1f}{rf:>13.0f}")
        print(f"{f'run {i + 1}: fit':<50}{tt:>8.1f}{rt:>13.0f}   ({tt / tf:.2f}x this run's floor)")
    print(f"{'pyarrow scan floor (same columns as the fit), best':<50}{t_floor:>8.1f}{rss_floor:>13.0f}")
    print(f"{'archline fit DIR --model basic (bounded), best':<50}{t_fit:>8.1f}{rss_fit:>13.0f}")
    print(f"time / floor (best / best) {t_fit / t_floor:.2f}x (goal <= 2x); peak RSS (largest) goal < 1024 MB")
    print(f"1 M rows, bounded (reservoir 200k, sampled={e['bounded_sampled']}) vs row-keeping fit: worst "
          f"coefficient relative difference {worst:.1e} (goal <= 1e-9)")
    if not args.keep:
        import shutil

        shutil.rmtree(root)
        out.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
