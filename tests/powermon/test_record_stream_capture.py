"""`meter record` of the stream meters (PowerSensor3, PMD-USB) keeps the raw capture as PowerMon 2's does, and
`meter decode` of it gives the recorded samples; the bare emulator URL `KIND://default` that --help names works."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.mark.parametrize("spec", ["pmd://default", "powersensor3://default", "pmd:pmd://default"])
def test_record_keeps_a_capture_that_decodes_to_the_same_samples(run_cli, tmp_path: Path, spec: str) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "t.csv"
    r = run_cli("meter", "record", "--meter", spec, "--duration", "0.5", "--out", str(out))
    assert r.exit_code == 0, r.stderr
    raw = tmp_path / "t.raw.bin"
    assert raw.is_file() and Path(f"{raw}.json").is_file()
    d = run_cli("meter", "decode", str(raw), "--out", str(tmp_path / "u.csv"))
    assert d.exit_code == 0, d.stderr
    recorded = out.read_text().splitlines()
    decoded = (tmp_path / "u.csv").read_text().splitlines()
    assert len(recorded) > 100 and len(decoded) == len(recorded)


@pytest.mark.parametrize("spec", ["powersensor3:powersensor3://default?speed=50", "pmd://default?speed=1000"])
def test_record_refuses_an_emulator_speed_the_pty_cannot_carry(run_cli, tmp_path: Path, spec: str) -> None:  # type: ignore[no-untyped-def]
    """Breaker 24 item 11: ?speed=50 ran 36 s and lost 93% of its samples; bench run already refused it."""
    r = run_cli("meter", "record", "--meter", spec, "--duration", "1", "--out", str(tmp_path / "t.csv"))
    assert r.exit_code == 2 and "lower ?speed= to" in r.stderr and not list(tmp_path.iterdir()), r.stderr
