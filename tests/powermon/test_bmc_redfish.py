"""The node's BMC over Redfish (issue 24): a real HTTP server on 127.0.0.1 in every test, started and stopped here.

- decoded values exact against a fixed mockup directory (served as sushy-static serves one);
- credentials: the password only from the environment variable a profile names, 401 without it;
- ``archline meter record --meter redfish:http://127.0.0.1:PORT`` end to end;
- a Recorder window's energy within the meter's stated bound of the true energy, for a constant and a stepped power;
- the emulator's faults (HTTP 503, a stale reading) counted: failed polls reported, missed readings lost.
"""

from __future__ import annotations

import csv
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from support.powermon_helpers import threads_back

from archline.cli.meter import meter as meter_cli
from archline.powermon.bmc.emulator import RedfishEmulator, RedfishFaults, StaticRedfish
from archline.powermon.bmc.meter import BmcMeter, emulate_from_spec, open_from_spec
from archline.powermon.bmc.redfish import RedfishClient, iso_duration_s, iso_time_s
from archline.powermon.counters.emulated import Timeline
from archline.powermon.emulator.power import Script
from archline.powermon.emulator.sensor import SensorModel
from archline.powermon.errors import DeviceError, MeterError
from archline.powermon.record.recorder import Recorder
from archline.powermon.spec import MeterSpec

SPEED = 5.0


def _bmc_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name in ("redfish server",) or t.name.endswith(" poll")]


@pytest.fixture(autouse=True)
def nothing_left_running() -> Iterator[None]:
    before = _bmc_threads()
    yield
    assert threads_back(_bmc_threads, before) == before


def _write(root: Path, path: str, obj: dict[str, Any]) -> None:
    d = root / path.strip("/")
    d.mkdir(parents=True, exist_ok=True)
    (d / "index.json").write_text(json.dumps(obj))


def _mockup(root: Path) -> None:
    """Two chassis: a PSU bay with no power link (skipped) and the node, ``System.Embedded.1``."""
    base = "/redfish/v1"
    node = f"{base}/Chassis/System.Embedded.1"
    _write(root, base, {"@odata.id": f"{base}/", "Chassis": {"@odata.id": f"{base}/Chassis"}})
    _write(root, f"{base}/Chassis", {"Members": [{"@odata.id": f"{base}/Chassis/Bay"}, {"@odata.id": node}]})
    _write(root, f"{base}/Chassis/Bay", {"Id": "Bay", "Thermal": {"@odata.id": f"{base}/Chassis/Bay/Thermal"}})
    _write(root, node, {"Id": "System.Embedded.1", "Power": {"@odata.id": f"{node}/Power"},
                        "EnvironmentMetrics": {"@odata.id": f"{node}/EnvironmentMetrics"}})
    _write(root, f"{node}/Power", {"PowerControl": [
        {"MemberId": "0", "Name": "System Input Power", "PowerConsumedWatts": 412.5,
         "PowerMetrics": {"IntervalInMin": 20, "MinConsumedWatts": 380, "MaxConsumedWatts": 455,
                          "AverageConsumedWatts": 398}},
        {"MemberId": "1", "Name": "CPU", "PowerConsumedWatts": 200}]})
    _write(root, f"{node}/EnvironmentMetrics", {"PowerWatts": {"Reading": 412.5,
                                                               "DataSourceUri": f"{node}/Sensors/TotalPower"}})
    _write(root, f"{node}/Sensors/TotalPower", {"ReadingType": "Power", "ReadingUnits": "W", "Reading": 411.0,
                                                "ReadingTime": "2026-03-01T12:00:01.250Z",
                                                "SensingInterval": "PT0.25S"})


@contextmanager
def static_server(root: Path) -> Iterator[StaticRedfish]:
    srv = StaticRedfish(root)
    try:
        yield srv
    finally:
        srv.stop()


def test_decodes_a_fixed_mockup_exactly(tmp_path: Path) -> None:
    _mockup(tmp_path)
    with static_server(tmp_path) as srv:
        c = RedfishClient(srv.url + "/redfish/v1/").discover()
        assert c.chassis_id == "System.Embedded.1"           # the bay without Power was skipped
        assert c.sensor_uri == "/redfish/v1/Chassis/System.Embedded.1/Sensors/TotalPower"
        assert c.sensing_interval_s == 0.25
        pc = c.read_power_control()
        assert (pc.power_w, pc.average_w, pc.interval_min) == (412.5, 398.0, 20.0)
        r = c.read()                                          # the sensor: its reading and ReadingTime
        assert r.power_w == 411.0
        assert r.reading_time_s == iso_time_s("2026-03-01T12:00:01.250+00:00") == 1772366401.25
        with pytest.raises(DeviceError, match="no chassis 'Nope'"):
            RedfishClient(srv.url, chassis="Nope").discover()


def test_iso_durations() -> None:
    assert iso_duration_s("PT0.25S") == 0.25
    assert iso_duration_s("PT1M30S") == 90.0
    assert iso_duration_s("P1DT1H") == 90000.0
    with pytest.raises(ValueError):
        iso_duration_s("1 s")


def test_password_only_from_the_named_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    tl = Timeline(1.0)
    emu = RedfishEmulator(lambda t: t * 0 + 100.0, SensorModel(0.5, 0.5), tl, credentials={"admin": "s3cret"})
    emu.start()
    try:
        spec = MeterSpec(name="bmc", kind="redfish", url=emu.url, username="admin", password_env="ARCHLINE_T_BMC_PW")
        monkeypatch.delenv("ARCHLINE_T_BMC_PW", raising=False)
        with pytest.raises(MeterError, match="ARCHLINE_T_BMC_PW"):
            open_from_spec(spec)
        monkeypatch.setenv("ARCHLINE_T_BMC_PW", "wrong")
        with pytest.raises(DeviceError, match="HTTP 401"):
            open_from_spec(spec)
        monkeypatch.setenv("ARCHLINE_T_BMC_PW", "s3cret")
        m = open_from_spec(spec)
        assert m.update_period_s == 0.5                      # the served SensingInterval
        assert m.client.read().power_w == 100.0
        assert "s3cret" not in json.dumps(m.info())
    finally:
        emu.stop()


