"""The enabled channels of a PowerMon 2 capture that has no sidecar, guessed from its plausible sample records."""

from __future__ import annotations

import numpy as np

from archline.powermon.errors import MeterError
from archline.powermon.powermon2.protocol import BIT_28, RECORD_BYTES, split_words, words_from_bytes


def guess_channels(data: bytes | bytearray | memoryview, max_records: int = 4096) -> list[int]:
    """Enabled channels of a capture with no sidecar: the sensor ids of its plausible sample records."""
    best: list[int] = []
    best_score = -1.0
    for s in range(RECORD_BYTES):
        w = words_from_bytes(memoryview(data)[: max_records * RECORD_BYTES + s], s)
        if not len(w):
            continue
        f = split_words(w)
        ok = f.is_sample & ((w & BIT_28) == 0)
        ids, counts = np.unique(f.sensor[ok], return_counts=True)
        if not ids.size:
            continue
        keep = ids[counts >= 0.2 * counts.max()]
        score = float(np.count_nonzero(np.isin(f.sensor[ok], keep))) / len(w)
        if score > best_score:
            best, best_score = [int(x) for x in keep], score
    if best_score < 0.5:
        raise MeterError("not a PowerMon 2 capture: no plausible sample records found")
    return best
