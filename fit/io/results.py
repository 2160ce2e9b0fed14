"""Read and validate ``archline.results/1`` CSV files (DESIGN.md §3) for the fit.

Vectorised with pandas: a million rows are read and checked in a few seconds. Every user mistake raises a
subclass of :class:`~archline.fit.errors.ArchlineFitError` whose message names the file (and the line, for a
malformed row), so the CLI prints it as one line.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from archline.common.inputs import check_text_file, show_value
from archline.fit.errors import ArchlineFitError
from archline.fit.io import schema

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

RESULTS_SCHEMA = schema.SCHEMA
#: Columns every result row must have for any fit.
REQUIRED_COLUMNS: tuple[str, ...] = schema.REQUIRED_FOR_FIT
#: Work and traffic counts (archline.results/1); an empty cell means 0 (not applicable).
COUNT_COLUMNS: tuple[str, ...] = schema.COUNT_COLUMNS
#: Numeric columns whose empty cell stays NaN (not measured): the settings and the energy bound.
SETTING_COLUMNS: tuple[str, ...] = (*schema.SETTING_COLUMNS, "energy_err_j")
TEXT_COLUMNS: tuple[str, ...] = schema.TEXT_COLUMNS
_TRUE = schema.TRUE_WORDS


class ResultsError(ArchlineFitError):
    """Base class of every input problem found while reading result rows."""


class EmptyResultsError(ResultsError):
    pass


class SchemaError(ResultsError):
    pass


class MalformedRowError(ResultsError):
    pass


class BadValueError(ResultsError):
    pass


class MissingColumnError(ResultsError):
    pass


class TooFewPointsError(ResultsError):
    pass


class PrecisionError(ResultsError):
    pass


@dataclass
class ResultsSet:
    """Validated rows of one or more files, with the reader's notes (rows dropped and why)."""

    frame: pd.DataFrame
    files: list[str]
    notes: list[str] = field(default_factory=list)


def _where(frame: pd.DataFrame, pos: int) -> str:
    """file:line of the row at position ``pos``."""
    return f"{frame['_file'].iloc[pos]}:{int(frame['_line'].iloc[pos])}"


def _read_one(path: Path) -> pd.DataFrame:
    import pandas as pd

    if path.is_dir() or path.suffix == ".parquet":
        return _read_parquet(path)
    check_text_file(path, error=ResultsError, what="results file")   # missing, binary, empty, cut off mid-row
    dtype = {c: "string" for c in TEXT_COLUMNS}
    try:
        try:  # pyarrow's multithreaded parser is ~2x faster; on any problem re-read with the C parser,
            # whose error names the line
            frame = pd.read_csv(path, dtype=dtype, engine="pyarrow")  # type: ignore[call-overload]
        except (ImportError, ValueError):
            frame = pd.read_csv(path, dtype=dtype, keep_default_na=True, skipinitialspace=True, low_memory=False)
    except pd.errors.ParserError as e:
        msg = str(e).strip().splitlines()[-1] if str(e).strip() else "parse error"
        raise MalformedRowError(f"{path}: malformed CSV: {msg}") from None
    except pd.errors.EmptyDataError:
        raise EmptyResultsError(f"{path}: empty file; expected an {RESULTS_SCHEMA} CSV") from None
    except UnicodeDecodeError:
        raise SchemaError(f"{path}: not a text CSV file") from None
    if len(frame) == 0:
        raise EmptyResultsError(f"{path}: header only, no result rows")
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise SchemaError(f"{path}: not an {RESULTS_SCHEMA} file: missing column(s) {', '.join(missing)}")
    frame["_file"] = str(path)
    frame["_line"] = np.arange(2, len(frame) + 2, dtype=np.int64)  # header is line 1; rows are one line each
    return frame


def _read_parquet(path: Path) -> pd.DataFrame:
    """A data set directory (``archline lab collect``) or one Parquet file of result rows."""
    from archline.fit.io.dataset import DatasetError, read_frame

    try:
        frame = read_frame(path)
    except DatasetError as e:
        raise ResultsError(str(e)) from None
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise SchemaError(f"{path}: not an {RESULTS_SCHEMA} data set: missing column(s) {', '.join(missing)}")
    frame["_file"] = str(path)
    frame["_line"] = np.arange(1, len(frame) + 1, dtype=np.int64)  # row number in the data set
    return frame


