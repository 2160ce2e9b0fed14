"""bench's RAPL power cap reads and writes its powercap files only through powermon's RAPL module
(PowercapConstraint): the limit in microwatts, the stated maximum (none when absent or 0), a refused value as one
worded control error, and the files it touches are the constraint's own."""

from __future__ import annotations

from pathlib import Path

import pytest

from archline.bench.controls import ControlError, RaplPowerLimit
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
