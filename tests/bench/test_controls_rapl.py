"""bench's RAPL power cap reads and writes its powercap files only through powermon's RAPL module
(PowercapConstraint): the limit in microwatts, the stated maximum (none when absent or 0), a refused value as one
worded control error, and the files it touches are the constraint's own; which devices open_controls caps through
RAPL and when a GPU cannot be capped at all."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from archline.bench.controls import ControlError, RaplPowerLimit, open_controls
from archline.powermon.counters import rapl
from archline.powermon.counters.rapl import PowercapConstraint
from archline.powermon.errors import DeviceError


def _zone(root: Path, max_uw: str | None = "130000000") -> Path:
    z = root / "intel-rapl:0"
    z.mkdir(parents=True)
    (z / "name").write_text("package-0\n")
    (z / "constraint_1_power_limit_uw").write_text("120000000\n")
    if max_uw is not None:
        (z / "constraint_1_max_power_uw").write_text(f"{max_uw}\n")
    return z


def test_constraint_reads_and_writes_microwatts(tmp_path: Path) -> None:
    z = _zone(tmp_path)
    c = PowercapConstraint(z, 1)
    assert c.limit_file == z / "constraint_1_power_limit_uw"
    assert (c.limit_uw(), c.max_uw()) == (120_000_000, 130_000_000)
    assert c.set_limit_uw(64_500_000) == 64_500_000 and c.limit_file.read_text() == "64500000"
    assert PowercapConstraint(_zone(tmp_path / "b", "0"), 1).max_uw() is None
    assert PowercapConstraint(_zone(tmp_path / "c", None), 1).max_uw() is None
    with pytest.raises(DeviceError, match="constraint_0_power_limit_uw does not exist"):
        PowercapConstraint(z, 0).limit_uw()


def test_rapl_cap_goes_through_the_powercap_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    z = _zone(tmp_path)
    seen: list[str] = []
    real = rapl._read_text

    def spy(path: Path) -> str:        # every read of a RAPL file passes here
        seen.append(path.name)
        return real(path)

    monkeypatch.setattr(rapl, "_read_text", spy)
    ctl = RaplPowerLimit(z, 1)
    assert ctl.allowed_range() == (1.0, 130.0) and ctl.state() == {"power_limit_uw": 120_000_000}
    assert ctl.set(75.25) == 75.25
    ctl.restore({"power_limit_uw": 120_000_000})
    assert (z / "constraint_1_power_limit_uw").read_text() == "120000000"
    assert seen == ["constraint_1_max_power_uw", "constraint_1_power_limit_uw", "constraint_1_power_limit_uw",
                    "constraint_1_power_limit_uw"]


def test_a_refused_write_is_one_control_error(tmp_path: Path) -> None:
    z = _zone(tmp_path)
    (z / "constraint_1_power_limit_uw").unlink()
    (z / "constraint_1_power_limit_uw").mkdir()          # writing it fails the way a refusing file does (EISDIR)
    with pytest.raises(ControlError, match=r"cannot write 50000000 to .*constraint_1_power_limit_uw: Is a directory"):
        RaplPowerLimit(z, 1).set(50.0)


def _profile(kind: str, backend: str, device: str | None = None) -> SimpleNamespace:
    return SimpleNamespace(platform=SimpleNamespace(device_kind=kind), bench=SimpleNamespace(backend=backend,
                                                                                             device=device))


def test_opencl_on_a_cpu_is_capped_through_rapl(tmp_path: Path) -> None:
    """PoCL runs OpenCL on the CPU: its cap is the package's RAPL limit, not a GPU vendor's."""
    _zone(tmp_path / "pc")
    z0 = tmp_path / "pc" / "intel-rapl:0"
    (z0 / "constraint_0_power_limit_uw").write_text("95000000\n")
    (z0 / "constraint_0_max_power_uw").write_text("130000000\n")
    cs = open_controls(_profile("cpu", "opencl"), [60.0], [], restore_file=tmp_path / "r.json",
                       powercap_root=tmp_path / "pc")
    assert isinstance(cs.cap, RaplPowerLimit) and cs.cap.target == str(z0 / "constraint_0_power_limit_uw")
    assert cs.apply_point(SimpleNamespace(power_cap_w=60.0, dvfs_id=None))["power_cap_w"] == 60.0
    cs.restore()
    assert (z0 / "constraint_0_power_limit_uw").read_text() == "95000000"


def test_a_gpu_named_not_numbered_says_why_it_is_not_capped(tmp_path: Path) -> None:
    log: list[str] = []
    cs = open_controls(_profile("gpu", "hip", "MI250X"), [200.0], [], restore_file=tmp_path / "r.json",
                       amdsmi=object(), log=log.append)
    assert cs.cap is None and cs.cap_skip == ("the profile's [bench] device 'MI250X' is not a GPU index (caps and "
                                              "clocks need one)")
    assert log == [f"power cap control skipped: {cs.cap_skip}"]
