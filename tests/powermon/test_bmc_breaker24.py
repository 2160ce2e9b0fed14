"""Breaker 24 (BMC meters): impossible readings refused, lost stretches in the bound, bad URLs and credentials,
IPMI login. Every server runs on 127.0.0.1 and is stopped here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from archline.powermon.bmc.emulator import RedfishEmulator, StaticRedfish
from archline.powermon.bmc.redfish import BmcUnavailable, RedfishClient
from archline.powermon.counters.emulated import Timeline
from archline.powermon.emulator.sensor import SensorModel
from archline.powermon.errors import DeviceError


@pytest.mark.parametrize("power_w, shown", [(float("nan"), "nan W"), (-50.0, "-50 W"), (1e12, "1e+12 W")])
def test_impossible_readings_are_refused_never_integrated(run_cli: Any, tmp_path: Path, power_w: float,
                                                        shown: str) -> None:
    emu = RedfishEmulator(lambda t: t * 0 + power_w, SensorModel(0.25, 0.25), Timeline(1.0)).start()
    try:
        res = run_cli("meter", "record", "--meter", f"redfish:{emu.url}", "--duration", "1",
                      "--out", str(tmp_path / "t.csv"))
    finally:
        emu.stop()
    assert res.exit_code == 4, res.stderr
    assert shown in res.stderr and "misbehaves" in res.stderr and res.stderr.count("\n") == 1
    assert "energy_j" not in res.stdout


def _power_mockup(root: Path, power_control: Any) -> None:
    base = "/redfish/v1"
    node = f"{base}/Chassis/N"
    for path, obj in ((base, {"Chassis": {"@odata.id": f"{base}/Chassis"}}),
                      (f"{base}/Chassis", {"Members": [{"@odata.id": node}]}),
                      (node, {"Id": "N", "Power": {"@odata.id": f"{node}/Power"}}),
                      (f"{node}/Power", {"PowerControl": power_control})):
        d = root / path.strip("/")
        d.mkdir(parents=True, exist_ok=True)
        (d / "index.json").write_text(json.dumps(obj))


@pytest.mark.parametrize("power_control, err, said", [
    ([{"PowerConsumedWatts": "abc"}], DeviceError, 'PowerConsumedWatts is "abc", not a number'),
    ([], DeviceError, "PowerControl is [], not a list"),
    ([{"PowerConsumedWatts": None}], BmcUnavailable, "PowerConsumedWatts is null"),
    ([{"PowerConsumedWatts": 412}], None, ""),
])
def test_a_bad_power_field_says_what_was_there(tmp_path: Path, power_control: Any, err: Any, said: str) -> None:
    _power_mockup(tmp_path, power_control)
    srv = StaticRedfish(tmp_path)
    try:
        c = RedfishClient(srv.url).discover()
        if err is None:
            assert c.read().power_w == 412.0
        else:
            with pytest.raises(err, match=None) as ei:
                c.read()
            assert said in str(ei.value) and type(ei.value) is err
    finally:
        srv.stop()
