"""What a raw capture without its sidecar holds, from its bytes alone: a PowerSensor3's frames (18 bytes: a
timestamp packet, then sensors 0-7, each packet's first byte with bit 7 set and its second without) or a PMD-USB's
(20 bytes: a 4-byte tick counter that advances by the same period frame after frame). Only to say what the file is
when its sidecar is missing: neither can be decoded without it (the device's configuration, rate and clock)."""

from __future__ import annotations

import numpy as np

#: bytes looked at (a few hundred frames of either meter), and the fewest whole frames that count as evidence
SNIFF_BYTES = 1 << 16
MIN_FRAMES = 16


def _powersensor3_share(b: np.ndarray) -> float:
    """The share of ``b`` that lies in whole, well-formed PowerSensor3 frames."""
    from archline.powermon.powersensor3.protocol import FRAME_BYTES, N_SENSORS

    n_frames = 0
    i = 0
    hi = b >= 0x80
    n = len(b)
    # frame starts: a timestamp packet (sensor id 7 with the marker bit, as the decoder finds it)
    starts = np.flatnonzero(hi[:-1] & ~hi[1:] & (((b[:-1] >> 4) & 7) == 7) & (((b[1:] >> 6) & 1) == 1))
    ids = np.arange(N_SENSORS)
    for s in starts:
        if s < i or s + FRAME_BYTES > n:
            continue
        f = b[s:s + FRAME_BYTES]
        first, second = f[2::2], f[3::2]
        if np.all(first >= 0x80) and np.all(second < 0x80) and np.all(((first >> 4) & 7) == ids):
            n_frames += 1
            i = s + FRAME_BYTES
    return n_frames * FRAME_BYTES / max(n, 1) if n_frames >= MIN_FRAMES else 0.0


def _pmd_share(b: np.ndarray) -> float:
    """The share of ``b`` that lies in a run of PMD-USB frames whose tick counters advance by one period."""
    from archline.powermon.pmd.protocol import FRAME_BYTES, TS_BYTES

    best = 0
    for o in range(FRAME_BYTES):
        n = (len(b) - o) // FRAME_BYTES
        if n < MIN_FRAMES:
            break
        rows = b[o:o + n * FRAME_BYTES].reshape(n, FRAME_BYTES)[:, :TS_BYTES].astype(np.int64)
        ticks = (rows << (8 * np.arange(TS_BYTES))[None, :]).sum(axis=1)
        d = np.diff(ticks) % (1 << 32)
        period = float(np.median(d))
        if not 30 <= period <= 3_000_000:          # 100 kHz .. 1 Hz at the 3 MHz counter
            continue
        agree = int(np.sum(np.abs(d - period) <= 0.1 * period))
        best = max(best, agree + 1)
    return best * FRAME_BYTES / max(len(b), 1) if best >= MIN_FRAMES else 0.0


def sniff_stream_kind(data: bytes) -> str | None:
    """``"powersensor3"`` or ``"pmd"`` when most of the first bytes of ``data`` are that meter's frames, else None
    (a PowerMon 2 capture, or something else)."""
    b = np.frombuffer(bytes(data[:SNIFF_BYTES]), np.uint8)
    if len(b) < 2:
        return None
    if _powersensor3_share(b) >= 0.8:
        return "powersensor3"
    if _pmd_share(b) >= 0.8:
        return "pmd"
    return None
