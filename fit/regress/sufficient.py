"""Least squares from configuration statistics: the same estimate as the row-wise problem, to rounding.

Within one configuration every design row is affine in the row's measured time, ``x_i = (a + t_i*b)/N``, and
the response is ``y_i = e_i/N``. The configuration's rows then enter least squares only through

    sum x_i x_i' = n*xbar*xbar' + Stt*bb'          sum x_i y_i = n*xbar*ybar + Sty*b

(``b`` here being b/N, Stt and Sty the centred sums of squares and cross-products), which two *pseudo-rows*
reproduce exactly: ``sqrt(n)*xbar`` with response ``sqrt(n)*ybar``, and ``sqrt(Stt)*b`` with response
``Sty/sqrt(Stt)``. Their residual sum of squares differs from the rows' by ``Syy - Sty^2/Stt`` per
configuration, a constant carried for the error variance. So OLS, WLS with per-configuration weights and
NNLS on the 2G pseudo-rows give the row-wise estimates (and standard errors, R^2, p-values), at a cost
independent of the number of repeats.

Relative weighting (two steps, least squares on relative residuals): the second step weights a
configuration by 1/yhat^2, yhat being the first step's fitted E/N at the configuration's mean (its mean
design row). A configuration, not a single row, carries the weight: the variance of E/N under relative
noise is a property of the configuration, and a row's own noisy time would otherwise set its own weight.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from archline.fit.io.configs import Columns


@dataclass
class Pseudo:
    """Per configuration: mean design row, time slope of the design row, mean response and the spreads."""

    xbar: np.ndarray   # (G, p)
    b: np.ndarray      # (G, p): d x / d t
    ybar: np.ndarray   # (G,)
    n: np.ndarray      # (G,)
    stt: np.ndarray    # (G,)
    sty: np.ndarray    # (G,)
    syy: np.ndarray    # (G,)

    @classmethod
    def build(cls, cfg: Columns, a: np.ndarray, b: np.ndarray, norm: np.ndarray) -> Pseudo:
        """Rows ``x_i = (a + t_i*b)/norm``, ``y_i = e_i/norm`` of the configurations in ``cfg``."""
        inv = 1.0 / norm
        tbar = cfg["time_s"]
        return cls(xbar=(a + tbar[:, None] * b) * inv[:, None], b=b * inv[:, None], ybar=cfg["energy_j"] * inv,
                   n=cfg["n"], stt=cfg["time_ss"], sty=cfg["time_energy_sp"] * inv, syy=cfg["energy_ss"] * inv**2)

    def take(self, idx: np.ndarray) -> Pseudo:
        return Pseudo(self.xbar[idx], self.b[idx], self.ybar[idx], self.n[idx], self.stt[idx], self.sty[idx],
                      self.syy[idx])

    def columns(self, keep: np.ndarray) -> Pseudo:
        return Pseudo(self.xbar[:, keep], self.b[:, keep], self.ybar, self.n, self.stt, self.sty, self.syy)

    @property
    def n_rows(self) -> int:
        return int(self.n.sum())

    def rows(self, w: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The 2G pseudo-rows and responses, each configuration weighted by ``w`` (default 1)."""
        w = np.ones_like(self.n) if w is None else w
        s1 = np.sqrt(self.n * w)
        pos = self.stt > 0
        s2 = np.sqrt(np.where(pos, self.stt, 0.0) * w)
        r2 = np.where(pos, np.sqrt(w) * self.sty / np.sqrt(np.where(pos, self.stt, 1.0)), 0.0)
        x = np.vstack([self.xbar * s1[:, None], self.b * s2[:, None]])
        return x, np.concatenate([self.ybar * s1, r2])

    def leftover(self) -> np.ndarray:
        """Per configuration, the rows' residual sum of squares that no coefficient can explain."""
        pos = self.stt > 0
        return np.where(pos, self.syy - self.sty**2 / np.where(pos, self.stt, 1.0), self.syy)

    def fitted(self, beta: np.ndarray) -> np.ndarray:
        """Fitted response at each configuration's mean design row."""
        return np.asarray(self.xbar @ beta)


