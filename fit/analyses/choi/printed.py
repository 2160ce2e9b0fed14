"""Model constants rebuilt from the values S1's text prints where S1 Table 6 (the 12 platforms' fitted
constants) is absent (S1 §4.4.3, §5.2.3.1; model.md §4).

* The constant-energy charge per streamed byte is tau_mem*pi0, the total streaming energy per byte
  eps_mem + tau_mem*pi0 (S1 §4.4.3): ``streaming_energy_per_byte_j``.
* Given tau_mem*pi0 and a bandwidth, pi0 follows; given the peak energy efficiency 1/eps_hat (S1 §4.4.3 prints
  16 GFLOP/J for the GTX Titan) and tau_flop, eps_flop = eps_hat - pi0*tau_flop (S1 eq.5):
  ``machine_from_printed``, from which S1 §5.2.3.1's balances (B_tau ~ 16, B_eps ~ 8) follow.
"""

from __future__ import annotations

import math

from archline.fit.errors import ArchlineFitError
from archline.fit.model.machine import Machine
from archline.fit.platforms.profiles import Platform


class PrintedValuesError(ArchlineFitError):
    pass


def streaming_energy_per_byte_j(platform: Platform) -> float:
    """eps_mem + tau_mem*pi0 (S1 §4.4.3), from the profile's eps_mem and const_energy_per_byte (or pi0 and
    tau_mem when it has them)."""
    c = platform.value("const_energy_per_byte")
    if c is None:
        c = platform.require("pi0", "the streaming energy") * platform.require("tau_mem", "the streaming energy")
    return platform.require("eps_mem", "the streaming energy") + c


def machine_from_printed(*, tau_flop_s: float, tau_mem_s_per_byte: float, eps_mem_j_per_byte: float,
                         const_energy_per_byte_j: float, peak_flop_per_j: float,
                         delta_pi_w: float = math.inf) -> Machine:
    """The machine whose pi0 = const_energy_per_byte/tau_mem and eps_flop = 1/peak_flop_per_j - pi0*tau_flop."""
    pi0 = const_energy_per_byte_j / tau_mem_s_per_byte
    eps_flop = 1.0 / peak_flop_per_j - pi0 * tau_flop_s
    if not eps_flop > 0:
        raise PrintedValuesError(f"pi0*tau_flop = {pi0 * tau_flop_s * 1e12:.4g} pJ is not below 1/peak efficiency "
                                 f"= {1e12 / peak_flop_per_j:.4g} pJ: these values leave no energy for a flop")
    return Machine(tau_flop_s, tau_mem_s_per_byte, eps_flop, eps_mem_j_per_byte, pi0, delta_pi_w)


def machine_from_platform(platform: Platform, peak_flop_per_j: float, precision: str = "sp") -> Machine:
    """``machine_from_printed`` with the profile's tau_flop, tau_mem, eps_mem and const_energy_per_byte."""
    need = "the machine rebuilt from printed values"
    return machine_from_printed(
        tau_flop_s=platform.require(f"tau_flop_{precision}", need),
        tau_mem_s_per_byte=platform.require("tau_mem", need),
        eps_mem_j_per_byte=platform.require("eps_mem", need),
        const_energy_per_byte_j=platform.require("const_energy_per_byte", need), peak_flop_per_j=peak_flop_per_j)
