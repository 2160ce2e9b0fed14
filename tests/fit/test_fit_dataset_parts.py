"""Breaker 28 items 5 and 9: a data set read in bounded record batches whatever its row groups, and a partition
directory or one part file of a data set fitted with the partition values its path holds."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from support.datasets import part_csv

from archline.fit.io.results import FIT_MAX_ROWS, group_rows, read_results
from archline.fit.regress.api import FitOptions, fit_group
from archline.fit.regress.synthetic import GTX580, I7_950, synthetic_results
from archline.formats import dataset as dataset_mod
from archline.formats import results_read as sources_mod
from archline.formats.dataset import dataset_root, partition_values, read_dataset_table, write_dataset


@pytest.fixture
def ds(tmp_path: Path) -> Path:
    out = tmp_path / "ds"
    write_dataset([part_csv(tmp_path, "a", GTX580, "node01", "run-a", 1),
                   part_csv(tmp_path, "b", GTX580, "node02", "run-b", 2),
                   part_csv(tmp_path, "c", I7_950, "cpu01", "run-c", 3)], out)
    return out


def _fit(run_cli, path: Path, out: Path) -> list[dict]:  # type: ignore[no-untyped-def, type-arg]
    r = run_cli("fit", str(path), "--model", "basic", "--format", "json", "--out", str(out))
    assert r.exit_code == 0, r.stderr
    doc = json.loads(out.read_text())
    return doc if isinstance(doc, list) else [doc]


def test_a_partition_directory_or_part_file_fits_with_its_partitions(run_cli, ds: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    whole = {d["platform"]: d for d in _fit(run_cli, ds, tmp_path / "whole.json")}
    assert sorted(whole) == ["gtx580", "i7-950"]
    (plat,) = _fit(run_cli, ds / "platform=gtx580", tmp_path / "plat.json")
    assert plat["platform"] == "gtx580" and plat["n_points"] == whole["gtx580"]["n_points"]
    assert plat["coefficients"] == whole["gtx580"]["coefficients"]        # the same rows: the same fit, exactly
    run_dir = ds / "platform=gtx580" / "host=node01" / "run_id=run-a"
    (host,) = _fit(run_cli, ds / "platform=gtx580" / "host=node01", tmp_path / "host.json")
    (part,) = _fit(run_cli, run_dir / "part-0.parquet", tmp_path / "part.json")
    n_part = pq.ParquetFile(run_dir / "part-0.parquet").metadata.num_rows
    assert part["platform"] == host["platform"] == "gtx580"
    assert part["n_points"] == host["n_points"] and 0 < part["n_points"] <= n_part < whole["gtx580"]["n_points"]
    assert part["coefficients"] == host["coefficients"]
    # the reader's rows carry the path's partition values
    rows = read_results([run_dir / "part-0.parquet"]).frame
    assert len(rows) == n_part
    assert set(rows["platform"].astype(str)) == {"gtx580"} and set(rows["host"].astype(str)) == {"node01"}
    assert set(rows["run_id"].astype(str)) == {"run-a"}
    # and so do the other readers' (plot, compare)
    for p in (ds / "platform=gtx580", run_dir / "part-0.parquet"):
        t = read_dataset_table(p)
        assert set(t.column("platform").to_pylist()) == {"gtx580"}, p
    assert set(read_dataset_table(ds / "platform=gtx580").column("host").to_pylist()) == {"node01", "node02"}


def test_a_run_from_inside_a_partition_keeps_the_partitions_above(run_cli, ds: Path, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ds / "platform=gtx580")
    (part,) = _fit(run_cli, Path("host=node02/run_id=run-b/part-0.parquet"), tmp_path / "p.json")
    assert part["platform"] == "gtx580"


def test_the_data_set_root_is_found_from_the_path(tmp_path: Path) -> None:
    root = tmp_path / "lab"
    f = root / "platform=a%2Fb" / "host=n1" / "run_id=r1" / "part-0.parquet"
    f.parent.mkdir(parents=True)
    f.write_bytes(b"")
    assert dataset_root(f) == root and dataset_root(f.parent) == root and dataset_root(root) == root
    want = {"platform": "a/b", "host": "n1", "run_id": "r1"}
    for given in (root, root / "platform=a%2Fb", f.parent, f.parent.parent):
        assert partition_values(f, given) == want, given
    assert partition_values(f, f.parent) == want            # one file given alone
    plain = tmp_path / "plain" / "x.parquet"                 # no key=value directory: no partitions
    plain.parent.mkdir()
    plain.write_bytes(b"")
    assert partition_values(plain, plain.parent) == {} and dataset_root(plain) == plain.parent


def test_one_big_row_group_is_read_in_bounded_batches_with_identical_coefficients(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    frame = synthetic_results(GTX580, seed=7, n_repeats=40, n_l1=0, n_l2=0, n_rand=0)
    path = tmp_path / "one-group.parquet"
    frame.to_parquet(path, index=False, row_group_size=len(frame))
    meta = pq.ParquetFile(path).metadata
    assert meta.num_row_groups == 1 and meta.num_rows == len(frame) > 2000

    def coefficients(max_rows: int | None) -> dict[str, float]:
        (g,) = group_rows(read_results([path], carry=(), max_rows=max_rows))
        r = fit_group(g, FitOptions(model="basic", validate=False))
        return {k: c.value for k, c in r.coefficients.items()}

    whole = coefficients(FIT_MAX_ROWS)             # the whole file in one batch
    whole_sampled = coefficients(500)
    sizes: list[int] = []
    opened: list[dict[str, object]] = []
    real_tables, real_file = sources_mod.parquet_tables, pq.ParquetFile

    def spy_tables(*a, **k):  # type: ignore[no-untyped-def]
        for tab, pos in real_tables(*a, **k):
            sizes.append(tab.num_rows)
            yield tab, pos

    def spy_file(*a, **k):  # type: ignore[no-untyped-def]
        opened.append(k)
        return real_file(*a, **k)

    monkeypatch.setattr(dataset_mod, "PARQUET_BATCH_ROWS", 500)
    monkeypatch.setattr(sources_mod, "parquet_tables", spy_tables)
    monkeypatch.setattr(pq, "ParquetFile", spy_file)
    batched = coefficients(FIT_MAX_ROWS)
    assert sum(sizes) == len(frame) and max(sizes) == 500 and len(sizes) == -(-len(frame) // 500)
    # column chunks streamed, not read whole per row group (pyarrow's buffered stream)
    assert any(int(k.get("buffer_size", 0)) > 0 and k.get("pre_buffer") is False for k in opened), opened  # type: ignore[call-overload]
    assert batched == whole
    sampled = coefficients(500)
    for k, v in whole_sampled.items():
        assert np.isclose(sampled[k], v, rtol=1e-9, atol=0), k
