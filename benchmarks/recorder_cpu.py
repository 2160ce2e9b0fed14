"""CPU used by the live recorder at the PowerMon 2's aggregate limit (3 channels x 1024 Hz = 3072 records/s).
Goal (issue 18): < 1% of one core. The driver's reader lets bytes gather for batch_s (0.15 s) while nobody
waits for them and reads every poll_s once a region end does, so a decode call covers ~460 records, not ~60.

The emulator runs in another process (`archline meter emulate` on a pty), so only the recording process is
measured: process CPU time over wall time while a Recorder streams and closes a region every second.

    python benchmarks/recorder_cpu.py [--seconds 20]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from archline.powermon.powermon2.meter import open_powermon
from archline.powermon.record.recorder import Recorder
from archline.powermon.spec import channels_spec


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--channels", type=int, default=3)
    ap.add_argument("--rate", type=float, default=1024.0)
    args = ap.parse_args()
    d = Path(tempfile.mkdtemp(prefix="archline-rec-"))
    portfile = d / "port"
    emu = subprocess.Popen([sys.executable, "-c", "import sys; from archline.cli.main import main; sys.exit(main())",
                            "meter", "emulate", "--port-file", str(portfile), "--duration", str(args.seconds + 30)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            if portfile.exists() and portfile.read_text().strip():
                break
            time.sleep(0.05)
        port = portfile.read_text().strip()
        chans = list(range(args.channels))
        meter = open_powermon(channels_spec("powermon2", "powermon2", chans, port=port, rate_hz=args.rate),
                              raw_path=d / "raw.bin")
        with Recorder([meter]) as rec:
            time.sleep(1.0)                      # past the handshake
            c0, w0 = time.process_time(), time.monotonic()
            k = 0
            while time.monotonic() - w0 < args.seconds:
                rec.begin(f"r{k}")
                time.sleep(1.0)
                rec.end(f"r{k}")
                k += 1
            cpu, wall = time.process_time() - c0, time.monotonic() - w0
        st = meter.driver.stats
        n = st.sample_records
        print(f"{n} records in {wall:.1f} s ({n / wall:.0f}/s after warm-up incl.), lost {st.lost_records}, "
              f"gaps {st.gaps}, {k} regions")
        print(f"recorder process CPU: {cpu:.2f} s over {wall:.1f} s wall = {100 * cpu / wall:.1f}% of one core "
              f"at {args.channels * args.rate:.0f} records/s (goal < 1%)")
    finally:
        emu.terminate()
        emu.wait(5)


if __name__ == "__main__":
    main()
