"""Breaker 23, export-ert and the closing summary: a file that is not a results file, non-physical rows, failed
checksums, a file named twice and a non-.json --out are each refused or warned, never silent; emulated rows say
their checksum was not computed; a peak comes from compute kernels only."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from archline.bench.run.summary import summarize, summary_rows
from archline.cli.main import main

BASE = {"schema": "archline.results/1", "platform": "p", "backend": "opencl", "precision": "dp", "level": "mem",
        "emulated": "false"}


def write_rows(path: Path, rows: list[dict[str, str]]) -> Path:
    full = [{**BASE, **r} for r in rows]
    cols = sorted({k for r in full for k in r})
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, cols)
        w.writeheader()
        w.writerows(full)
    return path


GOOD = {"kernel": "intensity", "time_s": "1", "flops_dp": "4e10", "bytes_mem": "1e9", "checksum_ok": "true"}


@pytest.fixture
def export(capsys: pytest.CaptureFixture[str]):  # type: ignore[no-untyped-def]
    def run(*args: str) -> tuple[int, str]:
        try:
            code = main(["bench", "export-ert", *args])
        except SystemExit as e:
            code = int(e.code or 0)
        got = capsys.readouterr()
        return code, got.err + got.out
    return run


@pytest.mark.parametrize("content", ["hello\n", '{"empirical": {"gflops": {"data": []}}}\n'])
def test_not_a_results_file_is_refused(export: Any, tmp_path: Path, content: str) -> None:
    src = tmp_path / "afile"
    src.write_text(content)
    code, out = export(str(src), "--out", str(tmp_path / "e.json"))
    assert code == 2, out
    assert "not an archline.results/1 file: missing column(s) schema" in out
    assert not (tmp_path / "e.json").exists()


@pytest.mark.parametrize(("cells", "column"), [
    ({"time_s": "1e-12"}, "flops_dp"),              # 4e22 flop/s: no machine
    ({"time_s": "0"}, "time_s"),
    ({"time_s": "-1"}, "time_s"),
    ({"time_s": ""}, "time_s"),
    ({"time_s": "1_0"}, "time_s"),                 # issue 36 U #11: Python's float() reads 10, no CSV reader does
    ({"bytes_mem": "1e20"}, "bytes_mem"),           # 1e11 GB/s
])
def test_non_physical_rows_refused_naming_file_line_column(export: Any, tmp_path: Path, cells: dict[str, str],
                                                           column: str) -> None:
    src = write_rows(tmp_path / "r.csv", [GOOD, {**GOOD, **cells}])
    code, out = export(str(src), "--out", str(tmp_path / "e.json"))
    assert code == 2, out
    assert f"r.csv:3: {column} = " in out
    assert not (tmp_path / "e.json").exists()


def test_failed_checksum_warns_and_stays_in_json(export: Any, tmp_path: Path) -> None:
    src = write_rows(tmp_path / "r.csv", [GOOD, {**GOOD, "flops_dp": "8e10", "checksum_ok": "false"}])
    code, out = export(str(src), "--out", str(tmp_path / "e.json"))
    assert code == 0, out
    assert "1 row(s) failed their checksum (line(s) 3)" in out
    doc = json.loads((tmp_path / "e.json").read_text())
    assert doc["empirical"]["gflops"]["data"] == [["FP64 GFLOPs", pytest.approx(40.0)]]   # the failed row left out
    assert doc["empirical"]["metadata"]["checksums"] == {"ok": 1, "checked": 2, "rows": 2}


def test_file_named_twice_read_once_with_warning(export: Any, tmp_path: Path) -> None:
    src = write_rows(tmp_path / "r.csv", [GOOD])
    code, out = export(str(src), str(src), "--out", str(tmp_path / "e.json"), "--format", "json")
    assert code == 0, out
    assert "is the same file as" in out and "read once" in out
    doc = json.loads(out[out.index("{"):])
    assert doc["checksums"] == {"ok": 1, "checked": 1, "rows": 1}


def test_out_suffix_other_than_json_refused(export: Any, tmp_path: Path) -> None:
    src = write_rows(tmp_path / "r.csv", [GOOD])
    code, out = export(str(src), "--out", str(tmp_path / "e9.png"))
    assert code == 2 and "suffix" in out, out
    assert not (tmp_path / "e9.png").exists()


def test_peak_from_compute_kernels_only_and_emulated_checksums_not_computed() -> None:
    cache = {"kernel": "cache", "time_s": "1", "flops_dp": "9.122e9", "bytes_l1": "7.3e10", "checksum_ok": ""}
    s = summarize([{**BASE, **cache, "emulated": "true"}])
    assert s["peaks_gflop_per_s"] == {} and s["bandwidths_gb_per_s"] == {"L1": pytest.approx(73.0)}
    table = {q: v for q, v, _, _ in summary_rows(s)}
    assert table["peak"] == "none" and "peak DP" not in table
    assert table["checksums"] == "not computed (emulated)"
    s = summarize([{**BASE, **GOOD}, {**BASE, **GOOD, "checksum_ok": ""}])
    assert {q: (v, b) for q, v, _, b in summary_rows(s)}["checksums"] == ("1/1 ok", "of 2 rows (1 not computed)")


def test_emulated_row_checksum_not_computed() -> None:
    from archline.bench.kernels import Counts, KernelSpec, RunResult
    from archline.bench.run.rows import MeterInfo, Region, RunContext, build_row

    ctx = RunContext.new("emu", "emulated dev", "emulated", True)
    spec = KernelSpec("emulated", "intensity", "dp", "mem", {})
    res = RunResult(time_s=1.0, reps=1, counts=Counts(flops_dp=10, bytes_mem=8), checksum_ok=True,
                    extra={"emulated": True, "checksum_computed": False})
    row = build_row(ctx, spec, "p", [Region(res, 1.0)], MeterInfo("", None, True, "none"), ci_rel=0.01,
                    max_regions=3)
    assert row["checksum_ok"] is None


@pytest.mark.parametrize(("other", "says"), [({"platform": "q"}, "come from 2 machines"),
                                             ({"host": "node2"}, "come from 2 machines"),
                                             ({"emulated": "true"}, "mix emulated and measured")])
def test_rows_of_several_machines_are_not_merged(export: Any, tmp_path: Path, other: dict[str, str],
                                                 says: str) -> None:
    """Breaker 26 item 3: gtx580, gtx680 and this CPU's rows made one roofline of no machine."""
    a = write_rows(tmp_path / "a.csv", [{**GOOD, "host": "node1"}])
    b = write_rows(tmp_path / "b.csv", [{**GOOD, "host": "node1", **other}])
    code, out = export(str(a), str(b), "--out", str(tmp_path / "e.json"))
    assert code == 2 and says in out and not (tmp_path / "e.json").exists(), out


def test_results_is_a_list_of_each_file_once(export: Any, tmp_path: Path) -> None:
    """Breaker 26 item 8: bench run wrote a string, export-ert a list (with a file named twice, twice)."""
    a = write_rows(tmp_path / "a.csv", [GOOD])
    code, out = export(str(a), str(a), "--out", str(tmp_path / "e.json"))
    assert code == 0, out
    assert json.loads((tmp_path / "e.json").read_text())["empirical"]["metadata"]["results"] == ["a.csv"]
