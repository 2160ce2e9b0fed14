"""What the back-end registry costs (issue 37 item 2): the first lookup in a fresh interpreter (the built-in
folders' ``BACKEND`` entries and the ``archline.backends`` entry points scanned once), a cached lookup, and
``archline --help`` / ``archline bench run --help`` wall time (the first loads no back end; the second lists them).

    python benchmarks/backend_registry.py [--repeat 5]

Each figure is the median of ``--repeat`` fresh interpreters; timings on a loaded machine are noisy.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

FIRST = ("import time; from archline.bench import registry; t = time.perf_counter(); registry.backends(); "
         "t1 = time.perf_counter(); registry.backends(); t2 = time.perf_counter(); "
         "print(t1 - t, t2 - t1)")


def _wall_s(args: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(args, check=True, capture_output=True)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    n = ap.parse_args().repeat
    first, cached = [], []
    for _ in range(n):
        out = subprocess.run([sys.executable, "-c", FIRST], check=True, capture_output=True, text=True).stdout
        a, b = map(float, out.split())
        first.append(a)
        cached.append(b)
    cli = [sys.executable, "-c", "from archline.cli.main import main; main()"]
    top = [_wall_s([*cli, "--help"]) for _ in range(n)]
    run_help = [_wall_s([*cli, "bench", "run", "--help"]) for _ in range(n)]
    print(f"registry first lookup        {statistics.median(first) * 1e3:8.2f} ms (median of {n})")
    print(f"registry cached lookup       {statistics.median(cached) * 1e6:8.2f} us")
    print(f"archline --help              {statistics.median(top):8.3f} s wall")
    print(f"archline bench run --help    {statistics.median(run_help):8.3f} s wall")


if __name__ == "__main__":
    main()
