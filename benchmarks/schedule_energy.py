"""How close `bench run --platform localhost --emulate`'s schedule energy is to busy_w x the kernel's own time, and
what one RAPL read costs through each source (powercap file, perf_event_open) where this machine has them.

    python benchmarks/schedule_energy.py                      # chase over 64K, 30 W busy / 10 W idle
    python benchmarks/schedule_energy.py --kernel cache --busy-w 65 --idle-w 16.25 --json

Per row: power_w (energy / the kernel's time_s) against --busy-w, the row's clock_drift_rel (the meter's window
against the kernel's timer: the window also holds the threads' start and stop), its energy bound, and
idle_w_before against --idle-w. The energy is busy_w x the window, so power_w / busy_w - 1 follows the drift; a quiet
machine shows a few per cent, a loaded one more. Say the load when quoting the numbers.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def schedule_rows(kernel: str, busy_w: float, idle_w: float, working_set: str) -> list[dict[str, str]]:
    with tempfile.TemporaryDirectory(prefix="archline-sched-") as d:
        subprocess.run([sys.executable, "-c", "import sys; from archline.cli.main import main; sys.exit(main())",
                        "bench", "run", "--platform", "localhost", "--emulate",
                        "--busy-w", str(busy_w), "--idle-w", str(idle_w), "--kernel", kernel, "--working-set",
                        working_set, "--out", d], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        (f,) = Path(d).glob("*.csv")
        return list(csv.DictReader(f.open()))


def read_cost_us(n: int = 2000) -> dict[str, Any]:
    """Median microseconds per read of package-0 through each RAPL source this user can open ('why not' else)."""
    from archline.powermon.counters.rapl import RaplMeter
    from archline.powermon.errors import MeterError

    out: dict[str, Any] = {}
    for source in ("powercap", "perf"):
        try:
            m = RaplMeter(["package-0"], source=source)
        except MeterError as e:
            out[source] = f"not here: {e}"
            continue
        ts = []
        for _ in range(n):
            t0 = time.perf_counter()
            m._read()
            ts.append(time.perf_counter() - t0)
        out[source] = round(1e6 * statistics.median(ts), 2)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernel", default="chase")
    ap.add_argument("--working-set", default="64K")
    ap.add_argument("--busy-w", type=float, default=30.0)
    ap.add_argument("--idle-w", type=float, default=10.0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = schedule_rows(args.kernel, args.busy_w, args.idle_w, args.working_set)
    power_w = [float(r["power_w"]) for r in rows]
    drift = [float(r["clock_drift_rel"] or 0) for r in rows]
    err_j = [float(r["energy_err_j"]) for r in rows]
    res: dict[str, Any] = {
        "busy_w": args.busy_w, "idle_w": args.idle_w, "rows": len(rows),
        "power_w_min": min(power_w), "power_w_max": max(power_w), "drift_rel_min": min(drift),
        "drift_rel_max": max(drift), "energy_err_j_min": min(err_j), "energy_err_j_max": max(err_j),
        "idle_w_before_median": statistics.median(float(r["idle_w_before"]) for r in rows),
        "all_emulated": all(r["emulated"] == "true" for r in rows), "rapl_read_us": read_cost_us()}
    per = [{"point": r["point_id"], "power_w": p, "drift_rel": d, "energy_err_j": e}
           for r, p, d, e in zip(rows, power_w, drift, err_j, strict=True)]
    if args.json:
        print(json.dumps({**res, "per_row": per}, indent=1))
    else:
        for k, v in res.items():
            print(f"{k:22s} {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
