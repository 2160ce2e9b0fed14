"""The checks of ``archline.results/1`` rows (docs/formats.md "What a reader requires"), one Arrow table at a time,
vectorised with numpy: every reader of result rows (the fit's, through :mod:`archline.formats.results_read`, and
the data set writer's :func:`archline.formats.dataset.check_rows`) refuses the same rows with the same line.

Per row only what varies is touched: text checks are made once per distinct value (a column of one value is one
code), numbers with one min and one max, and a count or setting that is the same on every row goes on as one
element. Every user mistake raises a subclass of :class:`ResultsError` whose message names the file and the line
(CSV) or row (Parquet), so the CLI prints it as one line."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from archline.common.arrow import check_range, column_codes, numpy_of, rows_with
from archline.common.inputs import show_value
from archline.formats import schema
from archline.model.errors import ArchlineFitError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import pyarrow as pa

RESULTS_SCHEMA = schema.SCHEMA
#: Columns every result row must have for any fit.
REQUIRED_COLUMNS: tuple[str, ...] = schema.REQUIRED_FOR_FIT
#: Work and traffic counts (archline.results/1); an empty cell means 0 (not applicable).
COUNT_COLUMNS: tuple[str, ...] = schema.COUNT_COLUMNS
#: Numeric setting columns; an empty cell stays NaN (not measured).
SETTING_COLUMNS: tuple[str, ...] = schema.SETTING_COLUMNS
#: Text columns that tell configurations apart (with the counts, the settings and ``emulated``).
TEXT_KEYS: tuple[str, ...] = ("platform", "kernel", "precision", "level")
#: Text columns read only to check or label rows (meter and note: a time-only row, and why).
FLAG_COLUMNS: tuple[str, ...] = ("schema", "backend", "emulated", "checksum_ok", "meter", "note")
#: Configuration key that is 1 on time-only rows (energy_j empty, no meter): kept apart from metered rows.
TIME_ONLY = "time_only"
_TRUE, _FALSE = schema.TRUE_WORDS, schema.FALSE_WORDS
#: the ``backend`` of rows an emulator wrote (with ``emulated`` true, the provenance rule :func:`is_emulated`)
EMULATED_BACKEND = "emulated"
#: what a row of any machine can be: a timed region of at least a nanosecond, drawing between a microwatt and a
#: megawatt (the power-cap limit); outside is a unit slip (kJ as J) or a corrupted cell, refused with its line
MIN_TIME_S, MIN_POWER_W, MAX_POWER_W = 1e-9, 1e-6, 1e6
_NUMBER = r"^[+-]?((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|inf|infinity|nan)$"
#: column -> (its known values, whether another value is refused rather than warned of)
WORDS: dict[str, tuple[tuple[str, ...], bool]] = {"precision": (schema.PRECISIONS, True),
                                                  "level": (schema.LEVELS, True),
                                                  "kernel": (schema.KERNELS, False)}
Codes = dict[str, tuple[np.ndarray, list[str | None]]]


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


def warn(message: str) -> None:
    """A reader's warning, printed by the CLI as ``archline: warning: ...``."""
    logging.getLogger("archline.fit").warning(f"archline: warning: {message}")


def is_emulated(backend: object, emulated: object) -> bool:
    """THE provenance rule of result rows: a row (or a table) is emulated when its back end is the emulator or its
    ``emulated`` cell is true; it is labelled so wherever it goes and never mixed silently with real rows."""
    return (str(backend).strip().lower() == EMULATED_BACKEND
            or (emulated is not None and str(emulated).strip().lower() in _TRUE))


def emulated_rows(frame: pd.DataFrame) -> pd.Series:
    """:func:`is_emulated` on every row of a row-wise frame (a missing column or an empty cell says nothing)."""
    import pandas as pd

    out = pd.Series(False, index=frame.index)
    for col, words in (("backend", {EMULATED_BACKEND}), ("emulated", _TRUE)):
        if col in frame:
            out |= frame[col].astype("string").str.strip().str.lower().isin(words).fillna(False).astype(bool)
    return out


def checksum_failed_rows(frame: pd.DataFrame) -> pd.Series:
    """True for the rows of a row-wise frame whose checksum_ok says false (missing column or empty cell: not
    failed): a wrong answer is not a measurement."""
    import pandas as pd

    if "checksum_ok" not in frame:
        return pd.Series(False, index=frame.index)
    ck = frame["checksum_ok"].astype("string").str.strip().str.lower()
    return ck.isin(_FALSE).fillna(False).astype(bool)


