"""Issue 36 (hangs): how archline answers a memory limit and SIGTERM. Rerun on a quiet machine for timings.

    python benchmarks/limits_and_sigterm.py                 # both tables
    python benchmarks/limits_and_sigterm.py --limits 300000 600000 --repeat 5 --json

1. ``archline fit`` of the repository's sample results under ``ulimit -v N`` (KiB) for each N: exit code, wall
   time and the first line of stderr. A spin (the issue: 100% CPU until killed) shows as ``TIMEOUT``; a clean
   run has none, and every non-zero exit is exit 2 with the limit named.
3. ``--thresholds DIR``: for fit, compare, plot and lab collect of a lab's data (DIR holds ``r.csv``, ``b.csv``
   and ``lab.toml`` whose results are collected), the least ``ulimit -v`` (KiB, to 10 MB) each exits 0 under,
   and whether any limit tried gave an exit other than 0 or 2 (a native abort: 134, 127).
2. SIGTERM while the main thread is stuck in one C call that never returns (a BLAS retry loop, as in the
   issue): seconds from the signal to the exit (130), over ``--repeat`` tries. Before issue 36: never (killed).
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
MAIN = "import sys; from archline.cli.main import main; main()"
STUCK = """
import ctypes, signal, sys
import click
from archline.cli import main as m
READY = sys.argv[1]

@click.command()
def stuck():
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    open(READY, "w").close()
    ctypes.CDLL(None).sleep(600)

m.SUBCOMMANDS["stuck"] = "__main__:stuck"
sys.argv = ["archline", "stuck"]
m.main()
"""


def _sample() -> Path:
    found = sorted((REPO / "results" / "sample").glob("*.csv"))
    if not found:
        raise SystemExit("no results/sample/*.csv in the repository")
    return found[0]


def fit_under(limit_kib: int, timeout_s: float) -> dict[str, Any]:
    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_kib * 1024, limit_kib * 1024))

    t0 = time.monotonic()
    try:
        res = subprocess.run([sys.executable, "-c", MAIN, "fit", str(_sample())], capture_output=True, text=True,
                             timeout=timeout_s, preexec_fn=limited, check=False)
    except subprocess.TimeoutExpired:
        return {"limit_kib": limit_kib, "exit": "TIMEOUT", "wall_s": timeout_s, "stderr": ""}
    lines = res.stderr.strip().splitlines()
    return {"limit_kib": limit_kib, "exit": res.returncode, "wall_s": round(time.monotonic() - t0, 2),
            "stderr": lines[-1][:150] if lines else ""}


def run_under(limit_kib: int, args: list[str], cwd: Path, timeout_s: float = 120) -> int:
    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_kib * 1024, limit_kib * 1024))

    try:
        return subprocess.run([sys.executable, "-c", MAIN, *args], capture_output=True, cwd=cwd, timeout=timeout_s,
                              preexec_fn=limited, check=False).returncode
    except subprocess.TimeoutExpired:
        return -1


def thresholds(data: Path) -> dict[str, Any]:
    """The least limit (KiB) each command exits 0 under, by bisection over 300000..1000000, and every exit seen."""
    with tempfile.TemporaryDirectory() as tmp:
        cmds = {"fit": ["fit", "r.csv", "--format", "json", "--out", "/dev/null"],
                "compare": ["compare", "r.csv", "b.csv", "--by", "run"],
                "plot": ["plot", "r.csv", "--out", f"{tmp}/p.png"],
                "lab collect": ["lab", "collect", "lab.toml", "--out", f"{tmp}/ds"]}
        out: dict[str, Any] = {}
        for name, args in cmds.items():
            lo, hi, seen = 300000, 1000000, set()
            while hi - lo > 10000:
                mid = (lo + hi) // 2
                if name == "lab collect":
                    shutil.rmtree(f"{tmp}/ds", ignore_errors=True)
                code = run_under(mid, args, data)
                seen.add(code)
                lo, hi = (lo, mid) if code == 0 else (mid, hi)
            out[name] = {"works_from_kib": hi, "exits_seen": sorted(seen)}
        return out


def sigterm_latency_s() -> float | None:
    with tempfile.TemporaryDirectory() as tmp:
        ready = Path(tmp) / "ready"
        proc = subprocess.Popen([sys.executable, "-c", STUCK, str(ready)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        while not ready.exists() and proc.poll() is None:
            time.sleep(0.01)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            return None
        return time.monotonic() - t0 if code == 130 else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limits", type=int, nargs="*",
                    default=[200000, 300000, 400000, 500000, 600000, 700000, 800000, 1000000])
    ap.add_argument("--timeout-s", type=float, default=60.0)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--thresholds", type=Path, help="a directory with r.csv, b.csv and lab.toml (see above)")
    args = ap.parse_args()
    if args.thresholds is not None:
        found = thresholds(args.thresholds)
        print(json.dumps(found, indent=1))
        return 0 if all(set(f["exits_seen"]) <= {0, 2} for f in found.values()) else 1
    fits = [fit_under(n, args.timeout_s) for n in args.limits]
    lat = [sigterm_latency_s() for _ in range(args.repeat)]
    ok = [x for x in lat if x is not None]
    stuck: dict[str, Any] = {"tries": len(lat), "answered": len(ok),
                             "median_s": round(statistics.median(ok), 3) if ok else None,
                             "max_s": round(max(ok), 3) if ok else None}
    out: dict[str, Any] = {"fit_under_limit": fits, "sigterm_stuck_in_c": stuck}
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        print(f"{'ulimit -v':>10}  {'exit':>7}  {'wall_s':>6}  stderr (last line)")
        for f in fits:
            print(f"{f['limit_kib']:>10}  {f['exit']!s:>7}  {f['wall_s']:>6}  {f['stderr']}")
        print(f"SIGTERM while stuck in C: {stuck['answered']}/{stuck['tries']} answered (exit 130), "
              f"median {stuck['median_s']} s, max {stuck['max_s']} s")
    spins = sum(1 for f in fits if f["exit"] == "TIMEOUT")
    unclean = sum(1 for f in fits if f["exit"] not in (0, 2, "TIMEOUT"))
    return 0 if spins == 0 and unclean == 0 and len(ok) == len(lat) else 1


if __name__ == "__main__":
    sys.exit(main())
