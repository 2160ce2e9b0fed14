"""`archline meter integrate` (issue 24's second review pass, and issue 26 below): `meter integrate` states
`meter record`'s bound for a decoded PowerMon 2 capture and a BMC trace (never a silent +- 0), a sidecar of another
recording is named as such, and the small messages of the decode path and the emulator URLs/scripts.
Every server runs on 127.0.0.1 and is stopped here."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from archline.powermon.bmc.emulator import RedfishEmulator
from archline.powermon.bmc.ipmi import BmcProcess
from archline.powermon.counters.emulated import Timeline
from archline.powermon.emulator.sensor import SensorModel


def _summary(stdout: str) -> dict[str, Any]:
    out = json.loads(stdout)
    return next(v for v in out.values() if isinstance(v, dict) and "energy_err_j" in v)


def _integrate(run_cli: Any, path: Path, *extra: str) -> tuple[dict[str, Any], str]:
    res = run_cli("meter", "integrate", str(path), "--format", "json", *extra)
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout), res.stderr


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """An emulated PowerMon 2 recording (4x) with its raw capture, and record's summary."""
    import contextlib
    import io

    from archline.cli.main import main

    d = tmp_path_factory.mktemp("pm2")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["meter", "record", "--meter", "emulated:4", "--duration", "1", "--out", str(d / "t.csv")])
    assert code == 0, err.getvalue()
    return d, _summary(out.getvalue())


# --- finding 4: a decoded PowerMon 2 capture keeps the resolution bound ---------------------------------------------

def test_decoded_capture_integrates_with_records_bound(run_cli: Any, recorded: tuple[Path, dict[str, Any]]) -> None:
    d, _ = recorded
    res = run_cli("meter", "decode", str(d / "t.raw.bin"), "--out", str(d / "d.csv"))
    assert res.exit_code == 0, res.stderr
    side = json.loads((d / "d.csv.json").read_text())
    assert side["type"] == "powermon2" and set(side["r_sense_ohm"]) == {str(c) for c in side["channels"]}
    trace, _ = _integrate(run_cli, d / "t.csv")
    lo, hi = trace["t_start_s"], trace["t_end_s"]
    dec, err = _integrate(run_cli, d / "d.csv", "--start", repr(lo), "--end", repr(hi))
    assert dec["total_energy_j"] == pytest.approx(trace["total_energy_j"], rel=1e-9)
    assert dec["energy_err_j"] > 0
    assert dec["energy_err_j"] == pytest.approx(trace["energy_err_j"], rel=1e-9)
    assert "resolution" not in err


def test_a_sidecar_without_resolution_terms_warns(run_cli: Any, recorded: tuple[Path, dict[str, Any]],
                                                  tmp_path: Path) -> None:
    d, _ = recorded
    (tmp_path / "d.csv").write_bytes((d / "t.csv").read_bytes())
    side = json.loads((d / "t.csv.json").read_text())
    del side["info"]["r_sense_ohm"]
    (tmp_path / "d.csv.json").write_text(json.dumps(side))
    out, err = _integrate(run_cli, tmp_path / "d.csv")
    assert out["energy_err_j"] == 0.0 and "excludes the meter's resolution" in err
    side["info"].pop("type")                       # a meter the sidecar does not name: still said
    (tmp_path / "d.csv.json").write_text(json.dumps(side))
    out, err = _integrate(run_cli, tmp_path / "d.csv")
    assert "excludes the meter's resolution" in err


# --- finding 5: a BMC trace's bound, record and integrate alike ------------------------------------------------------

def _record_and_integrate(run_cli: Any, meter: str, out: Path) -> tuple[dict[str, Any], dict[str, Any], str]:
    res = run_cli("meter", "record", "--meter", meter, "--duration", "2.5", "--out", str(out))
    assert res.exit_code == 0, res.stderr
    rec = _summary(res.stdout)
    got, err = _integrate(run_cli, out)
    return rec, got, err


def test_ipmi_trace_integrates_with_records_bound(run_cli: Any, tmp_path: Path) -> None:
    with BmcProcess(["--power-w", "412"]) as srv:
        rec, got, err = _record_and_integrate(run_cli, f"ipmi:ipmi://archline:emulated@127.0.0.1:{srv.port}",
                                              tmp_path / "i.csv")
    assert rec["energy_err_j"] >= 1.0 and "excludes" not in err     # a whole-watt reading over ~2.5 s
    assert f"{got['energy_err_j']:.3g}" == f"{rec['energy_err_j']:.3g}"
    assert f"{got['total_energy_j']:.6g}" == f"{rec['energy_j']:.6g}"
    info = json.loads((tmp_path / "i.csv.json").read_text())["info"]
    assert info["quantum_w"] == 1.0 and info["update_period_s"] == 1.0 and info["timed"] in (True, False)


def test_redfish_trace_with_steps_integrates_with_records_bound(run_cli: Any, tmp_path: Path) -> None:
    def power(t: Any) -> Any:
        return np.where(np.asarray(t) % 1.0 < 0.5, 100.0, 300.0)
    emu = RedfishEmulator(power, SensorModel(0.25, 0.25), Timeline(1.0)).start()
    try:
        rec, got, err = _record_and_integrate(run_cli, f"redfish:{emu.url}", tmp_path / "r.csv")
    finally:
        emu.stop()
    assert rec["energy_err_j"] > 1.0 and "excludes" not in err       # the edges' steps are in it
    assert f"{got['energy_err_j']:.3g}" == f"{rec['energy_err_j']:.3g}"
    assert f"{got['total_energy_j']:.6g}" == f"{rec['energy_j']:.6g}"


def test_a_bmc_trace_from_an_older_sidecar_says_its_bound_excludes(run_cli: Any, tmp_path: Path) -> None:
    t = [0.5, 1.5, 2.5, 3.5]
    rows = "".join(f"{x!r},0,nan,nan,412\n" for x in t)
    (tmp_path / "b.csv").write_text('"t_s","channel","voltage_v","current_a","power_w"\n' + rows)
    (tmp_path / "b.csv.json").write_text(json.dumps({
        "format": "archline.samples/1", "meter": "ipmi", "emulated": False, "clock": "host_monotonic",
        "info": {"type": "bmc", "update_period_s": 1.0, "speed": 1.0, "poll_s": 0.25, "quantum_w": 1.0}}))
    _, err = _integrate(run_cli, tmp_path / "b.csv")
    assert "excludes the meter's resolution" in err


# --- finding 15: another recording's sidecar --------------------------------------------------------------------------

def test_another_recordings_sidecar_is_named(run_cli: Any, recorded: tuple[Path, dict[str, Any]],
                                             tmp_path: Path) -> None:
    d, _ = recorded
    side = json.loads((d / "t.csv.json").read_text())
    lo, hi = side["window_s"]
    side["window_s"] = [hi + 100.0, hi + 102.0]              # a later recording of the same meter
    (tmp_path / "t.csv").write_bytes((d / "t.csv").read_bytes())
    (tmp_path / "t.csv.json").write_text(json.dumps(side))
    res = run_cli("meter", "integrate", str(tmp_path / "t.csv"))
    assert res.exit_code != 0 and "does not match" in res.stderr and "lost the rest" not in res.stderr
    assert res.stderr.count("\n") == 1
    assert math.isfinite(lo)


# --- folded from test_breaker26_integrate.py (a review round's regression tests) ---------------------------------
# Breaker 26 item 13: a samples file cut at a line boundary integrated silently (318 J of 1202 J, lost 0) though
# its sidecar lists how many samples the meter sent. The missing ones are now lost samples, said and counted.


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
