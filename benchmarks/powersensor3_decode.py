"""Speed of the PowerSensor3 decoder at the real board's 20 kHz (360 kB/s), fed as the driver's reader feeds it
(20 ms chunks) and as `meter decode` does (one buffer), on emulated frames whose first stamp is arbitrary and whose
stamps land 0-1 us late (the firmware's timing, docs/meters.md "Timestamps"); with and without gaps (a run of
frames dropped every 0.1 s). The reader must keep up with the board: the figure is seconds of stream decoded per
second of CPU (x real time). Also checks the counts: 0 frames missing clean, exactly the dropped ones with gaps.

    python benchmarks/powersensor3_decode.py [--seconds 10] [--rounds 3]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from archline.powermon.powersensor3.protocol import Decoder, default_config, encode_frames, timestamp_us

RATE_HZ = 20_000.0


def stream(seconds: float, gaps: bool, seed: int = 0) -> tuple[bytes, int]:
    """The bytes of ``seconds`` of frames and how many frames were dropped (runs of 37 every 0.1 s)."""
    rng = np.random.default_rng(seed)
    n = int(seconds * RATE_HZ)
    k = np.arange(n)
    ts = timestamp_us(k, RATE_HZ, float(rng.uniform(0, 1024)), rng.uniform(0.0, 1.0, n))
    keep = np.ones(n, bool)
    if gaps:
        for start in range(1000, n - 100, 2000):
            keep[start:start + 37] = False
    lv = np.tile(np.arange(8) * 100 + 3, (n, 1))
    return encode_frames(ts[keep], lv[keep], np.zeros(int(keep.sum()), bool)), int(n - keep.sum())


def decode(data: bytes, chunk: int | None) -> tuple[float, int]:
    dec = Decoder(default_config(), RATE_HZ)
    t0 = time.perf_counter()
    if chunk is None:
        dec.feed(data)
    else:
        for i in range(0, len(data), chunk):
            dec.feed(data[i:i + chunk])
    return time.perf_counter() - t0, dec.stats.frames_missing


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    chunk = int(0.02 * RATE_HZ) * 18                    # the reader's 20 ms
    for gaps in (False, True):
        data, dropped = stream(a.seconds, gaps)
        for name, size in (("20 ms chunks", chunk), ("one buffer", None)):
            best = min(decode(data, size) for _ in range(a.rounds))
            print(f"{'gaps' if gaps else 'clean'}, {name}: {a.seconds / best[0]:.0f}x real time "
                  f"({best[0]:.3f} s for {a.seconds:g} s), frames missing {best[1]} (dropped {dropped})")
            assert best[1] == dropped, (best[1], dropped)


if __name__ == "__main__":
    main()