def scaled_lstsq(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least squares with the columns scaled to unit norm (the E/N columns span many decades)."""
    scale = np.linalg.norm(x, axis=0)
    scale[scale == 0] = 1.0
    return np.asarray(np.linalg.lstsq(x / scale, y, rcond=None)[0] / scale)


def relative_weights(ps: Pseudo, beta: np.ndarray) -> np.ndarray:
    """1/yhat^2 per configuration (the mean response where the fit is not positive; 0 where neither is)."""
    yhat = ps.fitted(beta)
    ref = np.where(yhat > 0, yhat, ps.ybar)
    with np.errstate(divide="ignore"):
        return np.where(ref > 0, 1.0 / np.where(ref > 0, ref, 1.0) ** 2, 0.0)


def fit_relative(ps: Pseudo, weighting: str = "relative") -> tuple[np.ndarray, np.ndarray]:
    """Two-step relative-residual least squares (``"relative"``), or plain OLS (``"none"``, R's lm as S0).
    Returns (beta, per-configuration weights)."""
    x, y = ps.rows()
    beta = scaled_lstsq(x, y)
    if weighting == "none":
        return beta, np.ones_like(ps.n)
    if weighting != "relative":
        raise ValueError(f"weighting must be 'relative' or 'none', got {weighting!r}")
    w = relative_weights(ps, beta)
    x, y = ps.rows(w)
    return scaled_lstsq(x, y), w


@dataclass
class Inference:
    cov: np.ndarray
    se: np.ndarray
    dof: int
    ci95: np.ndarray     # (p, 2)
    pvalues: np.ndarray
    r2: float
    centred: bool        # R^2 about the mean (the design spans a constant) or about 0


def _has_constant(x: np.ndarray, const: np.ndarray) -> bool:
    """Does the column space contain the constant (as statsmodels checks for an implicit intercept)?"""
    return bool(np.linalg.matrix_rank(np.column_stack([const, x])) == np.linalg.matrix_rank(x))


def inference(ps: Pseudo, beta: np.ndarray, w: np.ndarray) -> Inference:
    """OLS/WLS standard errors, t intervals, p-values and R^2 of the row-wise problem (statsmodels'
    definitions: scale = weighted RSS / (rows - p); R^2 centred when the design spans a constant)."""
    from archline.fit.regress.result import t_quantile, t_sf

    x, y = ps.rows(w)
    p = x.shape[1]
    resid = y - x @ beta
    ssr = float(resid @ resid + np.sum(w * ps.leftover()))
    dof = max(ps.n_rows - p, 1)
    scale = np.linalg.norm(x, axis=0)
    scale[scale == 0] = 1.0
    pinv = np.linalg.pinv(x / scale)
    cov = (pinv @ pinv.T) / np.outer(scale, scale) * (ssr / dof)
    se = np.sqrt(np.maximum(np.diag(cov), 0.0))
    q = t_quantile(0.975, dof)
    ci = np.column_stack([beta - q * se, beta + q * se])
    with np.errstate(divide="ignore", invalid="ignore"):
        tval = np.abs(beta / se)
    pv = np.array([2 * t_sf(float(v), dof) if math.isfinite(v) else math.nan for v in tval])
    s1 = np.sqrt(ps.n * w)
    const = np.concatenate([s1, np.zeros_like(s1)])
    centred = _has_constant(x, const)
    wn = w * ps.n
    tss = float(np.sum(w * ps.syy) + np.sum(wn * ps.ybar**2))
    if centred:
        mean = float(np.sum(wn * ps.ybar) / np.sum(wn))
        tss = float(np.sum(w * ps.syy) + np.sum(wn * (ps.ybar - mean) ** 2))
    return Inference(cov, se, dof, ci, pv, 1.0 - ssr / tss if tss > 0 else math.nan, centred)


def _nnls(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    from scipy.optimize import nnls

    scale = np.linalg.norm(x, axis=0)
    scale[scale == 0] = 1.0
    beta, _ = nnls(x / scale, y, maxiter=50 * x.shape[1])
    return np.asarray(beta / scale)


def nnls_relative(ps: Pseudo, active: np.ndarray) -> np.ndarray:
    """Two-step relative-residual NNLS over the active columns; inactive coefficients are 0 (not reported)."""
    sub = ps.columns(active)
    beta = np.zeros(ps.xbar.shape[1])
    x, y = sub.rows()
    b = _nnls(x, y)
    x, y = sub.rows(relative_weights(sub, b))
    beta[active] = _nnls(x, y)
    return beta


def rel_rmse_pct(ps: Pseudo, beta: np.ndarray) -> float:
    """sqrt(mean over rows of ((y - yhat)/yhat_g)^2) in percent, yhat_g the fit at the configuration's mean."""
    yhat = np.maximum(ps.fitted(beta), 1e-300)
    d = ps.b @ beta
    rss = ps.n * (ps.ybar - yhat) ** 2 + ps.syy - 2 * d * ps.sty + d**2 * ps.stt   # per configuration, exact
    return 100 * math.sqrt(float(np.sum(rss / yhat**2)) / max(ps.n_rows, 1))
