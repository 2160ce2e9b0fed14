"""`archline bench run --platform localhost --quick`: valid archline.results/1 rows, time only here, and the
reason there is no energy stated in every row (issue 7 acceptance)."""

from __future__ import annotations

import csv
import time
from pathlib import Path

import pytest

from archline.bench.config.profile import localhost_profile
from archline.cli.main import main


@pytest.mark.slow
def test_runner_localhost_quick_time_only_rows_say_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prof = localhost_profile()
    if prof.meters:
        pytest.skip(f"this machine has a meter ({prof.detected_note}); the time-only case needs none")
    t0 = time.monotonic()
    rc = main(["bench", "run", "--platform", "localhost", "--quick", "--out", str(tmp_path)])
    wall_s = time.monotonic() - t0
    assert rc in (0, None)
    (f,) = tmp_path.glob("*.csv")
    rows = list(csv.DictReader(open(f, newline="")))
    assert rows
    for r in rows:
        assert r["schema"] == "archline.results/1" and r["platform"] == "localhost"
        assert float(r["time_s"]) > 0 and r["checksum_ok"] == "true"
        assert r["energy_j"] == "" and r["meter"] == ""
        assert "time only" in r["note"] and "no RAPL" in r["note"]
    assert (f.with_suffix(".roofline.png")).stat().st_size > 0
    assert wall_s < 120
