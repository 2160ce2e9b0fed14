"""The lab data set: ``archline.results/1`` rows as a hive-partitioned Parquet data set (pyarrow), the one format
``archline lab collect`` writes and every reader (``archline fit``, ``plot``, ``compare``, pandas, DuckDB, Spark)
reads without knowing how many hosts there were::

    DATASET/platform=gtx580/host=node03/run_id=gtx580-20260131T011500Z-1a2b3c/part-0.parquet

Columns and their types come from the results schema (:mod:`archline.fit.io.schema`): text columns are strings,
``bool`` columns booleans, every number float64 (an empty CSV cell is null); a column the schema does not know is
kept as text. The partition columns (``platform``, ``host``, ``run_id``) are strings in the directory names.

A point is identified as the sweep identifies it: its ``point_id`` under its ``config_hash``, on its ``host``.
The same point twice (the data set collected again, a results file copied into two places, a results
directory swept again under the same config) is kept once: the copy already in the data set, else the first one
read. The data set is written beside its final name and swapped in, so a reader never sees half of one.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archline.common.files import check_text_file
from archline.fit.errors import ArchlineFitError
from archline.fit.io import schema

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import pyarrow as pa

#: hive partition keys, in directory order
PARTITIONS: tuple[str, ...] = ("platform", "host", "run_id")
#: what makes two rows the same point
POINT_KEY: tuple[str, ...] = ("host", "config_hash", "point_id")


class DatasetError(ArchlineFitError):
    pass


def _arrow_type(name: str) -> pa.DataType:
    import pyarrow as pa

    col = schema.BY_NAME.get(name)
    if col is None or col.kind == "text":
        return pa.string()
    if col.kind == "bool":
        return pa.bool_()
    return pa.float64()


def arrow_schema(columns: Sequence[str]) -> pa.Schema:
    import pyarrow as pa

    return pa.schema([(c, _arrow_type(c)) for c in columns])


def partitioning() -> Any:
    import pyarrow as pa
    import pyarrow.dataset as ds

    return ds.partitioning(pa.schema([(p, pa.string()) for p in PARTITIONS]), flavor="hive")


def read_csv_table(path: Path) -> pa.Table:
    """One results CSV as a typed Arrow table (types from the schema; unknown columns as text)."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    try:
        with open(path, newline="") as f:
            header = f.readline()
    except OSError as e:
        raise DatasetError(f"cannot read results file {path}: {e.strerror}") from None
    names = [h.strip() for h in header.strip().split(",")] if header.strip() else []
    if not names:
        raise DatasetError(f"{path}: empty file (no header); expected an {schema.SCHEMA} CSV")
    missing = [c for c in schema.REQUIRED if c not in names]
    if missing:
        raise DatasetError(f"{path}: not an {schema.SCHEMA} file: missing column(s) {', '.join(missing)}")
    types = {c: _arrow_type(c) for c in names}
    opts = pcsv.ConvertOptions(column_types=types, strings_can_be_null=True,
                               true_values=sorted(schema.TRUE_WORDS), false_values=sorted(schema.FALSE_WORDS))
    try:
        table = pcsv.read_csv(path, convert_options=opts)
    except (pa.ArrowInvalid, OSError) as e:
        msg = str(e).strip().splitlines()[0] if str(e).strip() else "parse error"
        raise DatasetError(f"{path}: malformed CSV: {msg}") from None
    return table


def is_dataset(path: Path) -> bool:
    return path.is_dir()


def read_dataset_table(path: Path) -> pa.Table:
    """Every row of a data set directory (or of one Parquet file), partition columns as strings, in schema
    column order."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    if not path.exists():
        raise DatasetError(f"data set {path} does not exist")
    try:
        if path.is_dir():
            files = [p for p in path.rglob("*.parquet") if not p.name.startswith((".", "_"))]
            if not files:
                raise DatasetError(f"{path}: not an archline data set (no Parquet files under it); "
                                   "`archline lab collect` writes one")
            table = ds.dataset(path, format="parquet", partitioning=partitioning()).to_table()
        else:
            import pyarrow.parquet as pq

            table = pq.read_table(path)
    except (OSError, pa.ArrowInvalid) as e:
        raise DatasetError(f"cannot read data set {path}: {str(e).splitlines()[0]}") from None
    order = [c for c in schema.ALL_COLUMNS if c in table.column_names]
    order += [c for c in table.column_names if c not in order]
    return table.select(order)


def read_frame(path: Path) -> pd.DataFrame:
    """A data set directory or a Parquet file as a pandas frame: text columns as pandas strings (as the CSV
    reader gives them), numbers as float64, booleans as booleans."""
    import pandas as pd

    table = read_dataset_table(path)
    frame = table.to_pandas(types_mapper={__import__("pyarrow").string(): pd.StringDtype()}.get)
    if len(frame) == 0:
        raise DatasetError(f"{path}: the data set has no rows")
    return frame


def read_csv_frame(path: Path) -> pd.DataFrame:
    """One results CSV as pandas reads it (types inferred, every column kept), or one line naming what is wrong:
    the cheap file checks of :func:`check_text_file`, then pandas' own first line."""
    import pandas as pd

    check_text_file(path, error=ArchlineFitError, what="results file")
    try:
        return pd.read_csv(path)
    except (OSError, ValueError) as e:
        raise ArchlineFitError(f"cannot read results {path}: {str(e).splitlines()[0] if str(e) else e}") from None


