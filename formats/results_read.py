"""The results reading chain: command-line paths -> checked Arrow batches of ``archline.results/1`` rows
(docs/formats.md "What a reader requires"); grouping them is the fit's (:mod:`archline.fit.io.results`).

Which file behind each path is read how: the formats themselves have one owner each, a CSV
:class:`~archline.formats.results_file.ResultsFile` (read once, so pipes and ``<(...)`` work), single Parquet files
and hive-partitioned data set directories (``platform=<p>/host=<h>/run_id=<r>/part-*.parquet``)
:mod:`archline.formats.dataset`. Each table is checked by :func:`archline.formats.results_check.check_table`.

Only the columns the fit reads are decoded; memory stays bounded by a batch, not the data set, and the next batch
is decoded in a thread while this one is used. Each table comes with its rows' positions: CSV line numbers
(header = line 1; one line per row, as archline writes them) or 1-based Parquet row numbers, so messages name file
and line.

Partition directories: each ``key=value`` path component (URL-decoded, as hive writes it) becomes a constant text
column when the file does not carry that column itself. The values are kept as strings; this is parsed here rather
than by pyarrow.dataset's discovery, which would type ``run_id=20260101`` as an integer and read every fragment's
schema up front.
"""

from __future__ import annotations

import os
import queue
import stat
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from archline.common.arrow import arrow_of
from archline.common.files import unique_inputs
from archline.common.outputs import note_input, show
from archline.formats.dataset import PARQUET_SUFFIXES, parquet_columns, parquet_tables, partition_values
from archline.formats.partitions import dataset_listing, note_dataset_input
from archline.formats.results_check import (
    COUNT_COLUMNS,
    FLAG_COLUMNS,
    REQUIRED_COLUMNS,
    RESULTS_SCHEMA,
    SETTING_COLUMNS,
    TEXT_KEYS,
    CheckedBatch,
    EmptyResultsError,
    MalformedRowError,
    ResultsError,
    SchemaError,
    Source,
    check_table,
    warn,
)
from archline.formats.results_file import COMPRESSION, ResultsFile, SourceError

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

T = TypeVar("T")
_SOURCE_ERRORS: dict[str, type[ResultsError]] = {"read": ResultsError, "empty": EmptyResultsError,
                                                  "schema": SchemaError, "malformed": MalformedRowError}


#: What ``-`` on a command line reads: standard input (a file named ``-`` is ``./-``).
STDIN = Path("/dev/stdin")


def stdin_paths(paths: Iterable[str | Path]) -> list[str | Path]:
    """``paths`` with ``-`` standing for standard input, as in ``cat`` (a file named ``-`` is given as ``./-``); the
    others as given (``./a.csv`` stays so in a message)."""
    return [STDIN if str(p) == "-" else p for p in paths]


