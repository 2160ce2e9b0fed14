"""RAPL on a fake powercap tree and NVML through a fake object."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest
from support.fakes import FakeNvml, FakePerfReader, make_perf_power_tree, make_powercap_tree, set_energy

from archline.powermon.counters import rapl, rapl_perf
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
    _deny_energy_uj(monkeypatch)
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


# --- the second source: perf's power PMU (powercap unreadable without root) ---

def _deny_energy_uj(monkeypatch: pytest.MonkeyPatch) -> None:
    real = rapl._read_text

    def deny(path: Path) -> str:
        if path.name == "energy_uj":
            raise PermissionError(13, "Permission denied")
        return real(path)

    monkeypatch.setattr(rapl, "_read_text", deny)


def _perf_energy(config: int, cpu: int, t: float) -> float:
    """Cumulative joules: the package 20 W + 10 W per CPU index, the ram 3 W (so each zone is told apart)."""
    return {0x02: 20.0 + 10.0 * cpu, 0x03: 3.0, 0x01: 12.0, 0x05: 40.0}[config] * t


def test_perf_source_when_powercap_is_root_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tree(tmp_path / "powercap")
    _deny_energy_uj(monkeypatch)
    pmu = make_perf_power_tree(tmp_path / "power", cpumask="0,8")      # two packages: CPUs 0 and 8
    clk = Clock()
    fake = FakePerfReader(_perf_energy, clk)
    m = RaplMeter(["package-0", "package-1", "package-0/dram"], root=root, perf_root=pmu, perf_reader=fake,
                  clock=clk, devices={"cpu": ["package-0", "package-1"]})
    assert m.source == "perf" and m.info()["source"] == "perf"
    assert sorted(fake.opened.values()) == [(23, 0x02, 0), (23, 0x02, 8), (23, 0x03, 0)]
    for _ in range(11):
        m.poll()
        clk.t += 0.1
    r = m.region(100.0, 101.0)
    assert r.channels["package-0"].energy_j == pytest.approx(20.0, abs=1e-6)
    assert r.channels["package-1"].energy_j == pytest.approx(100.0, abs=1e-6)
    assert r.channels["package-0/dram"].energy_j == pytest.approx(3.0, abs=1e-6)
    assert r.devices["cpu"].energy_j == pytest.approx(120.0, abs=1e-6)
    m.stop()
    assert sorted(fake.closed) == sorted(fake.opened)


def test_powercap_wins_where_readable(tmp_path: Path) -> None:
    pmu = make_perf_power_tree(tmp_path / "power")
    fake = FakePerfReader(_perf_energy, Clock())
    m = RaplMeter(["package-0"], root=tree(tmp_path / "powercap"), perf_root=pmu, perf_reader=fake)
    assert m.source == "powercap" and fake.opened == {}
    with pytest.raises(MeterError, match="not one of auto, powercap, perf"):
        RaplMeter(root=tree(tmp_path / "powercap"), source="msr")


def test_perf_denied_says_both_fixes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tree(tmp_path / "powercap")
    _deny_energy_uj(monkeypatch)
    pmu = make_perf_power_tree(tmp_path / "power")
    fake = FakePerfReader(_perf_energy, Clock(), deny=errno.EACCES)
    with pytest.raises(MeterError) as e:
        RaplMeter(root=root, perf_root=pmu, perf_reader=fake)
    msg = str(e.value)
    assert "sudo chmod o+r /sys/class/powercap/intel-rapl:*/energy_uj" in msg
    assert "`sudo sysctl kernel.perf_event_paranoid=0`" in msg
    assert "`sudo setcap cap_perfmon+ep $(readlink -f $(which python3))`" in msg
    names, why = rapl.readable_zones(root, perf_root=pmu, perf_reader=fake)
    assert names == [] and "perf_event_paranoid" in why
    ok, why = rapl.readable_zones(root, perf_root=pmu, perf_reader=FakePerfReader(_perf_energy, Clock()))
    assert ok == ["package-0"] and "perf's power events" in why


def test_perf_pmu_files_parse(tmp_path: Path) -> None:
    pmu = make_perf_power_tree(tmp_path / "power", cpumask="0-1,4", events={"energy-pkg": 2, "energy-gpu": 4})
    (pmu / "events" / "energy-gpu.unit").write_text("Watts\n")        # not joules: left out, never guessed
    got = rapl_perf.read_pmu(pmu)
    assert got is not None and got.pmu_type == 23 and got.cpus == (0, 1, 4)
    assert [(e.name, e.config, e.scale_j) for e in got.events] == [("energy-pkg", 2, 2.0 ** -32)]
    assert rapl_perf.read_pmu(tmp_path / "none") is None
    with pytest.raises(MeterError, match=r"zone.*'dram'.*not found among perf"):
        rapl_perf.PerfSource(["dram"], pmu, FakePerfReader(_perf_energy, Clock()))


def test_real_perf_power_events() -> None:
    """The syscall path, where the power PMU exists and this user may open it."""
    pmu = rapl_perf.read_pmu(rapl_perf.PERF_POWER_ROOT)
    if pmu is None or not pmu.events:
        pytest.skip(f"no perf power PMU at {rapl_perf.PERF_POWER_ROOT} here (a VM, or not an Intel/AMD CPU)")
    try:
        src = rapl_perf.PerfSource(["package-0"], rapl_perf.PERF_POWER_ROOT)
    except MeterError as e:
        pytest.skip(f"perf power events not permitted here: {e}")
    import time

    e0 = src.read_j()[0]
    time.sleep(0.05)
    e1 = src.read_j()[0]
    src.close()
    assert 0.0 < e1 - e0 < 1000.0 * 0.05 + 1.0      # a package draws something, and less than 1 kW


# --- `meter list`: what is missing and the one command that gives it ---

def test_meter_list_rapl_fixes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from archline.powermon.counters.kind import UDEV_FIX, rapl_rows

    root = tree(tmp_path / "powercap")
    pmu = make_perf_power_tree(tmp_path / "power")
    ok = rapl_rows(root, pmu, FakePerfReader(_perf_energy, Clock()))
    assert [(r["name"], r["available"], r.get("fix", "")) for r in ok] == [
        ("package-0", True, ""), ("package-0/dram", True, ""), ("perf:package-0", True, ""),
        ("perf:package-0/core", True, ""), ("perf:package-0/dram", True, ""), ("perf:psys", True, "")]
    _deny_energy_uj(monkeypatch)
    denied = rapl_rows(root, pmu, FakePerfReader(_perf_energy, Clock(), deny=errno.EACCES))
    assert [r["fix"] for r in denied] == [
        f"sudo chmod o+r {root}/intel-rapl:*/energy_uj {root}/intel-rapl:*:*/energy_uj"] * 2 + [
        "sudo sysctl kernel.perf_event_paranoid=0"]
    assert UDEV_FIX in denied[0]["detail"] and "cap_perfmon+ep" in denied[2]["detail"]
    # issue 34 finding 11: in a VM guest no command gives RAPL, and the fix column says so in words
    from archline.powermon.counters import kind as counters_kind

    for vm, fix in ((True, "none here: a VM guest; measure on the host"), (False, "sudo modprobe intel_rapl_msr")):
        monkeypatch.setattr(counters_kind, "_in_vm", lambda vm=vm: vm)
        (none,) = rapl_rows(tmp_path / "no-powercap", tmp_path / "no-pmu")
        assert none["available"] is False and "no perf power events" in none["detail"] and none["fix"] == fix


def test_meter_list_serial_port_needs_its_group(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    import types

    from serial.tools import list_ports

    from archline.powermon import meter_list

    dev = tmp_path / "ttyUSB0"
    dev.write_text("")
    port = types.SimpleNamespace(device=str(dev), description="CH340", vid=0x1A86, pid=0x7523)
    monkeypatch.setattr(list_ports, "comports", lambda: [port])
    monkeypatch.setattr(os, "access", lambda path, mode: str(path) != str(dev))   # even root is denied here
    rows = {(r["kind"], r["name"]): r for r in meter_list.list_meters(tmp_path / "pc", perf_root=tmp_path / "pmu")}
    serial, pmd = rows[("serial", str(dev))], rows[("pmd", str(dev))]
    assert serial["available"] is False and pmd["available"] is False
    assert serial["fix"].startswith("sudo usermod -aG ") and serial["fix"].endswith(" $USER")
    assert all("fix" in r for r in rows.values())
    # issue 34 finding 11: every absent kind's fix is a command or, where none can help, why in words
    absent = [r for r in rows.values() if not r["available"]]
    assert absent and all(r["fix"] for r in absent)
    assert rows[("redfish", "-")]["fix"].startswith("none here: ")


def test_localhost_and_open_meter_take_perf_where_powercap_is_root_only(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """What measure and bench run open on localhost: the detected profile's RAPL meter, through perf here."""
    from archline.bench.config.profile import localhost_profile
    from archline.powermon.spec import open_meter

    root = tree(tmp_path / "powercap")
    _deny_energy_uj(monkeypatch)
    monkeypatch.setenv("ARCHLINE_PERF_POWER_ROOT", str(make_perf_power_tree(tmp_path / "power")))
    clk = Clock()
    monkeypatch.setattr(rapl_perf, "SyscallReader", lambda: FakePerfReader(_perf_energy, clk))
    prof = localhost_profile(root)
    (spec,) = prof.meters
    assert spec.kind == "rapl" and spec.zones == ("package-0",) and "perf's power events" in prof.detected_note
    m = open_meter(spec, powercap_root=root, clock=clk)
    assert m.source == "perf" and m.channel_names == ["package-0"]
    m.poll()
    clk.t += 0.5
    m.poll()
    assert m.region(100.0, 100.5).energy_j == pytest.approx(10.0, abs=1e-6)      # 20 W x 0.5 s