def _unify(tables: Sequence[pa.Table]) -> pa.Table:
    """Concatenate tables whose columns may differ (an older file lacks a newer extra column)."""
    import pyarrow as pa

    names: list[str] = []
    for t in tables:
        names += [c for c in t.column_names if c not in names]
    order = [c for c in schema.ALL_COLUMNS if c in names] + [c for c in names if c not in schema.BY_NAME]
    target = arrow_schema(order)
    out = []
    for t in tables:
        cols = []
        for f in target:
            if f.name in t.column_names:
                cols.append(t.column(f.name).cast(f.type))
            else:
                cols.append(pa.nulls(len(t), f.type))
        out.append(pa.Table.from_arrays(cols, schema=target))
    return pa.concat_tables(out)


def _dedupe(table: pa.Table) -> tuple[pa.Table, int]:
    """Keep the first row of each point (POINT_KEY); rows lacking a key part are kept as they are."""
    import numpy as np

    if not all(k in table.column_names for k in POINT_KEY) or table.num_rows == 0:
        return table, 0
    keys = table.select(list(POINT_KEY)).to_pandas()
    has_key = keys.notna().all(axis=1).to_numpy() & (keys != "").all(axis=1).to_numpy()
    dup = keys.duplicated(keep="first").to_numpy() & has_key
    if not dup.any():
        return table, 0
    return table.take(np.flatnonzero(~dup)), int(dup.sum())


@dataclass
class DatasetReport:
    path: Path
    rows: int                       #: rows in the data set now
    new_rows: int                   #: rows read from the sources
    kept_existing: int              #: rows that were already in the data set
    duplicates: int                 #: rows dropped as a second copy of a point
    partitions: int
    notes: list[str] = field(default_factory=list)


def write_dataset(sources: Sequence[Path], out: Path, *, merge: bool = True) -> DatasetReport:
    """Merge the rows of ``sources`` (results CSVs) with the data set already at ``out`` (``merge``), drop
    duplicate points, and write the data set afresh beside ``out`` before swapping it in."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    if out.exists() and not out.is_dir():
        raise DatasetError(f"{out} exists and is not a data set directory; choose another --out")
    tables = [read_csv_table(p) for p in sources]
    new_rows = sum(t.num_rows for t in tables)
    existing = 0
    if merge and out.is_dir() and any(out.iterdir()):
        old = read_dataset_table(out)
        existing = old.num_rows
        tables.insert(0, old)
    if not tables or sum(t.num_rows for t in tables) == 0:
        raise DatasetError("no result rows to write")
    table = _unify(tables)
    for p in PARTITIONS:
        if p not in table.column_names:
            raise DatasetError(f"the rows have no '{p}' column, which the data set is partitioned by")
        col = table.column(p)
        empty = pc.or_kleene(pc.is_null(col), pc.equal(pc.utf8_trim_whitespace(col), ""))
        if pc.any(empty).as_py():
            raise DatasetError(f"some rows have an empty '{p}', which the data set is partitioned by")
    table, dups = _dedupe(table)
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        ds.write_dataset(table, tmp, format="parquet", partitioning=partitioning(),
                         basename_template="part-{i}.parquet", existing_data_behavior="error")
        _swap(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    parts = {tuple(r.values()) for r in table.select(list(PARTITIONS)).to_pylist()}
    return DatasetReport(out, table.num_rows, new_rows, existing, dups, len(parts))


def _swap(tmp: Path, out: Path) -> None:
    """``tmp`` becomes ``out``; an old ``out`` is moved aside first and removed after."""
    old = out.with_name(f".{out.name}.old-{os.getpid()}")
    if out.exists():
        os.replace(out, old)
    try:
        os.replace(tmp, out)
    except OSError:
        if old.exists():
            os.replace(old, out)
        raise
    shutil.rmtree(old, ignore_errors=True)