def _window(meter: BmcMeter, settle_s: float, length_s: float) -> Any:
    rec = Recorder([meter]).start()
    try:
        time.sleep(settle_s)
        rec.begin("w")
        time.sleep(length_s)
        return rec.end("w").meters[meter.name]
    finally:
        rec.stop()


def _truth(meter: BmcMeter, script: Script, region: Any) -> float:
    tl: Timeline = meter.server.timeline                       # type: ignore[attr-defined]
    d0 = (region.t_start_s - tl.t0_host_s) * tl.speed
    d1 = (region.t_end_s - tl.t0_host_s) * tl.speed
    return script.energy_j(d0, d1, [0])


@pytest.mark.parametrize("steps", [
    [(0.0, {0: (12.0, 25.0)})],                                              # 300 W
    [(0.0, {0: (12.0, 20.0)}), (4.0, {0: (12.0, 40.0)}), (6.5, {0: (12.0, 15.0)})],   # 240 -> 480 -> 180 W
], ids=["constant", "stepped"])
def test_window_energy_within_the_stated_bound(steps: list[Any]) -> None:
    script = Script(steps)
    meter = emulate_from_spec(MeterSpec(name="node", kind="redfish"), script, speed=SPEED)
    r = _window(meter, 0.4, 1.6)                               # 8 device seconds, 8 BMC readings
    truth = _truth(meter, script, r)
    assert r.emulated and r.n_samples >= 6
    assert abs(r.energy_j - truth) <= r.energy_err_j, (r.energy_j, truth, r.energy_err_j)
    assert r.energy_err_j < 0.05 * truth                       # a window of 8 update periods: a few percent
    assert meter.info()["url"].startswith("http://127.0.0.1:")


def test_window_shorter_than_the_update_period_is_warned_and_wide() -> None:
    script = Script([(0.0, {0: (12.0, 25.0)})])
    meter = emulate_from_spec(MeterSpec(name="node", kind="redfish"), script, speed=1.0,
                              sensor=SensorModel(update_period_s=1.0, window_s=1.0))
    r = _window(meter, 1.1, 0.3)
    assert any("shorter than the BMC's update period" in w for w in r.warnings)
    assert r.energy_err_j >= 300.0 * r.duration_s * 0.99       # the whole energy
    assert abs(r.energy_j - _truth(meter, script, r)) <= r.energy_err_j


@pytest.mark.parametrize("sensor", [SensorModel(1.0, 0.5), SensorModel(1.0, 1.0, lag_s=0.5)],
                         ids=["window-half-the-period", "lagged"])
def test_averaging_and_lag_are_in_the_bound(sensor: SensorModel) -> None:
    script = Script([(0.0, {0: (12.0, 20.0)}), (4.3, {0: (12.0, 40.0)}), (6.6, {0: (12.0, 15.0)})])
    meter = emulate_from_spec(MeterSpec(name="node", kind="redfish"), script, speed=SPEED, sensor=sensor)
    r = _window(meter, 0.4, 1.6)
    truth = _truth(meter, script, r)
    assert abs(r.energy_j - truth) <= r.energy_err_j, (r.energy_j, truth, r.energy_err_j)
    assert r.energy_err_j < 0.25 * truth


def test_faults_are_counted() -> None:
    script = Script([(0.0, {0: (12.0, 25.0)})])
    faults = RedfishFaults(http_503_every=3, stale=((4.0, 6.0),))     # no new reading at 5 s device time
    # at half the speed: each reading stays up 0.4 s, so only the stale stretch (never a busy CPU) hides one
    meter = emulate_from_spec(MeterSpec(name="node", kind="redfish"), script, speed=SPEED / 2, faults=faults)
    r = _window(meter, 0.4, 2.4)                               # device ~1 .. ~7 s: covers the stale stretch
    srv: RedfishEmulator = meter.server                        # type: ignore[attr-defined]
    assert srv.served_503 > 0 and meter.failed_polls == srv.served_503
    assert any("poll(s) failed" in w and "HTTP 503" in w for w in r.warnings)
    assert srv.stale_served > 0
    assert r.lost_samples == 1 and r.gaps == 1                 # exactly the reading at 5 s
    assert abs(r.energy_j - _truth(meter, script, r)) <= r.energy_err_j


def test_meter_record_end_to_end(tmp_path: Path) -> None:
    tl = Timeline(1.0)
    emu = RedfishEmulator(lambda t: t * 0 + 250.0, SensorModel(0.25, 0.25), tl).start()
    try:
        out = tmp_path / "t.csv"
        res = CliRunner().invoke(meter_cli, ["record", "--meter", f"redfish:{emu.url}", "--duration", "2",
                                             "--out", str(out)])
        assert res.exit_code == 0, res.output
        summary = json.loads(res.stdout[: res.stdout.rindex("}") + 1])
    finally:
        emu.stop()
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) >= 6                                      # ~8 readings in 2 s, one row each
    assert {float(r["power_w"]) for r in rows} == {250.0} and {r["channel"] for r in rows} == {"0"}
    r = summary["redfish"]
    assert summary["emulated"] is True                         # the service root says it is archline's emulator
    assert r["lost_samples"] == 0 and r["gaps"] == 0 and r["n_samples"] >= 7
    assert abs(r["energy_j"] - 250.0 * r["duration_s"]) <= r["energy_err_j"]
