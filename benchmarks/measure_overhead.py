"""CPU used by the monitor (archline.Monitor, and the marks channel of ``archline measure``) while a program runs.
Goal (issue 25): < 1% of one core at the meters' default rates.

The measured program here is the main thread sleeping inside windows (one window per ``--window-s``, as a program
marking its phases would); everything this process spends on CPU is then archline's: the meter's reader thread,
the window closing (integration), the marks reader. The emulated PowerMon 2 (the gtx580 profile's 4 channels at
its 128 Hz) runs in this process too, on a pty: its thread stands in for the hardware, so its CPU time is
measured per thread (``pthread_getcpuclockid``) and reported apart, not counted as the monitor's.

    python benchmarks/measure_overhead.py [--seconds 20] [--window-s 1.0]
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from archline.bench.config.profile import load_bench_profile
from archline.bench.monitor import open_monitor
from archline.powermon.marks import MarksReader
from archline.powermon.monitor import Monitor
from archline.powermon.powermon2.meter import open_powermon
from archline.powermon.record.null import NullMeter


def thread_cpu_s(match: Callable[[threading.Thread], bool]) -> float:
    total = 0.0
    for t in threading.enumerate():
        if t.ident is not None and match(t):
            try:
                total += time.clock_gettime(time.pthread_getcpuclockid(t.ident))
            except (OSError, ProcessLookupError):   # the thread ended meanwhile
                pass
    return total


def is_emulator(t: threading.Thread) -> bool:
    return t.name.startswith("powermon-emulator")


def is_main(t: threading.Thread) -> bool:
    return t is threading.main_thread()


def measure(mon: Monitor, seconds: float, window_s: float) -> tuple[float, float, float, float, int]:
    """(wall s, process CPU s, of which emulator CPU s, of which main thread CPU s, windows)."""
    reader = MarksReader()          # as under `archline measure`: the marks thread waits on its FIFO
    try:
        with mon:
            time.sleep(1.0)                                   # past the stream's start
            m0 = thread_cpu_s(is_main)
            e0, c0, w0 = thread_cpu_s(is_emulator), time.process_time(), time.monotonic()
            k = 0
            while time.monotonic() - w0 < seconds:
                mon.begin_window(f"w{k}")
                time.sleep(window_s)
                mon.end_window(f"w{k}")
                k += 1
            e1, c1, w1 = thread_cpu_s(is_emulator), time.process_time(), time.monotonic()
            m1 = thread_cpu_s(is_main)
    finally:
        reader.close()
    return w1 - w0, c1 - c0, e1 - e0, m1 - m0, k


@contextlib.contextmanager
def emulator_process(seconds: float) -> Iterator[str]:
    """``archline meter emulate`` in another process (as real hardware would be): its pty's path."""
    d = Path(tempfile.mkdtemp(prefix="archline-overhead-"))
    portfile = d / "port"
    emu = subprocess.Popen([sys.executable, "-c", "import sys; from archline.cli.main import main; sys.exit(main())",
                            "meter", "emulate", "--port-file", str(portfile), "--duration", str(seconds + 30)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(400):
            if portfile.exists() and portfile.read_text().strip():
                break
            time.sleep(0.05)
        yield portfile.read_text().strip()
    finally:
        emu.terminate()
        emu.wait(5)
        shutil.rmtree(d, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--window-s", type=float, default=1.0)
    args = ap.parse_args()
    with emulator_process(args.seconds) as port:
        spec = load_bench_profile("gtx580").meters[0].model_copy(update={"port": port})
        cases = [("null meter", lambda: Monitor([NullMeter("overhead benchmark")])),
                 ("emulated PowerMon 2 in this process, gtx580 (4 channels x 128 Hz)",
                  lambda: open_monitor("gtx580", emulate=True)),
                 ("PowerMon 2 driver on a pty served by another process, gtx580 channels (4 x 128 Hz)",
                  lambda: Monitor([open_powermon(spec)]))]
        run_cases(cases, args.seconds, args.window_s)


def run_cases(cases: list[tuple[str, Callable[[], Monitor]]], seconds: float, window_s: float) -> None:
    args = argparse.Namespace(seconds=seconds, window_s=window_s)
    for label, make in cases:
        mon = make()
        rate = [getattr(m, "update_hz", None) for m in mon.meters]
        wall, cpu, emu, main_s, k = measure(mon, args.seconds, args.window_s)
        own = cpu - emu
        print(f"{label}: {k} windows in {wall:.1f} s; monitor CPU {own:.3f} s = {100 * own / wall:.2f}% of one core"
              f" (goal < 1%; closing windows on the caller's thread {100 * main_s / wall:.2f}%, meter and marks "
              f"threads {100 * (own - main_s) / wall:.2f}%); emulator thread (the hardware's stand-in) "
              f"{100 * emu / wall:.2f}%; rate {rate} Hz")


if __name__ == "__main__":
    main()
