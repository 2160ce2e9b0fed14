"""Result files as pyarrow tables, batch by batch: CSV (pyarrow's multithreaded reader), single Parquet files,
and hive-partitioned Parquet data set directories (``platform=<p>/host=<h>/run_id=<r>/part-*.parquet``).

Only the columns the fit reads are decoded. A CSV up to :data:`CSV_WHOLE_BYTES` is read in one multithreaded
call; a bigger one is streamed in blocks, and Parquet is read a row batch at a time, so memory stays bounded
by the batch, not the data set. Each table comes with its rows' positions: CSV line numbers (header = line 1;
one line per row, as archline writes them) or 1-based Parquet row numbers, so messages name file and line.

Partition directories: each ``key=value`` path component (URL-decoded, as hive writes it) becomes a
constant text column when the file does not carry that column itself. The values are kept as strings; this
is parsed here rather than by pyarrow.dataset's discovery, which would type ``run_id=20260101`` as an integer
and read every fragment's schema up front.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote

import numpy as np

from archline.common.arrow import numpy_of
from archline.fit.errors import ArchlineFitError
from archline.fit.io.configs import Source

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

CSV_WHOLE_BYTES = 512 << 20
CSV_BLOCK_BYTES = 16 << 20
PARQUET_BATCH_ROWS = 1 << 20
PARQUET_SUFFIXES = (".parquet", ".pq")


class SourceError(ArchlineFitError):
    """A results file or directory that cannot be read as such (the reader re-raises it as its own type)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind  # "read" | "empty" | "schema" | "malformed"


def text_codes(col: pa.ChunkedArray) -> tuple[np.ndarray, list[str | None]]:
    """Dictionary codes of a text column over all its chunks, and the values they stand for (None = empty)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    values: list[str | None] = []
    index: dict[str | None, int] = {}
    parts: list[np.ndarray] = []
    for chunk in col.chunks:
        if not pa.types.is_dictionary(chunk.type):
            chunk = pc.cast(chunk, pa.string()).dictionary_encode()
        local = [None if v is None else str(v) for v in chunk.dictionary.to_pylist()] + [None]
        lut = np.array([index.setdefault(v, len(index)) for v in local], dtype=np.int64)
        parts.append(lut[numpy_of(chunk.indices, fill=len(local) - 1)])
    for v, _ in sorted(index.items(), key=lambda kv: kv[1]):
        values.append(v if v is None or v.strip() else None)
    return (np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)), values


def _csv_header(path: Path) -> list[str]:
    import pyarrow as pa

    with pa.input_stream(str(path), compression="detect") as f:
        first = b""
        while b"\n" not in first:
            chunk = f.read(1 << 16)
            if not chunk:
                break
            first += chunk
    first = first.split(b"\n", 1)[0]
    try:
        text = first.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise SourceError("schema", f"{path}: not a text CSV file") from None
    row = next(csv.reader(io.StringIO(text)), [])
    return [c.strip() for c in row]


def _bad_line(path: Path, n_fields: int) -> tuple[int, int]:
    """Line number and field count of the first row whose field count differs from the header's."""
    import pyarrow as pa

    with pa.input_stream(str(path), compression="detect") as f:
        reader = csv.reader(io.TextIOWrapper(f, encoding="utf-8-sig", errors="replace", newline=""))
        for row in reader:
            if row and len(row) != n_fields:
                return reader.line_num, len(row)
    return 0, 0


def _csv_tables(path: Path, text: Sequence[str], num: Sequence[str]) -> Iterator[tuple[pa.Table, np.ndarray]]:
    import pyarrow as pa
    import pyarrow.csv as pcsv

    header = _csv_header(path)
    present = [c for c in (*text, *num) if c in header]
    dict_type = pa.dictionary(pa.int32(), pa.string())

    def options(num_as_text: bool) -> pcsv.ConvertOptions:
        types = {c: dict_type for c in text if c in header}
        types.update({c: (pa.string() if num_as_text else pa.float64()) for c in num if c in header})
        return pcsv.ConvertOptions(include_columns=present, column_types=types, strings_can_be_null=True)

    def read(num_as_text: bool) -> Iterator[pa.Table]:
        if path.stat().st_size <= CSV_WHOLE_BYTES:
            yield pcsv.read_csv(path, convert_options=options(num_as_text),
                                read_options=pcsv.ReadOptions(block_size=CSV_BLOCK_BYTES))
            return
        reader = pcsv.open_csv(path, convert_options=options(num_as_text),
                               read_options=pcsv.ReadOptions(block_size=CSV_BLOCK_BYTES))
        for batch in reader:
            yield pa.Table.from_batches([batch])

    done = 0  # rows handed out; a re-read (numbers as text) skips them
    for num_as_text in (False, True):
        try:
            seen = 0
            for tab in read(num_as_text):
                n = tab.num_rows
                if seen + n <= done:
                    seen += n
                    continue
                if seen < done:
                    tab = tab.slice(done - seen)
                    seen = done
                yield tab, np.arange(2 + done, 2 + done + tab.num_rows, dtype=np.int64)
                done += tab.num_rows
                seen += tab.num_rows
            return
        except pa.ArrowInvalid as e:
            msg = str(e)
            if "conversion error" in msg and not num_as_text:
                continue  # re-read numbers as text; the validator names the cell that is not a number
            if "Expected" in msg and "columns" in msg:
                bad, got = _bad_line(path, len(header))
                raise SourceError("malformed", f"{path}:{bad}: malformed CSV: expected {len(header)} fields, "
                                               f"got {got}") from None
            if "UTF8" in msg or "UTF-8" in msg or "utf8" in msg:
                raise SourceError("schema", f"{path}: not a text CSV file") from None
            raise SourceError("malformed", f"{path}: malformed CSV: {msg.splitlines()[0]}") from None


