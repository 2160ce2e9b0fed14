#!/usr/bin/env python3
"""The main job, `archline bench run --platform localhost --quick`, against likwid-bench in the same minutes.

    python3 benchmarks/quick_vs_likwid.py [--rounds 3] [--mem-size 1GB] [--json OUT]

Each round runs the quick run (the real CLI, a subprocess: its wall time is what a user waits, start-up and
figures included) and likwid-bench's DP peak (peakflops_avx512_fma / peakflops_avx_fma on L1-resident data, as
benchmarks/cpu_vs_likwid.py runs it) and DRAM bandwidth (stream_mem_avx512 / stream_mem_avx_fma on --mem-size),
all cores; the order flips every round so a drift over the minutes weighs on both sides alike. Reports per round
and as medians over the rounds: the quick run's wall time, its exit code and checksums, its summary's DP peak and
DRAM bandwidth (robust medians, bench/run/summary.py) and their ratios to likwid's.

Targets (issue 34, item 1): wall time <= 30 s on the 2-core VM, peak DP >= 0.95x and DRAM >= 0.90x likwid-bench.
The quick runs keep their state (the localhost roofline.json copy) in a temporary XDG_STATE_HOME, never the
user's. Numbers taken while other programs share the cores say little: rerun on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu_vs_likwid import likwid, likwid_and_isa

from archline.bench.cpu_asm import topology as topo

TARGET_WALL_S = 30.0
TARGET_PEAK_DP = 0.95
TARGET_DRAM = 0.90


def quick_run(out: Path, state: Path) -> dict[str, Any]:
    """One `bench run --platform localhost --quick --format json`: its wall time, exit code and JSON report."""
    env = {**os.environ, "XDG_STATE_HOME": str(state)}
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "archline.cli", "bench", "run", "--platform", "localhost", "--quick",
                        "--out", str(out), "--format", "json"], capture_output=True, text=True, env=env,
                       timeout=600)
    wall_s = time.monotonic() - t0
    try:
        doc = json.loads(p.stdout)
    except json.JSONDecodeError:
        doc = {}
    if p.returncode != 0 or not doc:
        print(p.stderr[-2000:], file=sys.stderr)
    return {"wall_s": wall_s, "exit_code": p.returncode, "report": doc}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3, help="alternated rounds (quick run, likwid-bench)")
    ap.add_argument("--mem-size", default="1GB", help="likwid-bench stream_mem working set (likwid's syntax)")
    ap.add_argument("--json", default=None, help="write every round's numbers here")
    a = ap.parse_args()
    isa = likwid_and_isa()
    if isa is None:
        return 2
    suffix = "avx512" if isa == "avx512" else "avx"
    stream = "stream_mem_avx512" if isa == "avx512" else "stream_mem_avx_fma"
    threads = len(topo.one_cpu_per_core())
    l1_kb = topo.level_working_sets(threads)["l1"] // 1024

    def theirs() -> tuple[float, float]:
        peak = likwid(f"peakflops_{suffix}_fma", f"{l1_kb}kB", threads)["MFlops/s"] / 1e3
        dram = likwid(stream, a.mem_size, threads)["MByte/s"] / 1e3
        return peak, dram

    rounds: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="quick_vs_likwid-") as tmp:
        for i in range(a.rounds):
            out, state = Path(tmp) / f"r{i}", Path(tmp) / f"state{i}"
            if i % 2 == 0:
                ours = quick_run(out, state)
                peak_l, dram_l = theirs()
            else:
                peak_l, dram_l = theirs()
                ours = quick_run(out, state)
            rep = ours["report"]
            peak = rep.get("peaks_gflop_per_s", {}).get("dp", float("nan"))
            dram = rep.get("bandwidths_gb_per_s", {}).get("DRAM", float("nan"))
            ck = rep.get("checksums", {})
            r = {"round": i, "order": "quick first" if i % 2 == 0 else "likwid first", "wall_s": ours["wall_s"],
                 "exit_code": ours["exit_code"], "checksums_ok": ck.get("ok") == ck.get("checked") == ck.get("rows"),
                 "peak_dp_gflop_per_s": peak, "dram_gb_per_s": dram, "likwid_peak_dp_gflop_per_s": peak_l,
                 "likwid_dram_gb_per_s": dram_l, "peak_dp_ratio": peak / peak_l, "dram_ratio": dram / dram_l,
                 "not_trusted": rep.get("not_trusted"), "figures": rep.get("figures")}
            rounds.append(r)
            print(f"round {i} ({r['order']}): quick {r['wall_s']:.1f} s exit {r['exit_code']} checksums "
                  f"{'ok' if r['checksums_ok'] else 'NOT ok'}; peak DP {peak:.4g} vs likwid {peak_l:.4g} GFLOP/s "
                  f"= {r['peak_dp_ratio']:.3f}; DRAM {dram:.4g} vs likwid {dram_l:.4g} GB/s = {r['dram_ratio']:.3f}"
                  f"; not trusted: {', '.join(r['not_trusted'] or []) or 'none'}", flush=True)
    wall = statistics.median(r["wall_s"] for r in rounds)
    pk = statistics.median(r["peak_dp_ratio"] for r in rounds)
    dr = statistics.median(r["dram_ratio"] for r in rounds)
    ok = all(r["exit_code"] == 0 and r["checksums_ok"] for r in rounds)

    def verdict(good: bool) -> str:
        return "meets" if good else "MISSES"

    print(f"medians over {len(rounds)} rounds ({threads} threads, {isa}):")
    print(f"  quick run wall time {wall:.1f} s ({verdict(wall <= TARGET_WALL_S)} <= {TARGET_WALL_S:g} s)")
    print(f"  peak DP / likwid {pk:.3f} ({verdict(pk >= TARGET_PEAK_DP)} >= {TARGET_PEAK_DP})")
    print(f"  DRAM / likwid {dr:.3f} ({verdict(dr >= TARGET_DRAM)} >= {TARGET_DRAM})")
    print(f"  every quick run exit 0 with every checksum ok: {'yes' if ok else 'NO'}")
    if a.json:
        Path(a.json).write_text(json.dumps({"isa": isa, "threads": threads, "rounds": rounds, "median_wall_s": wall,
                                            "median_peak_dp_ratio": pk, "median_dram_ratio": dr}, indent=2) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
