"""Breaker 24 (second pass): `meter integrate` states `meter record`'s bound for a decoded PowerMon 2 capture and a
BMC trace (never a silent +- 0), a sidecar of another recording is named as such, and the small messages of the
decode path and the emulator URLs/scripts. Every server runs on 127.0.0.1 and is stopped here."""

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
