"""Time-only result rows (issue 34): rows no meter measured (``energy_j`` empty, ``meter`` empty; ``note`` says
why). The results reader (:mod:`archline.fit.io.results`) keeps them as configurations of their own (key
:data:`TIME_ONLY`) with NaN energy, and collects their reasons per platform for the time cost table."""

from __future__ import annotations

import numpy as np

from archline.fit.io.batches import rows_with
from archline.fit.io.configs import KeyReducer

#: Configuration key that is 1 on time-only rows (energy_j empty, no meter): kept apart from metered rows.
TIME_ONLY = "time_only"


def time_only_rows(e: np.ndarray, codes: dict[str, tuple[np.ndarray, list[str | None]]]) -> np.ndarray:
    """Rows no meter measured: energy_j empty (or NaN) and the ``meter`` cell empty (issue 34: a run without a
    meter writes time only and says why in ``note``). A row that names a meter and has no energy is broken and
    is refused by the checks that follow."""
    nan = np.isnan(e)
    if not nan.any():
        return np.zeros(e.size, dtype=bool)
    if "meter" not in codes:
        return nan
    named = rows_with(*codes["meter"], lambda v: v is not None and bool(v.strip()))
    return nan & ~(named if named.size == e.size else np.full(e.size, bool(named[0])))


def note_reasons(reducer: KeyReducer, codes: dict[str, tuple[np.ndarray, list[str | None]]],
                  time_only: np.ndarray) -> None:
    """The ``note`` of each time-only row (why it has no energy), once per distinct (platform, note)."""
    reasons = reducer.time_only_reasons
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


def split_time_only(e: np.ndarray, pos: np.ndarray, codes: dict[str, tuple[np.ndarray, list[str | None]]],
                    reducer: KeyReducer, num: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(time-only mask, the other rows' energy, their positions); the time-only rows' reasons go to ``reducer``,
    their configuration key to ``num``."""
    time_only = time_only_rows(e, codes)
    num[TIME_ONLY] = key_of(time_only)
    if not time_only.any():
        return time_only, e, pos
    note_reasons(reducer, codes, time_only)
    return time_only, e[~time_only], pos[~time_only]


def key_of(time_only: np.ndarray) -> np.ndarray:
    """The configuration key column (1.0 on time-only rows); one element when the batch is all one kind."""
    if time_only.any() and not time_only.all():
        return time_only.astype(np.float64)
    return np.full(1, float(time_only.size > 0 and bool(time_only.all())))