def _to_numeric(frame: pd.DataFrame, column: str, *, fill_zero: bool) -> None:
    import pandas as pd

    raw = frame[column]
    if pd.api.types.is_numeric_dtype(raw.dtype) and not pd.api.types.is_bool_dtype(raw.dtype):
        num = raw.astype(np.float64)
        frame[column] = num.fillna(0.0) if fill_zero else num
        return
    num = pd.to_numeric(raw, errors="coerce")
    suspect = num.isna() & raw.notna()
    bad = suspect & (raw.astype("string").str.strip().str.len() > 0) if bool(suspect.any()) else suspect
    if bool(bad.any()):
        pos = int(np.argmax(bad.to_numpy(dtype=bool)))
        raise MalformedRowError(f"{_where(frame, pos)}: column {column} is not a number: {raw.iloc[pos]!r}")
    num = num.astype(np.float64)
    frame[column] = num.fillna(0.0) if fill_zero else num


def read_results(paths: Iterable[str | Path], where: Sequence[str] = ()) -> ResultsSet:
    """Read, concatenate and validate result CSVs, Parquet files and data set directories (``archline lab
    collect``), keeping the rows the ``where`` filters select (:mod:`archline.fit.io.select`). Raises a
    :class:`ResultsError` on the first problem.

    Checks: file readable and non-empty; the fixed columns present; ``schema`` is ``archline.results/1`` on every
    row; numbers parse; time_s > 0; energy_j finite and >= 0; counts finite and >= 0. Rows whose
    ``checksum_ok`` is false are dropped with a note (a wrong answer is not a measurement). Adds the columns
    ``emulated`` (bool), ``work_flop`` (flops_sp + flops_dp) and ``_file``/``_line`` for messages.
    """
    import pandas as pd

    files = [Path(p) for p in paths]
    if not files:
        raise ResultsError("no results files given")
    frames = [_read_one(p) for p in files]
    frame = pd.concat(frames, ignore_index=True, sort=False) if len(frames) > 1 else frames[0]
    if where:
        from archline.fit.io.select import apply_where

        frame = apply_where(frame, where)
    notes: list[str] = []

    schema_col = frame["schema"].astype("string").str.strip()
    bad_schema = (schema_col != RESULTS_SCHEMA).fillna(True).to_numpy(dtype=bool)
    if bad_schema.any():
        pos = int(np.argmax(bad_schema))
        raise SchemaError(f"{_where(frame, pos)}: schema is {frame['schema'].iloc[pos]!r}, expected "
                          f"'{RESULTS_SCHEMA}'")
    for col in ("platform", "kernel"):
        empty = (frame[col].isna() | (frame[col].astype("string").str.strip() == "")).to_numpy(dtype=bool)
        if empty.any():
            raise MalformedRowError(f"{_where(frame, int(np.argmax(empty)))}: empty {col}")
    for col in ("time_s", "energy_j"):
        _to_numeric(frame, col, fill_zero=False)
    for col in COUNT_COLUMNS:
        if col not in frame.columns:
            frame[col] = 0.0
        _to_numeric(frame, col, fill_zero=True)
    for col in SETTING_COLUMNS:
        if col in frame.columns:
            _to_numeric(frame, col, fill_zero=False)

    e = frame["energy_j"].to_numpy()
    bad = ~np.isfinite(e)
    if bool(bad.any()):
        raise BadValueError(f"{_where(frame, int(np.argmax(bad)))}: energy_j is missing or NaN")
    bad = e < 0
    if bool(bad.any()):
        i = int(np.argmax(bad))
        raise BadValueError(f"{_where(frame, i)}: negative energy_j ({e[i]:g} J)")
    t = frame["time_s"].to_numpy()
    bad = ~np.isfinite(t) | (t <= 0)
    if bool(bad.any()):
        i = int(np.argmax(bad))
        raise BadValueError(f"{_where(frame, i)}: time_s must be a positive number, got {show_value(t[i])}")
    counts = frame[list(COUNT_COLUMNS)].to_numpy()
    bad_rows = (~np.isfinite(counts) | (counts < 0)).any(axis=1)
    if bool(bad_rows.any()):
        i = int(np.argmax(bad_rows))
        j = int(np.argmax((~np.isfinite(counts[i])) | (counts[i] < 0)))
        raise BadValueError(f"{_where(frame, i)}: {COUNT_COLUMNS[j]} must be >= 0, "
                            f"got {counts[i, j]:g}")

    frame["platform"] = frame["platform"].astype("string").str.strip()
    frame["kernel"] = frame["kernel"].astype("string").str.strip().str.lower()
    frame["precision"] = frame["precision"].astype("string").str.strip().str.lower().fillna("")
    emulated = np.zeros(len(frame), dtype=bool)
    if "backend" in frame.columns:
        emulated |= (frame["backend"].astype("string").str.strip().str.lower() == "emulated").fillna(False)\
            .to_numpy(dtype=bool)
    if "emulated" in frame.columns:
        emulated |= frame["emulated"].astype("string").str.strip().str.lower().isin(_TRUE).fillna(False)\
            .to_numpy(dtype=bool)
    frame["emulated"] = emulated
    if "checksum_ok" in frame.columns:
        ck = frame["checksum_ok"].astype("string").str.strip().str.lower()
        failed = ck.isin(schema.FALSE_WORDS).fillna(False).to_numpy(dtype=bool)
        if failed.any():
            notes.append(f"dropped {int(failed.sum())} row(s) whose checksum_ok is false")
            frame = frame.loc[~failed].reset_index(drop=True)
    frame["work_flop"] = frame["flops_sp"] + frame["flops_dp"]
    if len(frame) == 0:
        raise EmptyResultsError("no usable result rows (every row failed its checksum)")
    return ResultsSet(frame=frame, files=[str(p) for p in files], notes=notes)


