"""The energy-roofline model with power caps: time, energy and power (model.md §1, §4).

Equation numbers are those of S1 (the thesis); S0 = Choi et al. IPDPS 2013 uses the same numbers for eq.1-9.
The free (uncapped) model is the capped one with ``delta_pi_w = inf``: there is one implementation.
All functions take floats or numpy arrays and broadcast.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]


def _a(x: ArrayLike) -> FloatArray:
    return np.asarray(x, dtype=np.float64)


# --- balances and per-flop constants (§0, §1.2) -------------------------------------------------------

def time_balance_flop_per_byte(tau_flop_s: ArrayLike, tau_mem_s_per_byte: ArrayLike) -> FloatArray:
    """B_tau = tau_mem / tau_flop."""
    return _a(tau_mem_s_per_byte) / _a(tau_flop_s)


def energy_balance_flop_per_byte(eps_flop_j: ArrayLike, eps_mem_j_per_byte: ArrayLike) -> FloatArray:
    """B_eps = eps_mem / eps_flop."""
    return _a(eps_mem_j_per_byte) / _a(eps_flop_j)


def const_energy_per_flop_j(pi0_w: ArrayLike, tau_flop_s: ArrayLike) -> FloatArray:
    """eps_0 = pi0 * tau_flop."""
    return _a(pi0_w) * _a(tau_flop_s)


def eps_hat_j_per_flop(eps_flop_j: ArrayLike, pi0_w: ArrayLike, tau_flop_s: ArrayLike) -> FloatArray:
    """eps_hat = eps_flop + eps_0: the least energy one flop can take (eq.5)."""
    return _a(eps_flop_j) + const_energy_per_flop_j(pi0_w, tau_flop_s)


def eta_flop(eps_flop_j: ArrayLike, pi0_w: ArrayLike, tau_flop_s: ArrayLike) -> FloatArray:
    """eta_flop = eps_flop / eps_hat (1 when pi0 = 0)."""
    return _a(eps_flop_j) / eps_hat_j_per_flop(eps_flop_j, pi0_w, tau_flop_s)


def effective_energy_balance_flop_per_byte(
    intensity_flop_per_byte: ArrayLike, B_eps: ArrayLike, B_tau: ArrayLike, eta: ArrayLike
) -> FloatArray:
    """Bhat_eps(I) = eta*B_eps + (1 - eta)*max(0, B_tau - I)   (eq.6)."""
    i, e = _a(intensity_flop_per_byte), _a(eta)
    return e * _a(B_eps) + (1.0 - e) * np.maximum(0.0, _a(B_tau) - i)


def energy_balance_point_flop_per_byte(B_eps: ArrayLike, B_tau: ArrayLike, eta: ArrayLike) -> FloatArray:
    """The intensity where the arch line reaches 1/2, i.e. the solution of I = Bhat_eps(I) (model.md §1.3)."""
    b_eps, b_tau, e = _a(B_eps), _a(B_tau), _a(eta)
    above = e * b_eps
    below = (e * b_eps + (1.0 - e) * b_tau) / (2.0 - e)
    return np.where(above >= b_tau, above, below)


def flop_power_w(eps_flop_j: ArrayLike, tau_flop_s: ArrayLike) -> FloatArray:
    """pi_flop = eps_flop / tau_flop: power of flops at peak rate, without pi0."""
    return _a(eps_flop_j) / _a(tau_flop_s)


def mem_power_w(eps_mem_j_per_byte: ArrayLike, tau_mem_s_per_byte: ArrayLike) -> FloatArray:
    """pi_mem = eps_mem / tau_mem: power of a byte stream at peak bandwidth (S1 §4.2)."""
    return _a(eps_mem_j_per_byte) / _a(tau_mem_s_per_byte)


# --- time, energy, power for counted work (eq.1-4, 32, 34) --------------------------------------------

def time_s(
    work_flop: ArrayLike,
    traffic_byte: ArrayLike,
    tau_flop_s: ArrayLike,
    tau_mem_s_per_byte: ArrayLike,
    eps_flop_j: ArrayLike = 0.0,
    eps_mem_j_per_byte: ArrayLike = 0.0,
    delta_pi_w: ArrayLike = np.inf,
) -> FloatArray:
    """T = max(W*tau_flop, Q*tau_mem, (W*eps_flop + Q*eps_mem)/delta_pi)   (eq.34; eq.3 when delta_pi = inf)."""
    w, q = _a(work_flop), _a(traffic_byte)
    dynamic_j = w * _a(eps_flop_j) + q * _a(eps_mem_j_per_byte)
    with np.errstate(divide="ignore", invalid="ignore"):
        capped = np.where(np.isinf(delta_pi_w), 0.0, dynamic_j / _a(delta_pi_w))
    return np.maximum(np.maximum(w * _a(tau_flop_s), q * _a(tau_mem_s_per_byte)), capped)


def energy_j(
    work_flop: ArrayLike,
    traffic_byte: ArrayLike,
    time_s: ArrayLike,
    eps_flop_j: ArrayLike,
    eps_mem_j_per_byte: ArrayLike,
    pi0_w: ArrayLike,
) -> FloatArray:
    """E = W*eps_flop + Q*eps_mem + pi0*T   (eq.4 / eq.32)."""
    return _a(work_flop) * _a(eps_flop_j) + _a(traffic_byte) * _a(eps_mem_j_per_byte) + _a(pi0_w) * _a(time_s)


# --- per-flop form as functions of intensity (eq.5, 35, 38) -------------------------------------------

def time_per_flop_s(
    intensity_flop_per_byte: ArrayLike,
    tau_flop_s: ArrayLike,
    tau_mem_s_per_byte: ArrayLike,
    eps_flop_j: ArrayLike = 0.0,
    eps_mem_j_per_byte: ArrayLike = 0.0,
    delta_pi_w: ArrayLike = np.inf,
) -> FloatArray:
    """T/W at intensity I (eq.35): eq.34 with W = 1 and Q = 1/I."""
    return time_s(1.0, 1.0 / _a(intensity_flop_per_byte), tau_flop_s, tau_mem_s_per_byte,
                  eps_flop_j, eps_mem_j_per_byte, delta_pi_w)


def energy_per_flop_j(
    intensity_flop_per_byte: ArrayLike,
    tau_flop_s: ArrayLike,
    tau_mem_s_per_byte: ArrayLike,
    eps_flop_j: ArrayLike,
    eps_mem_j_per_byte: ArrayLike,
    pi0_w: ArrayLike,
    delta_pi_w: ArrayLike = np.inf,
) -> FloatArray:
    """E/W at intensity I (eq.33 with T from eq.35)."""
    t = time_per_flop_s(intensity_flop_per_byte, tau_flop_s, tau_mem_s_per_byte,
                        eps_flop_j, eps_mem_j_per_byte, delta_pi_w)
    return energy_j(1.0, 1.0 / _a(intensity_flop_per_byte), t, eps_flop_j, eps_mem_j_per_byte, pi0_w)


def capped_balance_points_flop_per_byte(
    B_tau: ArrayLike, pi_flop_w: ArrayLike, pi_mem_w: ArrayLike, delta_pi_w: ArrayLike
) -> tuple[FloatArray, FloatArray]:
    """(B_tau_minus, B_tau_plus) of eq.37/36: the cap binds for I in between.

    Edge cases (model.md §4 IMPL NOTE): delta_pi <= pi_flop makes B_tau_plus = inf; delta_pi <= pi_mem makes
    B_tau_minus = 0. With delta_pi >= pi_flop + pi_mem both equal B_tau.
    """
    b, pf, pm, dp = _a(B_tau), _a(pi_flop_w), _a(pi_mem_w), _a(delta_pi_w)
    with np.errstate(divide="ignore", invalid="ignore"):
        plus = np.where(dp > pf, b * np.maximum(1.0, pm / (dp - pf)), np.inf)
        minus = b * np.clip((dp - pm) / pf, 0.0, 1.0)
    plus = np.where(np.isinf(dp), b, plus)
    minus = np.where(np.isinf(dp), b, minus)
    return minus, plus


def power_line_w(
    intensity_flop_per_byte: ArrayLike,
    B_tau: ArrayLike,
    pi0_w: ArrayLike,
    pi_flop_w: ArrayLike,
    pi_mem_w: ArrayLike,
    delta_pi_w: ArrayLike = np.inf,
) -> FloatArray:
    """Average power at intensity I, the closed form of eq.38 (eq.7 when delta_pi = inf)."""
    i, b = _a(intensity_flop_per_byte), _a(B_tau)
    minus, plus = capped_balance_points_flop_per_byte(b, pi_flop_w, pi_mem_w, delta_pi_w)
    high = _a(pi_flop_w) + _a(pi_mem_w) * b / i
    low = _a(pi_flop_w) * i / b + _a(pi_mem_w)
    dynamic = np.where(i >= plus, high, np.where(i <= minus, low, _a(delta_pi_w)))
    return _a(pi0_w) + dynamic
