"""Issue 36 (hangs): how archline answers a memory limit and SIGTERM. Rerun on a quiet machine for timings.

    python benchmarks/limits_and_sigterm.py                 # both tables
    python benchmarks/limits_and_sigterm.py --limits 300000 600000 --repeat 5 --json

1. ``archline fit`` of the repository's sample results under ``ulimit -v N`` (KiB) for each N: exit code, wall
   time and the first line of stderr. A spin (the issue: 100% CPU until killed) shows as ``TIMEOUT``; a clean
   run has none, and every non-zero exit is exit 2 with the limit named.
2. SIGTERM while the main thread is stuck in one C call that never returns (a BLAS retry loop, as in the
   issue): seconds from the signal to the exit (130), over ``--repeat`` tries. Before issue 36: never (killed).
"""

from __future__ import annotations

import argparse
import json
import resource
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
    args = ap.parse_args()
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
