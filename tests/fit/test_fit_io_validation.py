"""Reading rows (grouping, emulated labels, checksums), the W = 0 normalisation, k-fold and holdout splits."""

from __future__ import annotations

import csv
import gzip
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.cli_errors import one_line_error
from support.datasets import fit_json, part_csv
from support.pipes import pipe_of

from archline.fit.io.results import group_rows, read_results
from archline.fit.regress.result import row_normaliser
from archline.fit.regress.synthetic import GTX580, synthetic_results, write_results_csv
from archline.fit.regress.validation import holdout_mask, kfold_indices
from archline.formats import line_blocks as line_blocks_mod
from archline.formats import results_file as results_file_mod
from archline.formats.dataset import write_dataset
from archline.formats.results_check import ResultsError
from archline.formats.results_file import ResultsFile


def test_fit_io_checksum_failures_dropped_and_emulated_column(tmp_path: Path) -> None:
    f = synthetic_results(GTX580, seed=0, n_l1=2, n_l2=2, n_rand=2)
    f["backend"] = "cpu_asm"
    f["emulated"] = ["true" if i % 2 else "false" for i in range(len(f))]
    f.loc[0, "checksum_ok"] = "false"
    rs = read_results([write_results_csv(f, tmp_path / "r.csv")])
    assert len(rs.frame) == len(f) - 1 and any("checksum_ok" in n for n in rs.notes)
    groups = group_rows(rs)
    assert [(g.platform, g.emulated) for g in groups] == [("gtx580", False), ("gtx580", True)]
    assert sum(len(g.frame) for g in groups) == len(f) - 1
    assert len(group_rows(rs, mix_emulated=True)) == 1
    with pytest.raises(ResultsError, match="no rows for platform"):
        group_rows(rs, platform="nope")


def test_fit_io_all_emulated_excluded_is_an_error(tmp_path: Path) -> None:
    rs = read_results([write_results_csv(synthetic_results(GTX580, seed=0), tmp_path / "e.csv")])
    with pytest.raises(ResultsError, match="--include-emulated"):
        group_rows(rs, include_emulated=False)


def test_fit_row_normaliser_uses_own_count_when_no_flops() -> None:
    f = pd.DataFrame({"work_flop": [10.0, 0, 0, 0, 0, 0], "int_ops": [0, 5.0, 0, 0, 0, 0],
                      "bytes_shared": [0, 0, 7.0, 0, 0, 0], "bytes_l1": [0.0] * 6, "bytes_l2": [1.0, 0, 0, 3.0, 0, 0],
                      "bytes_l3": [0.0] * 6, "rand_accesses": [0, 0, 0, 0, 4.0, 0], "bytes_mem": [2.0, 0, 0, 0, 0, 0]})
    n, src = row_normaliser(f)
    np.testing.assert_array_equal(n, [10, 5, 7, 3, 4, 0])
    assert list(src) == ["work_flop", "int_ops", "bytes_shared", "bytes_l2", "rand_accesses", ""]


def test_fit_kfold_partitions_and_holdout_mask() -> None:
    folds = kfold_indices(103, 16, seed=1)
    assert len(folds) == 16
    allidx = np.concatenate(folds)
    assert sorted(allidx.tolist()) == list(range(103))
    assert max(len(f) for f in folds) - min(len(f) for f in folds) <= 1
    frame = pd.DataFrame({"split": ["T", "V", "validation", "train", "1", None]})
    assert holdout_mask(frame, "split").tolist() == [False, True, True, False, True, False]
    with pytest.raises(ResultsError):
        kfold_indices(3, 5)


