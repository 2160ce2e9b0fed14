"""Speed of `archline meter decode` on a 10-minute capture of 8 channels at 1024 Hz (a stress case beyond the
device's 3072 records/s), end to end (a fresh process: start, imports, decode, writing and fsync of the
samples file) to CSV and to Parquet. Goal (issue 18): CSV >= 1000x real time.

Floor, measured in the same run: reading the capture file (the bytes every decode must read). Rounds
interleave the floor and the decodes; the best of the rounds is kept for each.

    python benchmarks/meter_decode_speed.py [--minutes 10] [--rounds 5] [--keep DIR]
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

from archline.powermon.emulator import Script
from archline.powermon.powermon2.emulator import PowerMon2Core


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


def run_cli(args: list[str]) -> float:
    cmd = [sys.executable, "-c", "import sys; from archline.cli.main import main; sys.exit(main())", *args]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def read_floor(path: Path) -> float:
    t0 = time.perf_counter()
    with open(path, "rb") as f:
        f.read()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--keep", type=Path)
    args = ap.parse_args()
    seconds = args.minutes * 60
    d = args.keep or Path(tempfile.mkdtemp(prefix="archline-decode-"))
    d.mkdir(parents=True, exist_ok=True)
    raw = d / "capture.raw.bin"
    if not raw.exists():
        t0 = time.perf_counter()
        make_capture(raw, seconds)
        print(f"capture made in {time.perf_counter() - t0:.1f} s")
    outs = {"CSV": d / "samples.csv", "Parquet": d / "samples.parquet"}
    best = dict.fromkeys(outs, float("inf"))
    floor = float("inf")
    for _ in range(args.rounds):
        floor = min(floor, read_floor(raw))
        for k, out in outs.items():
            best[k] = min(best[k], run_cli(["meter", "decode", str(raw), "--out", str(out)]))
    from archline.formats.meters.samples_file import write_samples
    from archline.powermon.offline import decode_file, decode_to_file

    t0 = time.perf_counter()
    s, meta = decode_file(raw, None)
    t_dec = time.perf_counter() - t0
    seq, streamed = float("inf"), float("inf")
    for _ in range(args.rounds):   # in-process, same imports: the old order against writing while decoding
        t0 = time.perf_counter()
        write_samples(decode_file(raw, None)[0], d / "sequential.csv", meta)
        t1 = time.perf_counter()
        decode_to_file(raw, d / "streamed.csv")
        t2 = time.perf_counter()
        seq, streamed = min(seq, t1 - t0), min(streamed, t2 - t1)
    print(f"capture: {len(s):,} samples ({raw.stat().st_size / 1e6:.1f} MB) = {seconds:.0f} s of 8 channels at "
          f"1024 Hz; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; best of {args.rounds}")
    print(f"floor: reading the capture file {floor * 1e3:.1f} ms; decoding alone (in-process) {t_dec:.2f} s")
    print(f"in-process to CSV: decode, then format and write (as before) {seq:.2f} s; written while decoding "
          f"{streamed:.2f} s")
    for k, out in outs.items():
        print(f"archline meter decode -> {k} ({out.stat().st_size / 1e6:.0f} MB): {best[k]:.2f} s = "
              f"{seconds / best[k]:.0f}x real time, {best[k] / floor:.0f}x the floor"
              + ("  (goal >= 1000x real time)" if k == "CSV" else ""))


if __name__ == "__main__":
    main()
