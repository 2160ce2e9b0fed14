"""The one reader and writer of ``archline.results/1`` CSV files (columns, kinds and cell format:
:mod:`archline.formats.schema`; the Parquet data set: :mod:`archline.formats.dataset`). Nothing else parses or
writes one.

:class:`ResultsFile` is both sides, as pyperf's ``Benchmark`` is (``load``/``dump``, the format version beside
the data, here :attr:`ResultsFile.SCHEMA`):

* **Reading** (:meth:`ResultsFile.open`) opens the input once (:func:`archline.common.files.open_input`, which
  notes it as an input of the command) and never by name again, so a pipe, a FIFO, ``/dev/stdin`` and
  ``<(...)`` work. The fit's read (``stream``) takes every CSV, a regular file, a pipe or a compressed one
  (``.gz``, ``.bz2``, ``.zst``, ``.lz4``, ``.xz``), whole lines at a time (:mod:`~archline.formats.line_blocks`);
  other reads hold a pipe in memory (at most :data:`~archline.common.files.MAX_STREAM_BYTES`).
* **Writing**: ``ResultsFile(path)`` opens a file for appending rows (the header written atomically when the
  file is new); rows are appended in the columns of the file's *own* header, one complete line per
  ``os.write`` plus fsync. A file that is not an ``archline.results/1`` CSV is refused before anything touches
  it, and :meth:`ResultsFile.repair_tail` (a partial last line after a power loss) never cuts one.
  :meth:`ResultsFile.dump` writes a whole file atomically.
"""

from __future__ import annotations

import csv
import errno
import io
import os
import stat
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, ClassVar

import numpy as np

from archline.common.atomic import atomic_path, write_atomic
from archline.common.files import check_text_bytes, open_input, read_stream
from archline.common.outputs import show
from archline.formats import schema
from archline.formats.line_blocks import HEADER_BYTES as HEADER_BYTES  # re-exported: the results file's
from archline.formats.line_blocks import ReadError as ReadError
from archline.formats.line_blocks import SourceError as SourceError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import pyarrow as pa

    from archline.formats.line_blocks import LineBlocks

COMPRESSION = {".gz": "gzip", ".bz2": "bz2", ".zst": "zstd", ".lz4": "lz4", ".xz": "xz"}   # xz: Python's lzma
#: the largest regular file the fit parses in one call: none (was 512 MB: memory grew with its rows)
CSV_WHOLE_BYTES = 0
#: blocks of whole lines: a pipe's or compressed file's, a regular file's; pyarrow's parse unit within one (threads)
CSV_BLOCK_BYTES, CSV_FILE_BLOCK_BYTES, CSV_PARSE_BYTES = 16 << 20, 16 << 20, 2 << 20


class NotResultsError(SourceError):
    """A file that is not an ``archline.results/1`` CSV (a writer refuses to touch it)."""

    def __init__(self, message: str) -> None:
        super().__init__("schema", message)


def parse_header(first: bytes, name: str) -> list[str]:
    """The column names of a CSV's first line (a UTF-8 BOM allowed, names stripped)."""
    line = first.split(b"\n", 1)[0]
    try:
        text = line.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise SourceError("schema", f"{name}: not a text CSV file") from None
    return [c.strip() for c in next(csv.reader(io.StringIO(text)), [])]


def check_unique_columns(columns: Sequence[str], name: str) -> None:
    """Refuse a header naming a column twice: which copy a reader took would be arbitrary."""
    if dup := [c for c, n in Counter(columns).items() if n > 1]:
        raise SourceError("schema", f"{name}: names column(s) {', '.join(repr(c) for c in dup)} more than once; "
                                    "which copy holds the data is ambiguous: remove the extra one")


def _foreign(path: Path, why: str) -> NotResultsError:
    return NotResultsError(f"{show(path)} is not an {schema.SCHEMA} file ({why}); archline adds rows only to its "
                           "own results files and has not touched it: move it away, or write to another "
                           "directory")


