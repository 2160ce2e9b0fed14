"""Work-communication trade-offs: speedup and greenup of an algorithm doing f*W work and Q/m traffic
(model.md §2; S1 eq.13-31). Written once with Bhat_eps; with eta = 1 (pi0 = 0) it is S1 eq.13-23."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from archline.model import roofline as rl
from archline.model.roofline import FloatArray


def _a(x: ArrayLike) -> FloatArray:
    return np.asarray(x, dtype=np.float64)


def speedup(intensity_flop_per_byte: ArrayLike, f: ArrayLike, m: ArrayLike, B_tau: ArrayLike) -> FloatArray:
    """dT = max(1, B_tau/I) / max(f, (1/m)*B_tau/I)   (eq.15)."""
    i, b = _a(intensity_flop_per_byte), _a(B_tau)
    return np.maximum(1.0, b / i) / np.maximum(_a(f), b / (_a(m) * i))


def greenup(
    intensity_flop_per_byte: ArrayLike, f: ArrayLike, m: ArrayLike, B_tau: ArrayLike, B_eps: ArrayLike,
    eta: ArrayLike = 1.0,
) -> FloatArray:
    """dE = (1 + Bhat_eps(I)/I) / (f + Bhat_eps(f*m*I)/(m*I))   (eq.26; eq.16 when eta = 1)."""
    i, f_, m_ = _a(intensity_flop_per_byte), _a(f), _a(m)
    bhat_base = rl.effective_energy_balance_flop_per_byte(i, B_eps, B_tau, eta)
    bhat_new = rl.effective_energy_balance_flop_per_byte(f_ * m_ * i, B_eps, B_tau, eta)
    return (1.0 + bhat_base / i) / (f_ + bhat_new / (m_ * i))


def greenup_max_extra_work(
    intensity_flop_per_byte: ArrayLike, f: ArrayLike, m: ArrayLike, B_tau: ArrayLike, B_eps: ArrayLike,
    eta: ArrayLike = 1.0,
) -> FloatArray:
    """The bound on f for a greenup: 1 + Bhat_eps(I)/I - (1/m)*Bhat_eps(f*m*I)/I   (eq.27; eq.17 at eta = 1)."""
    i, f_, m_ = _a(intensity_flop_per_byte), _a(f), _a(m)
    bhat_base = rl.effective_energy_balance_flop_per_byte(i, B_eps, B_tau, eta)
    bhat_new = rl.effective_energy_balance_flop_per_byte(f_ * m_ * i, B_eps, B_tau, eta)
    return 1.0 + bhat_base / i - bhat_new / (m_ * i)


def tradeoff_case(intensity_flop_per_byte: ArrayLike, f: ArrayLike, m: ArrayLike, B_tau: ArrayLike) -> np.ndarray:
    """1: both memory-bound; 2: baseline memory-bound, new compute-bound; 3: both compute-bound (§2.1)."""
    i, b = _a(intensity_flop_per_byte), _a(B_tau)
    new_i = _a(f) * _a(m) * i
    return np.where(i >= b, 3, np.where(new_i > b, 2, 1))


def greenup_bounds(
    intensity_flop_per_byte: ArrayLike, f: ArrayLike, m: ArrayLike, B_tau: ArrayLike, B_eps: ArrayLike,
    eta: ArrayLike = 1.0,
) -> tuple[FloatArray, FloatArray]:
    """(lower, upper) bounds on the greenup per case (eq.30-31 and §2.2; eq.18-23 at eta = 1).

    Case 1 upper bound: S1 §3.5.10 prints (1 + X/I)/(1 + X/B_tau), X = Bhat_eps(I). Its derivation replaces
    Bhat_eps(f*m*I) by the larger Bhat_eps(I) in the denominator, so for eta < 1 it is not an upper bound
    (counterexample: I=2, f=1, m=3, B_tau=7, B_eps=1, eta=0.5 gives dE = 2.14 > 1.75). We use the valid bound
    (1 + X/I)/(1 + eta*B_eps/B_tau), from Bhat_eps(f*m*I) >= eta*B_eps, 1/m > f*I/B_tau and f >= 1; it equals
    eq.19 at eta = 1.
    """
    i, f_, m_, b_tau, b_eps, e = (_a(x) for x in (intensity_flop_per_byte, f, m, B_tau, B_eps, eta))
    d_t = speedup(i, f_, m_, b_tau)
    ratio = (b_tau * (1 - e) + e * (b_eps + i)) / (b_tau + e * b_eps)
    x = e * b_eps + (1 - e) * (b_tau - i)
    case = tradeoff_case(i, f_, m_, b_tau)
    lo = np.select([case == 1, case == 2], [ratio, d_t * ratio],
                   d_t * (1 + e * b_eps / i) / (1 + e * b_eps / (f_ * i)))
    hi = np.select([case == 1, case == 2], [(1 + x / i) / (1 + e * b_eps / b_tau), m_ * ratio],
                   (1 + e * b_eps / i) / (1 + e * b_eps / (m_ * i)))
    return lo, hi
