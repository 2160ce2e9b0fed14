"""Read and validate ``archline.results/1`` rows (docs/design.md §3) for the fit: CSV files, Parquet files and
hive-partitioned Parquet data sets (:mod:`archline.fit.io.sources`), checked vectorised with pyarrow and
numpy, batch by batch, and reduced at once to configurations (:mod:`archline.fit.io.configs`).

Every user mistake raises a subclass of :class:`~archline.model.errors.ArchlineFitError` whose message names the
file and the line (CSV) or row (Parquet), so the CLI prints it as one line."""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from archline.common.arrow import arrow_of, numpy_of
from archline.common.files import unique_inputs
from archline.common.inputs import show_value
from archline.common.outputs import show
from archline.fit.io.batches import ahead, check_range, column_codes, rows_with
from archline.fit.io.configs import Grouped, KeyReducer, Source
from archline.fit.io.hosts import note_hosts
from archline.fit.io.sources import SourceError, iter_sources, open_source, stdin_paths
from archline.fit.io.time_only import TIME_ONLY, split_time_only
from archline.fit.io.words import check_words
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
#: Text columns read only to check or label rows (meter and note: a time-only row, and why, fit/io/time_only.py).
FLAG_COLUMNS: tuple[str, ...] = ("schema", "backend", "emulated", "checksum_ok", "meter", "note")
_TRUE, _FALSE = schema.TRUE_WORDS, schema.FALSE_WORDS
#: what a row of any machine can be: a timed region of at least a nanosecond, drawing between a microwatt and a
#: megawatt (the power-cap limit); outside is a unit slip (kJ as J) or a corrupted cell, refused with its line
MIN_TIME_S, MIN_POWER_W, MAX_POWER_W = 1e-9, 1e-6, 1e6
_NUMBER = r"^[+-]?((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|inf|infinity|nan)$"


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


_SOURCE_ERRORS: dict[str, type[ResultsError]] = {"read": ResultsError, "empty": EmptyResultsError,
                                                  "schema": SchemaError, "malformed": MalformedRowError}


@dataclass
class ResultsSet:
    """Validated rows of one or more files, grouped into configurations, with the reader's notes."""

    data: Grouped
    files: list[str]
    notes: list[str] = field(default_factory=list)
    hosts: dict[str, dict[str, None]] = field(default_factory=dict)   #: platform -> its rows' hosts (fit/io/hosts.py)

    @property
    def frame(self) -> pd.DataFrame:
        """Row-wise frame (keys repeated on every row): for small data and tests."""
        return self.data.frame()


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


