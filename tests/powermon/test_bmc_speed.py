"""The emulated Redfish BMC on an accelerated device clock (issue 24): what it serves is in device seconds
(``SensingInterval`` the device's update period, ``ReadingTime`` on the device clock), the BMC meter is told the
speed and reports device seconds and device joules, and the server and poller stop with the meter."""

from __future__ import annotations

import threading
import time

import pytest

from archline.powermon.bmc.emulator import RedfishEmulator
from archline.powermon.bmc.meter import emulate_from_spec
from archline.powermon.bmc.redfish import RedfishClient
from archline.powermon.counters.emulated import Timeline
from archline.powermon.emulator.power import Script
from archline.powermon.emulator.sensor import SensorModel
from archline.powermon.record.recorder import Recorder
from archline.powermon.spec import MeterSpec

SPEED = 20.0


def _threads() -> list[str]:
    return sorted(t.name for t in threading.enumerate() if t.name != "MainThread")


def test_served_interval_and_reading_time_are_device_seconds() -> None:
    emu = RedfishEmulator(lambda t: t * 0 + 200.0, SensorModel(1.0, 1.0), Timeline(SPEED)).start()
    try:
        c = RedfishClient(emu.url).discover()
        assert c.sensing_interval_s == 1.0                    # the device's period, not 1/20 s
        assert c.emulated is True
        time.sleep(0.2)                                       # 4 device seconds
        r = c.read()
        assert r.power_w == 200.0
        from archline.powermon.bmc.emulator import EPOCH

        assert 2.0 <= r.reading_time_s - EPOCH.timestamp() <= 6.0     # whole device seconds since the start
        assert (r.reading_time_s - EPOCH.timestamp()) % 1.0 == 0.0
    finally:
        emu.stop()


def test_a_window_at_20x_reports_device_seconds_and_joules() -> None:
    before = _threads()
    script = Script([(0.0, {0: (230.0, 1.0)})])                # 230 W constant
    meter = emulate_from_spec(MeterSpec(name="node", kind="redfish"), script, speed=SPEED)
    rec = Recorder([meter]).start()
    try:
        time.sleep(0.3)
        rec.begin("w")
        time.sleep(0.75)                                       # 15 device seconds
        r = rec.end("w").meters[meter.name]
    finally:
        rec.stop()
    assert r.emulated is True and r.lost_samples == 0
    assert r.device_time_s == pytest.approx(r.duration_s)     # device seconds (the region's duration), ...
    assert 13.0 < r.duration_s < 20.0                          # ... about 15 of them, not 0.75
    assert abs(r.energy_j - 230.0 * r.duration_s) <= r.energy_err_j
    assert r.energy_err_j == pytest.approx(0.5 * r.duration_s)   # constant power: only the 1 W resolution is left
    deadline = time.monotonic() + 2
    while _threads() != before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _threads() == before