def iter_sources(paths: Sequence[Path], warn: Callable[[str], None] | None = None
                 ) -> Iterator[tuple[Path, str, dict[str, str]]]:
    """(file, kind, partition values) for every file behind ``paths`` (files, pipes or data set directories).
    A CSV is not opened here (its reader opens it once); a directory is noted as an input.

    A regular file reached twice (a data set directory named twice, or through a link, or a directory and one
    of its part files) is yielded once, at its first place, with a warning through ``warn``: the files actually
    read are told apart by (device, inode) and partition values, not by the names on the command line (one file
    hard-linked under two partitions holds two partitions' rows: the same measurements of two hosts or runs)."""
    seen: dict[tuple[int, int, tuple[tuple[str, str], ...]], Path] = {}

    def first_time(f: Path, partition: dict[str, str] | None = None) -> bool:
        try:
            st = os.stat(f)
        except (OSError, ValueError):
            return True             # its reader names it
        if not stat.S_ISREG(st.st_mode):
            return True             # a pipe is read as it comes
        key = (st.st_dev, st.st_ino, tuple(sorted((partition or {}).items())))
        if key in seen:
            if warn is not None:
                same = "named twice" if f == seen[key] else f"the same file as {show(seen[key])}"
                warn(f"{show(f)} is {same}; it is read once")
            return False
        seen[key] = f
        return True

    for p in paths:
        if p.is_dir():
            note_dataset_input(p)
            files, skipped = dataset_listing(p, PARQUET_SUFFIXES)
            if skipped and warn is not None:
                warn(f"{show(p)}: {len(skipped)} file(s) that are not Parquet skipped (e.g. {show(skipped[0])}); a "
                     f"data set directory is read for its *.parquet files: give a CSV file itself")
            if not files:
                raise SourceError("empty", f"{show(p)}: a directory without Parquet files (expected a data set such "
                                           f"as platform=<p>/host=<h>/run_id=<r>/part-0.parquet; give CSV files "
                                           f"themselves, e.g. {show(p)}/*.csv)")
            for f in files:
                note_input(f)              # each part is an input: an output named as one is refused, not written
                part = partition_values(f, p)
                if first_time(f, part):
                    yield f, "parquet", part
        elif p.suffix in PARQUET_SUFFIXES and not is_results_csv(str(p)):
            if not p.exists():
                raise SourceError("read", f"results file {show(p)} does not exist")
            note_dataset_input(p)
            part = partition_values(p, p.parent)       # a data set's part file keeps its partitions
            if first_time(p, part):
                yield p, "parquet", part
        elif first_time(p):
            yield p, "csv", {}


@dataclass
class OpenSource:
    """One opened input: where its rows are (``source``), its columns, and its tables of the columns asked for."""

    source: Source
    columns: set[str]
    tables: Callable[[Sequence[str], Sequence[str]], Iterator[tuple[pa.Table, np.ndarray]]]


@contextmanager
def open_source(path: Path, kind: str, partition: dict[str, str]) -> Iterator[OpenSource]:
    """Open one input (a CSV once, through its owner) for as long as its tables are read; a part file whose own
    partition column disagrees with its directory is refused."""
    if kind == "csv":
        with ResultsFile.open(path, stream=True) as rf:     # a pipe is read block by block, never held
            yield OpenSource(Source(str(path), "csv"), set(rf.columns), rf.tables)
        return
    have = parquet_columns(path) | set(partition)
    yield OpenSource(Source(str(path), "parquet"), have,
                     lambda text, num: parquet_tables(path, text, num, partition, check=True))


def is_results_csv(item: str) -> bool:
    """An item of a command line that names a results CSV: ``*.csv`` (also compressed), or an input that is not
    a regular file or directory (a pipe, ``/dev/stdin``, ``<(...)``: read as CSV)."""
    if item.lower().endswith((".csv", *(f".csv{s}" for s in COMPRESSION))):
        return True
    if item.startswith(("/dev/", "/proc/")):
        return True
    try:
        return stat.S_ISFIFO(os.stat(item).st_mode)
    except (OSError, ValueError):
        return False


def refuse_json_inputs(files: Sequence[str]) -> None:
    """A .json input is not result rows: a cost table is said to be one (its place is --costs), any other JSON
    is said to be JSON, instead of the CSV reader's 'ends in the middle of a line'."""
    from archline.formats.costs import names_cost_table

    for f in files:
        p = Path(f)
        if p.suffix.lower() != ".json" or not p.is_file():
            continue
        with p.open("rb") as fh:         # a peek at the head of a file refused either way
            head = fh.read(4096)
        if names_cost_table(head):
            raise ResultsError(f"{show(f)} is a cost table, not result rows: give it to `archline model show`, "
                               "`predict` or `measure` with --costs; fit takes result rows (CSV or Parquet from "
                               "`archline bench run`)")
        if head.lstrip()[:1] in (b"{", b"["):
            raise ResultsError(f"{show(f)} is JSON, not result rows: fit takes the CSV or Parquet rows of `archline "
                               "bench run`")


