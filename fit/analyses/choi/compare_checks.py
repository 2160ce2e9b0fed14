"""The checks ``archline fit`` makes of its input, made of ``archline compare``'s too (breaker 28c).

A cell of the comparison is one run of one host (or one host, or one file): the same unit in which a result is
measured. A run written in kJ sits 1000x off the others, and its fit (a cell) is as clean as any, so the fit of
each cell cannot see it; but the group's mean mixes it with the good runs, and the between-run variance it
brings hides it from the tests (nothing flagged). So, as ``archline fit`` does for its files
(:mod:`archline.fit.regress.sources`), compare's input is checked source by source on the configurations the
sources share (the configuration without the host and run keys), a source being a (host, run) cell, or a file
where the rows have neither; and each cell fit's own warnings that say the fit is not to be used (non-physical,
a unit slip, a significantly negative coefficient, a collapsed fit) are carried, naming the cell.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from archline.fit.io.configs import Grouped
    from archline.fit.regress.result import FitResult

#: the per-configuration statistics and bookkeeping in a configuration table (the rest are its keys)
_STATS = frozenset({"n", "time_s", "energy_j", "time_ss", "energy_ss", "time_energy_sp", "log_time_mean",
                    "log_time_ss", "time_min1", "time_min2", "time_min3", "first_src", "first_pos"})
#: the keys that name a source (the unit a result is measured in), not a configuration
_SOURCE_KEYS = ("host", "run_id")
#: the words of a cell fit's warning that make its coefficients unusable (carried into compare's warnings)
CARRIED = ("non-physical fit", "that of the", "the sources disagree", "significantly negative", "the fit kept")


def _codes(values: np.ndarray) -> np.ndarray:
    arr = np.asarray(values)
    if arr.dtype == object:
        arr = arr.astype(str)
    return np.unique(arr, return_inverse=True)[1].reshape(-1).astype(np.int64)


def _config_ids(data: Grouped) -> np.ndarray:
    """Each configuration's index among the configurations without the source keys (host, run_id)."""
    keys = [k for k in data.cfg.columns if k not in _STATS and k not in _SOURCE_KEYS]
    if not keys:
        return np.zeros(data.n_configs, dtype=np.int64)
    table = np.stack([_codes(data.cfg[k]) for k in keys], axis=1)
    return np.unique(table, axis=0, return_inverse=True)[1].reshape(-1).astype(np.int64)


def _source_names(data: Grouped) -> tuple[np.ndarray, list[str]]:
    """Each kept row's source (index into the names): its (host, run_id) where the rows have them, else its
    file (a data set's part with its run directory)."""
    from archline.fit.regress.sources import source_key

    cfg = data.cfg
    parts = [np.asarray(cfg[k]).astype(str) if k in cfg else np.full(data.n_configs, "") for k in _SOURCE_KEYS]
    per_cfg = np.array(["/".join(f"{k}={v}" for k, v in zip(_SOURCE_KEYS, vals, strict=True) if v)
                        for vals in zip(*parts, strict=True)], dtype=object) if data.n_configs else \
        np.zeros(0, dtype=object)
    files = np.array([source_key(s.name) for s in data.sources] or [""], dtype=object)
    row_names = per_cfg[data.g] if data.n_kept else np.zeros(0, dtype=object)
    no_cell = row_names == ""
    if no_cell.any():
        row_names[no_cell] = files[data.src[no_cell]]
    names, unit = np.unique(row_names.astype(str), return_inverse=True)
    return unit.reshape(-1).astype(np.int64), [str(n) for n in names]


def source_warnings(data: Grouped) -> tuple[list[str], list[dict[str, Any]]]:
    """The source check of :mod:`archline.fit.regress.sources` over compare's input (one platform's
    configurations): the warnings and the ``off_sources`` entries."""
    from archline.fit.regress.sources import MAX_NAMED, off_sources

    if data.n_kept == 0:
        return [], []
    unit, names = _source_names(data)
    if len(names) < 2:
        return [], []
    g = _config_ids(data)[data.g]
    try:
        off = off_sources(data.e, data.t, g, unit, names)
    except (np.linalg.LinAlgError, ValueError, ZeroDivisionError, FloatingPointError):  # never cost the compare
        return [], []
    said = [o.message() for o in off[:MAX_NAMED]]
    if len(off) > MAX_NAMED:
        said.append(f"{len(off) - MAX_NAMED} more source(s) off the others by a large factor not listed")
    return said, [o.as_json() for o in off]


def cell_warnings(fits: dict[str, dict[str, FitResult]]) -> list[str]:
    """The warnings of each cell's fit that make its coefficients unusable, naming the cell."""
    out: list[str] = []
    for label, per in fits.items():
        for cell, r in per.items():
            name = label if cell == label else f"{label} {cell}"
            out += [f"{name}: {w}" for w in dict.fromkeys(r.warnings) if any(c in w for c in CARRIED)]
    return out


def unreliable_note(scope: str, n_sources: int, n_cells: int) -> str:
    what = []
    if n_sources:
        what.append(f"{n_sources} source(s) off the others by a unit-like factor")
    if n_cells:
        what.append(f"{n_cells} warning(s) on the fits of single cells")
    return (f"{scope}: the comparison is unreliable: " + " and ".join(what) + " (see the warnings); a group's "
            "mean mixes them in and the variation between its fits hides them from the tests")
