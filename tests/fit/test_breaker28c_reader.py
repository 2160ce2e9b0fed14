"""Breaker 28c, the results reader: every plain CSV read a block of whole lines at a time (memory flat in rows:
benchmarks/fit_csv_memory.py measures it; here the block path is checked to be taken, with the same rows, numbers
and line numbers); an output inside a data set refused when only a partition directory or a part file of it is
the input; a data set's stray files warned of once (hidden and ``_``-prefixed ones skipped silently); a cut-off
compressed file named so; a file named twice shown as given."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
from support.datasets import fit_json, part_csv

from archline.fit.io import line_blocks as line_blocks_mod
from archline.fit.io import results_file as results_file_mod
from archline.fit.io.dataset import write_dataset
from archline.fit.io.results import read_results
from archline.fit.io.results_file import ResultsFile
from archline.fit.regress.synthetic import GTX580

PARTITION = Path("platform=gtx580", "host=n1")
PART = PARTITION / "run_id=r1" / "part-0.parquet"


@pytest.fixture
def csv_file(tmp_path: Path) -> Path:
    return part_csv(tmp_path, "a", GTX580, "n1", "r1", 1)


@pytest.fixture
def ds(tmp_path: Path, csv_file: Path) -> Path:
    write_dataset([csv_file], tmp_path / "ds")
    return tmp_path / "ds"


_fit = fit_json


# 1. a plain CSV file is read in blocks of whole lines, whatever its size ---------------------------------------------

def test_a_small_regular_csv_is_read_in_blocks_with_its_line_numbers(csv_file: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    made: list[int] = []
    real = line_blocks_mod.LineBlocks

    def spy(*a: Any, **k: Any) -> Any:
        made.append(a[4] if len(a) > 4 else k["block_bytes"])
        return real(*a, **k)

    monkeypatch.setattr(line_blocks_mod, "LineBlocks", spy)
    with ResultsFile.open(csv_file, stream=True) as rf:
        whole = list(rf.tables(["kernel"], ["time_s"]))
    assert made == [results_file_mod.CSV_FILE_BLOCK_BYTES]     # the block path, for a file far below 512 MB
    lines = csv_file.read_bytes().splitlines(keepends=True)
    monkeypatch.setattr(results_file_mod, "CSV_FILE_BLOCK_BYTES", len(b"".join(lines[1:4])))   # ~3 rows a block
    with ResultsFile.open(csv_file, stream=True) as rf:
        got = list(rf.tables(["kernel"], ["time_s"]))
    assert len(got) >= 5 and len(whole) == 1
    assert np.concatenate([g[1] for g in got]).tolist() == list(range(2, len(lines) + 1))
    t = np.concatenate([g[0].column("time_s").to_numpy() for g in got])
    assert t.tolist() == whole[0][0].column("time_s").to_numpy().tolist()


def test_a_bad_line_of_a_plain_file_read_in_blocks_is_named(run_cli, csv_file: Path, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                            monkeypatch) -> None:
    lines = csv_file.read_bytes().splitlines(keepends=True)
    f = tmp_path / "bad.csv"
    f.write_bytes(b"".join([*lines[:14], lines[14].replace(b",1073741824.0,", b",xyz,", 1), *lines[15:]]))
    monkeypatch.setattr(results_file_mod, "CSV_FILE_BLOCK_BYTES", 700)
    code, _, err = _fit(run_cli, str(f))
    assert code == 2 and len(err) == 1 and f"{f}:15: column " in err[0] and "is not a number: 'xyz'" in err[0], err
    code, doc, _ = _fit(run_cli, str(csv_file))
    monkeypatch.setattr(results_file_mod, "CSV_FILE_BLOCK_BYTES", 16 << 20)
    code1, doc1, _ = _fit(run_cli, str(csv_file))
    assert code == code1 == 0 and doc is not None and doc1 is not None
    assert doc["coefficients"] == doc1["coefficients"]


# 2. an output inside a data set whose partition directory (or part file) is the input ---------------------------------

@pytest.mark.parametrize("given", [PARTITION, PARTITION / "run_id=r1", PART])
def test_an_output_in_the_data_set_root_of_a_partition_input_is_refused(run_cli, ds: Path, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                                      given: Path) -> None:
    out = ds / "x.json"
    code, _, err = _fit(run_cli, str(ds / given), "--out", str(out))
    assert code == 2 and not out.exists(), err
    assert len(err) == 1 and f"inside {ds}, an input directory" in err[0], err
    code, _, err = _fit(run_cli, str(ds / given), "--out", str(tmp_path / "x.json"))
    assert code == 0 and (tmp_path / "x.json").exists(), err


def test_an_output_beside_a_plain_parquet_file_is_written(run_cli, csv_file: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    lone = tmp_path / "lone"       # no key=value directory above it: a file of its own, not a data set's part
    lone.mkdir()
    with ResultsFile.open(csv_file) as rf:
        pq.write_table(rf.table(), lone / "a.parquet")
    code, _, err = _fit(run_cli, str(lone / "a.parquet"), "--out", str(lone / "x.json"))
    assert code == 0 and (lone / "x.json").exists(), err


# 3. stray files in a data set: warned once, Spark's and pyarrow's markers silently ------------------------------------

def test_stray_files_in_a_data_set_are_warned_of_once(run_cli, ds: Path, csv_file: Path) -> None:  # type: ignore[no-untyped-def]
    for name in ("_SUCCESS", "_metadata", "_common_metadata", ".hidden.csv"):
        (ds / name).write_text("x\n")
    (ds / "_temporary").mkdir()
    (ds / "_temporary" / "a.csv").write_text("x\n")
    code, once, err = _fit(run_cli, str(ds))
    assert code == 0 and once is not None and err == [], err        # markers and hidden files: silent
    (ds / "notes.json").write_text("{}\n")
    (ds / PARTITION / "extra.csv").write_bytes(csv_file.read_bytes())
    code, doc, err = _fit(run_cli, str(ds))
    assert code == 0 and doc is not None and doc["n_points"] == once["n_points"]
    assert len(err) == 1 and "warning" in err[0] and "2 file(s) that are not Parquet skipped" in err[0], err
    assert f"(e.g. {ds / 'notes.json'})" in err[0]


# 4. messages: a cut-off compressed file; a file named twice, as given ----------------------------------------------

def test_a_truncated_gzip_is_called_cut_off_and_junk_not_gzip(run_cli, csv_file: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    data = gzip.compress(csv_file.read_bytes())
    cut, junk = tmp_path / "cut.csv.gz", tmp_path / "junk.csv.gz"
    cut.write_bytes(data[: len(data) // 2])
    junk.write_bytes(b"hello world\n" * 3)
    code, _, err = _fit(run_cli, str(cut))
    assert code == 2 and len(err) == 1 and f"{cut}: a gzip file cut off (" in err[0], err
    code, _, err = _fit(run_cli, str(junk))
    assert code == 2 and len(err) == 1 and f"{junk}: not a gzip file (" in err[0], err


def test_a_file_named_twice_is_shown_as_given(run_cli, csv_file: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(csv_file.parent)
    code, _, err = _fit(run_cli, csv_file.name, f"./{csv_file.name}")
    assert code == 0 and err == [f"archline: warning: ./{csv_file.name} is the same file as {csv_file.name}; "
                                 "it is read once"], err
    assert read_results([csv_file.name, f"./{csv_file.name}"]).data.n_rows == 20
