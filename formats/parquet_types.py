"""Whether a Parquet file's columns can be read as the fit reads them (one value per cell: text or a number), and
whether a part file's own partition column agrees with its directory (:mod:`archline.formats.dataset` owns the
format and reads the rows)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from archline.common.outputs import show
from archline.formats import schema
from archline.formats.results_file import SourceError

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

__all__ = ["check_column_types", "partition_mismatch", "type_fits"]


def type_fits(t: pa.DataType, numeric: bool) -> bool:
    """Whether a Parquet column of type ``t`` can be read as text (``numeric`` False) or as a number: plain
    numbers, booleans and text (parsed and checked cell by cell) can; a list, struct, map, binary, date or
    time cannot be one cell's value."""
    import pyarrow as pa

    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_null(t) or pa.types.is_boolean(t) or pa.types.is_integer(t) or pa.types.is_floating(t):
        return True
    if pa.types.is_string(t) or pa.types.is_large_string(t) or getattr(pa.types, "is_string_view", bool)(t):
        return True
    return numeric and pa.types.is_decimal(t)


def check_column_types(path: Path, schema_arrow: pa.Schema, text: Sequence[str], num: Sequence[str]) -> None:
    """Refuse (one line naming the file, the column and its type) a column read as text or as a number whose
    Parquet type is neither (``energy_j`` as ``list<double>``, a struct, a map, binary)."""
    for c in (*text, *num):
        i = schema_arrow.get_field_index(c)
        if i < 0:
            continue
        t = schema_arrow.field(i).type
        numeric = c not in text
        if not type_fits(t, numeric):
            want = "a number (double or integer)" if numeric else "text (string)"
            raise SourceError("schema", f"{show(path)}: column {c} is of type {t}, not {want}; an "
                                        f"{schema.SCHEMA} column holds one value per row: rewrite the file with "
                                        f"that column as {want.split(' (')[0]}")


def partition_mismatch(path: Path, col: pa.ChunkedArray, key: str, value: str) -> str | None:
    """The refusal of a part file whose own column ``key`` holds another value than its directory's ``key=value``,
    or empty cells (None when every value agrees): read as the column says, its rows would join another host's or
    run's (compare would merge two runs into one cell), and as the directory says, the file would be misread."""
    import pyarrow as pa
    import pyarrow.compute as pc

    text = pc.utf8_trim_whitespace(col.cast(pa.string()))
    empty = int(pc.sum(pc.or_kleene(pc.is_null(text), pc.equal(text, ""))).as_py() or 0)
    other = [v for v in pc.unique(text).to_pylist() if v and v != value]
    if not other and not empty:
        return None
    if other:
        more = f" (and {len(other) - 1} other value(s))" if len(other) > 1 else ""
        what = f"holds {other[0]!r}{more}"
    else:
        what = f"is empty in {empty} row(s)"
    return (f"{show(path)}: its column {key} {what} but its directory says {key}={value}: fix the file's column, "
            f"or move the file to the partition its rows name")
