"""Breaker 24 (BMC meters): impossible readings refused, lost stretches in the bound, bad URLs and credentials,
IPMI login. Every server runs on 127.0.0.1 and is stopped here."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from archline.powermon.bmc.emulator import RedfishEmulator, RedfishFaults, StaticRedfish
from archline.powermon.bmc.meter import emulate_from_spec
from archline.powermon.bmc.redfish import BmcUnavailable, RedfishClient
from archline.powermon.counters.emulated import Timeline
from archline.powermon.emulator.power import Script
from archline.powermon.emulator.sensor import SensorModel
from archline.powermon.errors import DeviceError, MeterError
from archline.powermon.record.recorder import Recorder
from archline.powermon.spec import MeterSpec


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
            with pytest.raises(err) as ei:
                c.read()
            assert said in str(ei.value) and type(ei.value) is err
    finally:
        srv.stop()


def test_a_lost_stretch_over_a_power_step_is_inside_the_bound() -> None:
    """The BMC answers 503 through the whole time the node drew 200 W (else 100 W): the meter never sees it, so
    its energy is short by ~300 J; the bound must cover that (it grows by the stretch x the largest power seen)."""
    script = Script([(0.0, {0: (10.0, 10.0)}), (3.0, {0: (10.0, 20.0)}), (6.0, {0: (10.0, 10.0)})])
    faults = RedfishFaults(http_503_spans=((2.5, 7.5),))
    speed = 2.5
    meter = emulate_from_spec(MeterSpec(name="node", kind="redfish"), script, speed=speed, faults=faults)
    rec = Recorder([meter]).start()
    try:
        time.sleep(1.0 / speed)
        rec.begin("w")
        time.sleep(9.0 / speed)                                  # device ~1 .. ~10 s: the outage inside
        r = rec.end("w").meters[meter.name]
    finally:
        rec.stop()
    tl: Timeline = meter.server.timeline                         # type: ignore[attr-defined]
    truth = script.energy_j((r.t_start_s - tl.t0_host_s) * speed, (r.t_end_s - tl.t0_host_s) * speed, [0])
    assert meter.server.served_503 > 0 and r.lost_samples >= 3     # type: ignore[attr-defined]
    assert truth - r.energy_j > 200                              # the outage really hid the 200 W stretch
    assert abs(r.energy_j - truth) <= r.energy_err_j, (r.energy_j, truth, r.energy_err_j)
    assert r.energy_err_j < truth                                # and the bound still says something


@pytest.mark.parametrize("meter, code, said", [
    ("redfish:http://127.0.0.1:18123 x", 2, "is not a valid address"),
    ("redfish:http://admin:hunter2@127.0.0.1:x", 2, "admin:***@127.0.0.1:x"),
    ("redfish:http://admin:hunter2@127.0.0.1:9", 4, "no answer"),      # nothing listens on the discard port
    ("ipmi:ipmi://admin:hunter2@127.0.0.1:x", 2, "ipmi://***@127.0.0.1:x"),    # the whole userinfo (issue 35 FI #8)
])
def test_a_bad_or_credentialed_url_is_one_line_and_masked(run_cli: Any, tmp_path: Path, meter: str, code: int,
                                                          said: str) -> None:
    res = run_cli("meter", "record", "--meter", meter, "--duration", "1", "--out", str(tmp_path / "t.csv"))
    assert res.exit_code == code, res.stderr
    assert said in res.stderr and res.stderr.count("\n") == 1 and "hunter2" not in res.stderr + res.stdout


def test_credentials_in_the_url_are_used_and_never_kept_in_it() -> None:
    emu = RedfishEmulator(lambda t: t * 0 + 100.0, SensorModel(0.5, 0.5), Timeline(1.0),
                          credentials={"admin": "s3cret"}).start()
    try:
        host = emu.url.removeprefix("http://")
        c = RedfishClient(f"http://admin:s3cret@{host}").discover()
        assert c.url == emu.url and c.read().power_w == 100.0           # logged in with the URL's credentials
        with pytest.raises(DeviceError, match="HTTP 401") as ei:
            RedfishClient(f"http://admin:wrong@{host}").discover()
        assert "wrong" not in str(ei.value)
    finally:
        emu.stop()


def test_ipmi_without_a_username_is_refused_at_once() -> None:
    from archline.powermon.bmc.ipmi import DcmiClient
    t0 = time.monotonic()
    with pytest.raises(MeterError, match=r"no username: give the profile's .*username and password_env") as ei:
        DcmiClient("ipmi://127.0.0.1:9", None, None)
    assert type(ei.value) is MeterError and time.monotonic() - t0 < 5      # never pyghmi's minute of retries


def test_ipmi_login_sha1_fallback_wrong_password_and_nothing_listening() -> None:
    """Against the emulator (pyghmi's server answers SHA-1) the default client logs in all the same; a wrong
    password and an address where nothing listens are one DeviceError (exit 4) each, in bounded time."""
    from archline.powermon.bmc.ipmi import LOGIN_TIMEOUT_S, BmcProcess, DcmiClient
    with BmcProcess(["--power-w", "412"], user="u", password="p") as srv:
        url = f"ipmi://127.0.0.1:{srv.port}"
        with pytest.raises(DeviceError, match="cannot log in") as ei:
            DcmiClient(url, "u", "wrong")
        assert ei.value.exit_code == 4 and "wrong" not in str(ei.value)
        c = DcmiClient(url, "u", "p")                                  # sha1 not asked for: found by itself
        try:
            assert c.read().power_w == 412.0
        finally:
            c.close()
    t0 = time.monotonic()
    with pytest.raises(DeviceError, match=r"127\.0\.0\.1:9: (cannot log in|no login within)"):
        DcmiClient("ipmi://u:p@127.0.0.1:9", None, None)
    assert time.monotonic() - t0 < 2 * LOGIN_TIMEOUT_S + 5      # two login tries at most (SHA-256, SHA-1)
