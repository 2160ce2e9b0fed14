"""The meter-kind contract of powermon/spec.py: every kind, its fields, channel ids per kind, the default channel
of whole-device kinds, and open_meter / emulate_meter dispatching by kind."""

from __future__ import annotations

import time

import pytest

from archline.powermon import emulate_meter
from archline.powermon.errors import MeterError
from archline.powermon.record.recorder import Recorder
from archline.powermon.spec import METER_KINDS, METER_MODULES, can_emulate, channels_spec, open_meter, parse_meters


def _one(entry: dict[str, object]) -> object:
    (spec,) = parse_meters([entry], "p.toml")
    return spec


def test_every_kind_is_known_and_has_a_module_or_is_built_in() -> None:
    assert set(METER_KINDS) == {"powermon2", "rapl", "nvml", "powersensor3", "pmd", "redfish", "ipmi", "amdsmi",
                                "hwmon"}
    assert set(METER_KINDS) - set(METER_MODULES) == {"rapl", "nvml"}


@pytest.mark.parametrize(("kind", "device"), [("redfish", "node"), ("ipmi", "node"), ("amdsmi", "gpu"),
                                              ("hwmon", "cpu")])
def test_whole_device_kinds_get_one_channel(kind: str, device: str) -> None:
    spec = _one({"name": "m", "kind": kind, "url": "http://127.0.0.1:8000", "username": "admin",
                 "password_env": "BMC_PASSWORD", "calibration": {"gain": 1.07, "offset_w": -3.5}})
    (c,) = spec.channels  # type: ignore[attr-defined]
    assert (c.id, c.rail, c.device) == (0, kind, device)
    assert spec.devices() == {device: [kind]}  # type: ignore[attr-defined]
    assert spec.calibration == {"gain": 1.07, "offset_w": -3.5}  # type: ignore[attr-defined]


@pytest.mark.parametrize(("kind", "bad_id", "text"), [("powermon2", 8, "0-7"), ("powersensor3", 4, "0-3"),
                                                      ("pmd", 4, "0-3")])
def test_channel_ids_per_kind(kind: str, bad_id: int, text: str) -> None:
    _one({"name": "m", "kind": kind, "port": "x", "channels": [{"id": bad_id - 1, "rail": "a"}]})
    with pytest.raises(MeterError, match=f"meters.m: .*{text}, got {bad_id}"):
        _one({"name": "m", "kind": kind, "port": "x", "channels": [{"id": bad_id, "rail": "a"}]})


def test_sampling_kinds_need_channels_and_pmd_voltage_limit() -> None:
    for kind in ("powermon2", "powersensor3", "pmd"):
        with pytest.raises(MeterError, match=f"a {kind} meter needs 'channels'"):
            _one({"name": "m", "kind": kind, "port": "x"})
    with pytest.raises(MeterError, match=r"above the pmd meter.s 15\.49 V"):
        _one({"name": "m", "kind": "pmd", "port": "x", "channels": [{"id": 0, "rail": "a", "nominal_v": 24.0}]})
    # PowerSensor3's divider reads 24 V rails
    _one({"name": "m", "kind": "powersensor3", "port": "x", "channels": [{"id": 0, "rail": "a", "nominal_v": 24.0}]})


def test_password_env_is_a_name_never_a_password() -> None:
    with pytest.raises(MeterError, match="password_env"):
        _one({"name": "b", "kind": "redfish", "url": "http://h", "password_env": "hunter2!"})


def test_channels_spec_defaults_per_kind() -> None:
    assert [c.id for c in channels_spec("p", "powersensor3").channels] == [0, 1, 2, 3]
    assert [c.id for c in channels_spec("p", "pmd").channels] == [0, 1, 2, 3]


def test_emulatable_kinds_and_a_missing_driver() -> None:
    specs = parse_meters([{"name": k, "kind": k, "port": "x", "channels": [{"id": 0, "rail": "a"}]}
                          for k in ("powermon2", "powersensor3", "pmd")], "p.toml")
    assert all(can_emulate(s) for s in specs)
    rapl = _one({"name": "r", "kind": "rapl"})
    assert not can_emulate(rapl)  # type: ignore[arg-type]
    with pytest.raises(MeterError, match=r"no emulator|no driver"):
        emulate_meter(rapl, None)  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["powermon2", "powersensor3", "pmd"])
def test_emulate_meter_dispatches_by_kind(kind: str) -> None:
    (spec,) = parse_meters([{"name": "m", "kind": kind, "rate_hz": 256.0 if kind == "powermon2" else 1000.0,
                             "channels": [{"id": 0, "rail": "main", "device": "card"}]}], "p.toml")
    meter = emulate_meter(spec, lambda t_s: {0: (12.0, 2.5)}, speed=2.0, seed=1)
    assert meter.emulated and meter.speed == 2.0
    with Recorder([meter]) as rec:
        rec.begin("w")
        time.sleep(0.3)
        region = rec.end("w")
    (mr,) = region.meters.values()
    assert mr.emulated and mr.lost_samples == 0
    assert mr.devices["card"].mean_power_w == pytest.approx(30.0, rel=0.02)


@pytest.mark.parametrize(("kind", "url"), [("powersensor3", "powersensor3://default?rate=1000"),
                                           ("pmd", "pmd://default?rate=1000")])
def test_open_meter_dispatches_to_the_url_emulator(kind: str, url: str) -> None:
    spec = channels_spec("m", kind, [0, 1], port=url)
    meter = open_meter(spec)
    assert meter.emulated and meter.update_hz == 1000.0
    with Recorder([meter]) as rec:
        rec.begin("w")
        time.sleep(0.2)
        region = rec.end("w")
    assert region.meters["m"].n_samples > 0


def test_meter_list_names_every_kind(tmp_path: object) -> None:
    from archline.powermon.offline import list_meters

    rows = list_meters(powercap_root="/nonexistent-powercap")
    assert set(METER_KINDS) <= {r["kind"] for r in rows}
    emulators = {r["name"] for r in rows if r["available"] and r["kind"] in ("powersensor3", "pmd")}
    assert {"powersensor3://default", "pmd://default"} <= emulators


@pytest.mark.parametrize(("port", "text"), [("powersensor3://nosuch", "no emulated device named 'nosuch'"),
                                            ("powersensor3://default?bogus=1", "unknown option 'bogus'"),
                                            ("pmd://default?rate=x", "rate takes a number above 0")])
def test_bad_emulator_urls_are_one_line_errors(port: str, text: str) -> None:
    kind = port.partition(":")[0]
    with pytest.raises(MeterError, match=text):
        meter = open_meter(channels_spec("m", kind, [0], port=port))
        meter.start()
