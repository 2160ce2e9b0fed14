"""The null meter: windows with time only. "No meter" is this meter on the one recording path, not a second
pipeline; its ``reason`` (why there is no energy) goes into every result row."""

from __future__ import annotations

from typing import Any

from archline.formats.meters.samples import Samples
from archline.powermon.record.meters import MeterRegion


class NullMeter:
    kind = "none"
    emulated = False
    update_hz: float | None = None
    error = None

    def __init__(self, reason: str, name: str = "none") -> None:
        self.name = name
        self.reason = reason if reason.startswith("time only") else f"time only: {reason}"

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def mark(self, t_s: float) -> None:
        pass

    def wait_until(self, t_s: float, timeout_s: float = 2.0) -> bool:
        return True

    def region(self, t0_s: float, t1_s: float) -> MeterRegion:
        nan = float("nan")
        return MeterRegion(self.name, self.kind, False, t0_s, t1_s, {}, {}, nan, nan, nan, 0, 0.0)

    def samples(self) -> Samples:
        return Samples.empty(self.name)

    def info(self) -> dict[str, Any]:
        return {"meter": self.name, "type": self.kind, "reason": self.reason}
