"""What the PowerMon 2 stream decoder produces: decoded records as arrays, and its counts of what went wrong."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]


@dataclass
class DecodeStats:
    """Counts a decode never hides."""

    sample_records: int = 0      #: sample records accepted (failed reads included)
    time_records: int = 0
    failed_reads: int = 0        #: sample records with all 24 data bits zero (excluded from integration)
    overflows: int = 0           #: overflow events (the first record carrying the sticky flag)
    gaps: int = 0                #: holes in the sample sequence
    uncertain_gaps: int = 0      #: holes only seen as a shortfall at a time record (position in that second unknown)
    lost_records: int = 0        #: sample records missing according to the cadence
    resyncs: int = 0             #: realignments after an implausible record
    skipped_bytes: int = 0       #: bytes dropped while (re)aligning, including a partial first record
    cadence_errors: int = 0      #: seconds with more events than the period allows (should stay 0)
    done: bool = False           #: the done record arrived

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class RecordArrays:
    """Decoded sample records (raw codes), in arrival order."""

    event: I64
    channel: npt.NDArray[np.int16]
    vcode: npt.NDArray[np.uint16]
    icode: npt.NDArray[np.uint16]
    overflow: npt.NDArray[np.bool_]

    def __len__(self) -> int:
        return len(self.event)

    @staticmethod
    def concat(parts: Sequence[RecordArrays]) -> RecordArrays:
        if not parts:
            return RecordArrays(np.zeros(0, np.int64), np.zeros(0, np.int16), np.zeros(0, np.uint16),
                                np.zeros(0, np.uint16), np.zeros(0, bool))
        if len(parts) == 1:
            return parts[0]
        return RecordArrays(*(np.concatenate([getattr(p, k) for p in parts])
                              for k in ("event", "channel", "vcode", "icode", "overflow")))


@dataclass
class _Segment:
    parts: list[RecordArrays] = field(default_factory=list)
    n: int = 0
    holes: list[tuple[int, str]] = field(default_factory=list)   # (index within segment, kind)
    start_event: int = 0
