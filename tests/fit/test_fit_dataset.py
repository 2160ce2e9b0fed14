"""The lab data set (formats/dataset.py): hive partitions platform/host/run_id, schema types, copies of a point
dropped by (host, run_id, config_hash, point_id), merged on a second collect, read by `archline fit` exactly as the CSVs
it came from, and --where filters."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.datasets import part_csv

from archline.fit.io.results import read_results
from archline.fit.regress.synthetic import GTX580, I7_950, synthetic_results, write_results_csv
from archline.formats.dataset import DatasetError, read_dataset_table, write_dataset


@pytest.fixture
def csvs(tmp_path: Path) -> list[Path]:
    return [part_csv(tmp_path, "a", GTX580, "node01", "run-a", 1),
            part_csv(tmp_path, "b", GTX580, "node02", "run-b", 2),
            part_csv(tmp_path, "c", I7_950, "cpu01", "run-c", 3)]


def test_dataset_partitions_types_and_round_trip(tmp_path: Path, csvs: list[Path]) -> None:
    out = tmp_path / "ds"
    rep = write_dataset(csvs, out)
    assert (rep.rows, rep.new_rows, rep.duplicates, rep.partitions) == (60, 60, 0, 3)
    parts = sorted(str(p.relative_to(out)) for p in out.rglob("*.parquet"))
    assert parts == ["platform=gtx580/host=node01/run_id=run-a/part-0.parquet",
                     "platform=gtx580/host=node02/run_id=run-b/part-0.parquet",
                     "platform=i7-950/host=cpu01/run_id=run-c/part-0.parquet"]
    one = pq.read_schema(out / parts[0])
    assert one.field("time_s").type == pa.float64() and one.field("checksum_ok").type == pa.bool_()
    assert one.field("kernel").type == pa.string() and "host" not in one.names   # the partition is the directory
    table = read_dataset_table(out)
    assert table.column_names[:4] == ["schema", "run_id", "started_at", "platform"]
    assert table.schema.field("host").type == pa.string()
    # the fit reader sees the same rows, numbers and flags as from the CSVs
    a, b = read_results(csvs).frame, read_results([out]).frame
    key = ["host", "point_id"]
    a, b = a.sort_values(key).reset_index(drop=True), b.sort_values(key).reset_index(drop=True)
    for col in ("time_s", "energy_j", "flops_sp", "flops_dp", "bytes_mem", "work_flop"):
        assert (a[col].to_numpy() == b[col].to_numpy()).all(), col
    for col in ("platform", "host", "run_id", "kernel", "precision"):
        assert list(a[col].astype(str)) == list(b[col].astype(str)), col
    assert list(a["emulated"]) == list(b["emulated"])


def test_dataset_second_collect_drops_duplicates_and_keeps_new_points(tmp_path: Path, csvs: list[Path]) -> None:
    out = tmp_path / "ds"
    write_dataset(csvs[:2], out)
    rep = write_dataset(csvs, out)                      # the first two again, plus a new host
    assert (rep.kept_existing, rep.new_rows, rep.duplicates, rep.rows) == (40, 60, 40, 60)
    # a copy of a run already in the data set (its results file copied elsewhere) is dropped: the copy already
    # in the data set stays, not the new one
    copy = part_csv(tmp_path, "copy", replace(GTX580, eps_mem_j_per_byte=600e-12), "node01", "run-a", 9)
    rep = write_dataset([copy], out)
    assert (rep.duplicates, rep.rows) == (20, 60)
    kept = read_results([out], where=["host=node01"]).frame
    assert kept["energy_j"].tolist() == read_results([csvs[0]]).frame["energy_j"].tolist()
    assert not list(tmp_path.glob(".ds.*"))                          # no temp or old copy left beside it


def test_dataset_machines_sharing_a_host_name_keep_every_row(tmp_path: Path) -> None:
    """Issue 36 (data lost): two machines that report the same host name, the same config and point ids (two
    containers called localhost) were one machine's rows dropped as the other's duplicates (exit 0, rows gone).
    Their runs differ, so every row is kept, each run in its own partition, and a fit reads both."""
    a = part_csv(tmp_path, "a", GTX580, "localhost", "gtx580-20260101T000000Z-aaaaaa", 1)
    b = part_csv(tmp_path, "b", GTX580, "localhost", "gtx580-20260101T000000Z-bbbbbb", 2)
    out = tmp_path / "ds"
    rep = write_dataset([a, b], out)
    assert (rep.rows, rep.duplicates, rep.partitions) == (40, 0, 2)
    rep = write_dataset([b], out)                                    # collected again: a copy, kept once
    assert (rep.rows, rep.duplicates, rep.kept_existing) == (40, 20, 40)
    back = read_results([out]).frame
    for src in (a, b):                                               # each machine's energies, all of them
        mine = read_results([src]).frame
        run = str(mine["run_id"].iloc[0])
        got = back[back["run_id"].astype(str) == run].sort_values("point_id")
        assert got["energy_j"].tolist() == mine.sort_values("point_id")["energy_j"].tolist()


def test_fit_and_where_on_a_dataset(tmp_path: Path, csvs: list[Path], run_cli: Callable[..., object]) -> None:
    out = tmp_path / "ds"
    write_dataset(csvs, out)
    r = run_cli("fit", str(out), "--model", "basic", "--format", "json", "--where", "platform=gtx580",
                "--where", "host=node01")
    assert r.exit_code == 0, r.stderr  # type: ignore[attr-defined]
    c = json.loads(r.stdout)  # type: ignore[attr-defined]
    assert c["platform"] == "gtx580" and c["n_points"] == 20
    direct = json.loads(run_cli("fit", str(csvs[0]), "--model", "basic", "--format", "json").stdout)  # type: ignore
    for k, v in direct["coefficients"].items():            # the same rows give the same fit, to the last digit
        assert c["coefficients"][k]["value"] == pytest.approx(v["value"], rel=1e-12), k
    r = run_cli("fit", str(out), "--model", "basic", "--format", "json", "--where", "host=node01",
                "--where", "host=cpu01")
    assert sorted(x["platform"] for x in json.loads(r.stdout)) == ["gtx580", "i7-950"]  # type: ignore
    for where, needle in (("host=node09", "no rows match (host in"), ("hots=node01", "no column 'hots'"),
                          ("time_s=1", "is a number column"), ("host", "expected KEY=VALUE")):
        r = run_cli("fit", str(out), "--where", where)
        assert r.exit_code == 2 and needle in r.stderr, (where, r.stderr)  # type: ignore[attr-defined]
    assert "node01, node02" in run_cli("fit", str(out), "--where", "host=x").stderr  # type: ignore[attr-defined]


def test_dataset_errors(tmp_path: Path, csvs: list[Path]) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(DatasetError, match="not a data set directory"):
        write_dataset(csvs, tmp_path / "file")
    with pytest.raises(DatasetError, match="does not exist"):
        read_dataset_table(tmp_path / "nosuch")
    (tmp_path / "emptydir").mkdir()
    with pytest.raises(DatasetError, match="no Parquet files"):
        read_dataset_table(tmp_path / "emptydir")
    f = synthetic_results(GTX580, n_sp=3, n_dp=3, n_l1=0, n_l2=0, n_rand=0)
    f["host"] = ""
    bad = write_results_csv(f, tmp_path / "nohost.csv")
    with pytest.raises(DatasetError, match="empty 'host'"):
        write_dataset([bad], tmp_path / "ds2")
    assert not (tmp_path / "ds2").exists()
