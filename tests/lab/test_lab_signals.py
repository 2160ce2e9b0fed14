"""``archline lab submit --scheduler local`` stopped by SIGTERM, or by a terminal's Ctrl-C (SIGINT to its process
group): the running task and its emulators stop (no process is left), its record says interrupted (exit 130),
its finished rows are complete and kept, no temp file is left, the command exits 130, and a resubmission
resumes."""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.labs import write_lab

from archline.formats import schema


def complete_rows(path: Path) -> int:
    """The number of rows of a results CSV, each checked complete: the schema's header, every row as many
    cells, the file ending with a newline."""
    text = path.read_text()
    assert text.endswith("\n"), "the last row was cut off"
    head, *body = list(csv.reader(io.StringIO(text)))
    assert tuple(head) == tuple(schema.ALL_COLUMNS)
    assert all(len(r) == len(head) for r in body)
    return len(body)


def _gone(pid: int, timeout_s: float = 10.0) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:      # a zombie that nobody reaped yet is gone too
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[-1].split()[0] == "Z":
                    return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("how", ["SIGTERM", "Ctrl-C", "SIGHUP"])    # SIGHUP: the terminal closed (issue 36 S #4)
def test_lab_local_submit_stopped_stops_its_task(tmp_path: Path, how: str) -> None:
    lab = write_lab(tmp_path / "lab.toml", [{"name": "gpu01", "platform": "gtx580", "precisions": ["sp"],
                                              "quick": False, "time_compression": 10.0}])
    res = tmp_path / "results" / "gpu01"
    rows = res / "results.csv"
    p = subprocess.Popen([sys.executable, "-m", "archline.cli", "lab", "submit", str(lab), "--scheduler", "local"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        end = time.monotonic() + 90
        while time.monotonic() < end and not (rows.exists() and rows.read_text().count("\n") >= 2):
            assert p.poll() is None, p.communicate()
            time.sleep(0.1)
        rec = json.loads((res / "task.json").read_text())
        assert rec["state"] == "running"
        if how in ("SIGTERM", "SIGHUP"):
            p.send_signal(getattr(signal, how))
        else:                                   # a terminal sends SIGINT to the whole foreground group
            os.killpg(p.pid, signal.SIGINT)
        _out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130, err
    assert "stopping the task" in err and err.rstrip().endswith("archline: interrupted"), err
    assert "Traceback" not in err
    controller = int(rec["job_id"])
    assert _gone(rec["pid"]) and _gone(controller)                   # the task (and its emulators) and controller
    rec = json.loads((res / "task.json").read_text())
    assert rec["state"] == "failed" and rec["exit_code"] == 130 and rec["interrupted"] is True, rec
    n = complete_rows(rows)
    assert n >= 1 and not list(tmp_path.rglob(".*tmp*"))
    st = subprocess.run([sys.executable, "-m", "archline.cli", "lab", "status", str(lab), "--format", "json"],
                        capture_output=True, text=True, timeout=60)
    (s,) = json.loads(st.stdout)
    assert s["state"] == "failed" and "exit 130" in s["reason"] and s["points_done"] == n
