"""The one reader and writer of the lab data set: ``archline.results/1`` rows as a hive-partitioned Parquet data set
(pyarrow), the format ``archline lab collect`` writes and every reader (``archline fit``, ``plot``, ``compare``,
pandas, DuckDB, Spark) reads without knowing how many hosts there were::

    DATASET/platform=gtx580/host=node03/run_id=gtx580-20260131T011500Z-1a2b3c/part-0.parquet

Columns and their types come from the results schema (:mod:`archline.formats.schema`): text columns are strings,
``bool`` columns booleans, every number float64 (an empty CSV cell is null); a column the schema does not know is
kept as text. The partition columns (``platform``, ``host``, ``run_id``) are strings in the directory names,
percent-encoded as hive does (``../x`` is ``platform=..%2Fx``): a value from the data never becomes a path of its
own, and readers get it back unchanged. An empty value is refused. Each file carries the schema version in its
metadata (``archline.schema``).

A point is identified as the run that measured it identifies it: its ``point_id`` under its ``config_hash``, in
its ``run_id`` on its ``host`` (:data:`POINT_KEY`). A run id is made once per run (platform, UTC start and a random
part), so it names the one machine that made it: two machines that report the same host name (containers, copies
of one image, laptops called ``localhost``) never share one, and their rows are all kept. A copy of a point (the
data set collected again, a results file copied into two places) is kept once: the copy already in the data set,
else the first one read. A point measured again in another run (a results directory removed and swept again) is
a second measurement, kept in its own run's partition (``--replace`` writes the data set afresh).

**What the writer touches.** Only the files it owns: ``platform=*/host=*/run_id=*/part-*.parquet`` (and the
partition directories it made, removed when they end up empty). Anything else in the directory (a README, a
``.git/``) is left alone. A directory that holds other things but no partition is not a data set: refused.

**What is atomic.** Each Parquet file is written beside its final name and renamed into place, so a reader never
sees half a file, and a new data set is made whole beside its name (:func:`~archline.common.atomic.atomic_dir`). The
data set is updated file by file: while merging, each partition's new file holds every row of its old one, so a
reader during a collect sees every row it saw before and some of the new ones, never a row twice. With
``merge=False`` (``--replace``) the old partitions that are not written again are removed last.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar
from urllib.parse import quote

import numpy as np

from archline.common.atomic import atomic_dir, atomic_path
from archline.common.errors import OutputError
from archline.common.outputs import inside, make_dirs, prune_dirs, show
from archline.formats import schema
from archline.formats.parquet_types import check_column_types, partition_mismatch, type_fits
from archline.formats.partitions import dataset_listing, dataset_root, file_partition, note_dataset_input
from archline.formats.partitions import partition_values as partition_values  # re-exported: sources reads it here
from archline.formats.results_file import ResultsFile, SourceError, check_unique_columns
from archline.model.errors import ArchlineFitError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import pyarrow as pa

#: hive partition keys, in directory order
PARTITIONS: tuple[str, ...] = ("platform", "host", "run_id")
#: what makes two rows copies of one measured point: the run (its id is unique to the machine and the run that
#: made it; the host name alone is not: machines share host names) and the point within it
POINT_KEY: tuple[str, ...] = ("host", "run_id", "config_hash", "point_id")
PARQUET_SUFFIXES = (".parquet", ".pq")
#: Rows per record batch the fit reads (within a row group: a file written as one 20 M-row row group is read
#: 256 Ki rows at a time, never whole). 1 Mi rows held about 0.5 GB of Arrow buffers at once; 256 Ki about 0.1 GB.
PARQUET_BATCH_ROWS = 1 << 18
#: Bytes of a column chunk read at a time (pyarrow's buffered stream): without it pyarrow reads each column's
#: whole chunk of a row group into memory before decoding a batch, so peak memory grew with row-group size.
PARQUET_BUFFER_BYTES = 1 << 20
#: the longest partition directory name written (bytes; file systems allow 255)
MAX_COMPONENT = 200


class DatasetError(ArchlineFitError):
    pass


def arrow_schema(columns: Sequence[str]) -> pa.Schema:
    import pyarrow as pa

    return pa.schema([(c, schema.arrow_type(c)) for c in columns])


def dataset_files(root: Path) -> list[Path]:
    """The Parquet files a reader reads in a data set directory, sorted (:func:`dataset_listing`)."""
    return dataset_listing(root, PARQUET_SUFFIXES)[0]


def owned_files(root: Path) -> list[Path]:
    """The files the writer owns: ``platform=*/host=*/run_id=*/part-*.parquet``, no links."""
    if not root.is_dir():
        return []
    return sorted(p for p in root.glob("platform=*/host=*/run_id=*/part-*.parquet")
                  if p.is_file() and not p.is_symlink() and not any(q.is_symlink() for q in p.parents
                                                                     if root in q.parents))


def _constant_text(value: str, n: int) -> pa.Array:
    import pyarrow as pa

    from archline.common.arrow import arrow_of

    # through the buffers (pa.array of numpy goes through pyarrow's pandas shim: 10 ms a million rows)
    return pa.DictionaryArray.from_arrays(arrow_of(np.zeros(n, dtype=np.int32)), pa.array([value]))


def parquet_schema(path: Path) -> pa.Schema:
    """The Arrow schema of one Parquet file (its footer only); a file naming a column twice is refused."""
    import pyarrow.parquet as pq

    try:
        sch = pq.read_schema(path)
    except Exception as e:  # pyarrow raises several types for a file that is not Parquet
        raise SourceError("schema", f"{show(path)}: not a Parquet file ({str(e).splitlines()[0]})") from None
    check_unique_columns(list(sch.names), show(path))
    return sch


def parquet_columns(path: Path) -> set[str]:
    """The columns of one Parquet file; a file naming a column twice is refused (one line)."""
    return set(parquet_schema(path).names)


def _check_files_unique(files: Sequence[Path]) -> None:
    try:
        for f in files:
            parquet_columns(f)
    except SourceError as e:
        raise DatasetError(str(e)) from None


def parquet_tables(path: Path, text: Sequence[str], num: Sequence[str], partition: dict[str, str],
                   check: bool = False) -> Iterator[tuple[pa.Table, np.ndarray]]:
    """The fit's read of one Parquet file, a row batch at a time: the ``text`` columns dictionary-encoded (as
    Parquet stores them), ``num`` as stored, partition values as constant text columns where the file lacks
    them; with each row's 1-based row number. A column no cell can be read from (a list, binary) is refused. A
    file whose own partition column disagrees with its directory is refused (``check``: the reader's read)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    sch = parquet_schema(path)
    names = set(sch.names)
    check_column_types(path, sch, [c for c in text if c not in num], num)
    own = [k for k in partition if k in names and check]    # the file's own copy of a partition
    check_types = [k for k in own if type_fits(sch.field(k).type, False)]
    try:
        pf = pq.ParquetFile(path, read_dictionary=[c for c in (*text, *check_types) if c in names],
                            buffer_size=PARQUET_BUFFER_BYTES, pre_buffer=False)
    except (pa.ArrowInvalid, OSError) as e:
        raise SourceError("schema", f"{show(path)}: not a Parquet file ({str(e).splitlines()[0]})") from None
    cols = [c for c in (*text, *num) if c in names]
    read = cols + [k for k in check_types if k not in cols]
    row = 1
    constants: dict[tuple[str, int], pa.Array] = {}
    for batch in pf.iter_batches(batch_size=PARQUET_BATCH_ROWS, columns=read, use_threads=True):
        tab = pa.Table.from_batches([batch])
        for k in check_types:
            if (msg := partition_mismatch(path, tab.column(k), k, partition[k])) is not None:
                raise SourceError("schema", msg)
        if len(read) > len(cols):
            tab = tab.select(cols)
        for k, v in partition.items():
            if k not in names and k in text:
                if (k, tab.num_rows) not in constants:      # every full batch of a file has the same length
                    constants[(k, tab.num_rows)] = _constant_text(v, tab.num_rows)
                tab = tab.append_column(k, constants[(k, tab.num_rows)])
        yield tab, np.arange(row, row + tab.num_rows, dtype=np.int64)
        row += tab.num_rows


def _read_files(root: Path, files: Sequence[Path]) -> pa.Table:
    import pyarrow as pa
    import pyarrow.dataset as ds

    _check_files_unique(files)
    part = ds.partitioning(pa.schema([(p, pa.string()) for p in PARTITIONS]), flavor="hive")
    try:
        # from the data set's own root: a partition directory given alone keeps the partitions above it
        table = ds.dataset([str(f) for f in files], format="parquet", partitioning=part,
                           partition_base_dir=str(dataset_root(root))).to_table()
    except (OSError, pa.ArrowInvalid) as e:
        raise DatasetError(f"cannot read data set {show(root)}: {str(e).splitlines()[0]}") from None
    order = [c for c in schema.ALL_COLUMNS if c in table.column_names]
    return table.select(order + [c for c in table.column_names if c not in order])


def read_dataset_table(path: Path) -> pa.Table:
    """Every row of a data set directory (or of one Parquet file), partition columns as strings, in schema
    column order."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not path.exists():
        raise DatasetError(f"data set {show(path)} does not exist")
    note_dataset_input(path)
    if not path.is_dir():
        _check_files_unique([path])
        try:
            table = pq.read_table(path)
        except (OSError, pa.ArrowInvalid) as e:
            raise DatasetError(f"cannot read data set {show(path)}: {str(e).splitlines()[0]}") from None
        for k, v in file_partition(path).items():     # a part file read alone: its partitions from its path
            if k not in table.column_names:
                table = table.append_column(k, pa.array([v] * table.num_rows, pa.string()))
        return table
    files = dataset_files(path)
    if not files:
        raise DatasetError(f"{show(path)}: not an archline data set (no Parquet files under it); "
                           "`archline lab collect` writes one")
    return _read_files(path, files)


def read_frame(path: Path) -> pd.DataFrame:
    """A data set directory or a Parquet file as a pandas frame: text columns as pandas strings (as the CSV
    reader gives them), numbers as float64, booleans as booleans."""
    import pandas as pd
    import pyarrow as pa

    frame = read_dataset_table(path).to_pandas(types_mapper={pa.string(): pd.StringDtype()}.get)
    if len(frame) == 0:
        raise DatasetError(f"{show(path)}: the data set has no rows")
    return frame


def read_csv_table(path: Path, *, whole_lines: bool = True) -> pa.Table:
    """One results CSV as a typed Arrow table (the owner's read, :meth:`ResultsFile.table`); without
    ``whole_lines`` a partial last line (a row being appended) is left out."""
    try:
        with ResultsFile.open(path, whole_lines=whole_lines) as rf:
            return rf.table()
    except SourceError as e:
        raise DatasetError(str(e)) from None


def check_rows(table: pa.Table, path: Path) -> None:
    """Refuse (one line naming the file and line) rows the fit's reader would refuse: the same checks, by the
    same code (:func:`archline.formats.results_check.check_frame`: schema, non-empty platform and kernel, time_s > 0,
    energy_j finite and >= 0, counts finite and >= 0), so that the data set never holds a row no fit can read."""
    from archline.formats import results_check

    if table.num_rows == 0:
        return
    frame = table.to_pandas()
    frame["_file"] = show(path)
    frame["_line"] = np.arange(2, table.num_rows + 2, dtype=np.int64)    # one line per row, header line 1
    try:
        results_check.check_frame(frame)
    except results_check.ResultsError as e:
        raise DatasetError(f"{e}; nothing written") from None


def read_csv_frame(path: Path) -> pd.DataFrame:
    """One results CSV as pandas reads it (types inferred, every column kept), or one line naming what is wrong."""
    with ResultsFile.open(path) as rf:
        return rf.frame()


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
        cols = [t.column(f.name).cast(f.type) if f.name in t.column_names else pa.nulls(len(t), f.type)
                for f in target]
        out.append(pa.Table.from_arrays(cols, schema=target))
    return pa.concat_tables(out)


def _dedupe(table: pa.Table) -> tuple[pa.Table, int]:
    """Keep the first row of each point (POINT_KEY); rows lacking a key part are kept as they are."""
    if not all(k in table.column_names for k in POINT_KEY) or table.num_rows == 0:
        return table, 0
    keys = table.select(list(POINT_KEY)).to_pandas()
    has_key = keys.notna().all(axis=1).to_numpy() & (keys != "").all(axis=1).to_numpy()
    dup = keys.duplicated(keep="first").to_numpy() & has_key
    if not dup.any():
        return table, 0
    return table.take(np.flatnonzero(~dup)), int(dup.sum())


def partition_dir(values: Sequence[str]) -> Path:
    """The relative directory of one partition: ``platform=<p>/host=<h>/run_id=<r>``, each value percent-encoded
    (never ``/``, ``..`` alone, a control character or an empty name)."""
    parts = []
    for key, value in zip(PARTITIONS, values, strict=True):
        if value is None or not str(value).strip():
            raise DatasetError(f"some rows have an empty '{key}', which the data set is partitioned by")
        part = f"{key}={quote(str(value), safe='')}"
        if len(part.encode()) > MAX_COMPONENT:
            raise DatasetError(f"a row's {key} is too long for a directory name: {str(value)[:60]!r}...")
        parts.append(part)
    return Path(*parts)


@dataclass
class DatasetReport:
    path: Path
    rows: int                       #: rows in the data set now
    new_rows: int                   #: rows read from the sources
    kept_existing: int              #: rows that were already in the data set
    duplicates: int                 #: rows dropped as a second copy of a point
    partitions: int
    notes: list[str] = field(default_factory=list)


class ResultsDataset:
    """A data set directory: :meth:`table`/:meth:`frame` read it, :meth:`write` merges result CSVs into it."""

    SCHEMA: ClassVar[str] = schema.SCHEMA

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def table(self) -> pa.Table:
        return read_dataset_table(self.root)

    def frame(self) -> pd.DataFrame:
        return read_frame(self.root)

    def _check_out(self) -> None:
        out = self.root
        if out.exists() and not out.is_dir():
            raise DatasetError(f"{show(out)} exists and is not a data set directory; choose another --out")
        if out.is_dir():
            seen = [e.name for e in out.iterdir() if not e.name.startswith(".")]
            if seen and not any(n.startswith("platform=") for n in seen):
                raise DatasetError(f"{show(out)} is a directory but not an archline data set (no platform=* "
                                   "partition in it); give a new or empty directory, or a data set "
                                   "`archline lab collect` wrote")

    def write(self, sources: Sequence[Path], *, merge: bool = True,
              tables: Sequence[pa.Table] | None = None) -> DatasetReport:
        """Merge the rows of ``sources`` (results CSVs; ``tables``: them read already, once) with the rows already
        here (``merge``), drop duplicate points, and write each partition's file; old owned files no longer needed
        are removed last. A write that fails leaves no partition directory it made (:func:`atomic_dir`)."""
        import pyarrow.compute as pc

        out = self.root
        self._check_out()
        tables = list(tables) if tables is not None else [read_csv_table(p, whole_lines=False) for p in sources]
        for src, t in zip(sources, tables, strict=True):                    # every file checked before a write
            check_rows(t, src)
        new_rows = sum(t.num_rows for t in tables)
        old_files = owned_files(out)
        existing = 0
        if merge and old_files:
            old = _read_files(out, old_files)
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
        groups = table.select(list(PARTITIONS)).to_pandas().groupby(list(PARTITIONS), sort=True).indices
        plan = {partition_dir(key): idx for key, idx in groups.items()}   # every name checked before a write
        written: set[Path] = set()
        with atomic_dir(out) as root:       # a new data set: under a hidden name, then renamed into place
            for rel, idx in plan.items():
                written.add(self._write_part(rel, table.take(np.asarray(idx)).drop_columns(list(PARTITIONS)), root))
        for f in old_files:                 # owned files no longer part of the data set, then empty directories
            if f not in written:
                f.unlink(missing_ok=True)
                prune_dirs(f.parent, 3)
        return DatasetReport(out, table.num_rows, new_rows, existing, dups, len(plan))

    def _write_part(self, rel: Path, part: pa.Table, root: Path) -> Path:
        import pyarrow.parquet as pq

        target = root / rel / "part-0.parquet"
        try:
            inside(root, target)
        except OutputError as e:
            raise DatasetError(str(e)) from None
        make_dirs(target.parent)
        meta = dict(part.schema.metadata or {})
        meta[b"archline.schema"] = schema.SCHEMA.encode()
        with atomic_path(target) as tmp:
            pq.write_table(part.replace_schema_metadata(meta), tmp)
        return target


def write_dataset(sources: Sequence[Path], out: Path, *, merge: bool = True,
                  tables: Sequence[pa.Table] | None = None) -> DatasetReport:
    """:meth:`ResultsDataset.write` of ``out``."""
    return ResultsDataset(out).write(sources, merge=merge, tables=tables)
