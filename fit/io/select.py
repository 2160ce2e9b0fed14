"""``--where key=value`` filters of ``archline fit``, ``plot`` and ``compare``: select the rows whose text column
``key`` equals ``value``. Repeat a key to allow several values (``--where host=node01 --where host=node02``);
different keys must all hold (``--where platform=gtx580 --where host=node03``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from archline.fit.errors import ArchlineFitError
from archline.fit.io import schema

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


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


def _is_text(frame: pd.DataFrame, column: str) -> bool:
    import pandas as pd

    col = schema.BY_NAME.get(column)
    if col is not None:
        return col.kind in ("text", "bool")
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
            text = sorted(c for c in frame.columns if not c.startswith("_") and _is_text(frame, c))
            raise WhereError(f"--where {key}=...: {what} have no column '{key}' (text columns: {', '.join(text)})")
        if not _is_text(frame, key):
            raise WhereError(f"--where {key}=...: '{key}' is a number column; --where selects on text columns "
                             "(platform, host, run_id, kernel, precision, ...)")
        col = frame[key].astype("string").str.strip()
        hit = col.isin(values).fillna(False).to_numpy(dtype=bool)
        if not hit.any():
            present = sorted({str(v) for v in col.dropna().unique()})
            shown = ", ".join(present[:12]) + (", ..." if len(present) > 12 else "")
            raise WhereError(f"--where {key}={'|'.join(values)}: no rows match ({key} in {what}: {shown or 'empty'})")
        keep &= hit
    if not keep.any():
        raise WhereError(f"no rows match every --where filter together ({', '.join(where)})")
    return frame.loc[keep].reset_index(drop=True)
