"""Peak memory of `archline meter record` of a PowerSensor3 at the real board's 20 kHz (emulated in-process, so
the emulator's own share is included), by recording length: meter record keeps every frame in memory and writes
the trace at the end, so its peak grows with the duration (issue 35 S#15). Each length runs in a fresh process;
the figure is its peak resident set (ru_maxrss) and the growth per recorded second between the shortest and the
longest.

    python benchmarks/powersensor3_record_memory.py [--durations 2,5,10] [--rate 20000] [--suffix parquet]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time


def peak_rss_mb(duration_s: float, rate_hz: float, suffix: str) -> tuple[float, float]:
    """(peak resident MB, wall s) of one recording in a child process of its own."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, f"t.{suffix}")
        code = ("import resource, sys\nfrom archline.cli.main import main\n"
                "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
                "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n")
        t0 = time.monotonic()
        r = subprocess.run([sys.executable, "-c", code, "meter", "record", "--meter",
                            f"powersensor3:powersensor3://default?rate={rate_hz:g}", "--duration", f"{duration_s:g}",
                            "--out", out], capture_output=True, text=True, check=False)
        wall = time.monotonic() - t0
        return int(r.stderr.strip().splitlines()[-1]) / 1024.0, wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--durations", default="2,5,10", help="recording lengths, s (comma-separated)")
    ap.add_argument("--rate", type=float, default=20_000.0, help="frames per second (the real board's 20000)")
    ap.add_argument("--suffix", default="parquet", help="trace format: parquet, csv or csv.gz")
    a = ap.parse_args()
    durations = [float(x) for x in a.durations.split(",")]
    rows = []
    for d in durations:
        mb, wall = peak_rss_mb(d, a.rate, a.suffix)
        rows.append((d, mb))
        print(f"duration {d:6.3g} s  peak RSS {mb:8.1f} MB  wall {wall:6.2f} s", flush=True)
    if len(rows) > 1:
        (d0, m0), (d1, m1) = rows[0], rows[-1]
        print(f"growth {(m1 - m0) / (d1 - d0):.1f} MB per recorded second at {a.rate:g} frames/s ({a.suffix})")


if __name__ == "__main__":
    main()
