"""Result rows grouped into configurations for the fit (docs/design.md §3): the checked batches of the reading chain
(:mod:`archline.formats.results_read`: CSV files, Parquet files and hive-partitioned Parquet data sets; the checks
:mod:`archline.formats.results_check`) reduced at once to configurations (:mod:`archline.fit.io.configs`), and
split by platform and provenance (:func:`group_rows`).

Every user mistake raises a subclass of :class:`~archline.formats.results_check.ResultsError` whose message names
the file and the line (CSV) or row (Parquet), so the CLI prints it as one line."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from archline.fit.io.configs import Grouped, KeyReducer
from archline.fit.io.hosts import note_hosts
from archline.formats import results_read
from archline.formats.results_check import (
    COUNT_COLUMNS,
    SETTING_COLUMNS,
    TEXT_KEYS,
    TIME_ONLY,
    CheckedBatch,
    EmptyResultsError,
    ResultsError,
    check_frame,
)

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


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


def _reduce(b: CheckedBatch, reducer: KeyReducer) -> int:
    """Hand one checked batch's rows to ``reducer``. Returns the number of rows dropped (checksum)."""
    for platform, why in b.time_only_reasons.items():
        for part in why:
            reducer.time_only_reasons.setdefault(platform, {})[part] = None
    keep = b.keep
    if keep.size == 1 and not keep[0]:
        return b.n_rows         # every row failed its checksum: it adds nothing
    text = {c: reducer.text_codes(c, cc, cv) for c, (cc, cv) in b.text.items()}
    carried = {c: reducer.text_codes(c, cc, cv, full=True) for c, (cc, cv) in b.carried.items()}
    num, t, e, pos = b.num, b.time_s, b.energy_j, b.pos
    if not keep.all():
        text = {k: (v[keep] if v.size == keep.size else v) for k, v in text.items()}
        num = {k: (v[keep] if v.size == keep.size else v) for k, v in num.items()}
        carried = {k: v[keep] for k, v in carried.items()}
        t, e, pos = t[keep], e[keep], pos[keep]
    if t.size:      # a batch whose every row failed its checksum adds nothing
        reducer.add(text, num, t, e, reducer.source_index(b.source), pos, carried)
    return b.n_rows - int(t.size)


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

    files = results_read.results_files(paths)
    extra = tuple(k for k in extra_keys if k and k not in TEXT_KEYS)
    carry = tuple(c for c in carry if c not in (*TEXT_KEYS, *extra))
    flt = BatchWhere(where)
    if max_rows is not None and carry:
        raise ValueError("read_results: max_rows keeps no per-row columns; pass carry=()")
    reducer = _new_reducer(extra, max_rows)
    dropped = 0
    seen: set[str] = set()
    hosts: dict[str, dict[str, None]] = {}
    warned: set[tuple[str, str]] = set()
    for batch, tab in results_read.checked_batches(files, extra=extra, carry=carry, also=flt.columns, mask=flt.mask,
                                                   seen=seen, warned=warned):
        dropped += _reduce(batch, reducer)
        note_hosts(hosts, tab)
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
    extra = tuple(k for k in extra_keys if k and k not in TEXT_KEYS)
    reducer = _new_reducer(extra)
    batch = check_frame(frame, extra)
    if batch is not None:
        _reduce(batch, reducer)
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