@dataclass
class Group:
    """The rows of one platform, all real or all emulated (unless mixing was asked for)."""

    platform: str
    emulated: bool
    frame: pd.DataFrame


def group_rows(results: ResultsSet | pd.DataFrame, *, include_emulated: bool = True,
               mix_emulated: bool = False, platform: str | None = None) -> list[Group]:
    """Split rows by platform and by emulated/real. Emulated rows are never mixed with real ones unless
    ``mix_emulated`` (the mixed group is then labelled emulated). ``include_emulated=False`` drops them."""
    frame = results.frame if isinstance(results, ResultsSet) else results
    if platform is not None:
        frame = frame.loc[frame["platform"] == platform]
        if len(frame) == 0:
            raise ResultsError(f"no rows for platform '{platform}'")
    if not include_emulated:
        n_emu = int(frame["emulated"].sum())
        frame = frame.loc[~frame["emulated"].to_numpy(dtype=bool)]
        if len(frame) == 0:
            raise ResultsError(f"all {n_emu} rows are emulated; pass --include-emulated to fit them")
    groups: list[Group] = []
    for name, sub in frame.groupby("platform", sort=True):
        if mix_emulated:
            groups.append(Group(str(name), bool(sub["emulated"].any()), sub.reset_index(drop=True)))
            continue
        for emu, part in sub.groupby("emulated", sort=True):
            groups.append(Group(str(name), bool(emu), part.reset_index(drop=True)))
    return groups


def require_columns(frame: pd.DataFrame, columns: Sequence[str], model: str) -> None:
    """A model's extra inputs (e.g. core_v, mem_v for dvfs) must be present and filled on every row it uses."""
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise MissingColumnError(f"the {model} model needs column(s) {', '.join(missing)}, which the data lack")
    for c in columns:
        v = frame[c].to_numpy(dtype=np.float64)
        bad = ~np.isfinite(v) | (v <= 0)
        if bad.any():
            raise BadValueError(f"{_where(frame, int(np.argmax(bad)))}: the {model} model needs a "
                                f"positive {c}, got {show_value(v[int(np.argmax(bad))])}")


def require_points(n_points: int, n_params: int, model: str, what: str = "rows") -> None:
    if n_points < n_params + 1:
        raise TooFewPointsError(f"the {model} model has {n_params} parameters but only {n_points} {what}; "
                                f"need at least {n_params + 1}")


def finite_or_none(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None
