"""Breaker 26 item 13: a samples file cut at a line boundary integrated silently (318 J of 1202 J, lost 0) though
its sidecar lists how many samples the meter sent. The missing ones are now lost samples, said and counted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def test_a_cut_file_counts_what_its_sidecar_says_is_missing(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    rec = tmp_path / "rec.csv"
    r = run_cli("meter", "record", "--meter", "emulated:8", "--duration", "2", "--out", str(rec))
    assert r.exit_code == 0, r.stderr
    side = json.loads(Path(f"{rec}.json").read_text())
    side.pop("window_s")                     # as `meter decode` writes it: the file's extent is the window
    lines = rec.read_text().splitlines(keepends=True)
    n_rows = len(lines) - 1
    assert side["info"]["stats"]["sample_records"] == n_rows
    whole = tmp_path / "whole.csv"
    whole.write_text("".join(lines))
    Path(f"{whole}.json").write_text(json.dumps(side))
    full = run_cli("meter", "integrate", str(whole), "--format", "json")
    assert full.exit_code == 0, full.stderr
    assert json.loads(full.stdout)["lost_samples"] == 0 and "missing" not in full.stderr
    cut = tmp_path / "cut.csv"
    keep = n_rows // 2
    cut.write_text("".join(lines[:1 + keep]))
    Path(f"{cut}.json").write_text(json.dumps(side))
    res = run_cli("meter", "integrate", str(cut), "--format", "json")
    assert res.exit_code == 6, res.stderr                               # more than --max-lost: the documented exit
    assert f"holds {keep} samples but its sidecar lists {n_rows}" in res.stderr
    assert json.loads(res.stdout)["lost_samples"] == n_rows - keep
    ok = run_cli("meter", "integrate", str(cut), "--max-lost", "0.9", "--format", "json")
    assert ok.exit_code == 0 and json.loads(ok.stdout)["lost_samples"] == n_rows - keep


def test_integrate_states_the_bound_record_did(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Issue 26 (d), breaker 24 item 13: `meter integrate` of a PowerMon 2 trace said +- 0 J where `meter record`
    said +- 2.2 J: the per-sample half ADC step is now the same function on both sides."""
    rec = tmp_path / "rec.csv"
    r = run_cli("meter", "record", "--meter", "emulated:8", "--duration", "1", "--out", str(rec))
    assert r.exit_code == 0, r.stderr
    live = json.loads(r.stdout)["powermon2-emulated"]
    off = run_cli("meter", "integrate", str(rec), "--format", "json")
    assert off.exit_code == 0, off.stderr
    got = json.loads(off.stdout)
    assert got["total_energy_j"] == pytest.approx(live["energy_j"], rel=1e-6)
    assert got["energy_err_j"] > 0 and got["energy_err_j"] == pytest.approx(live["energy_err_j"], rel=1e-3)


def test_a_power_only_trace_integrates(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Breaker 24 item 9: a Redfish trace (power only: voltage and current empty) was 'column voltage_v must hold
    numbers (found object)'."""
    f = tmp_path / "bmc.csv"
    f.write_text("t_s,channel,voltage_v,current_a,power_w\n" + "".join(f"{0.5 * i},0,,,250.0\n" for i in range(10)))
    r = run_cli("meter", "integrate", str(f), "--format", "json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["total_energy_j"] == pytest.approx(250.0 * 4.5)
