"""Whole-source scale check of a fit: a file (or a data set's host/run) whose rows all sit off the others by one
large factor, and a fit whose quality no physical model has.

The outlier report (:mod:`archline.fit.regress.outliers`) compares configuration means; a whole file written in
the wrong unit (energy in kJ in the ``energy_j`` column, time in ms in ``time_s``) shares its configurations with
the good files, so it moves every mean alike and no configuration stands out: the coefficients are silently off
(halved, or pi0 a thousand times too small), and a fit that mixes both scales is no yardstick either (it can
predict negative energies for half the rows). So this check compares the sources with each other, model-free:

1. The rows are grouped by source: an input file, or for a data set written by ``archline lab collect`` the
   ``.../host=<h>/run_id=<r>`` directory of its parts (one run is measured in one unit).
2. Each row's ``log(energy_j)`` and ``log(time_s)`` is taken relative to the geometric mean of its
   configuration's rows (the same kernel, precision, level and counts), over the configurations that at least
   two sources measured. A source's *scale* is the median of that over its rows (at least
   :data:`MIN_SOURCE_ROWS`); differences of scales are the factors between sources.
3. The reference scale is that of the largest cluster of sources (by rows) whose scales lie within
   :data:`SOURCE_FACTOR_LIMIT` of each other. A source is reported when its scale is more than
   :data:`SOURCE_FACTOR_LIMIT` away from the reference *and* at least :data:`CONSISTENT_SHARE` of its rows lie
   beyond the square root of that factor on the same side: a shift of the whole source, not a few bad rows.
   When no cluster holds more rows than the others, the sources disagree and the message says which way each
   would be the slip. A factor near 1000, 10^6, 60 or 3600 is named as the unit slip it looks like; the median
   power (energy over time) of both sides is shown, which tells the implausible side at a glance.

A source that shares no configuration with another is not judged here. Beside it, :func:`quality_warnings`
warns when the in-sample energy MAPE, or the time MAPE of a model with its own time, exceeds
:data:`NONPHYSICAL_MAPE_PCT` (100%: the model misses the average row by more than the row itself), which clean
fits never come near (emulated data: about 1%; measured: tens of percent at most).
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from archline.fit.regress.result import FitResult

#: a source whose median measured/fitted ratio is further than this factor from the other sources' is reported
SOURCE_FACTOR_LIMIT = 5.0
#: ... when at least this share of its rows lie beyond sqrt(SOURCE_FACTOR_LIMIT) on the same side
CONSISTENT_SHARE = 0.75
#: sources with fewer rows are not judged (too few to call consistent)
MIN_SOURCE_ROWS = 3
#: in-sample energy (or time) MAPE in percent above which the fit is called non-physical
NONPHYSICAL_MAPE_PCT = 100.0
#: sources named at most; more are counted
MAX_NAMED = 10
#: a factor within this ratio of a known unit slip is named as that slip
_SLIP_TOLERANCE = 1.5

#: (quantity, this source's / the others' factor) -> the slip it looks like
_SLIPS: dict[str, tuple[tuple[float, str], ...]] = {
    "energy": ((1e-3, "kJ written as J"), (1e3, "mJ written as J"), (1e6, "uJ written as J"),
               (1e-6, "MJ written as J"), (1e9, "nJ written as J"), (1 / 3600, "Wh written as J"),
               (1 / 3.6e6, "kWh written as J")),
    "time": ((1e3, "ms written as s"), (1e6, "us written as s"), (1e9, "ns written as s"),
             (1 / 60, "minutes written as s"), (1 / 3600, "hours written as s")),
}

_RUN_DIR = re.compile(r"^(?P<dir>.*(?:^|/)host=[^/]*/run_id=[^/]*)/[^/]*$")


@dataclass
class OffSource:
    """One source whose rows sit off the others by one factor (JSON: an entry of ``off_sources``)."""

    source: str                # file, or data-set run directory
    quantity: str              # energy | time
    rows: int                  # its rows compared (those of configurations another source measured too)
    factor: float              # its scale over the reference sources'
    consistent_share: float    # share of its rows beyond sqrt(limit) on the factor's side
    reference: str             # the sources it is compared with (one named, or a count)
    power_w: float             # its median power (energy_j / time_s)
    reference_power_w: float   # the reference sources' median power
    tied: bool                 # no majority: the reference may as well be the slip
    slip: str | None           # the unit slip the factor looks like

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    def message(self) -> str:
        slip = f"a unit slip ({self.slip}?)" if self.slip else "a unit slip, or another device?"
        if self.tied:
            other = unit_slip(self.quantity, 1 / self.factor)
            slip = (f"the sources disagree: a unit slip in {self.source}"
                    + (f" ({self.slip}?)" if self.slip else "") + f" or in {self.reference}"
                    + (f" ({other}?)" if other else ""))
        return (f"{self.source} ({self.rows} row(s)): its {self.quantity} is {self.factor:.3g}x that of "
                f"{self.reference} on the configurations they share ({100 * self.consistent_share:.0f}% of its "
                f"rows off by more than {math.sqrt(SOURCE_FACTOR_LIMIT):.3g}x the same way; median power "
                f"{self.power_w:.3g} W against {self.reference_power_w:.3g} W): {slip}; fix the {self.quantity} "
                f"unit or leave that source out, the coefficients mix both scales")


def source_key(name: str) -> str:
    """The unit a source belongs to: a data set's part file is judged with its run (``.../host=h/run_id=r``)."""
    m = _RUN_DIR.match(name)
    return m.group("dir") if m else name


