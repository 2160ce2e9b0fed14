"""What ``archline compare`` checks of its inputs beyond the reader's checks: that a data set's partition
directories (``host=node01/run_id=r1/``) and the same columns inside its Parquet files agree.

The reader (:mod:`archline.fit.io.dataset`) adds a partition value as a column only where the file lacks that
column, so a file whose ``run_id`` column says ``r2`` under ``run_id=r1/`` is read as run ``r2`` without a word,
and compare would merge two run directories into one cell. The files ``lab collect`` writes never hold their
partition columns (they are the directory names), so this costs nothing there; a file that does hold one is
checked from its row groups' min/max statistics, and read column by column only where they are missing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from archline.fit.errors import ArchlineFitError


class PartitionMismatchError(ArchlineFitError):
    pass


def _stat_text(v: object) -> str:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


def _column_values(path: Path, column: str) -> tuple[set[str], int]:
    """(distinct non-empty stripped values, empty or null cells) of one text column of a Parquet file; from the
    row groups' statistics where every row group has them, else from the column itself (one batch at a time)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(path)
    meta = pf.metadata
    j = pf.schema_arrow.get_field_index(column)
    values: set[str] = set()
    nulls = 0
    stats = [meta.row_group(i).column(j).statistics for i in range(meta.num_row_groups)]
    if all(s is not None and s.has_min_max and s.has_null_count for s in stats):
        for s in stats:
            assert s is not None
            values |= {_stat_text(s.min), _stat_text(s.max)}
            nulls += int(s.null_count)
        if all(v == v.strip() and v for v in values):
            return values, nulls
        values, nulls = set(), 0
    for batch in pf.iter_batches(columns=[column], batch_size=1 << 18):
        col = pc.utf8_trim_whitespace(pc.cast(batch.column(0), "string"))
        nulls += int(pc.sum(pc.or_kleene(pc.is_null(col), pc.equal(col, ""))).as_py() or 0)
        values |= {v for v in pc.unique(col.drop_null()).to_pylist() if v}
    return values, nulls


def check_partitions(paths: Iterable[str | Path], columns: Sequence[str]) -> None:
    """Refuse (:class:`PartitionMismatchError`) a Parquet file whose ``columns`` (those compare groups by, and the
    platform) disagree with its partition directories: another value, or an empty cell, in the column."""
    from archline.common.outputs import show
    from archline.fit.io.dataset import parquet_columns
    from archline.fit.io.results_file import SourceError
    from archline.fit.io.sources import iter_sources

    wanted = tuple(dict.fromkeys(("platform", *columns)))
    try:
        for path, kind, partition in iter_sources([Path(p) for p in paths]):
            keys = [k for k in wanted if k in partition] if kind == "parquet" else []
            if keys:
                _check_file(path, partition, keys, parquet_columns(path), show(path))
    except SourceError:
        return          # a missing, empty or unreadable input: the reader names it


def _check_file(path: Path, partition: dict[str, str], keys: Sequence[str], have: set[str], name: str) -> None:
    import pyarrow as pa

    for k in keys:
        if k not in have:
            continue
        try:
            values, empty = _column_values(path, k)
        except (pa.ArrowException, OSError):
            return      # not readable as text: the reader names it
        other = sorted(values - {partition[k].strip()})
        if other or empty:
            what = (f"holds {other[0]!r}" + (f" (and {len(other) - 1} other value(s))" if len(other) > 1 else "")
                    if other else f"has {empty} row(s) with no {k}")
            raise PartitionMismatchError(
                f"{name}: its column {k} {what} but its directory says {k}={partition[k]}; compare would group "
                f"the rows by the column's value: fix the column, drop it from the file, or move the file to the "
                f"partition it names")
