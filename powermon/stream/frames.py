"""What a stream protocol's decoder gives the driver: the frames of one chunk (:class:`Decoded`) and its running
counts (:class:`StreamStats`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Decoded:
    """Frames decoded from one chunk: index on the cadence, (n, 4) volts and amps, indices of marked frames, and
    ``k_arrived``: the newest frame whose bytes are all in hand, where the decoder holds it back (a PMD-USB frame
    waits for its successor's timestamp) and knows its index; -1 where that is ``k[-1]``. The clock map pairs the
    chunk's arrival time with it: pairing it with ``k[-1]`` placed the device's clock a frame period late."""

    k: np.ndarray
    volts: np.ndarray
    amps: np.ndarray
    markers: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    k_arrived: int = -1

    @staticmethod
    def empty(n_pairs: int = 4) -> Decoded:
        return Decoded(np.zeros(0, np.int64), np.zeros((0, n_pairs)), np.zeros((0, n_pairs)))


@dataclass
class StreamStats:
    bytes_in: int = 0
    bytes_skipped: int = 0        #: bytes that were not part of a whole, plausible frame (noise, cut frames)
    frames: int = 0               #: whole frames decoded
    frames_discarded: int = 0     #: frames dropped as incomplete or implausible (counted lost on the cadence)
    frames_missing: int = 0       #: indices skipped on the cadence (never arrived, or discarded)
    resyncs: int = 0
    markers: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(vars(self))
