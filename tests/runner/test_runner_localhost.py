"""`archline bench run --platform localhost --quick`: valid archline.results/1 rows, time only here, and the
reason there is no energy stated in every row (issue 7 acceptance)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from archline.bench.config.profile import localhost_profile
from archline.cli.main import main
from archline.formats.ert_roofline import host_roofline_path, read_ert


@pytest.mark.slow
def test_runner_localhost_quick_time_only_rows_say_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prof = localhost_profile()
    if prof.meters:
        pytest.skip(f"this machine has a meter ({prof.detected_note}); the time-only case needs none")
    rc = main(["bench", "run", "--platform", "localhost", "--quick", "--out", str(tmp_path), "--format", "json"])
    assert rc in (0, None)
    (f,) = tmp_path.glob("*.csv")
    rows = list(csv.DictReader(open(f, newline="")))
    assert rows
    for r in rows:
        assert r["schema"] == "archline.results/1" and r["platform"] == "localhost"
        assert float(r["time_s"]) > 0 and r["checksum_ok"] == "true"
        assert r["energy_j"] == "" and r["meter"] == ""
        assert "time only" in r["note"] and "no RAPL" in r["note"]
    # the whole roofline: both peaks, every cache level the plan has and DRAM, each on its points, in the JSON,
    # the run's roofline.json, its copy for the localhost platform and one figure per precision
    doc = json.loads(capsys.readouterr().out)
    assert {"peak SP", "peak DP", "bandwidth L1", "bandwidth L2", "bandwidth DRAM"} <= set(doc["figures"])
    assert all(fig["points"] >= 1 and fig["candidates"] >= 3 for fig in doc["figures"].values())
    ert = read_ert(f.with_suffix(".roofline.json"))
    assert ert.gflops["FP64 GFLOPs"] == doc["peaks_gflop_per_s"]["dp"]
    assert ert.gbytes == doc["bandwidths_gb_per_s"] and ert.metadata["figures"] == doc["figures"]
    assert read_ert(host_roofline_path()).metadata["run_id"] == rows[0]["run_id"]
    assert doc["host_roofline_json"] == str(host_roofline_path())
    for prec in ("sp", "dp"):
        assert Path(str(f).removesuffix(".csv") + f".roofline-{prec}.png").stat().st_size > 0
