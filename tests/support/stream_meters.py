"""Running an emulated byte-stream meter (PowerSensor3, PMD-USB) on its pty with faults, for the tests."""

from __future__ import annotations

import time
from typing import Any

from archline.powermon.record.recorder import Recorder
from archline.powermon.spec import MeterSpec, emulate_meter, parse_meters
from archline.powermon.stream.core import StreamFaults

RATE_HZ = 2000.0
SPEED = 2.0
#: pair 0 draws 12 V x 5 A, pair 1 3.3 V x 2 A
POWER = {0: (12.0, 5.0), 1: (3.3, 2.0)}


def spec_of(kind: str, rate_hz: float = RATE_HZ) -> MeterSpec:
    (spec,) = parse_meters([{"name": "m", "kind": kind, "rate_hz": rate_hz,
                             "channels": [{"id": 0, "rail": "main_12v", "device": "card"},
                                          {"id": 1, "rail": "aux_3v3", "device": "card"}]}], "test")
    return spec


def run_window(kind: str, faults: StreamFaults | None = None, host_s: float = 0.25, seed: int = 1
               ) -> tuple[Any, Any, dict[str, int]]:
    """(meter region, emulator truth, decoder stats) of one window from the stream's start over ``host_s``."""
    meter = emulate_meter(spec_of(kind), lambda t_s: POWER, speed=SPEED, faults=faults, seed=seed)
    with Recorder([meter]) as rec:
        rec.begin("w")
        time.sleep(host_s)
        region = rec.end("w", t0_s=meter.stream_start_s())
    (mr,) = region.meters.values()
    return mr, meter.core.truth, {**meter.info()["stats"], "error": meter.error}