def ahead(items: Iterator[T]) -> Iterator[T]:
    """``items``, each produced in a thread while the consumer works on the one before: pyarrow decodes the
    next batch (without the GIL, on the other core) while numpy reduces this one; at most two are alive at
    once. An exception in the producer is raised here, where its item would have come; when the consumer stops
    early the producer stops at its next item and closes ``items`` in its own thread (its open files with
    it)."""
    q: queue.Queue[tuple[int, object]] = queue.Queue(maxsize=1)
    stop = threading.Event()

    def put(kind: int, x: object) -> bool:
        while not stop.is_set():
            try:
                q.put((kind, x), timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    taken = threading.Semaphore(0)

    def run() -> None:
        try:
            for x in items:
                if not put(0, x):
                    return
                del x
                while not taken.acquire(timeout=0.05):   # the next one is decoded once this one is taken:
                    if stop.is_set():                    # two alive at most, not three
                        return
            put(1, None)
        except BaseException as e:
            put(2, e)
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()

    th = threading.Thread(target=run, name="archline-read-ahead", daemon=True)
    th.start()
    try:
        while True:
            kind, x = q.get()
            taken.release()
            if kind == 1:
                return
            if kind == 2:
                assert isinstance(x, BaseException)
                raise x
            yield x  # type: ignore[misc]
            del x               # the consumer's reference goes before the next item is waited for
    finally:
        stop.set()
        th.join()


def results_files(paths: Iterable[str | Path]) -> list[Path]:
    """The inputs behind command-line ``paths`` (``-`` is standard input), each once; none is an error."""
    files = unique_inputs(stdin_paths(paths), warn=warn)
    if not files:
        raise ResultsError("no results files given")
    return files


def _tables(files: Sequence[Path], text: Sequence[str], num: Sequence[str], seen: set[str]
            ) -> Iterator[tuple[Source, pa.Table, np.ndarray]]:
    for path, kind, partition in iter_sources(files, warn):
        if kind == "parquet" and path.stat().st_size == 0:
            raise EmptyResultsError(f"{show(path)}: empty file (no header, no rows); expected an "
                                    f"{RESULTS_SCHEMA} CSV or Parquet file")
        with open_source(path, kind, partition) as src:   # a CSV is opened once: a pipe works
            seen.update(src.columns)
            missing = [c for c in REQUIRED_COLUMNS if c not in src.columns]
            if missing:
                raise SchemaError(f"{show(path)}: not an {RESULTS_SCHEMA} file: missing column(s) "
                                  f"{', '.join(missing)}")
            n_rows = 0
            for tab, pos in src.tables(text, num):
                n_rows += tab.num_rows
                yield src.source, tab, pos
        if n_rows == 0:
            raise EmptyResultsError(f"{show(path)}: " + ("header only, no result rows" if kind == "csv" else
                                                         "a Parquet file with no result rows"))


def checked_batches(files: Sequence[Path], *, extra: Sequence[str] = (), carry: Sequence[str] = (),
                    also: Sequence[str] = (), mask: Callable[[pa.Table], np.ndarray | None] | None = None,
                    seen: set[str] | None = None, warned: set[tuple[str, str]] | None = None
                    ) -> Iterator[tuple[CheckedBatch, pa.Table]]:
    """Every non-empty batch of rows behind ``files`` (:func:`results_files`), checked, with the table it was
    checked from. ``also``: more text columns to decode (those ``mask`` reads); ``mask``: the rows to keep of
    each table (None: all); ``seen`` collects every file's header. Raises a :class:`ResultsError` on the first
    problem."""
    num = (*COUNT_COLUMNS, *SETTING_COLUMNS, "time_s", "energy_j")
    text = tuple(dict.fromkeys((*TEXT_KEYS, *FLAG_COLUMNS, "host", *extra, *carry, *also)))
    try:
        for source, tab, pos in ahead(_tables(files, text, num, set() if seen is None else seen)):
            keep = None if mask is None else mask(tab)   # the next batch is decoded while this one is used
            if keep is not None and not keep.all():
                tab, pos = tab.filter(arrow_of(keep)), pos[keep]
            if tab.num_rows:
                yield check_table(tab, source, pos, extra, carry, warned), tab
    except SourceError as e:
        raise _SOURCE_ERRORS[e.kind](str(e)) from None