def _validate(tab: pa.Table, src: Source, pos: np.ndarray, reducer: KeyReducer, extra: Sequence[str],
              carry: Sequence[str] = (), warned: set[tuple[str, str]] | None = None) -> int:
    """Check one table and hand its rows to ``reducer``. Returns the number of rows dropped (checksum).

    Per row only what varies is touched: text checks are made once per distinct value (a column of one value
    is one code), numbers are checked with a min and a max, and a count or setting that is the same on every
    row goes on as one element."""
    codes: dict[str, tuple[np.ndarray, list[str | None]]] = {
        c: column_codes(tab.column(c)) for c in (*TEXT_KEYS, *FLAG_COLUMNS, *extra, *carry) if c in tab.column_names}
    sc, sv = codes["schema"]
    bad = rows_with(sc, sv, lambda v: v is None or v.strip() != RESULTS_SCHEMA)
    if bad.any():
        i = _first(bad)
        got = sv[sc[i] if sc.size > 1 else 0]
        if got is not None and schema.newer_major(got.strip()):
            raise SchemaError(f"{src.where(int(pos[i]))}: schema is {got.strip()!r}, a newer major version than "
                              f"this archline reads ('{RESULTS_SCHEMA}'): upgrade archline to read it")
        raise SchemaError(f"{src.where(int(pos[i]))}: schema is {got!r}, expected '{RESULTS_SCHEMA}'")
    check_words(codes, src, pos, warned, warn, BadValueError)
    for c in ("platform", "kernel"):
        empty = rows_with(*codes[c], lambda v: v is None)
        if empty.any():
            raise MalformedRowError(f"{src.where(int(pos[_first(empty)]))}: empty {c}")
    n = tab.num_rows
    t = _numeric(tab, "time_s", src, pos)
    e = _numeric(tab, "energy_j", src, pos)
    num = {c: _numeric(tab, c, src, pos, fill=0.0, one=True) for c in COUNT_COLUMNS}
    num.update({c: _numeric(tab, c, src, pos, one=True) for c in SETTING_COLUMNS})
    time_only, e_chk, pos_e = split_time_only(e, pos, codes, reducer, num)   # energy NaN; the rest checked
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

    def flag(name: str, words: set[str]) -> np.ndarray:
        if name not in codes:
            return np.zeros(1, dtype=bool)
        return rows_with(*codes[name], lambda v: v is not None and v.strip().lower() in words)

    emulated = flag("backend", {"emulated"}) | flag("emulated", _TRUE)
    num["emulated"] = emulated.astype(np.float64)
    keep = ~flag("checksum_ok", _FALSE)
    if keep.size == 1 and not keep[0]:
        return n                # every row failed its checksum: it adds nothing
    text: dict[str, np.ndarray] = {}
    for c in (*TEXT_KEYS, *extra):
        cc, cv = codes.get(c, (np.zeros(1, dtype=np.int64), [None]))
        norm = ["" if v is None else (v.strip() if c in ("platform", *extra) else v.strip().lower()) for v in cv]
        text[c] = reducer.text_codes(c, cc, norm)
    carried: dict[str, np.ndarray] = {}
    for c in carry:
        cc, cv = codes.get(c, (np.zeros(1, dtype=np.int64), [None]))
        carried[c] = reducer.text_codes(c, np.full(n, cc[0]) if cc.size == 1 else cc, cv, full=True)
    if not keep.all():
        text = {k: (v[keep] if v.size == keep.size else v) for k, v in text.items()}
        num = {k: (v[keep] if v.size == keep.size else v) for k, v in num.items()}
        carried = {k: v[keep] for k, v in carried.items()}
        t, e, pos = t[keep], e[keep], pos[keep]
    if t.size:      # a batch whose every row failed its checksum adds nothing
        reducer.add(text, num, t, e, reducer.source_index(src), pos, carried)
    return n - int(t.size)


def _finish(reducer: KeyReducer) -> Grouped:
    data = reducer.finish()
    data.cfg["emulated"] = data.cfg["emulated"] > 0
    data.cfg["work_flop"] = data.cfg["flops_sp"] + data.cfg["flops_dp"]
    return data


def _new_reducer(extra: Sequence[str], max_rows: int | None = None) -> KeyReducer:
    return KeyReducer((*TEXT_KEYS, *extra), (*COUNT_COLUMNS, *SETTING_COLUMNS, "emulated", TIME_ONLY), max_rows)


#: Text columns the rows keep beside their configuration unless told otherwise (``ResultsSet.frame``).
CARRY: tuple[str, ...] = ("host", "run_id", "point_id")


#: Rows ``archline fit`` keeps at most (a uniform sample beyond): about 32 MB; the statistics use every row.
FIT_MAX_ROWS = 1_000_000


