"""The closing summary of bench run and the ERT roofline.json: exact numbers from hand-made rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from archline.bench.run.progress import point_numbers
from archline.bench.run.summary import summarize, summary_rows
from archline.fit.io.ert_roofline import ErtRoofline, read_ert, write_ert

ROWS = [  # as csv.DictReader gives them: strings
    {"backend": "cpu_asm", "kernel": "intensity", "time_s": "0.5", "flops_dp": "5e9", "bytes_mem": "1e10",
     "checksum_ok": "true", "emulated": "false"},
    {"backend": "cpu_asm", "kernel": "intensity", "time_s": "1", "flops_dp": "4e10", "bytes_mem": "1e9",
     "checksum_ok": "true", "emulated": "false"},
    {"backend": "cpu_asm", "kernel": "cache", "time_s": "2", "bytes_l1": "2e11", "checksum_ok": "true"},
    {"backend": "cpu_asm", "kernel": "intensity", "time_s": "0.1", "flops_dp": "1e12", "bytes_mem": "1e12",
     "checksum_ok": "false"},  # failed: counted in the status only
    {"backend": "cpu_asm", "kernel": "chase", "time_s": "1", "bytes_l2": "1e12", "checksum_ok": "true"},
]


def test_summary_exact() -> None:
    s = summarize(ROWS)
    assert s["peaks_gflop_per_s"] == {"dp": pytest.approx(40.0)}
    assert s["bandwidths_gb_per_s"] == {"DRAM": pytest.approx(20.0), "L1": pytest.approx(100.0)}
    assert s["balance_flop_per_byte"] == {"dp": pytest.approx(2.0)}
    assert s["checksums"] == {"ok": 4, "checked": 5, "rows": 5}
    assert s["emulated"] is False and s["backends"] == ["cpu_asm"]
    table = dict((q, v) for q, v, _ in summary_rows(s))
    assert table["peak DP"] == "40" and table["bandwidth DRAM"] == "20" and table["checksums"] == "4/5 FAILED"


def test_ert_round_trip(tmp_path: Path) -> None:
    s = summarize(ROWS)
    roof = ErtRoofline.from_summary(s["peaks_gflop_per_s"], s["bandwidths_gb_per_s"], {"results": "r.csv"})
    p = write_ert(tmp_path / "roofline.json", roof)
    doc = json.loads(p.read_text())
    assert doc["empirical"]["gflops"]["data"] == [["FP64 GFLOPs", pytest.approx(40.0)]]
    assert dict(doc["empirical"]["gbytes"]["data"]) == {"DRAM": pytest.approx(20.0), "L1": pytest.approx(100.0)}
    assert read_ert(p) == roof


def test_point_numbers_rounded_and_time_only() -> None:
    line = point_numbers({"time_s": 0.123456789012345, "flops_dp": 2e9, "energy_j": None, "checksum_ok": True})
    assert line == "time_s=0.1235 gflop_per_s=16.2 time only checksum ok"
    line = point_numbers({"time_s": 1.0, "energy_j": 12.345678, "power_w": 12.345678, "checksum_ok": False})
    assert line == "time_s=1 energy_j=12.35 power_w=12.35 checksum FAILED"


def test_version_names_version_commit_and_isas() -> None:
    from click.testing import CliRunner

    import archline
    from archline.cli.main import cli

    res = CliRunner().invoke(cli, ["--version"])
    assert res.exit_code == 0
    lines = res.output.splitlines()
    assert lines[0] == f"archline {archline.__version__}"
    assert lines[1].startswith("commit ") and lines[2].startswith("compiled ISAs ")


def test_export_ert_cli(tmp_path: Path) -> None:
    import csv

    from click.testing import CliRunner

    from archline.cli.main import cli

    src = tmp_path / "r.csv"
    rows = [{"schema": "archline.results/1", "platform": "p", "precision": "dp", **r} for r in ROWS]
    cols = sorted({k for r in rows for k in r})
    with src.open("w", newline="") as f:
        w = csv.DictWriter(f, cols)
        w.writeheader()
        w.writerows(rows)
    out = tmp_path / "roofline.json"
    res = CliRunner().invoke(cli, ["bench", "export-ert", str(src), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert read_ert(out).gflops == {"FP64 GFLOPs": pytest.approx(40.0)}
    before = src.read_bytes()
    res = CliRunner().invoke(cli, ["bench", "export-ert", str(src), "--out", str(src)])
    assert res.exit_code != 0 and src.read_bytes() == before


def test_cpu_asm_compiler_column() -> None:
    from archline.bench.cpu_asm import build_info

    s = build_info.compiler("avx2")
    assert s.endswith("-O3 -ffp-contract=off -fno-trapping-math -mavx2 -mfma")
    assert s.split()[0] in ("GCC", "clang", "unknown")
