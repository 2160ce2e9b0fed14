"""Parquet input: single files and hive-partitioned data set directories fit exactly as the same rows in CSV;
errors name the file and the row; the table and JSON give rows and configurations."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from archline.fit.io.results import read_results
from archline.fit.regress.synthetic import GTX580, synthetic_results, write_results_csv


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    f = synthetic_results(GTX580, seed=8, n_l1=0, n_l2=0, n_rand=0, n_repeats=3)
    f["run_id"] = ["r1" if i % 2 else "r2" for i in range(len(f))]
    f["host"] = ["h1" if i % 3 else "h2" for i in range(len(f))]
    return f


def _dataset(frame: pd.DataFrame, root: Path) -> Path:
    """platform=<p>/host=<h>/run_id=<r>/part-0.parquet, without those three columns in the files."""
    for (p, h, r), part in frame.groupby(["platform", "host", "run_id"]):
        d = root / f"platform={p}" / f"host={h}" / f"run_id={r}"
        d.mkdir(parents=True)
        part.drop(columns=["platform", "host", "run_id"]).to_parquet(d / "part-0.parquet", index=False)
    (root / "platform=gtx580" / "_SUCCESS").write_text("")          # ignored, as hive does
    return root


def _coefficients(doc: dict[str, Any]) -> dict[str, float]:
    return {k: v["value"] for k, v in doc["coefficients"].items()}


def test_fit_parquet_file_and_dataset_equal_csv(run_cli: Callable[..., Any], frame: pd.DataFrame,
                                                tmp_path: Path) -> None:
    csv = write_results_csv(frame, tmp_path / "rows.csv")
    pq_file = tmp_path / "rows.parquet"
    frame.to_parquet(pq_file, index=False)
    ds = _dataset(frame, tmp_path / "lab")
    docs = []
    for src in (csv, pq_file, ds):
        r = run_cli("fit", str(src), "--model", "basic", "--format", "json")
        assert r.exit_code == 0, r.stderr
        docs.append(json.loads(r.stdout))
    for d in docs:
        assert d["n_points"] == 61 * 3 and d["quality"]["n_configurations"] == 61 and d["emulated"] is True
        assert d["platform"] == "gtx580" and d["quality"]["cv_split"] == "configuration"
        for k, v in _coefficients(docs[0]).items():
            assert abs(_coefficients(d)[k] / v - 1) < 1e-12, k
    r = run_cli("fit", str(ds), "--model", "basic")
    assert "points=183  configurations=61" in r.stdout and "by configuration" in r.stdout


def test_fit_dataset_rows_located_by_file_and_row(frame: pd.DataFrame, tmp_path: Path) -> None:
    bad = frame.copy()
    bad.loc[bad.index[(bad["run_id"] == "r1") & (bad["host"] == "h1")][4], "energy_j"] = -2.0
    ds = _dataset(bad, tmp_path / "lab")
    with pytest.raises(Exception) as e:
        read_results([ds])
    msg = str(e.value)
    assert "host=h1/run_id=r1/part-0.parquet, row 5: negative energy_j" in msg and "\n" not in msg


def test_fit_dataset_cli_errors_are_one_line(run_cli: Callable[..., Any], frame: pd.DataFrame,
                                             tmp_path: Path) -> None:
    empty = tmp_path / "none"
    empty.mkdir()
    r = run_cli("fit", str(empty))
    assert r.exit_code != 0 and r.stderr.count("\n") == 1 and "without Parquet files" in r.stderr
    f = frame.drop(columns=["energy_j"])
    f.to_parquet(tmp_path / "noe.parquet", index=False)
    r = run_cli("fit", str(tmp_path / "noe.parquet"))
    assert r.exit_code != 0 and "missing column(s) energy_j" in r.stderr and "Traceback" not in r.stderr
    (tmp_path / "junk.parquet").write_text("not parquet")
    r = run_cli("fit", str(tmp_path / "junk.parquet"))
    assert r.exit_code != 0 and "not a Parquet file" in r.stderr and "Traceback" not in r.stderr


def test_fit_reader_text_numbers_and_partition_types(tmp_path: Path, frame: pd.DataFrame) -> None:
    """Counts stored as text and as integers read as numbers; booleans as booleans; a numeric-looking
    partition value stays text."""
    f = frame.copy()
    f["checksum_ok"] = [i != 3 for i in range(len(f))]
    f["flops_sp"] = f["flops_sp"].map(lambda v: f"{v:.1f}")
    f["bytes_mem"] = f["bytes_mem"].astype("int64")
    d = tmp_path / "platform=0580" / "run_id=20260101"
    d.mkdir(parents=True)
    f.drop(columns=["platform", "run_id"]).to_parquet(d / "part-0.parquet", index=False)
    rs = read_results([tmp_path])
    assert rs.data.n_rows == len(f) - 1 and rs.data.n_configs == 61 and "dropped 1 row" in rs.notes[0]
    assert set(rs.data.cfg["platform"]) == {"0580"}
    assert float(rs.frame["flops_sp"].max()) == float(frame["flops_sp"].max())
    assert float(rs.frame["bytes_mem"].min()) == float(frame["bytes_mem"].min())
