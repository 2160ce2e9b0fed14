"""What a raw capture without its sidecar holds, from its bytes alone: the stream meter kind most of its first bytes
are frames of. Each protocol judges its own frames (a ``frame_share(bytes, min_frames)`` the caller passes in:
this package knows no protocol). Only to say what the file is when its sidecar is missing: no capture can be
decoded without it (the device's configuration, rate and clock)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

#: bytes looked at (a few hundred frames of either meter), and the fewest whole frames that count as evidence
SNIFF_BYTES = 1 << 16
MIN_FRAMES = 16

#: a protocol's judge: the share of the bytes that lies in its well-formed frames, given the fewest that count
FrameShare = Callable[[np.ndarray, int], float]


def sniff_stream_kind(data: bytes, kinds: Sequence[tuple[str, FrameShare]]) -> str | None:
    """The first of ``kinds`` (name, judge) whose frames make up most (80%) of the first bytes of ``data``, else
    None (a PowerMon 2 capture, or something else)."""
    b = np.frombuffer(bytes(data[:SNIFF_BYTES]), np.uint8)
    if len(b) < 2:
        return None
    for name, share in kinds:
        if share(b, MIN_FRAMES) >= 0.8:
            return name
    return None