@dataclass(frozen=True)
class Source:
    """One input file: where a row is, in words. CSV rows are named by line (header = line 1), Parquet rows by
    their 1-based row number in the file."""

    name: str
    kind: str  # "csv" | "parquet"

    def where(self, pos: int) -> str:
        return f"{self.name}:{pos}" if self.kind == "csv" else f"{self.name}, row {pos}"


@dataclass
class CheckedBatch:
    """One table's rows, checked: what the fit groups (keys as dictionary codes, numbers one element when the same
    on every row), all rows, with ``keep`` false on those whose checksum failed (one element when all alike)."""

    source: Source
    n_rows: int
    text: Codes              #: TEXT_KEYS and the extra keys: codes and normalised values ("" = empty)
    carried: Codes           #: carry columns: codes (one per row) and values as written
    num: dict[str, np.ndarray]
    time_s: np.ndarray
    energy_j: np.ndarray
    pos: np.ndarray
    keep: np.ndarray
    time_only_reasons: dict[str, dict[str, None]]   #: platform -> why its time-only rows have no energy


def _first(mask: np.ndarray) -> int:
    return int(np.argmax(mask))


def _numeric(tab: pa.Table, name: str, src: Source, pos: np.ndarray, fill: float = math.nan,
             one: bool = False) -> np.ndarray:
    """A column as float64 (``fill`` where empty); text that is not a number is a one-line error. With ``one``,
    a column with no value at all comes back as one element (the same value on every row)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = tab.num_rows
    if name not in tab.column_names:
        return np.full(1 if one else n, fill)
    col = tab.column(name)
    if pa.types.is_null(col.type) or (one and col.null_count == n):
        return np.full(1 if one else n, fill)
    if pa.types.is_integer(col.type) or pa.types.is_floating(col.type) or pa.types.is_boolean(col.type):
        return numpy_of(col if col.type == pa.float64() else pc.cast(col, pa.float64()), fill=fill)
    s = pc.utf8_trim_whitespace(pc.cast(col, pa.string()))
    ok = pc.or_kleene(pc.match_substring_regex(s, _NUMBER, ignore_case=True), pc.equal(s, ""))
    bad = numpy_of(pc.invert(ok.fill_null(True)), fill=0).astype(bool)
    if bad.any():
        i = _first(bad)
        raise MalformedRowError(f"{src.where(int(pos[i]))}: column {name} is not a number: {s[i].as_py()!r}")
    s = pc.if_else(pc.equal(s, ""), pa.scalar(None, pa.string()), s)
    return numpy_of(pc.cast(s, pa.float64()), fill=fill)


def _refuse_non_finite(x: np.ndarray, name: str, src: Source, pos: np.ndarray, nan: str = "missing or NaN") -> None:
    """The first non-finite value of column ``name``, said for what it is: an infinity (an overflow or a
    division by zero upstream) is not a missing cell. Returns when every value is finite."""
    bad = ~np.isfinite(x)
    if not bad.any():
        return
    i = _first(bad)
    where = src.where(int(pos[i] if pos.size == x.size else pos[0]))
    if np.isnan(x[i]):
        raise BadValueError(f"{where}: column {name} is {nan}; every row needs a number there")
    raise BadValueError(f"{where}: column {name} is {'-inf' if x[i] < 0 else 'inf'} (not a finite number); "
                        f"fix or drop the row")


def check_words(codes: Codes, src: Source, pos: np.ndarray, warned: set[tuple[str, str]] | None,
                warn: Callable[[str], None]) -> None:
    """Refuse (naming the first row) an unknown precision or level; warn through ``warn`` of an unknown kernel,
    once per value (``warned`` remembers them over a read; None: no warning): another kernel's rows are fitted by
    their counts, which, not the name, enter the model."""
    for c, (known, refuse) in WORDS.items():
        if c not in codes:
            continue
        cc, cv = codes[c]
        odd = [v for v in cv if v is not None and v.strip().lower() not in known]
        if not odd:
            continue
        allowed = ", ".join(known) + (" or empty" if c != "kernel" else "")
        if refuse:
            bad = rows_with(cc, cv, lambda v, o=odd: v in o)      # type: ignore[misc]
            i = int(np.argmax(bad))
            raise BadValueError(f"{src.where(int(pos[i] if bad.size > 1 else pos[0]))}: {c} {odd[0].strip()!r} is "
                                f"not an {schema.SCHEMA} {c} (known: {allowed}); fix or drop the row")
        for v in odd:
            if warned is not None and (c, v.strip()) not in warned:
                warned.add((c, v.strip()))
                warn(f"{src.name}: {c} {v.strip()!r} is not one archline knows ({allowed}); its rows are fitted by "
                     f"their counts like any other")


def time_only_rows(e: np.ndarray, codes: Codes) -> np.ndarray:
    """Rows no meter measured (issue 34): energy_j empty (or NaN) and the ``meter`` cell empty (a run without a
    meter writes time only and says why in ``note``). A row that names a meter and has no energy is broken and
    is refused by the checks that follow."""
    nan = np.isnan(e)
    if not nan.any():
        return np.zeros(e.size, dtype=bool)
    if "meter" not in codes:
        return nan
    named = rows_with(*codes["meter"], lambda v: v is not None and bool(v.strip()))
    return nan & ~(named if named.size == e.size else np.full(e.size, bool(named[0])))


def _note_reasons(reasons: dict[str, dict[str, None]], codes: Codes, time_only: np.ndarray) -> None:
    """The ``note`` of each time-only row (why it has no energy), once per distinct (platform, note)."""
    pc, pv = codes["platform"]
    nc, nv = codes.get("note", (np.zeros(1, dtype=np.int64), [None]))
    n = time_only.size
    p_idx = np.broadcast_to(pc, (n,))[time_only] if pc.size in (1, n) else pc[time_only]
    n_idx = np.broadcast_to(nc, (n,))[time_only] if nc.size in (1, n) else nc[time_only]
    for a, b in dict.fromkeys(zip(p_idx.tolist(), n_idx.tolist(), strict=True)):
        platform, note = (pv[a] or "").strip(), (nv[b] or "").strip()
        # a row's note joins several ("; "): the reason is the part the run wrote for having no meter
        why = [part.strip() for part in note.split("; ") if part.strip().lower().startswith(("time only", "no "))]
        for part in why or ["no meter: the rows name none"]:
            reasons.setdefault(platform, {})[part] = None


def _time_only_key(time_only: np.ndarray) -> np.ndarray:
    """The configuration key column (1.0 on time-only rows); one element when the batch is all one kind."""
    if time_only.any() and not time_only.all():
        return time_only.astype(np.float64)
    return np.full(1, float(time_only.size > 0 and bool(time_only.all())))


def _check_schema(codes: Codes, src: Source, pos: np.ndarray) -> None:
    sc, sv = codes["schema"]
    bad = rows_with(sc, sv, lambda v: v is None or v.strip() != RESULTS_SCHEMA)
    if bad.any():
        i = _first(bad)
        got = sv[sc[i] if sc.size > 1 else 0]
        if got is not None and schema.newer_major(got.strip()):
            raise SchemaError(f"{src.where(int(pos[i]))}: schema is {got.strip()!r}, a newer major version than "
                              f"this archline reads ('{RESULTS_SCHEMA}'): upgrade archline to read it")
        raise SchemaError(f"{src.where(int(pos[i]))}: schema is {got!r}, expected '{RESULTS_SCHEMA}'")


def check_table(tab: pa.Table, src: Source, pos: np.ndarray, extra: Sequence[str] = (), carry: Sequence[str] = (),
                warned: set[tuple[str, str]] | None = None) -> CheckedBatch:
    """Check one table of result rows (``pos``: their lines or row numbers) or raise the first problem; ``extra``
    text columns are keys beside :data:`TEXT_KEYS`, ``carry`` text columns ride along per row."""
    codes: Codes = {c: column_codes(tab.column(c))
                    for c in (*TEXT_KEYS, *FLAG_COLUMNS, *extra, *carry) if c in tab.column_names}
    _check_schema(codes, src, pos)
    check_words(codes, src, pos, warned, warn)
    for c in ("platform", "kernel"):
        empty = rows_with(*codes[c], lambda v: v is None)
        if empty.any():
            raise MalformedRowError(f"{src.where(int(pos[_first(empty)]))}: empty {c}")
    n = tab.num_rows
    t = _numeric(tab, "time_s", src, pos)
    e = _numeric(tab, "energy_j", src, pos)
    num = {c: _numeric(tab, c, src, pos, fill=0.0, one=True) for c in COUNT_COLUMNS}
    num.update({c: _numeric(tab, c, src, pos, one=True) for c in SETTING_COLUMNS})
    time_only = time_only_rows(e, codes)          # energy NaN, no meter: kept apart, the rest checked
    num[TIME_ONLY] = _time_only_key(time_only)
    reasons: dict[str, dict[str, None]] = {}
    e_chk, pos_e = e, pos
    if time_only.any():
        _note_reasons(reasons, codes, time_only)
        e_chk, pos_e = e[~time_only], pos[~time_only]
    if not check_range(e_chk, 0.0, above=False)[0]:
        _refuse_non_finite(e_chk, "energy_j", src, pos_e)
        i = _first(e_chk < 0)
        raise BadValueError(f"{src.where(int(pos_e[i]))}: negative energy_j ({e_chk[i]:g} J)")
    if not check_range(t, 0.0, above=True)[0]:
        _refuse_non_finite(t, "time_s", src, pos)
        i = _first(t <= 0)
        raise BadValueError(f"{src.where(int(pos[i]))}: time_s must be a positive number, got {show_value(t[i])}")
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        power = e / t
    odd = ~((t >= MIN_TIME_S) & (time_only | ((power > MIN_POWER_W) & (power < MAX_POWER_W))))
    if odd.any():                  # a unit slip or a corrupted cell, never a measurement: said, not fitted
        i = _first(odd)
        raise BadValueError(f"{src.where(int(pos[i]))}: time_s = {show_value(t[i])} with energy_j = "
                            f"{show_value(e[i])} is not a measurement (mean power {power[i]:.3g} W; a row needs at "
                            f"least {MIN_TIME_S:g} s and between {MIN_POWER_W:g} W and {MAX_POWER_W:g} W)")
    if "checksum_ok" in codes:
        odd_ck = rows_with(*codes["checksum_ok"], lambda v: v is not None and bool(v.strip())
                           and v.strip().lower() not in _TRUE | _FALSE)
        if odd_ck.any():
            i = _first(odd_ck)
            raise BadValueError(f"{src.where(int(pos[i]))}: checksum_ok must be true, false or empty")
    for c in COUNT_COLUMNS:
        x = num[c]
        ok, lo, hi = check_range(x, 0.0, above=False)
        if not ok:
            _refuse_non_finite(x, c, src, pos, nan="NaN (an empty cell means 0)")
            i = _first(x < 0)
            raise BadValueError(f"{src.where(int(pos[i]))}: {c} must be >= 0, got {x[i]:g}")
        if x.size > 1 and lo == hi:     # the same on every row (-0.0 == 0.0, as the key says)
            num[c] = x[:1]

    def flag(name: str, hit: Callable[[str | None], bool]) -> np.ndarray:
        return rows_with(*codes[name], hit) if name in codes else np.zeros(1, dtype=bool)

    emulated = flag("backend", lambda v: is_emulated(v, None)) | flag("emulated", lambda v: is_emulated("", v))
    num["emulated"] = emulated.astype(np.float64)
    keep = ~flag("checksum_ok", lambda v: v is not None and v.strip().lower() in _FALSE)
    text: Codes = {}
    for c in (*TEXT_KEYS, *extra):
        cc, cv = codes.get(c, (np.zeros(1, dtype=np.int64), [None]))
        text[c] = cc, ["" if v is None else (v.strip() if c in ("platform", *extra) else v.strip().lower())
                       for v in cv]
    carried: Codes = {}
    for c in carry:
        cc, cv = codes.get(c, (np.zeros(1, dtype=np.int64), [None]))
        carried[c] = (np.full(n, cc[0]) if cc.size == 1 else cc), cv
    return CheckedBatch(src, n, text, carried, num, t, e, pos, keep, reasons)


def frame_table(frame: pd.DataFrame, extra: Sequence[str] = ()) -> tuple[pa.Table, Source, np.ndarray]:
    """An in-memory row-wise frame as the table, source and positions :func:`check_table` takes: its text columns
    as text, ``schema`` filled in when absent, ``_file``/``_line`` columns (when present) naming the rows."""
    import pyarrow as pa

    cols = [c for c in frame.columns if c in (*TEXT_KEYS, *FLAG_COLUMNS, *extra, *COUNT_COLUMNS, *SETTING_COLUMNS,
                                                "time_s", "energy_j")]
    sub = frame[cols].copy()
    for c in (*TEXT_KEYS, *FLAG_COLUMNS, *extra):
        if c in sub.columns:
            sub[c] = sub[c].astype("string")
    if "schema" not in sub.columns:
        sub["schema"] = RESULTS_SCHEMA
    tab = pa.Table.from_pandas(sub, preserve_index=False)
    name = str(frame["_file"].iloc[0]) if "_file" in frame.columns and len(frame) else "<frame>"
    pos = (frame["_line"].to_numpy(dtype=np.int64) if "_line" in frame.columns
           else np.arange(2, len(frame) + 2, dtype=np.int64))
    return tab, Source(name, "csv"), pos


def check_frame(frame: pd.DataFrame, extra: Sequence[str] = ()) -> CheckedBatch | None:
    """Check an in-memory row-wise frame as files are (None for no rows)."""
    tab, src, pos = frame_table(frame, extra)
    return check_table(tab, src, pos, extra) if len(frame) else None
