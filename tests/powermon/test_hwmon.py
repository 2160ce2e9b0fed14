"""The hwmon meter on a fake sysfs tree (inputs found and named, selection, 32/64-bit wraps unrolled, power
integrated, each failure named) and on the emulated tree (SensorModel-driven, labelled emulated, removed on stop)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from archline.powermon.counters.hwmon import (
    EMULATED_CHIP,
    HwmonFaults,
    HwmonMeter,
    list_inputs,
    select_inputs,
)
from archline.powermon.emulator.sensor import SensorModel
from archline.powermon.errors import DeviceError, MeterError
from archline.powermon.record.recorder import Recorder
from archline.powermon.spec import can_emulate, emulate_meter, open_meter, parse_meters


class Clock:
    def __init__(self) -> None:
        self.t = 10.0

    def __call__(self) -> float:
        return self.t


def _tree(root: Path) -> Path:
    files = {
        "hwmon0/name": "k10temp", "hwmon0/temp1_input": "45000",
        "hwmon1/name": "amd_energy", "hwmon1/energy1_input": "1000", "hwmon1/energy1_label": "Ecore000",
        "hwmon1/energy2_input": "5000", "hwmon1/energy2_label": "Esocket0",
        "hwmon10/name": "amdgpu", "hwmon10/power1_average": "30000000", "hwmon10/power1_input": "31000000",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text + "\n")
    return root


def _set(root: Path, rel: str, value: int) -> None:
    (root / rel).write_text(f"{value}\n")


def test_inputs_are_listed_and_selected(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    found = list_inputs(root)
    assert [(i.id, i.display, i.kind) for i in found] == [
        ("hwmon1/energy1_input", "amd_energy/Ecore000", "energy"),
        ("hwmon1/energy2_input", "amd_energy/Esocket0", "energy"),
        ("hwmon10/power1_average", "amdgpu/power1_average", "power"),
        ("hwmon10/power1_input", "amdgpu/power1_input", "power")]
    assert [i.id for i in select_inputs(found, (), root)] == ["hwmon1/energy1_input", "hwmon1/energy2_input"]
    assert [i.id for i in select_inputs(found, ["amd_energy/Esocket0", "hwmon10/power1_input"], root)] == [
        "hwmon1/energy2_input", "hwmon10/power1_input"]
    power_only = [i for i in found if i.kind == "power"]
    assert [i.id for i in select_inputs(power_only, (), root)] == ["hwmon10/power1_average"]
    with pytest.raises(DeviceError, match=r"'amd_energy/Esocket9' not found .*have: hwmon1/energy1_input"):
        select_inputs(found, ["amd_energy/Esocket9"], root)
    with pytest.raises(DeviceError, match="no hwmon energy or power inputs"):
        HwmonMeter(root=tmp_path / "hwmon0")
    assert list_inputs(tmp_path / "absent") == []


def test_energy_wraps_are_unrolled(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    clk = Clock()
    m = HwmonMeter(["amd_energy/Esocket0"], root=root, clock=clk, name="cpu")
    assert m.channel_names == ["amd_energy/Esocket0"] and m.devices == {"cpu": ["amd_energy/Esocket0"]}
    steps = [2**32 - 3_000_000, 2**32 - 1_000_000, 1_000_000, 4_000_000]     # a 32-bit wrap between 2 and 3
    got = []
    for raw in steps:
        _set(root, "hwmon1/energy2_input", raw)
        clk.t += 0.1
        got.append(m._read()[0])
    assert got == pytest.approx([0.0, 2.0, 4.0, 7.0]) and m.wraps == 1
    _set(root, "hwmon1/energy2_input", 2**40)
    m._read()
    _set(root, "hwmon1/energy2_input", 5)              # a 64-bit counter wrapped
    assert m._read()[0] == pytest.approx(7.0 + (2**40 - 4_000_000 + 2**64 - 2**40 + 5) * 1e-6)


def test_power_inputs_are_integrated(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    clk = Clock()
    m = HwmonMeter(["hwmon10/power1_average"], root=root, clock=clk)
    out = []
    for p_uw in (30_000_000, 50_000_000, 50_000_000):
        _set(root, "hwmon10/power1_average", p_uw)
        out.append(m._read()[0])
        clk.t += 0.5
    assert out == pytest.approx([0.0, 20.0, 45.0])     # trapezoids: (30+50)/2 x 0.5, then 50 x 0.5
    assert m.info()["inputs"][0]["energy_source"] == "integrated uW"


def test_read_failures_are_named(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    m = HwmonMeter(["hwmon1/energy1_input"], root=root)
    _set(root, "hwmon1/energy1_input", 0)
    (root / "hwmon1/energy1_input").write_text("N/A\n")
    with pytest.raises(MeterError, match="does not hold a number"):
        m._read()
    os.remove(root / "hwmon1/energy1_input")
    with pytest.raises(DeviceError, match="does not exist"):
        m._read()


def test_open_meter_dispatch_and_environment_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _tree(tmp_path)
    (spec,) = parse_meters([{"name": "sock", "kind": "hwmon", "sensors": ["amd_energy/Esocket0"]}], "p.toml")
    m = open_meter(spec, root=root)
    assert m.name == "sock" and m.devices == {"cpu": ["amd_energy/Esocket0"]} and not m.emulated
    monkeypatch.setenv("ARCHLINE_HWMON_ROOT", str(root))
    assert open_meter(spec).root == root


def _stale_j(meter: Any) -> float:
    """The bound on a window's energy at 120 W: the file is rewritten every 10 ms of device time (1 ms of host
    time; later when the host is busy), so the value read at each edge may be up to the longest rewrite gap old."""
    return 120.0 * meter.speed * 2 * meter.tree.max_write_gap_s + 2e-6


def test_emulated_tree_follows_the_power_and_goes_away() -> None:
    (spec,) = parse_meters([{"name": "cpu", "kind": "hwmon"}], "p.toml")
    assert can_emulate(spec)
    meter = emulate_meter(spec, lambda t_s: {0: (12.0, 10.0)}, speed=10.0)      # 120 W, 10x
    root = meter.tree.root
    assert meter.emulated and meter.speed == 10.0 and meter.inputs[0].chip == EMULATED_CHIP
    assert meter.channel_names == [f"{EMULATED_CHIP}/Esocket0"]
    with Recorder([meter]) as rec:
        assert root.is_dir()
        rec.begin("w")
        time.sleep(0.5)
        region = rec.end("w").meters["cpu"]
    assert not root.exists()
    assert region.emulated and region.device_time_s == pytest.approx(10 * region.time_s)
    assert abs(region.devices["cpu"].energy_j - 120.0 * region.duration_s) <= _stale_j(meter)
    assert meter.info()["sensor_model"]["update_period_s"] == 0.01


def test_emulated_wrap_and_vanishing_chip() -> None:
    (spec,) = parse_meters([{"name": "cpu", "kind": "hwmon"}], "p.toml")
    faults = HwmonFaults(counter_bits=32, start_uj=2**32 - 120_000_000)   # wraps after 120 J: 0.1 s of host time
    meter = emulate_meter(spec, lambda t_s: {0: (12.0, 10.0)}, speed=10.0, faults=faults)
    with Recorder([meter]) as rec:
        rec.begin("w")
        time.sleep(0.5)
        region = rec.end("w").meters["cpu"]
    assert meter.wraps == 1 and abs(region.energy_j - 120.0 * region.duration_s) <= _stale_j(meter)
    gone = emulate_meter(spec, lambda t_s: {0: (12.0, 10.0)}, speed=10.0,
                         faults=HwmonFaults(vanish_after_s=0.5), sensor=SensorModel(0.01, 0.0))
    with Recorder([gone]) as rec, pytest.raises(DeviceError, match="does not exist"):
        rec.begin("w")
        time.sleep(0.3)
        rec.end("w")
    assert not gone.tree.root.exists()


def test_meter_list_rows(tmp_path: Path) -> None:
    from archline.powermon.counters.hwmon import list_meters

    rows = list_meters(_tree(tmp_path))
    assert [(r["name"], r["available"]) for r in rows][:2] == [("hwmon1/energy1_input", True),
                                                              ("hwmon1/energy2_input", True)]
    assert "amd_energy/Ecore000 (cumulative uJ)" == rows[0]["detail"] and len(rows) == 4
    (none,) = list_meters(tmp_path / "absent")
    assert not none["available"] and "no hwmon energy" in none["detail"]