def _own_header(path: Path) -> list[str] | None:
    """The header of an existing file that rows will be appended to (None: missing or empty); a file that is
    not an archline results CSV is refused."""
    try:
        with open(path, "rb") as f:
            first = f.read(HEADER_BYTES)
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise _foreign(path, "a directory") from None
    if not first:
        return None
    if b"\n" not in first:
        raise _foreign(path, "no complete header line")
    try:
        cols = parse_header(first, show(path))
    except SourceError:
        raise _foreign(path, "not a text file") from None
    if "schema" not in cols:
        raise _foreign(path, "its header has no 'schema' column")
    if dup := [c for c, n in Counter(cols).items() if n > 1]:
        raise _foreign(path, f"its header names {', '.join(repr(c) for c in dup)} more than once")
    lines = first.split(b"\n")
    if len(lines) > 2:      # a complete first row: its schema must be this one
        row = next(csv.reader([lines[1].rstrip(b"\r").decode("utf-8", errors="replace")]), [])
        got = row[cols.index("schema")].strip() if len(row) > cols.index("schema") else ""
        if row and got != schema.SCHEMA:
            raise _foreign(path, f"its rows are {got!r}")
    return cols


class ResultsFile:
    """An ``archline.results/1`` CSV. ``ResultsFile(path)`` opens it for appending (the writer);
    :meth:`open` reads one (the reader); :meth:`dump` writes one whole."""

    SCHEMA: ClassVar[str] = schema.SCHEMA

    path: Path
    columns: list[str]
    _file: BinaryIO | None
    _data: bytes | None
    _size: int
    _pipe: LineBlocks | None = None

    def __init__(self, path: str | os.PathLike[str], columns: Sequence[str] = schema.ALL_COLUMNS) -> None:
        self.path = Path(path)
        self._file, self._data, self._size = None, None, 0
        have = _own_header(self.path)
        if have is None:
            write_atomic(self.path, schema.header_line(columns))
            have = list(columns)
        self.columns = have

    # --- writing -----------------------------------------------------------------------------------------

    def append(self, row: Mapping[str, Any]) -> None:
        """One row in the file's own columns. SIGKILL leaves it whole or absent; a short write (disk full) is
        undone and raised."""
        line = schema.row_line(row, self.columns)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            n = os.write(fd, line)
            if n != len(line):
                os.ftruncate(fd, os.fstat(fd).st_size - n)
                raise OSError(errno.ENOSPC, f"could not append a row (wrote {n} of {len(line)} bytes)", show(self.path))
            os.fsync(fd)
        finally:
            os.close(fd)

    @staticmethod
    def check_appendable(path: str | os.PathLike[str]) -> None:
        """Refuse (one line) an existing file rows could not be appended to: not an archline results file."""
        _own_header(Path(path))

    @staticmethod
    def repair_tail(path: str | os.PathLike[str]) -> int:
        """Cut a trailing partial line of an archline results file (no newline: the machine lost power
        mid-write); return the bytes removed. A file that is not one is refused, never cut."""
        p = Path(path)
        if _own_header(p) is None:
            return 0
        with open(p, "rb+") as f:
            size = os.fstat(f.fileno()).st_size
            f.seek(max(0, size - 65536))
            tail = f.read()
            if tail.endswith(b"\n"):
                return 0
            cut = tail.rfind(b"\n")
            keep = size - len(tail) + cut + 1 if cut >= 0 else 0
            f.truncate(keep)
            os.fsync(f.fileno())
            return size - keep

    @classmethod
    def dump(cls, rows: Iterable[Mapping[str, Any]], path: str | os.PathLike[str],
             columns: Sequence[str] = schema.ALL_COLUMNS) -> Path:
        """Write ``rows`` as a whole results file, atomically (through the output policy)."""
        with atomic_path(path) as tmp, open(tmp, "wb") as f:
            f.write(schema.header_line(columns))
            for row in rows:
                f.write(schema.row_line(row, columns))
        return Path(path)

    @classmethod
    def dump_frame(cls, frame: pd.DataFrame, path: str | os.PathLike[str]) -> Path:
        """Write a pandas frame of rows as a whole results file, atomically: the contract's columns first, in
        order, then the others; booleans as ``true``/``false``, floats at full precision, NaN as an empty cell."""
        cols = [c for c in schema.ALL_COLUMNS if c in frame.columns]
        cols += [c for c in frame.columns if c not in cols]
        out = frame[cols].copy()
        for c in cols:
            if out[c].dtype == bool:
                out[c] = out[c].map({True: "true", False: "false"})
        with atomic_path(path) as tmp:
            out.to_csv(tmp, index=False)
        return Path(path)

    # --- reading -----------------------------------------------------------------------------------------

    @classmethod
    @contextmanager
    def open(cls, path: str | os.PathLike[str], *, what: str = "results file", whole_lines: bool = True,
             stream: bool = False) -> Iterator[ResultsFile]:
        """Open a results CSV to read, once: missing, a directory or device, binary, empty, or (``whole_lines``)
        cut off mid-line is one line naming it (:class:`ReadError`); its header is :attr:`columns`. Without
        ``whole_lines`` a partial last line (a row being appended) is left out. With ``stream`` (for
        :meth:`tables` only) a pipe or compressed file is never held: a cut-off end is found when it ends."""
        p = Path(path)
        self = cls.__new__(cls)
        self.path = p
        with open_input(p, error=ReadError, what=what) as f:
            st = os.fstat(f.fileno())
            codec = COMPRESSION.get(p.suffix.lower())
            if stream and whole_lines and not (stat.S_ISREG(st.st_mode) and codec is None):
                from archline.formats.line_blocks import LineBlocks

                self._file, self._data, self._size = None, None, 0
                self._pipe = LineBlocks(f, p, codec, what, CSV_BLOCK_BYTES)
                first = self._pipe.header
            elif stat.S_ISREG(st.st_mode) and st.st_size > 0 and codec is None:
                self._file, self._data, self._size = f, None, st.st_size
                head = f.read(4096)
                f.seek(-1, os.SEEK_END)
                last = f.read(1)
                check_text_bytes(head + (last if st.st_size > 4096 else b""), p, error=ReadError, what=what,
                                 lines=whole_lines)
                f.seek(0)
                if last == b"\n" or whole_lines:
                    first = f.read(HEADER_BYTES)
                else:   # a row being written (or cut off): read the complete lines only
                    data = f.read()
                    data = data[: data.rfind(b"\n") + 1]
                    self._file, self._data, self._size = None, data, len(data)
                    first = data[:HEADER_BYTES]
            else:
                data = read_stream(f, p, error=ReadError, what=what)
                if codec is not None and data:
                    from archline.formats.line_blocks import decompress

                    data = decompress(data, codec, p, what)
                check_text_bytes(data, p, error=ReadError, what=what, lines=whole_lines)
                if not whole_lines:
                    data = data[: data.rfind(b"\n") + 1]
                self._file, self._data, self._size = None, data, len(data)
                first = data[:HEADER_BYTES]
            self.columns = parse_header(first, show(p))
            check_unique_columns(self.columns, show(p))
            try:
                yield self
            finally:
                self._file = self._data = self._pipe = None

    @property
    def name(self) -> str:
        return show(self.path)

    def _input(self) -> Any:
        """A fresh pyarrow input over the whole file (the open file seeked back, or the bytes read)."""
        import pyarrow as pa

        if self._file is not None:
            self._file.seek(0)
            return self._file
        if self._data is None:
            raise ValueError(f"{self.name} is not open for reading")
        return pa.BufferReader(self._data)

    def _text(self) -> str:
        """The complete lines, as text (small files: a sweep's own results)."""
        raw = self._input().read()
        raw = bytes(raw[: raw.rfind(b"\n") + 1])
        return raw.decode("utf-8-sig", errors="replace")

    def check_ours(self) -> None:
        """Refuse a file that is not an archline results file (a writer's check, on a file opened to read)."""
        if "schema" not in self.columns:
            raise _foreign(self.path, "its header has no 'schema' column")

    def check_schema(self, required: Sequence[str] = schema.REQUIRED) -> None:
        missing = [c for c in required if c not in self.columns]
        if missing:
            raise SourceError("schema", f"{self.name}: not an {schema.SCHEMA} file: missing column(s) "
                                        f"{', '.join(missing)}")

    def rows(self) -> Iterator[dict[str, str]]:
        """The complete rows as text cells by column name (small files: a sweep's own results, a DVFS set); a row
        with more or fewer cells than the header has ``None`` among its keys or values."""
        return iter(csv.DictReader(self._text().splitlines()))

    def point_ids(self, config_hash: str) -> set[str]:
        """point_ids of the complete rows made under ``config_hash`` (a sweep's done points)."""
        return {r["point_id"] for r in self.rows() if r.get("config_hash") == config_hash and r.get("point_id")}

    def n_rows(self) -> int:
        """Complete rows (header and a partial last line not counted)."""
        return max(0, sum(1 for _ in csv.reader(io.StringIO(self._text(), newline=""))) - 1)

    def _bad_line(self, data: bytes | None = None, first: int = 1) -> tuple[int, int]:
        """Line number and field count of the first row whose field count differs from the header's (in
        ``data``, whose first line is line ``first``, when given)."""
        raw = bytes(self._input().read()) if data is None else data
        reader = csv.reader(io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8-sig", errors="replace", newline=""))
        for row in reader:
            if row and len(row) != len(self.columns):
                return reader.line_num + first - 1, len(row)
        return 0, 0

    def _arrow_error(self, e: Exception, data: bytes | None = None, first: int = 1) -> SourceError:
        msg = str(e).strip()
        if "Expected" in msg and "columns" in msg:
            bad, got = self._bad_line(data, first)
            return SourceError("malformed", f"{self.name}:{bad}: malformed CSV: expected {len(self.columns)} "
                                            f"fields, got {got}")
        if "UTF8" in msg or "UTF-8" in msg or "utf8" in msg:
            return SourceError("schema", f"{self.name}: not a text CSV file")
        return SourceError("malformed", f"{self.name}: malformed CSV: {msg.splitlines()[0] if msg else 'parse error'}")

    def tables(self, text: Sequence[str], num: Sequence[str]) -> Iterator[tuple[pa.Table, np.ndarray]]:
        """The fit's read: only the columns ``text`` (dictionary-encoded) and ``num`` (float64) the file has, in
        tables with the CSV line number of each row (header = line 1), read in blocks of whole lines
        (:class:`~archline.formats.line_blocks.LineBlocks`), so memory is flat in rows (a file held already, read
        without ``whole_lines``, in one call). Unparsable numbers are re-read as text."""
        import pyarrow as pa
        import pyarrow.csv as pcsv

        from archline.formats.line_blocks import LineBlocks
        header = self.columns
        present = [c for c in (*text, *num) if c in header]
        dict_type = pa.dictionary(pa.int32(), pa.string())

        def options(num_as_text: bool) -> pcsv.ConvertOptions:
            types = {c: dict_type for c in text if c in header}
            types.update({c: (pa.string() if num_as_text else pa.float64()) for c in num if c in header})
            # only an empty cell is missing: pyarrow's default nulls ("nan", "NULL") would make a count's "nan" 0
            return pcsv.ConvertOptions(include_columns=present, column_types=types, strings_can_be_null=True,
                                       null_values=[""])

        if self._pipe is None and self._file is not None and self._size > CSV_WHOLE_BYTES:
            self._pipe = LineBlocks(self._input(), self.path, None, "results file", CSV_FILE_BLOCK_BYTES)
        pipe = self._pipe
        ropts = pcsv.ReadOptions(block_size=CSV_PARSE_BYTES)
        for block, line in (pipe.blocks() if pipe is not None else iter([(b"", 2)])):
            data = pipe.header + block if pipe is not None else None      # None: the whole file
            for num_as_text in (False, True):
                try:
                    src = self._input() if data is None else pa.BufferReader(data)
                    tab = pcsv.read_csv(src, convert_options=options(num_as_text), read_options=ropts)
                    break
                except pa.ArrowInvalid as e:
                    if "conversion error" in str(e) and not num_as_text:
                        continue        # re-read as text, from the file or the block in memory
                    raise self._arrow_error(e, data, line - 1) from None     # line - 1: the header's
            yield tab, np.arange(line, line + tab.num_rows, dtype=np.int64)

    def table(self) -> pa.Table:
        """Every row and column as a typed Arrow table: the schema's kinds (text as strings, bool as booleans,
        numbers as float64; an empty cell null), a column the schema does not know as text."""
        import pyarrow as pa
        import pyarrow.csv as pcsv

        self.check_schema()
        types = {c: schema.arrow_type(c) for c in self.columns}
        opts = pcsv.ConvertOptions(column_types=types, strings_can_be_null=True, null_values=[""],
                                   true_values=sorted(schema.TRUE_WORDS), false_values=sorted(schema.FALSE_WORDS))
        try:
            return pcsv.read_csv(self._input(), convert_options=opts)
        except (pa.ArrowInvalid, OSError) as e:
            raise self._arrow_error(e) from None

    def frame(self) -> pd.DataFrame:
        """Every row as pandas reads it (types inferred, every column kept)."""
        import pandas as pd

        self._input()    # seeked back
        try:
            return pd.read_csv(self._file if self._file is not None else io.BytesIO(self._data or b""))
        except (OSError, ValueError) as e:
            raise SourceError("malformed", f"cannot read results {self.name}: "
                                           f"{str(e).splitlines()[0] if str(e) else e}") from None
