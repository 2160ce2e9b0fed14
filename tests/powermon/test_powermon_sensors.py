"""RAPL on a fake powercap tree and NVML through a fake object."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.fakes import FakeNvml, make_powercap_tree, set_energy

from archline.powermon.counters import rapl
from archline.powermon.counters.nvml import NvmlMeter, list_gpus
from archline.powermon.counters.rapl import EnergyCounter, RaplMeter, list_zones
from archline.powermon.errors import MeterError

RANGE = 262_143_328_850


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def tree(tmp_path: Path, with_range: bool = True) -> Path:
    return make_powercap_tree(tmp_path, {
        "intel-rapl:0": {"name": "package-0", "energy_uj": RANGE - 5_000_000,
                         "max_energy_range_uj": RANGE if with_range else None},
        "intel-rapl:0:0": {"name": "dram", "energy_uj": 10, "max_energy_range_uj": 65_712_999_613},
    })


def test_zones_by_name(tmp_path: Path) -> None:
    zones = list_zones(tree(tmp_path))
    assert [z.name for z in zones] == ["package-0", "package-0/dram"]
    assert zones[0].max_energy_range_uj == RANGE
    assert list_zones(tmp_path / "nothing") == []


def test_wrap_is_unrolled(tmp_path: Path) -> None:
    root = tree(tmp_path)
    clk = Clock()
    m = RaplMeter(["package-0"], root=root, clock=clk, devices={"cpu": ["package-0"]})
    m.poll()
    clk.t += 0.1
    set_energy(root, "intel-rapl:0", 3_000_000)          # wrapped: 5 J to the top + 3 J
    m.poll()
    clk.t += 0.1
    set_energy(root, "intel-rapl:0", 4_000_000)
    m.poll()
    r = m.region(100.0, 100.2)
    assert r.energy_j == pytest.approx(9.0) and r.energy_j > 0
    assert r.devices["cpu"].energy_j == pytest.approx(9.0)
    assert m.counters[0].wraps == 1


def test_two_wraps_between_reads(tmp_path: Path) -> None:
    c = EnergyCounter("package-0", range_uj=1_000_000, max_power_w=10.0)   # wraps every >= 0.1 s
    c.update(0.0, 900_000)
    # polled often enough: each wrap is seen
    assert c.update(0.06, 400_000) == pytest.approx(0.5)
    assert c.update(0.12, 100_000) == pytest.approx(1.2)
    assert c.wraps == 2
    # read too rarely: two wraps would look like one; an error, not a wrong energy
    c2 = EnergyCounter("package-0", range_uj=1_000_000, max_power_w=10.0)
    c2.update(0.0, 900_000)
    with pytest.raises(MeterError, match="more than once"):
        c2.update(0.25, 100_000)


def test_unreadable_energy_file_says_how_to_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tree(tmp_path)
    real = rapl._read_text

    def deny(path: Path) -> str:
        if path.name == "energy_uj":
            raise PermissionError(13, "Permission denied")
        return real(path)

    monkeypatch.setattr(rapl, "_read_text", deny)
    with pytest.raises(MeterError, match=r"permission denied.*chmod"):
        RaplMeter(root=root)


def test_missing_range(tmp_path: Path) -> None:
    root = tree(tmp_path, with_range=False)
    clk = Clock()
    m = RaplMeter(["package-0"], root=root, clock=clk)
    assert m.zones[0].max_energy_range_uj is None
    m.poll()
    clk.t += 1
    set_energy(root, "intel-rapl:0", RANGE - 1_000_000)     # forward: fine
    m.poll()
    assert m.region(100.0, 101.0).energy_j == pytest.approx(4.0)
    clk.t += 1
    set_energy(root, "intel-rapl:0", 1_000)                  # backwards: cannot be corrected
    with pytest.raises(MeterError, match="max_energy_range_uj is missing"):
        m.poll()


def test_no_rapl_is_a_reason(tmp_path: Path) -> None:
    with pytest.raises(MeterError, match="no RAPL zones"):
        RaplMeter(root=tmp_path)


@pytest.mark.parametrize("has_counter", [True, False])
def test_nvml_fake(has_counter: bool) -> None:
    clk = Clock()
    fake = FakeNvml(lambda t: 100.0 + 50.0 * (t > 1.0), total_energy=has_counter, clock=clk)
    m = NvmlMeter(0, nvml=fake, clock=clk)
    assert m.has_energy is has_counter and m.info()["power_scope"] == "board"
    for _ in range(21):
        m.poll()
        clk.t += 0.1
    m.poll()
    r = m.region(100.0, 102.1)
    # 100 W for 1 s, 150 W for 1.1 s
    assert r.energy_j == pytest.approx(100.0 + 165.0, rel=0.03)
    assert r.devices["gpu"].energy_j == r.energy_j
    assert list_gpus(fake)[0]["total_energy"] is has_counter


def test_nvml_absent_is_a_reason() -> None:
    with pytest.raises(MeterError, match="NVML unavailable"):
        NvmlMeter(0, nvml=FakeNvml(fail_init=True))
