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
#: a factor within this ratio (35%: hosts' own costs differ by tens of percent) of a known unit slip is named as
#: that slip; kJ's 1e-3 and Wh's 1/3600 are 3.6x apart, so one is never named as the other
_SLIP_TOLERANCE = 1.35

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


def _pairs(values: np.ndarray, g: np.ndarray, unit: np.ndarray, n_units: int
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The (configuration, source) pairs measured: their configuration, source and mean log value, and for each
    row with a positive value its pair (-1 otherwise) and its log value."""
    with np.errstate(divide="ignore", invalid="ignore"):
        lv = np.log(values)
    ok = np.isfinite(lv)
    keys = g.astype(np.int64) * n_units + unit
    uniq, inv = np.unique(keys[ok], return_inverse=True)
    mean = np.bincount(inv, weights=lv[ok], minlength=uniq.size) / np.bincount(inv, minlength=uniq.size)
    pair = np.full(values.size, -1, dtype=np.int64)
    pair[ok] = inv
    return uniq // n_units, uniq % n_units, mean, pair, lv


def _median_reference(cfg: np.ndarray, mean: np.ndarray, n_cfg: int) -> np.ndarray:
    """Each configuration's median over its sources' mean log values (NaN where one source only measured it):
    robust to one source in the wrong unit where three or more measured the configuration."""
    order = np.lexsort((mean, cfg))
    cnt = np.bincount(cfg, minlength=n_cfg)
    starts = np.concatenate(([0], np.cumsum(cnt)[:-1]))
    sm = mean[order]
    med = np.full(n_cfg, math.nan)
    has = cnt >= 2
    med[has] = (sm[starts[has] + (cnt[has] - 1) // 2] + sm[starts[has] + cnt[has] // 2]) / 2
    return med[cfg]


def _majority_reference(cfg: np.ndarray, src: np.ndarray, mean: np.ndarray, n_cfg: int, majority: np.ndarray
                        ) -> np.ndarray:
    """For each pair, the mean log value of its configuration over the majority's sources (NaN where none of
    them, or no second source, measured it): a source in the wrong unit never moves the reference."""
    inm = majority[src]
    tot = np.bincount(cfg[inm], weights=mean[inm], minlength=n_cfg)
    cnt = np.bincount(cfg[inm], minlength=n_cfg).astype(np.float64)
    shared = np.bincount(cfg, minlength=n_cfg) >= 2
    with np.errstate(divide="ignore", invalid="ignore"):
        ref = np.where((cnt > 0) & shared, tot / cnt, math.nan)
    return ref[cfg]


def _scales(dev: np.ndarray, src: np.ndarray, pair: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per source, the median over its shared configurations of its deviation from the reference, and its rows
    compared (NaN scale for fewer than MIN_SOURCE_ROWS)."""
    med = np.full(n, math.nan)
    good = np.isfinite(dev)
    rows_of = np.bincount(pair[pair >= 0], minlength=dev.size)
    count = np.bincount(src[good], weights=rows_of[good], minlength=n).astype(np.int64)
    for u in range(n):
        d = dev[good & (src == u)]
        if d.size and count[u] >= MIN_SOURCE_ROWS:
            med[u] = float(np.median(d))
    return med, count


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
    return off_sources(rows.e, rows.t, rows.g, unit, names)


def off_sources(e: np.ndarray, t: np.ndarray, g: np.ndarray, unit: np.ndarray, names: list[str]) -> list[OffSource]:
    """The sources (``unit``: each row's index into ``names``) whose energy or time sits off the others by one
    large factor on the configurations (``g``) they share, the farthest first."""
    if len(names) < 2 or g.size == 0:
        return []
    with np.errstate(divide="ignore", invalid="ignore"):
        power = e / t
    n_cfg = int(g.max()) + 1
    out: list[OffSource] = []
    for quantity, values in (("energy", e), ("time", t)):
        out += _judge(quantity, values, g, unit, n_cfg, names, power)
    out.sort(key=lambda o: -abs(math.log(o.factor)))
    return out


def _judge(quantity: str, values: np.ndarray, g: np.ndarray, unit: np.ndarray, n_cfg: int, names: list[str],
           power: np.ndarray) -> list[OffSource]:
    n = len(names)
    cfg, src, mean, pair, lv = _pairs(values, g, unit, n)
    if mean.size == 0:
        return []
    # a first majority from each configuration's median source, then every scale against that majority only
    med, count = _scales(mean - _median_reference(cfg, mean, n_cfg), src, pair, n)
    found = _clusters(med, count)
    if found is None:
        return []
    lim = math.log(SOURCE_FACTOR_LIMIT)
    majority = np.isfinite(med) & (np.abs(med - found[0]) <= lim)
    ref_pair = _majority_reference(cfg, src, mean, n_cfg, majority)
    med, count = _scales(mean - ref_pair, src, pair, n)
    found = _clusters(med, count)
    if found is None:
        return []
    ref, tied = found
    refs = [u for u in range(n) if np.isfinite(med[u]) and abs(med[u] - ref) <= lim]
    reference = names[refs[0]] if len(refs) == 1 else f"the {len(refs)} other sources"
    with np.errstate(invalid="ignore"):
        rel = np.where(pair >= 0, lv - ref_pair[np.maximum(pair, 0)], math.nan)
    ok = np.isfinite(rel)
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
