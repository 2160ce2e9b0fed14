"""End-to-end timing and recovery: the full emulated sweep of a platform (25 SP + 36 DP intensity points, plus
cache points where the profile has eps_l1/eps_l2), through the emulated PowerMon 2 on a pty, then the fit.

    python benchmarks/runner_emulated_fit.py [PLATFORM_OR_TOML] [--time-compression C] [--quick]

Prints the wall time of the run and, for every coefficient the profile gives, the fitted value against it.
Speed is reported here, never asserted in pytest.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from archline.bench.config.options import RunOptions
from archline.bench.config.profile import load_bench_profile
from archline.bench.run.session import run_once


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("platform", nargs="?", default="gtx580")
    ap.add_argument("--time-compression", type=float, default=50.0)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--kernels", default="intensity,cache")
    args = ap.parse_args()
    prof = load_bench_profile(args.platform)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.monotonic()
        opts = RunOptions(platform=args.platform, emulate=True, kernels=tuple(args.kernels.split(",")),
                          precisions=("sp", "dp"), quick=args.quick, time_compression=args.time_compression)
        out = run_once(opts, Path(tmp), stream=open("/dev/null", "w"))
        run_s = time.monotonic() - t0
        t1 = time.monotonic()
        fit = subprocess.run([sys.executable, "-m", "archline.cli", "fit", str(out.results), "--format", "json"],
                             capture_output=True, text=True, check=True)
        fit_s = time.monotonic() - t1
    costs = json.loads(fit.stdout)
    print(f"{args.platform}: {out.rows} rows ({out.failed} failed), run {run_s:.1f} s wall at "
          f"{args.time_compression:g}x, fit {fit_s:.1f} s, model {costs.get('model')}")
    for key, c in costs["coefficients"].items():
        want = prof.platform.value(key)
        if want:
            err_pct = 100 * (c["value"] / want - 1)
            print(f"  {key:12s} fitted {c['value']:.5g}  put in {want:.5g}  error {err_pct:+.3f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