def unit_slip(quantity: str, factor: float) -> str | None:
    """The unit slip a ``factor`` (this source over the others) of ``quantity`` looks like, else None."""
    for f0, what in _SLIPS.get(quantity, ()):
        if abs(math.log(factor / f0)) < math.log(_SLIP_TOLERANCE):
            return what
    return None


def _relative_logs(values: np.ndarray, g: np.ndarray, unit: np.ndarray, n_cfg: int) -> np.ndarray:
    """Each row's log value minus its configuration's mean log value; NaN where the value is not positive or the
    configuration's rows come from one source only."""
    with np.errstate(divide="ignore", invalid="ignore"):
        lv = np.log(values)
    ok = np.isfinite(lv)
    cnt = np.bincount(g[ok], minlength=n_cfg).astype(np.float64)
    tot = np.bincount(g[ok], weights=lv[ok], minlength=n_cfg)
    lo = np.full(n_cfg, np.iinfo(np.int64).max)
    hi = np.full(n_cfg, -1)
    np.minimum.at(lo, g[ok], unit[ok])
    np.maximum.at(hi, g[ok], unit[ok])
    shared = hi > lo                                   # at least two sources measured the configuration
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = tot / cnt
    out = lv - mean[g]
    out[~ok | ~shared[g]] = np.nan
    return out


def _clusters(med: np.ndarray, count: np.ndarray) -> tuple[float, bool] | None:
    """The scale of the largest cluster of units (by rows) within the factor limit of each other, and whether
    another cluster holds as many rows (a tie)."""
    judged = np.flatnonzero(np.isfinite(med))
    if judged.size < 2:
        return None
    lim = math.log(SOURCE_FACTOR_LIMIT)
    found: list[tuple[int, float]] = []
    for u in judged:
        near = judged[np.abs(med[judged] - med[u]) <= lim]
        found.append((int(count[near].sum()), float(np.average(med[near], weights=count[near]))))
    found.sort(key=lambda wc: -wc[0])
    weight, centre = found[0]
    tied = any(w == weight and abs(c - centre) > lim for w, c in found[1:])
    return centre, tied


