"""How long ``archline meter record`` of an IPMI BMC takes when the BMC stops (SIGTERM) or freezes (SIGSTOP)
partway, against the emulated BMC (``ipmi_serve``, 127.0.0.1): the command's wall time beyond its --duration, the
losses and the exit code. Goal (issue 35, breaker I #1): about the 3 s settle wait past the window (plus the login
at the start and the stop), not pyghmi's ~40 s of retries and re-login (it was 49 s for an 8 s recording, exit 0,
"lost 0 of 8"). Rounds interleave the two faults; the median and the worst overshoot are kept.

    python benchmarks/ipmi_dead_bmc.py [--rounds 3] [--duration 6] [--stop-after 5]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from archline.powermon.bmc.ipmi import BmcProcess


def one(fault: str, duration_s: float, stop_after_s: float, out: Path) -> dict[str, Any]:
    srv = BmcProcess(["--power-w", "200"])
    sig = signal.SIGTERM if fault == "stopped" else signal.SIGSTOP

    def hit() -> None:
        time.sleep(stop_after_s)
        srv.proc.send_signal(sig)
    t0 = time.monotonic()
    threading.Thread(target=hit, daemon=True).start()
    r = subprocess.run([shutil.which("archline") or "archline", "meter", "record", "--meter",
                        f"ipmi:ipmi://archline:emulated@127.0.0.1:{srv.port}", "--duration", str(duration_s),
                        "--out", str(out)], capture_output=True, text=True, env=dict(os.environ))
    took_s = time.monotonic() - t0
    if sig == signal.SIGSTOP:
        srv.proc.send_signal(signal.SIGCONT)
    srv.stop()
    summary = json.loads(r.stdout[: r.stdout.rindex("}") + 1])["ipmi"] if "}" in r.stdout else {}
    return {"exit": r.returncode, "overshoot_s": took_s - duration_s, "lost": summary.get("lost_samples", -1),
            "expected": summary.get("expected_samples", -1), "error": r.stderr.strip().splitlines()[-1:]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--duration", type=float, default=6.0)
    p.add_argument("--stop-after", type=float, default=5.0,
                   help="host seconds after the command starts (past its start and login, 1-3 s on a loaded host)")
    a = p.parse_args()
    runs: dict[str, list[dict[str, Any]]] = {"stopped": [], "frozen": []}
    with tempfile.TemporaryDirectory() as d:
        for k in range(a.rounds):
            for fault in runs:
                runs[fault].append(one(fault, a.duration, a.stop_after, Path(d) / f"{fault}{k}.csv"))
    print(json.dumps({f: {"median_overshoot_s": round(statistics.median(float(x["overshoot_s"]) for x in v), 2),
                          "worst_overshoot_s": round(max(float(x["overshoot_s"]) for x in v), 2),
                          "exits": sorted({int(x["exit"]) for x in v}),
                          "lost_of_expected": [f"{x['lost']}/{x['expected']}" for x in v],
                          "last_stderr_line": [x["error"] for x in v]}
                      for f, v in runs.items()}, indent=1))


if __name__ == "__main__":
    main()
