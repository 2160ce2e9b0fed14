"""Speed of `archline meter decode` on a 10-minute capture of 8 channels at 1024 Hz (a stress case beyond the
device's 3072 records/s), end to end including writing the samples CSV. Target: >= 200x real time.

    python benchmarks/meter_decode_speed.py [--minutes 10] [--keep DIR]
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

from archline.powermon.emulator import PowerMon2Core, Script


class Clock:
    t = 0.0

    def __call__(self) -> float:
        return self.t


def make_capture(path: Path, seconds: float) -> int:
    clk = Clock()
    steps = [(float(k), {c: (12.0 - 0.1 * c, 2.0 + ((k + c) % 7)) for c in range(8)}) for k in range(int(seconds))]
    core = PowerMon2Core(Script(steps), clock=clk)
    core.write(b"t 0\rm 255\rs 1 0\r")
    core.read_available()
    core.write(b"e\r")
    with open(path, "wb") as f:
        for k in range(1, int(seconds) + 1):
            clk.t = float(k)
            f.write(core.read_available())
        core.write(b"d\r")
        f.write(core.read_available())
    side = {"format": "archline.powermon2.raw/1", "meter": "powermon2", "emulated": True, "channels": list(range(8)),
            "r_sense_ohm": {str(c): 0.00422 for c in range(8)}, "period_ticks": 1, "rate_hz": 1024.0,
            "time_set_s": 0, "speed": 1.0, "clock": {"offset_s": 1000.0, "seconds_per_device_s": 1.0, "drift_ppm": 0.0}}
    path.with_name(path.name + ".json").write_text(json.dumps(side))
    return sum(len(p) for p in core.truth.parts)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--keep", type=Path)
    args = ap.parse_args()
    seconds = args.minutes * 60
    d = args.keep or Path(tempfile.mkdtemp(prefix="archline-decode-"))
    d.mkdir(parents=True, exist_ok=True)
    raw = d / "capture.raw.bin"
    t0 = time.perf_counter()
    n = make_capture(raw, seconds)
    print(f"capture: {n} records, {raw.stat().st_size / 1e6:.1f} MB, made in {time.perf_counter() - t0:.1f} s")
    out = d / "samples.csv"
    cmd = [sys.executable, "-c", "import sys; from archline.cli.main import main; sys.exit(main())",
           "meter", "decode", str(raw), "--out", str(out)]
    best = float("inf")
    best_cpu = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        r0 = os.times()
        subprocess.run(cmd, check=True)
        r1 = os.times()
        best = min(best, time.perf_counter() - t0)
        best_cpu = min(best_cpu, (r1.children_user - r0.children_user) + (r1.children_system - r0.children_system))
    from archline.powermon.offline import decode_file

    t0 = time.perf_counter()
    s, _ = decode_file(raw, None)
    t_dec = time.perf_counter() - t0
    assert len(s) == n, (len(s), n)
    print(f"decode only (in-process): {t_dec:.2f} s")
    print(f"archline meter decode, end to end incl. writing {out.stat().st_size / 1e6:.0f} MB CSV: best of 3 "
          f"{best:.2f} s for {seconds:.0f} s of capture = {seconds / best:.0f}x real time (target >= 200x)")
    print(f"  its CPU time (all threads, incl. interpreter start): {best_cpu:.2f} s; "
          f"load average now {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
