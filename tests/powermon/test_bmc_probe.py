"""``archline meter probe`` and ``meter calibrate`` against the node's BMC over Redfish (issue 24): the sensor under
test is archline's emulated Redfish service (a real HTTP server on 127.0.0.1, on the emulated PowerMon 2
reference's device clock) read by the Redfish client and the BMC meter's poller; both started and stopped inside
the command. Given: a new reading every 1 s, each the mean of 0.8 s, 0.3 s late, whole watts, gain 1.05,
offset -4 W, at 10x, 6 steps of 4 s between 40 and 160 W.

Stated tolerances (from what the readings can resolve): the update period within 0.1% (the BMC's ReadingTime puts
readings on the lattice exactly); window and lag within window x quantum / step = 0.8 s x 1 W / 120 W = 6.7 ms
(the time one watt of a whole-watt reading stands for when a 120 W step moves through a 0.8 s window; seen: up to
3.6 ms, window and lag erring in opposite directions); the quantum exactly 1 W; gain within 0.5% (a watt of
160 W as the gain's quantisation, at worst) and offset within half a quantum (0.5 W).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.powermon_helpers import threads_back

from archline.cli.meter import meter as meter_cli

GIVEN = ["--period", "1", "--window", "0.8", "--lag", "0.3", "--quantum", "1", "--gain", "1.05", "--offset", "-4",
         "--idle-w", "40", "--busy-w", "160", "--speed", "10", "--steps", "6", "--step", "4", "--seed", "0"]
EDGE_TOL_S = 0.8 * 1.0 / 120.0


def _bmc_threads() -> list[str]:
    return sorted(t.name for t in threading.enumerate() if t.name != "MainThread")


@pytest.fixture(autouse=True)
def nothing_left_running() -> Iterator[None]:
    before = _bmc_threads()
    yield
    assert threads_back(_bmc_threads, before) == before


def _json(out: str) -> dict:
    return json.loads(out[out.index("{"): out.rindex("}") + 1])


@pytest.mark.slow
def test_probe_recovers_the_emulated_redfish_bmc(tmp_path: Path) -> None:
    prof = tmp_path / "bmc.sensor.json"
    res = CliRunner().invoke(meter_cli, ["probe", "bmc", "--emulate", "--redfish", *GIVEN, "--out", str(prof),
                                         "--format", "json"])
    assert res.exit_code == 0, res.output
    d = _json(res.stdout)["measured"]
    assert d["update_period_s"] == pytest.approx(1.0, rel=1e-3)
    assert abs(d["window_s"] - 0.8) <= EDGE_TOL_S, d["window_s"]
    assert abs(d["lag_s"] - 0.3) <= EDGE_TOL_S, d["lag_s"]
    assert d["quantum_w"] == pytest.approx(1.0, abs=1e-9)
    saved = json.loads(prof.read_text())
    assert saved["emulated"] is True and saved["meter"] == "bmc"
    # the probe says which Redfish source it read (issue 35): the emulated service's TotalPower sensor
    assert "meter bmc reads EnvironmentMetrics.PowerWatts.DataSourceUri (/redfish/v1/Chassis/1U/Sensors/TotalPower)" \
        in res.stderr


@pytest.mark.slow
def test_calibrate_recovers_the_emulated_redfish_bmcs_gain_and_offset() -> None:
    res = CliRunner().invoke(meter_cli, ["calibrate", "bmc", "--emulate", "--redfish", *GIVEN, "--format", "json"])
    assert res.exit_code == 0, res.output
    cal = _json(res.stdout)["calibration"]
    assert cal["gain"] == pytest.approx(1.05, rel=5e-3)
    assert cal["offset_w"] == pytest.approx(-4.0, abs=0.5)
    assert abs(cal["lag_s"] - 0.3) <= EDGE_TOL_S, cal["lag_s"]