def find_off_sources(result: FitResult) -> list[OffSource]:
    """The sources of ``result`` whose energy or time sits off the others by one large factor (module
    docstring), the farthest first."""
    rows = result.rows
    if rows is None or not rows.sources or rows.n_kept == 0:
        return []
    keys = [source_key(s.name) for s in rows.sources]
    names = sorted(set(keys))
    if len(names) < 2:
        return []
    index = {k: i for i, k in enumerate(names)}
    unit = np.array([index[k] for k in keys], dtype=np.int64)[rows.src]
    with np.errstate(divide="ignore", invalid="ignore"):
        power = rows.e / rows.t
    out: list[OffSource] = []
    for quantity, values in (("energy", rows.e), ("time", rows.t)):
        rel = _relative_logs(values, rows.g, unit, rows.n_configs)
        out += _judge(quantity, rel, unit, names, power)
    out.sort(key=lambda o: -abs(math.log(o.factor)))
    return out


def _judge(quantity: str, rel: np.ndarray, unit: np.ndarray, names: list[str], power: np.ndarray) -> list[OffSource]:
    n = len(names)
    med = np.full(n, math.nan)
    count = np.zeros(n, dtype=np.int64)
    ok = np.isfinite(rel)
    for u in range(n):
        v = rel[ok & (unit == u)]
        count[u] = v.size
        if v.size >= MIN_SOURCE_ROWS:
            med[u] = float(np.median(v))
    found = _clusters(med, count)
    if found is None:
        return []
    ref, tied = found
    lim = math.log(SOURCE_FACTOR_LIMIT)
    refs = [u for u in range(n) if np.isfinite(med[u]) and abs(med[u] - ref) <= lim]
    reference = names[refs[0]] if len(refs) == 1 else f"the {len(refs)} other sources"
    in_ref = np.isin(unit, refs) & ok
    ref_power = float(np.nanmedian(power[in_ref])) if in_ref.any() else math.nan
    out: list[OffSource] = []
    for u in range(n):
        if not np.isfinite(med[u]) or abs(med[u] - ref) <= lim:
            continue
        mine = ok & (unit == u)
        side = np.sign(med[u] - ref)
        share = float(np.mean(side * (rel[mine] - ref) > lim / 2))
        if share < CONSISTENT_SHARE:
            continue
        factor = math.exp(med[u] - ref)
        out.append(OffSource(names[u], quantity, int(count[u]), factor, share, reference,
                             float(np.nanmedian(power[mine])), ref_power, tied, unit_slip(quantity, factor)))
    return out


def quality_warnings(result: FitResult) -> list[str]:
    """A warning per in-sample error figure (energy MAPE; time MAPE of a model with its own time) above
    :data:`NONPHYSICAL_MAPE_PCT`."""
    q = result.quality
    said: list[str] = []
    for key, what in (("energy_mape_pct", "energy"), ("time_mape_pct", "time")):
        v = q.get(key)
        if isinstance(v, (int, float)) and math.isfinite(v) and v > NONPHYSICAL_MAPE_PCT:
            said.append(f"non-physical fit: the model misses the measured {what} by {v:.3g}% on average ({what} "
                        f"MAPE above {NONPHYSICAL_MAPE_PCT:.0f}%): these rows do not follow one energy-roofline "
                        f"model; look for a unit slip or mixed devices before using the coefficients")
    return said


def attach_source_report(result: FitResult) -> list[str]:
    """Add ``extra["off_sources"]`` and the warnings of this module to ``result``; returns the warnings."""
    try:
        off = find_off_sources(result)
    except (np.linalg.LinAlgError, ValueError, ZeroDivisionError, FloatingPointError):  # never cost the fit
        off = []
    result.extra["off_sources"] = [o.as_json() for o in off]
    said = [o.message() for o in off[:MAX_NAMED]]
    if len(off) > MAX_NAMED:
        said.append(f"{len(off) - MAX_NAMED} more source(s) off the model by a large factor not listed")
    said += quality_warnings(result)
    result.warnings.extend(said)
    return said
