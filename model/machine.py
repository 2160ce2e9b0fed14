"""One machine at one precision: the model's constants, and everything derived from them (model.md §0-§4)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike

from archline.model import roofline as rl
from archline.model.roofline import FloatArray


@dataclass(frozen=True)
class Machine:
    """Constants of the capped energy-roofline model, in SI units. ``delta_pi_w = inf`` is the free model."""

    tau_flop_s: float
    tau_mem_s_per_byte: float
    eps_flop_j: float
    eps_mem_j_per_byte: float
    pi0_w: float
    delta_pi_w: float = math.inf

    # --- derived constants (S0 Table I, S1 §4.2) ---
    @property
    def B_tau(self) -> float:
        return float(rl.time_balance_flop_per_byte(self.tau_flop_s, self.tau_mem_s_per_byte))

    @property
    def B_eps(self) -> float:
        return float(rl.energy_balance_flop_per_byte(self.eps_flop_j, self.eps_mem_j_per_byte))

    @property
    def eps_0(self) -> float:
        return float(rl.const_energy_per_flop_j(self.pi0_w, self.tau_flop_s))

    @property
    def eps_hat(self) -> float:
        return float(rl.eps_hat_j_per_flop(self.eps_flop_j, self.pi0_w, self.tau_flop_s))

    @property
    def eta_flop(self) -> float:
        return float(rl.eta_flop(self.eps_flop_j, self.pi0_w, self.tau_flop_s))

    @property
    def pi_flop(self) -> float:
        return float(rl.flop_power_w(self.eps_flop_j, self.tau_flop_s))

    @property
    def pi_mem(self) -> float:
        return float(rl.mem_power_w(self.eps_mem_j_per_byte, self.tau_mem_s_per_byte))

    @property
    def balance_gap(self) -> float:
        """B_eps / B_tau (S0 §II-D)."""
        return self.B_eps / self.B_tau

    @property
    def energy_balance_point(self) -> float:
        """Bhat_eps at y = 1/2 of the arch line: the solution of I = Bhat_eps(I)."""
        return float(rl.energy_balance_point_flop_per_byte(self.B_eps, self.B_tau, self.eta_flop))

    @property
    def capped(self) -> bool:
        return not math.isinf(self.delta_pi_w)

    @property
    def headroom(self) -> float:
        """pi0 / (pi0 + delta_pi) (S1 §4.4.3); nan for the free model."""
        return self.pi0_w / (self.pi0_w + self.delta_pi_w) if self.capped else math.nan

    @property
    def B_tau_minus(self) -> float:
        return float(rl.capped_balance_points_flop_per_byte(self.B_tau, self.pi_flop, self.pi_mem, self.delta_pi_w)[0])

    @property
    def B_tau_plus(self) -> float:
        return float(rl.capped_balance_points_flop_per_byte(self.B_tau, self.pi_flop, self.pi_mem, self.delta_pi_w)[1])

    @property
    def peak_power_w(self) -> float:
        """Highest power the model ever draws: pi0 + min(delta_pi, pi_flop + pi_mem)."""
        return self.pi0_w + min(self.delta_pi_w, self.pi_flop + self.pi_mem)

    @property
    def const_energy_per_byte_j(self) -> float:
        """tau_mem * pi0: the constant energy charged to each streamed byte (S1 §4.4.3)."""
        return self.tau_mem_s_per_byte * self.pi0_w

    @property
    def streaming_energy_per_byte_j(self) -> float:
        """eps_mem + tau_mem * pi0 (S1 §4.4.3)."""
        return self.eps_mem_j_per_byte + self.const_energy_per_byte_j

    # --- functions of intensity ---
    def effective_energy_balance(self, intensity_flop_per_byte: ArrayLike) -> FloatArray:
        return rl.effective_energy_balance_flop_per_byte(intensity_flop_per_byte, self.B_eps, self.B_tau,
                                                         self.eta_flop)

    def time_per_flop_s(self, intensity_flop_per_byte: ArrayLike) -> FloatArray:
        return rl.time_per_flop_s(intensity_flop_per_byte, self.tau_flop_s, self.tau_mem_s_per_byte,
                                  self.eps_flop_j, self.eps_mem_j_per_byte, self.delta_pi_w)

    def energy_per_flop_j(self, intensity_flop_per_byte: ArrayLike) -> FloatArray:
        return rl.energy_per_flop_j(intensity_flop_per_byte, self.tau_flop_s, self.tau_mem_s_per_byte,
                                    self.eps_flop_j, self.eps_mem_j_per_byte, self.pi0_w, self.delta_pi_w)

    def performance_flop_per_s(self, intensity_flop_per_byte: ArrayLike) -> FloatArray:
        return 1.0 / self.time_per_flop_s(intensity_flop_per_byte)

    def efficiency_flop_per_j(self, intensity_flop_per_byte: ArrayLike) -> FloatArray:
        return 1.0 / self.energy_per_flop_j(intensity_flop_per_byte)

    def power_w(self, intensity_flop_per_byte: ArrayLike) -> FloatArray:
        """P = E/T at intensity I; equals the closed form of eq.38 (tested)."""
        return self.energy_per_flop_j(intensity_flop_per_byte) / self.time_per_flop_s(intensity_flop_per_byte)

    def cap_binds(self, intensity_flop_per_byte: ArrayLike) -> np.ndarray:
        """True where the third term of eq.35 sets the time."""
        i = np.asarray(intensity_flop_per_byte, dtype=np.float64)
        return (i > self.B_tau_minus) & (i < self.B_tau_plus) if self.capped else np.zeros_like(i, dtype=bool)

    # --- scenarios (S1 §4.4) ---
    def throttled(self, k: float) -> Machine:
        """The same machine with delta_pi/k (S1 §4.4.4); every other constant, pi0 included, kept."""
        if not k > 0:
            raise ValueError(f"throttle divisor k must be > 0, got {k}")
        return replace(self, delta_pi_w=self.delta_pi_w / k)