def _partition_values(path: Path, root: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in path.relative_to(root).parts[:-1]:
        if "=" in part:
            k, v = part.split("=", 1)
            out[unquote(k)] = unquote(v)
    return out


def _constant_text(value: str, n: int) -> pa.Array:
    import pyarrow as pa

    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int32)), pa.array([value]))


def _parquet_tables(path: Path, text: Sequence[str], num: Sequence[str], partition: dict[str, str]
                    ) -> Iterator[tuple[pa.Table, np.ndarray]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        names = set(pq.ParquetFile(path).schema_arrow.names)
        # text columns come back dictionary-encoded, as Parquet stores them: no string decoding
        pf = pq.ParquetFile(path, read_dictionary=[c for c in text if c in names])
    except (pa.ArrowInvalid, OSError) as e:
        raise SourceError("schema", f"{path}: not a Parquet file ({str(e).splitlines()[0]})") from None
    cols = [c for c in (*text, *num) if c in names]
    row = 1
    for batch in pf.iter_batches(batch_size=PARQUET_BATCH_ROWS, columns=cols, use_threads=True):
        tab = pa.Table.from_batches([batch])
        for k, v in partition.items():
            if k not in names and k in text:
                tab = tab.append_column(k, _constant_text(v, tab.num_rows))
        yield tab, np.arange(row, row + tab.num_rows, dtype=np.int64)
        row += tab.num_rows


def parquet_columns(path: Path) -> set[str]:
    import pyarrow.parquet as pq

    return set(pq.ParquetFile(path).schema_arrow.names)


def dataset_files(root: Path) -> list[Path]:
    """The Parquet files of a data set directory, in sorted order (hidden and _-prefixed entries skipped)."""
    files = []
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).parts
        if p.is_file() and p.suffix in PARQUET_SUFFIXES and not any(x.startswith((".", "_")) for x in rel):
            files.append(p)
    return files


def iter_sources(paths: Sequence[Path]) -> Iterator[tuple[Path, str, dict[str, str]]]:
    """(file, kind, partition values) for every file behind ``paths`` (files or data set directories)."""
    for p in paths:
        if p.is_dir():
            files = dataset_files(p)
            if not files:
                raise SourceError("empty", f"{p}: a directory without Parquet files (expected a data set such as "
                                           f"platform=<p>/host=<h>/run_id=<r>/part-0.parquet; give CSV files "
                                           f"themselves, e.g. {p}/*.csv)")
            for f in files:
                yield f, "parquet", _partition_values(f, p)
        elif not p.exists():
            raise SourceError("read", f"cannot read results file {p}: No such file or directory")
        elif p.suffix in PARQUET_SUFFIXES:
            yield p, "parquet", {}
        else:
            yield p, "csv", {}


def header_columns(path: Path, kind: str, partition: dict[str, str]) -> set[str]:
    if kind == "csv":
        return set(_csv_header(path))
    try:
        return parquet_columns(path) | set(partition)
    except Exception as e:  # pyarrow raises several types for a file that is not Parquet
        raise SourceError("schema", f"{path}: not a Parquet file ({str(e).splitlines()[0]})") from None


def read_tables(path: Path, kind: str, partition: dict[str, str], text: Sequence[str], num: Sequence[str]
                ) -> tuple[Source, Iterator[tuple[pa.Table, np.ndarray]]]:
    """The file's Source and its tables (only the columns ``text`` and ``num`` that it has)."""
    if kind == "csv":
        return Source(str(path), "csv"), _csv_tables(path, text, num)
    return Source(str(path), "parquet"), _parquet_tables(path, text, num, partition)
