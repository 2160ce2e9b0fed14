"""``archline bench run`` stopped by SIGTERM or SIGINT (while the session opens, mid-sweep, or signalled twice):
exit 130 with one message, the finished rows kept complete (``<run_id>.csv.partial``), the meter, emulator and
writers closed, and no hidden temp file anywhere under --out."""

from __future__ import annotations

import csv
import io
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from archline.formats import schema


def complete_rows(path: Path) -> int:
    """Rows of a results CSV, each checked complete (schema header, as many cells, a final newline)."""
    text = path.read_text()
    assert text.endswith("\n"), f"{path}: the last row was cut off"
    head, *body = list(csv.reader(io.StringIO(text)))
    assert tuple(head) == tuple(schema.ALL_COLUMNS)
    assert all(len(r) == len(head) for r in body)
    return len(body)


def _run_and_signal(out: Path, sig: signal.Signals, after_s: float, twice: bool = False) -> tuple[int, str]:
    p = subprocess.Popen([sys.executable, "-m", "archline.cli", "bench", "run", "--platform", "gtx580", "--emulate",
                          "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(after_s)
        p.send_signal(sig)
        if twice:
            time.sleep(0.05)
            if p.poll() is None:
                p.send_signal(sig)
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    return p.returncode, err


@pytest.mark.parametrize(("sig", "after_s", "twice"), [
    (signal.SIGTERM, 2.0, False),
    (signal.SIGINT, 2.0, False),
    (signal.SIGTERM, 0.6, False),       # while the session opens (imports, the emulator's pty)
    (signal.SIGTERM, 2.5, True),        # a second signal while the first one closes the session
])
def test_bench_run_signal_keeps_rows_and_leaves_no_temp_files(tmp_path: Path, sig: signal.Signals, after_s: float,
                                                                twice: bool) -> None:
    out = tmp_path / "out"
    code, err = _run_and_signal(out, sig, after_s, twice)
    # a second SIGTERM that lands after cli.main has put the default handler back (the run is over, its outputs
    # final, only the interpreter's exit left) ends the process by the signal
    assert code == 130 or (twice and code == -sig), err
    assert "Traceback" not in err and (code != 130 or err.rstrip().endswith("archline: interrupted")), err
    assert not [p for p in tmp_path.rglob(".*tmp*")], list(tmp_path.rglob(".*tmp*"))
    partial = list(out.glob("*.csv.partial")) if out.exists() else []
    assert not list(out.glob("*.csv")) if out.exists() else True      # an interrupted run is never "complete"
    if partial:
        (p,) = partial
        n = complete_rows(p)
        assert n >= 1 and f"interrupted: {n} finished row(s) kept in {p}" in err