@pytest.mark.slow
def test_fit_cli_one_million_rows(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    f = synthetic_results(GTX580, seed=0, n_repeats=9901).iloc[:1_000_000]
    p = write_results_csv(f, tmp_path / "big.csv")
    r = run_cli("fit", str(p), "--model", "basic", "--format", "json", "--out", str(tmp_path / "big.json"))
    assert r.exit_code == 0, r.stderr
    import json

    doc = json.loads((tmp_path / "big.json").read_text())
    assert doc["n_points"] == 61 * 9901 and abs(doc["coefficients"]["eps_mem"]["value"] / 513e-12 - 1) < 0.01


# --- folded from test_breaker28b_reader.py (a review round's regression tests) -----------------------------------
# Breaker 28b, the results reader: a data set named twice read once; a pipe streamed, ``-`` as stdin; a missing
# contract column refused; a Parquet column no cell can be read as refused in one line; a part file whose own
# partition column disagrees with its directory refused; unknown precision/level refused, unknown kernel warned
# of, a zero-row Parquet file named, a newer major schema refused with the reason.


ROOT = Path(__file__).resolve().parents[2]
PART = Path("platform=gtx580", "host=n1", "run_id=r1", "part-0.parquet")


@pytest.fixture
def csv_file(tmp_path: Path) -> Path:
    return part_csv(tmp_path, "a", GTX580, "n1", "r1", 1)


@pytest.fixture
def ds(tmp_path: Path, csv_file: Path) -> Path:
    write_dataset([csv_file], tmp_path / "ds")
    return tmp_path / "ds"


_fit = fit_json


def _table(ds: Path) -> pa.Table:
    t = pq.read_table(ds / PART)
    return t.append_column("platform", pa.array(["gtx580"] * t.num_rows))


def _with(t: pa.Table, name: str, arr: pa.Array) -> pa.Table:
    return t.set_column(t.column_names.index(name), name, arr)


# 1. a data set directory named twice, through a link, or with one of its part files, is read once -----------------

@pytest.mark.parametrize("how", ["twice", "link", "part-after", "part-before"])
def test_a_data_set_named_twice_is_read_once_with_a_warning(run_cli, ds: Path, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                            how: str) -> None:
    code, once, _ = _fit(run_cli, str(ds))
    assert code == 0 and once is not None
    link = tmp_path / "link"
    link.symlink_to(ds)
    args = {"twice": [ds, ds], "link": [ds, link], "part-after": [ds, ds / PART],
            "part-before": [ds / PART, ds]}[how]
    code, doc, err = _fit(run_cli, *map(str, args))
    assert code == 0 and doc is not None
    assert doc["n_points"] == once["n_points"] == 20
    assert doc["coefficients"] == once["coefficients"]
    assert len(err) == 1 and "warning" in err[0] and "it is read once" in err[0], err


def test_one_file_hard_linked_under_two_partitions_is_two_partitions_rows(run_cli, ds: Path) -> None:  # type: ignore[no-untyped-def]
    """The same bytes under host=n1 and host=n2 are two hosts' rows (benchmarks/fit_bounded.py builds its 100 M rows
    so): told apart by partition values, not only by inode; the same file reached twice in one partition is one."""
    other = ds / "platform=gtx580" / "host=n2" / "run_id=r1"
    other.mkdir(parents=True)
    os.link(ds / PART, other / "part-0.parquet")
    code, doc, err = _fit(run_cli, str(ds))
    # the only line: the two hosts are named as pooled into one platform (issue 34: never merged silently)
    assert code == 0 and doc is not None and doc["n_points"] == 40, err
    assert len(err) == 1 and "rows of 2 hosts (n1, n2)" in err[0], err
    code, doc, err = _fit(run_cli, str(ds), str(other / "part-0.parquet"))
    assert code == 0 and doc is not None and doc["n_points"] == 40
    assert sum("it is read once" in e for e in err) == 1 and sum("rows of 2 hosts" in e for e in err) == 1, err


# 2. a pipe is streamed (never held whole), with the same checks and line numbers; '-' is standard input ---------

def test_a_pipe_is_read_block_by_block_not_whole(csv_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import archline.common.files as files_mod

    def whole(*a: Any, **k: Any) -> bytes:
        raise AssertionError("a pipe was read whole")

    monkeypatch.setattr(files_mod, "read_stream", whole)
    monkeypatch.setattr(results_file_mod, "read_stream", whole)
    lines = csv_file.read_bytes().splitlines(keepends=True)
    size = len(b"".join(lines[1:6]))
    monkeypatch.setattr(results_file_mod, "CSV_BLOCK_BYTES", size)      # about five rows a block
    with pipe_of(csv_file.read_bytes()) as p, ResultsFile.open(p, stream=True) as rf:
        got = list(rf.tables(["kernel"], ["time_s"]))
    assert len(got) >= 3                                   # several blocks, not one
    pos = np.concatenate([g[1] for g in got])
    assert pos.tolist() == list(range(2, len(lines) + 1))  # every row once, numbered by its line
    t = np.concatenate([g[0].column("time_s").to_numpy() for g in got])
    with ResultsFile.open(csv_file, stream=True) as rf:
        (whole_tab, _), = list(rf.tables(["kernel"], ["time_s"]))
    assert t.tolist() == whole_tab.column("time_s").to_numpy().tolist()
    # the fit of the pipe is the fit of the file
    with pipe_of(csv_file.read_bytes()) as p:
        a = read_results([p]).data.n_rows
    assert a == read_results([csv_file]).data.n_rows == len(lines) - 1


@pytest.mark.parametrize("edit, needle", [
    (lambda ls: [*ls[:6], ls[6].replace(b",100,", b",abc,"), *ls[7:]], ":7: column reps"),   # reps: not read
    (lambda ls: [*ls[:6], ls[6].replace(b",1073741824.0,", b",xyz,", 1), *ls[7:]], ":7: column bytes_mem is not "
                                                                                      "a number: 'xyz'"),
    (lambda ls: [*ls[:9], b"archline.results/1,a,b\n", *ls[10:]], ":10: malformed CSV: expected"),
    (lambda ls: [*ls[:-1], ls[-1][:-30]], "cut off"),
])
def test_a_pipe_names_the_line_as_a_file_does(run_cli, csv_file: Path, tmp_path: Path, monkeypatch,  # type: ignore[no-untyped-def]
                                              edit: Callable[[list[bytes]], list[bytes]], needle: str) -> None:
    lines = csv_file.read_bytes().splitlines(keepends=True)
    data = b"".join(edit(lines))
    monkeypatch.setattr(results_file_mod, "CSV_BLOCK_BYTES", 700)       # lines spread over several blocks
    f = tmp_path / "edited.csv"
    f.write_bytes(data)
    code_f, _, err_f = _fit(run_cli, str(f))
    with pipe_of(data) as p:
        code_p, _, err_p = _fit(run_cli, p)
    if needle.startswith(":7: column reps"):            # a column the fit does not read: both fit
        assert code_f == code_p == 0, (err_f, err_p)
        whole = _fit(run_cli, str(f))[1]
        monkeypatch.setattr(results_file_mod, "CSV_WHOLE_BYTES", 0)     # the same file read in blocks
        assert whole is not None and _fit(run_cli, str(f))[1] == whole
        return
    assert code_f == code_p == 2 and len(err_p) == 1 and needle in err_p[0] and needle in err_f[0], (err_f, err_p)
    assert err_p[0].replace(p, "F") == err_f[0].replace(str(f), "F")
    monkeypatch.setattr(results_file_mod, "CSV_WHOLE_BYTES", 0)     # a file too big to parse at once: in blocks
    code_b, _, err_b = _fit(run_cli, str(f))
    assert code_b == 2 and err_b == err_f, (err_b, err_f)


def test_a_compressed_file_is_streamed_and_a_bad_one_named(run_cli, csv_file: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import gzip

    gz = tmp_path / "a.csv.gz"
    gz.write_bytes(gzip.compress(csv_file.read_bytes()))
    code, doc, _ = _fit(run_cli, str(gz))
    assert code == 0 and doc is not None and doc["n_points"] == 20
    bad = tmp_path / "b.csv.gz"
    bad.write_bytes(b"not gzip at all\n")
    code, _, err = _fit(run_cli, str(bad))
    assert code == 2 and len(err) == 1 and "b.csv.gz" in err[0] and "not a gzip file" in err[0], err


def test_an_xz_file_is_read_as_bz2_and_zst_are(run_cli, csv_file: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Issue 36 U #11: an ``.xz`` results file was "a binary file, not text" (pyarrow has no lzma; Python does)."""
    import lzma

    data = lzma.compress(csv_file.read_bytes())
    xz, cut, junk = tmp_path / "a.csv.xz", tmp_path / "cut.csv.xz", tmp_path / "junk.csv.xz"
    xz.write_bytes(data)
    cut.write_bytes(data[: len(data) // 2])
    junk.write_bytes(b"hello world\n" * 3)
    code, doc, err = _fit(run_cli, str(xz))
    assert code == 0 and doc is not None and doc["n_points"] == 20, err
    code, _, err = _fit(run_cli, str(cut))
    assert code == 2 and len(err) == 1 and f"{cut}: an xz file cut off (" in err[0], err
    code, _, err = _fit(run_cli, str(junk))
    assert code == 2 and len(err) == 1 and f"{junk}: not an xz file (" in err[0], err


def test_dash_is_standard_input_in_a_real_shell(csv_file: Path, tmp_path: Path) -> None:
    cmd = f"{sys.executable} -m archline.cli fit --model basic --format json"
    (tmp_path / "-").write_bytes(b"not a results file\n")     # a file named '-' is ./- ; '-' is stdin
    r = subprocess.run(["bash", "-c", f"{cmd} - < {csv_file}"], capture_output=True, text=True, timeout=120,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["n_points"] == 20
    r = subprocess.run(["bash", "-c", f"{cmd} ./-"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 2 and "-: not an archline.results/1 file" in r.stderr, r.stderr     # the file, read


def test_fit_help_says_dash_is_stdin(run_cli) -> None:  # type: ignore[no-untyped-def]
    r = run_cli("fit", "--help")
    assert r.exit_code == 0 and "standard input" in r.stdout


# 3. a contract column the fit needs is never taken as all zeros ------------------------------------------------

@pytest.mark.parametrize("column", ["bytes_mem", "flops_sp", "flops_dp", "rand_accesses"])
def test_a_missing_count_column_is_refused(run_cli, ds: Path, csv_file: Path, tmp_path: Path,  # type: ignore[no-untyped-def]
                                           column: str) -> None:
    pf = tmp_path / f"no_{column}.parquet"
    pq.write_table(_table(ds).drop_columns([column]), pf)
    import pandas as pd

    frame = pd.read_csv(csv_file).drop(columns=[column])
    cf = tmp_path / f"no_{column}.csv"
    frame.to_csv(cf, index=False)
    for f in (pf, cf):
        code, _, err = _fit(run_cli, str(f))
        assert code == 2 and len(err) == 1, err
        assert err[0].endswith(f"missing column(s) {column}") and f.name in err[0], err


# 4. a Parquet column of a type no cell can be read as --------------------------------------------------------

@pytest.mark.parametrize("column, kind", [("energy_j", "list"), ("energy_j", "struct"), ("energy_j", "map"),
                                          ("energy_j", "binary"), ("kernel", "list"), ("time_s", "struct")])
def test_a_nested_or_binary_parquet_column_is_one_line(run_cli, ds: Path, tmp_path: Path, column: str,  # type: ignore[no-untyped-def]
                                                       kind: str) -> None:
    t = _table(ds)
    v = t.column(column).to_pylist()
    arr = {"list": lambda: pa.array([[x] for x in v]), "struct": lambda: pa.array([{"a": x} for x in v]),
           "map": lambda: pa.array([[("a", x)] for x in v], pa.map_(pa.string(), pa.float64())),
           "binary": lambda: pa.array([str(x).encode() for x in v], pa.binary())}[kind]()
    f = tmp_path / f"{kind}.parquet"
    pq.write_table(_with(t, column, arr), f)
    code, _, err = _fit(run_cli, str(f))
    assert code == 2 and len(err) == 1, err
    assert f.name in err[0] and f"column {column} is of type {kind}" in err[0], err


# 5. a partition column inside a part file that disagrees with its directory ----------------------------------

def test_a_partition_value_the_file_contradicts_is_refused(run_cli, ds: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    t = _table(ds).drop_columns(["platform"])
    t = t.append_column("host", pa.array(["n1"] * t.num_rows))
    d = tmp_path / "ds2" / "platform=gtx580" / "host=other" / "run_id=r1"
    d.mkdir(parents=True)
    pq.write_table(t, d / "part-0.parquet")
    out = tmp_path / "c.json"
    code, doc, err = _fit(run_cli, str(tmp_path / "ds2"), "--out", str(out))
    assert code == 2 and doc is None and not out.exists()      # neither reading is safe: refused, nothing written
    assert len(err) == 1 and "'n1'" in err[0] and "host=other" in err[0], err
    # agreeing values: read, no warning
    t2 = t.set_column(t.column_names.index("host"), "host", pa.array(["other"] * t.num_rows))
    pq.write_table(t2, d / "part-0.parquet")
    code, doc, err = _fit(run_cli, str(tmp_path / "ds2"))
    assert code == 0 and err == []


# 6. values the contract does not define; a zero-row Parquet file; a newer major schema ------------------------

def test_an_unknown_precision_or_level_is_refused_an_unknown_kernel_warned(run_cli, ds: Path, tmp_path: Path  # type: ignore[no-untyped-def]
                                                                           ) -> None:
    t = _table(ds)
    for column, value in (("precision", "fp16"), ("level", "l9")):
        f = tmp_path / f"{column}.parquet"
        pq.write_table(_with(t, column, pa.array([value] * t.num_rows)), f)
        code, _, err = _fit(run_cli, str(f))
        assert code == 2 and len(err) == 1 and f"{column} '{value}'" in err[0] and f.name in err[0], err
        assert "known:" in err[0]
    f = tmp_path / "kernel.parquet"
    pq.write_table(_with(t, "kernel", pa.array(["foo"] * t.num_rows)), f)
    code, _doc, err = _fit(run_cli, str(f))
    assert code == 0 and len(err) == 1 and "kernel 'foo'" in err[0] and "intensity" in err[0], err


def test_a_zero_row_parquet_file_is_named(run_cli, ds: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "empty.parquet"
    pq.write_table(_table(ds).slice(0, 0), f)
    code, _, err = _fit(run_cli, str(f))
    assert code == 2 and len(err) == 1 and "empty.parquet" in err[0] and "no result rows" in err[0], err


def test_a_newer_major_schema_is_refused_with_the_reason(run_cli, ds: Path, csv_file: Path, tmp_path: Path  # type: ignore[no-untyped-def]
                                                         ) -> None:
    f = tmp_path / "v2.csv"
    f.write_text(csv_file.read_text().replace("archline.results/1", "archline.results/2"))
    p = tmp_path / "v2.parquet"
    t = _table(ds)
    pq.write_table(_with(t, "schema", pa.array(["archline.results/2"] * t.num_rows)), p)
    for x in (f, p):
        code, _, err = _fit(run_cli, str(x))
        assert code == 2 and len(err) == 1 and "newer major version" in err[0] and x.name in err[0], err


# --- folded from test_breaker28c_reader.py (a review round's regression tests) -----------------------------------
# Breaker 28c, the results reader: every plain CSV read a block of whole lines at a time (memory flat in rows:
# benchmarks/fit_csv_memory.py measures it; here the block path is checked to be taken, with the same rows, numbers
# and line numbers); an output inside a data set refused when only a partition directory or a part file of it is
# the input; a data set's stray files warned of once (hidden and ``_``-prefixed ones skipped silently); a cut-off
# compressed file named so; a file named twice shown as given.


PARTITION = Path("platform=gtx580", "host=n1")
PART_r28c = PARTITION / "run_id=r1" / "part-0.parquet"






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

@pytest.mark.parametrize("given", [PARTITION, PARTITION / "run_id=r1", PART_r28c])
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


# --- folded from test_breaker_results.py, F4 (a review round's regression tests) ---------------------------------
# Regression tests for the hostile tester's findings on results, sweeps and the lab (F4, F5, F8, F13, F14, F20):
# each test is the tester's reproducer, asserting the contract (one line, the documented exit code, no input
# destroyed, nothing half-written left).


REPO = Path(__file__).resolve().parents[2]


SAMPLE = REPO / "results" / "sample" / "gtx580-20261123T010316Z-16c5ec.csv"


RunCli = Callable[..., Any]


_one_line_error = one_line_error



# --- F4: a duplicate column in a results CSV ------------------------------------------------------------------


def _dup_energy_csv(src: Path, out: Path) -> None:
    rows = list(csv.reader(src.open()))
    i = rows[0].index("energy_j")
    with out.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        for k, x in enumerate(rows):
            w.writerow([*x[:i], "energy_j" if k == 0 else str(float(x[i]) * 10), *x[i:]])


def test_f4_duplicate_csv_column_is_refused(tmp_path: Path, run_cli: RunCli) -> None:
    dup = tmp_path / "dup.csv"
    _dup_energy_csv(SAMPLE, dup)
    line = _one_line_error(run_cli("fit", str(dup), "--model", "basic"))
    assert "energy_j" in line and "more than once" in line


def test_f4_writer_refuses_to_append_to_a_duplicate_header(tmp_path: Path) -> None:
    from archline.formats.results_file import NotResultsError, ResultsFile

    dup = tmp_path / "dup.csv"
    _dup_energy_csv(SAMPLE, dup)
    before = dup.read_bytes()
    with pytest.raises(NotResultsError, match="energy_j"):
        ResultsFile(dup)
    assert dup.read_bytes() == before


# --- folded from test_breaker_results.py, F5 (a review round's regression tests) ---------------------------------
# Regression tests for the hostile tester's findings on results, sweeps and the lab (F4, F5, F8, F13, F14, F20):
# each test is the tester's reproducer, asserting the contract (one line, the documented exit code, no input
# destroyed, nothing half-written left).


# --- F5: a duplicate column in a Parquet results file or data set ---------------------------------------------


def _dup_energy_parquet(out: Path) -> None:
    import pyarrow.csv as pc
    import pyarrow.parquet as pq

    t = pc.read_csv(SAMPLE)
    pq.write_table(t.append_column("energy_j", t["energy_j"]), out)


def test_f5_duplicate_parquet_column_is_refused(tmp_path: Path, run_cli: RunCli) -> None:
    dup = tmp_path / "dup.parquet"
    _dup_energy_parquet(dup)
    line = _one_line_error(run_cli("fit", str(dup)))
    assert "energy_j" in line


def test_f5_duplicate_column_inside_a_data_set_is_refused(tmp_path: Path, run_cli: RunCli) -> None:
    part = tmp_path / "ds" / "platform=gtx580" / "host=h" / "run_id=r"
    part.mkdir(parents=True)
    _dup_energy_parquet(part / "part-0.parquet")
    line = _one_line_error(run_cli("fit", str(tmp_path / "ds")))
    assert "energy_j" in line and "part-0.parquet" in line


def test_f5_data_set_reader_refuses_duplicate_columns(tmp_path: Path) -> None:
    from archline.formats.dataset import DatasetError, ResultsDataset

    part = tmp_path / "ds" / "platform=gtx580" / "host=h" / "run_id=r"
    part.mkdir(parents=True)
    _dup_energy_parquet(part / "part-0.parquet")
    with pytest.raises(DatasetError, match="energy_j"):
        ResultsDataset(tmp_path / "ds").table()
    with pytest.raises(DatasetError, match="energy_j"):
        ResultsDataset(part / "part-0.parquet").table()


