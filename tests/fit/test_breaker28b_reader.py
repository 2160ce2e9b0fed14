"""Breaker 28b, the results reader: a data set named twice read once; a pipe streamed, ``-`` as stdin; a missing
contract column refused; a Parquet column no cell can be read as refused in one line; a part file whose own
partition column disagrees with its directory refused; unknown precision/level refused, unknown kernel warned
of, a zero-row Parquet file named, a newer major schema refused with the reason."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.datasets import fit_json, part_csv
from support.pipes import pipe_of

from archline.fit.io import results_file as results_file_mod
from archline.fit.io.dataset import write_dataset
from archline.fit.io.results import read_results
from archline.fit.io.results_file import ResultsFile
from archline.fit.regress.synthetic import GTX580

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
