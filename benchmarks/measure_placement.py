"""A program whose counts are known, measured and placed on a roofline end to end (issue 34 item 4): a numpy
float64 matmul of n x n matrices does 2 n^3 flops and moves at least 3 x 8 n^2 bytes from DRAM (A and B read
once, C written once); it marks the product as the phase 'matmul'. For each n this runs

    archline measure --costs COSTS --counts-file counts.csv --format json -- python3 matmul.py N

(the counts CSV: a 'run' row and a 'matmul' row with those counts) and prints the phase's measured time, its
achieved GFLOP/s beside the time roofline's attainable bound, and the energies where there are any (else the
reason). Timings depend on the machine's load: rerun on a quiet one.

    python benchmarks/measure_placement.py [--costs localhost|gtx580|TABLE.json] [--n 500 1000 2000]
        [--emulate-w BUSY IDLE]       # localhost's emulated schedule (energy = schedule x measured time)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

PROGRAM = """
import sys
import numpy as np
import archline

n = int(sys.argv[1])
rng = np.random.default_rng(0)
a, b = rng.random((n, n)), rng.random((n, n))
with archline.Monitor.from_env().window("matmul"):
    c = a @ b
print(f"checksum {c.sum():.6g}")
"""


def run(costs: str, n: int, work: Path, emulate_w: list[float] | None) -> dict:
    flops, bytes_mem = 2.0 * n**3, 3.0 * 8.0 * n**2
    counts = work / f"counts-{n}.csv"
    counts.write_text(f"name,flops_dp,bytes_mem\nrun,{flops:g},{bytes_mem:g}\nmatmul,{flops:g},{bytes_mem:g}\n")
    prog = work / "matmul.py"
    prog.write_text(PROGRAM)
    emulate = ["--platform", "localhost", "--emulate", "--busy-w", f"{emulate_w[0]:g}", "--idle-w",
               f"{emulate_w[1]:g}"] if emulate_w else []
    argv = [sys.executable, "-m", "archline.cli", "measure", *emulate, "--costs", costs, "--counts-file",
            str(counts), "--format", "json", "--", sys.executable, str(prog), str(n)]
    r = subprocess.run(argv, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise SystemExit(f"archline measure failed ({r.returncode}): {r.stderr.strip()}")
    return json.loads(r.stdout)  # type: ignore[no-any-return]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--costs", default="gtx580")
    ap.add_argument("--n", type=int, nargs="+", default=[500, 1000, 2000])
    ap.add_argument("--emulate-w", type=float, nargs=2, default=None, metavar=("BUSY_W", "IDLE_W"))
    args = ap.parse_args()
    print(f"{'n':>6} {'phase_s':>9} {'run_s':>8} {'achieved':>10} {'attainable':>11} {'share':>7}  "
          f"{'measured_j':>10} {'predicted_j':>11}  (GFLOP/s; costs {args.costs})")
    with tempfile.TemporaryDirectory(prefix="archline-placement-") as tmp:
        for n in args.n:
            doc = run(args.costs, n, Path(tmp), args.emulate_w)
            run_pl = doc["placement"]
            (pl,) = run_pl["phases"]
            if "reason" in pl:
                print(f"{n:>6} not placed: {pl['reason']}")
                continue
            m, pr = pl["measured"], pl["predicted"]

            def j(x: float | None) -> str:
                return "-" if x is None else f"{x:.4g}"

            print(f"{n:>6} {m['time_s']:>9.4f} {run_pl['measured']['time_s']:>8.4f} "
                  f"{pl['achieved_gflop_per_s']:>10.3f} {pl['attainable_gflop_per_s']:>11.3f} "
                  f"{pl['achieved_gflop_per_s'] / pl['attainable_gflop_per_s']:>7.1%}  {j(m['energy_j']):>10} "
                  f"{j(pr['energy_j']):>11}")
            if pl.get("energy_reason"):
                print(f"{'':>6} energy: {pl['energy_reason'][:150]}")
            if pl.get("energy_source"):
                print(f"{'':>6} {pl['energy_source']}")


if __name__ == "__main__":
    main()