def read_results(paths: Iterable[str | Path], where: Sequence[str] = (), extra_keys: Sequence[str] = (),
                 carry: Sequence[str] = CARRY, max_rows: int | None = None) -> ResultsSet:
    """Read, validate and group result files (CSV, Parquet, or Parquet data set directories such as ``archline
    lab collect`` writes), keeping the rows the ``where`` filters select (:mod:`archline.fit.io.select`).
    Raises a :class:`ResultsError` on the first problem.

    Checks: file readable and non-empty; the fixed columns present; ``schema`` is ``archline.results/1`` on every
    row; numbers parse; time_s > 0; energy_j finite and >= 0; counts finite and >= 0. Rows whose ``checksum_ok``
    is false are dropped with a note (a wrong answer is not a measurement). ``extra_keys`` (e.g. a holdout
    column) are read as text and become part of the configuration key; ``carry`` columns ride along per row
    (``archline fit`` carries none).

    ``max_rows`` (no carry columns): memory independent of the number of rows. Each batch's configuration
    statistics are merged into running ones at once and at most ``max_rows`` rows are kept, a uniform
    reservoir sample of all of them when there are more (``data.sampled``); up to ``max_rows`` rows the result is
    exactly that without ``max_rows``.
    """
    from archline.fit.io.select import BatchWhere

    files = unique_inputs(stdin_paths(paths), warn=warn)
    if not files:
        raise ResultsError("no results files given")
    extra = tuple(k for k in extra_keys if k and k not in TEXT_KEYS)
    carry = tuple(c for c in carry if c not in (*TEXT_KEYS, *extra))
    flt = BatchWhere(where)
    if max_rows is not None and carry:
        raise ValueError("read_results: max_rows keeps no per-row columns; pass carry=()")
    reducer = _new_reducer(extra, max_rows)
    dropped = 0
    num = (*COUNT_COLUMNS, *SETTING_COLUMNS, "time_s", "energy_j")
    text = tuple(dict.fromkeys((*TEXT_KEYS, *FLAG_COLUMNS, "host", *extra, *carry, *flt.columns)))
    seen: set[str] = set()
    hosts: dict[str, dict[str, None]] = {}
    warned: set[tuple[str, str]] = set()

    def tables() -> Iterator[tuple[Source, pa.Table, np.ndarray]]:
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

    try:
        for source, tab, pos in ahead(tables()):     # the next batch is decoded while this one is reduced
            keep = flt.mask(tab)
            if keep is not None and not keep.all():
                tab, pos = tab.filter(arrow_of(keep)), pos[keep]
            if tab.num_rows:
                dropped += _validate(tab, source, pos, reducer, extra, carry, warned)
                note_hosts(hosts, tab)
    except SourceError as e:
        raise _SOURCE_ERRORS[e.kind](str(e)) from None
    flt.check(seen)
    notes = [f"dropped {dropped} row(s) whose checksum_ok is false"] if dropped else []
    if reducer.n_rows == 0:
        raise EmptyResultsError("no usable result rows" + (" (every row failed its checksum)" if dropped else ""))
    data = _finish(reducer)
    if data.n_rows == 0:
        raise EmptyResultsError("no usable result rows" + (" (every row failed its checksum)" if dropped else ""))
    return ResultsSet(data=data, files=[str(p) for p in files], notes=notes, hosts=hosts)


def from_frame(frame: pd.DataFrame, extra_keys: Sequence[str] = ()) -> Grouped:
    """Group an in-memory row-wise frame (validated as files are). ``_file``/``_line`` columns, when present,
    name the rows in messages."""
    import pyarrow as pa

    extra = tuple(k for k in extra_keys if k and k not in TEXT_KEYS)
    reducer = _new_reducer(extra)
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
    if len(frame):
        _validate(tab, Source(name, "csv"), pos, reducer, extra)
    return _finish(reducer)


@dataclass
class Group:
    """The rows of one platform, all real or all emulated (unless mixing was asked for)."""

    platform: str
    emulated: bool
    data: Grouped

    @property
    def frame(self) -> pd.DataFrame:
        return self.data.frame()


def group_rows(results: ResultsSet | Grouped, *, include_emulated: bool = True, mix_emulated: bool = False,
               platform: str | None = None) -> list[Group]:
    """Split rows by platform and by emulated/real. Emulated rows are never mixed with real ones unless
    ``mix_emulated`` (the mixed group is then labelled emulated). ``include_emulated=False`` drops them."""
    data = results.data if isinstance(results, ResultsSet) else results
    cfg = data.cfg
    keep = np.ones(len(cfg), dtype=bool)
    if platform is not None:
        keep &= cfg["platform"] == platform
        if not keep.any():
            raise ResultsError(f"no rows for platform '{platform}'")
    if not include_emulated:
        emu = keep & cfg["emulated"]
        keep &= ~cfg["emulated"]
        if not keep.any():
            n_emu = int(cfg["n"][emu].sum())
            raise ResultsError(f"all {n_emu} rows are emulated; pass --include-emulated to fit them")
    groups: list[Group] = []
    for name in sorted(set(cfg["platform"][keep].tolist())):
        on = keep & (cfg["platform"] == name)
        if mix_emulated:
            groups.append(Group(str(name), bool(cfg["emulated"][on].any()), data.select(on)))
            continue
        for emu_flag in (False, True):
            part = on & (cfg["emulated"] == emu_flag)
            if part.any():
                groups.append(Group(str(name), emu_flag, data.select(part)))
    return groups
