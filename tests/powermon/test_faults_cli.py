"""Every emulator fault kind through the command line (issue 15): `archline meter record` against the in-process
emulator (``powermon://default?FAULT``) reports what was lost, in its summary and on stderr, the window's counts agree
with the decoder's, and the exit code follows the policy (docs/errors.md): 6 when more than --max-lost of the samples
were lost, 4 for a meter that does not answer, 0 (with a warning line) for a loss within the allowance."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from archline.common.exits import EXIT_DEVICE, EXIT_OK, EXIT_SAMPLES_LOST

RATE_HZ, SPEED, CHANNELS = 128, 4, 3
#: fault -> (exit code, the words stderr must hold); every fault is timed in emulated seconds (SPEED x host)
FAULTS: dict[str, tuple[int, tuple[str, ...]]] = {
    "disconnect=1": (EXIT_SAMPLES_LOST, ("lost", "disconnected")),
    "stall=0.5:0.5": (EXIT_SAMPLES_LOST, ("lost 192 of", "1 overflow")),
    "overflow=64:30": (EXIT_SAMPLES_LOST, ("lost 30 of", "1 overflow")),
    "drop=100": (EXIT_OK, ("warning", "resync")),
    "noise=100:7": (EXIT_OK, ("warning", "garbled")),
    "partial_first=2": (EXIT_OK, ("warning", "2 byte(s) dropped")),
    "silent=1": (EXIT_DEVICE, ("no PowerMon 2 answers",)),
    "stall=0:30": (EXIT_DEVICE, ("streams no samples",)),
    "adc_noise=2": (EXIT_OK, ()),
}


def _record(run_cli: Callable[..., Any], out: Path, fault: str, *extra: str) -> tuple[Any, dict[str, Any] | None]:
    r = run_cli("meter", "record", "--meter", f"powermon2:powermon://default?speed={SPEED}&{fault}", "--channels",
                ",".join(map(str, range(CHANNELS))), "--duration", "0.6", "--out", str(out), *extra)
    return r, json.loads(r.stdout) if r.stdout.strip() else None


@pytest.mark.parametrize("fault", list(FAULTS))
def test_meter_record_reports_every_fault(fault: str, run_cli: Callable[..., Any], tmp_path: Path) -> None:
    code, words = FAULTS[fault]
    r, summary = _record(run_cli, tmp_path / "t.csv", fault)
    lines = r.stderr.strip().splitlines()
    print(f"{fault}: exit {r.exit_code}: {lines[-1] if lines else ''}")
    assert r.exit_code == code, r.stderr
    assert all(w in r.stderr for w in words), r.stderr
    assert "Traceback" not in r.stderr
    if code != EXIT_OK:
        assert len(lines) == 1 and lines[0].startswith("archline: error: ")
    if summary is None:                          # the meter never streamed: nothing recorded, nothing left
        assert code == EXIT_DEVICE and not list(tmp_path.iterdir())
        return
    (m,) = [v for v in summary.values() if isinstance(v, dict) and "lost_samples" in v]
    dec = summary["decoder"]
    assert m["expected_samples"] > 0 and 0 <= m["lost_samples"] <= m["expected_samples"]
    if fault.startswith("disconnect"):
        # the decoder cannot count what never came after the last time record; the window does
        assert m["lost_samples"] > 0.4 * m["expected_samples"] and "disconnected" in summary["error"]
        assert not dec["done"] and m["energy_err_j"] > 0.4 * m["energy_j"]
    else:
        assert (m["lost_samples"], m["overflows"]) == (dec["lost_records"], dec["overflows"]), (m, dec)
        assert m["gaps"] == (dec["gaps"] > 0) and dec["done"]
    if m["lost_samples"]:
        assert m["lost_s"] >= m["lost_samples"] / CHANNELS / RATE_HZ * (1 - 1e-9)
    if fault.startswith(("drop", "noise", "partial")):
        assert dec["skipped_bytes"] > 0 and 0 < m["lost_samples"] <= 2
        assert m["lost_share"] <= 0.01      # within the default allowance: exit 0, but said
    if fault.startswith("adc_noise"):
        assert m["lost_samples"] == 0 and dec["skipped_bytes"] == 0 and not r.stderr.strip()
    # the raw capture sits beside the trace, whole (no temp name left)
    assert (tmp_path / "t.raw.bin").exists() and not list(tmp_path.glob(".*tmp"))


def test_any_loss_fails_with_max_lost_zero(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    r, summary = _record(run_cli, tmp_path / "t.csv", "drop=100", "--max-lost", "0")
    assert r.exit_code == EXIT_SAMPLES_LOST and "more than --max-lost 0%" in r.stderr
    assert summary is not None and summary["decoder"]["resyncs"] == 1


def test_record_and_integrate_agree_under_time_compression(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    """A `--meter emulated:4` recording is integrated on the emulated timeline by both commands (issue 15 found
    2885 J against 724.9 J: the trace was integrated in host seconds)."""
    r = run_cli("meter", "record", "--meter", "emulated:4", "--channels", "0,1", "--duration", "0.5", "--out",
                str(tmp_path / "e.csv"))
    assert r.exit_code == 0, r.stderr
    rec = json.loads(r.stdout)["powermon2-emulated"]
    i = run_cli("meter", "integrate", str(tmp_path / "e.csv"), "--format", "json")
    assert i.exit_code == 0, i.stderr
    got = json.loads(i.stdout)
    assert got["time_compression"] == 4.0
    assert got["duration_s"] == pytest.approx(rec["duration_s"], rel=1e-9)
    # the trace holds 7 significant digits: the joules agree to that
    assert got["total_energy_j"] == pytest.approx(rec["energy_j"], rel=1e-6)
    # 12 V x 3 A + 3.3 V x 1.5 A (the emulator's idle board) for 4 x 0.5 s and more
    assert rec["duration_s"] >= 4 * 0.5 and rec["energy_j"] / rec["duration_s"] == pytest.approx(40.95, rel=2e-3)


def test_interrupted_record_keeps_a_whole_capture(tmp_path: Path) -> None:
    """Ctrl-C during `meter record`: the trace holds what was recorded, the capture ends with its done record and
    nothing is left under a temp name; exit 130."""
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "i.csv"
    p = subprocess.Popen([sys.executable, "-c", "import sys; from archline.cli.main import main; sys.exit(main())",
                          "meter", "record", "--meter", "emulated", "--channels", "0", "--duration", "30", "--out",
                          str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob(".i.raw.bin.*.tmp")) and time.monotonic() < deadline:   # streaming has begun
        time.sleep(0.05)
    time.sleep(1.0)
    p.send_signal(signal.SIGINT)
    stdout, stderr = p.communicate(timeout=30)
    assert p.returncode == 130, stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    assert json.loads(stdout)["trace"] == str(out) and out.exists()
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]
    from archline.powermon.offline import decode_file

    _, meta = decode_file(tmp_path / "i.raw.bin")       # whole: no --partial needed
    assert meta["stats"]["done"] and meta["stats"]["sample_records"] > 0
