"""``--where key=value`` filters of ``archline fit``, ``plot`` and ``compare``: select the rows whose text column
``key`` equals ``value``. Repeat a key to allow several values (``--where host=node01 --where host=node02``);
different keys must all hold (``--where platform=gtx580 --where host=node03``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from archline.formats import schema
from archline.model.errors import ArchlineFitError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import pyarrow as pa


class WhereError(ArchlineFitError):
    pass


def parse_where(items: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """``["host=node03", "host=node04", "platform=gtx580"]`` -> ``{"host": ("node03", "node04"), ...}``."""
    out: dict[str, tuple[str, ...]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key:
            raise WhereError(f"--where {item!r}: expected KEY=VALUE on a text column, e.g. --where host=node03")
        out[key] = (*out.get(key, ()), value)
    return out


def no_column(key: str, text_columns: Iterable[str], what: str = "the results") -> WhereError:
    return WhereError(f"--where {key}=...: {what} have no column '{key}' (text columns: "
                      f"{', '.join(sorted(text_columns))})")


def number_column(key: str) -> WhereError:
    return WhereError(f"--where {key}=...: '{key}' is a number column; --where selects on text columns "
                      "(platform, host, run_id, kernel, precision, ...)")


def no_match(key: str, values: Iterable[str], present: Iterable[str], what: str = "the results") -> WhereError:
    shown = sorted(set(present))
    text = ", ".join(shown[:12]) + (", ..." if len(shown) > 12 else "")
    return WhereError(f"--where {key}={'|'.join(values)}: no rows match ({key} in {what}: {text or 'empty'})")


def none_together(where: Iterable[str]) -> WhereError:
    return WhereError(f"no rows match every --where filter together ({', '.join(where)})")


def schema_kind_is_text(column: str) -> bool | None:
    """True for a text or bool column of the results schema, False for a number column, None if unknown."""
    col = schema.BY_NAME.get(column)
    return None if col is None else col.kind in ("text", "bool")


def _is_text(frame: pd.DataFrame, column: str) -> bool:
    import pandas as pd

    known = schema_kind_is_text(column)
    if known is not None:
        return known
    return not pd.api.types.is_numeric_dtype(frame[column].dtype)


def apply_where(frame: pd.DataFrame, where: Iterable[str], what: str = "the results") -> pd.DataFrame:
    """The rows of ``frame`` that every filter selects; an unknown or numeric column, or a filter that selects
    nothing, is an error naming it (and the values there are)."""
    import numpy as np

    filters = parse_where(where)
    if not filters:
        return frame
    keep = np.ones(len(frame), dtype=bool)
    for key, values in filters.items():
        if key not in frame.columns:
            raise no_column(key, (c for c in frame.columns if not c.startswith("_") and _is_text(frame, c)), what)
        if not _is_text(frame, key):
            raise number_column(key)
        col = frame[key].astype("string").str.strip()
        hit = col.isin(values).fillna(False).to_numpy(dtype=bool)
        if not hit.any():
            raise no_match(key, values, (str(v) for v in col.dropna().unique()), what)
        keep &= hit
    if not keep.any():
        raise none_together(where)
    return frame.loc[keep].reset_index(drop=True)


class BatchWhere:
    """The filters applied to tables read a batch at a time (the fit's reader), with :func:`apply_where`'s
    one-line errors once everything is read (:meth:`check`)."""

    def __init__(self, where: Iterable[str]) -> None:
        self.where = tuple(where)
        self.filters = parse_where(self.where)
        for key in self.filters:
            if schema_kind_is_text(key) is False:
                raise number_column(key)
        self.seen: set[str] = set()
        self.hits = dict.fromkeys(self.filters, 0)
        self.present: dict[str, set[str]] = {k: set() for k in self.filters}
        self.kept = 0

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(self.filters)

    def mask(self, tab: pa.Table) -> np.ndarray | None:
        """Rows of ``tab`` every filter selects (None: no filters, keep all)."""
        from archline.common.arrow import text_codes

        if not self.filters:
            return None
        self.seen.update(tab.column_names)
        keep = np.ones(tab.num_rows, dtype=bool)
        for key, values in self.filters.items():
            if key not in tab.column_names:
                keep[:] = False
                continue
            codes, names = text_codes(tab.column(key))
            stripped = [None if v is None else v.strip() for v in names]
            self.present[key].update(v for v in stripped if v)
            hit = np.isin(codes, [i for i, v in enumerate(stripped) if v in values])
            self.hits[key] += int(hit.sum())
            keep &= hit
        self.kept += int(keep.sum())
        return keep

    def check(self, columns: Iterable[str]) -> None:
        """After the last batch: a filter on a column no file has, one that matched nothing, or filters that
        matched nothing together, as :func:`apply_where` says them. ``columns``: every file's header."""
        cols = set(columns) | self.seen
        for key, values in self.filters.items():
            if key not in cols:
                raise no_column(key, (c for c in cols if schema_kind_is_text(c) is not False))
            if not self.hits[key]:
                raise no_match(key, values, self.present[key])
        if self.filters and not self.kept:
            raise none_together(self.where)
