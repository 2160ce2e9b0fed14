"""What every regression returns: coefficients with uncertainty, quality, warnings, and a predictor.

Shared by the basic, cache, capped and dvfs fits; written out by :mod:`archline.formats.costs` (the owner of
``archline.costs/1``, which defines :class:`Coefficient` and the SI :data:`UNITS`, re-exported here).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from archline.fit.regress.pointwise import Predictor, RowErrors
from archline.formats.costs import Coefficient as Coefficient  # re-exported: the fits build them
from archline.formats.costs_units import UNITS as UNITS
from archline.formats.results_check import COUNT_COLUMNS

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from archline.fit.io.configs import Columns, Grouped

#: count column -> energy coefficient for the linear (cache / joint) fits.
COUNT_COEFFICIENT: dict[str, str] = {
    "flops_sp": "eps_flop_sp", "flops_dp": "eps_flop_dp", "int_ops": "eps_int", "bytes_mem": "eps_mem",
    "bytes_l1": "eps_l1", "bytes_l2": "eps_l2", "bytes_l3": "eps_l3", "bytes_shared": "eps_shared",
    "rand_accesses": "eps_rand",
}
#: Order in which a row's own operation count is chosen as its normaliser (see :func:`row_normaliser`).
NORMALISER_ORDER: tuple[str, ...] = ("work_flop", "int_ops", "bytes_shared", "bytes_l1", "bytes_l2", "bytes_l3",
                                     "rand_accesses", "bytes_mem")
#: Counts that make a row something other than a plain intensity (flop + DRAM) point.
NON_BASIC_COUNTS: tuple[str, ...] = tuple(c for c in COUNT_COLUMNS
                                          if c not in ("flops_sp", "flops_dp", "bytes_mem"))


@dataclass
class FitResult:
    platform: str
    model: str
    emulated: bool
    n_points: int
    coefficients: dict[str, Coefficient]
    tau: dict[str, Coefficient] = field(default_factory=dict)
    derived: dict[str, float] = field(default_factory=dict)
    quality: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    omitted: dict[str, str] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    errors: RowErrors | None = None
    predictor: Predictor | None = None
    rows: Grouped | None = None

    def value(self, name: str) -> float | None:
        c = self.coefficients.get(name) or self.tau.get(name)
        return None if c is None else c.value

    @property
    def point_errors(self) -> pd.DataFrame | None:
        """Per-row signed relative errors as a frame (built on demand: a million rows cost memory)."""
        if self.errors is None or self.rows is None:
            return None
        return self.errors.frame(self.rows)


def as_grouped(data: Grouped | pd.DataFrame) -> Grouped:
    """Fits take configurations; a row-wise frame (tests, in-memory data) is grouped first."""
    from archline.fit.io.configs import Grouped as _Grouped

    if isinstance(data, _Grouped):
        return data
    from archline.fit.io.results import from_frame

    return from_frame(data)


def row_normaliser(frame: Columns | pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Each row's own operation count N and the column it came from.

    DECISION (model.md §6.4 open point; also used by the joint cache fit): a row is divided by W (flops) when it
    has flops, which is exactly eq.9/eq.48; a row with W = 0 (integer, shared-memory, L1/L2/L3, random-access
    or pure streaming benchmark) is divided by its own operation count, taken in the order int_ops,
    bytes_shared, bytes_l1, bytes_l2, bytes_l3, rand_accesses, bytes_mem. The response E/N is then that
    row's energy per operation of its own kind, of the same order as the cost being fitted, so no row kind
    dominates the least-squares loss. Rows with no counts at all (idle) have N = 0 and are left out by callers.
    """
    size = len(frame)
    n = np.zeros(size)
    src = np.full(size, "", dtype=object)
    for col in NORMALISER_ORDER:
        v = np.asarray(frame[col], dtype=np.float64)
        take = (n == 0) & (v > 0)
        n[take] = v[take]
        src[take] = col
    return n, src


#: From these degrees of freedom on, t quantiles (sf) come from the Cornish-Fisher series below; under them
#: from scipy.special. The series is within 3e-9 (quantile) and 5e-6 (sf, |t| <= 15) of scipy there.
T_SERIES_DOF = 100
T_SF_SERIES_DOF = 1000


def _t_from_z(z: float, dof: float) -> float:
    """Student-t quantile from the standard normal one, Abramowitz & Stegun 26.7.5 (four terms in 1/dof)."""
    z2 = z * z
    g1 = (z2 + 1) * z / 4
    g2 = ((5 * z2 + 16) * z2 + 3) * z / 96
    g3 = (((3 * z2 + 19) * z2 + 17) * z2 - 15) * z / 384
    g4 = ((((79 * z2 + 776) * z2 + 1482) * z2 - 1920) * z2 - 945) * z / 92160
    return z + g1 / dof + g2 / dof**2 + g3 / dof**3 + g4 / dof**4


def t_quantile(p: float, dof: int) -> float:
    """Student-t quantile. Big fits (dof >= T_SERIES_DOF) use the series rather than scipy.special, whose
    import (0.2 s) would be a sixth of fitting a million rows."""
    if dof >= T_SERIES_DOF:
        from statistics import NormalDist

        return _t_from_z(NormalDist().inv_cdf(p), dof)
    from scipy.special import stdtrit

    return float(stdtrit(max(dof, 1), p))


def t_sf(x: float, dof: int) -> float:
    """P(T > x) for Student's t (see :func:`t_quantile`): the series inverted by Newton, then the normal tail."""
    if dof >= T_SF_SERIES_DOF:
        z = x
        for _ in range(60):
            h = 1e-6 * max(1.0, abs(z))
            slope = (_t_from_z(z + h, dof) - _t_from_z(z - h, dof)) / (2 * h)
            step = (_t_from_z(z, dof) - x) / slope
            z -= step
            if abs(step) < 1e-15 * max(1.0, abs(z)):
                break
        return 0.5 * math.erfc(z / math.sqrt(2.0))
    from scipy.special import stdtr

    return float(stdtr(max(dof, 1), -x))


def t_interval(value: float, stderr: float, dof: int) -> tuple[float, float]:
    q = t_quantile(0.975, dof)
    return (value - q * stderr, value + q * stderr)


def omission_reason(c: Coefficient) -> str:
    """Why an energy coefficient is left out, in true words: its 95% interval includes 0 (not identified), lies
    wholly below 0 (significantly negative: no cost can be, so the data do not follow the model), or, without an
    interval, its estimate is not positive."""
    est = f"estimate {c.value:.3g} {c.unit}"
    if c.ci95 is None:
        return f"not identified by the data: {est}" + (" (not positive: no cost can be)" if c.value <= 0 else "")
    lo, hi = c.ci95
    ci = f"95% CI [{lo:.3g}, {hi:.3g}]"
    if lo <= 0 <= hi:
        return f"not identified by the data: {est}, {ci} includes 0"
    if hi < 0:
        return (f"significantly negative: {est}, {ci} lies below 0: a non-physical value, left out (the data do "
                f"not follow the model: a unit slip or mixed files?)")
    return f"not identified by the data: {est}, {ci}"
