"""Model constants rebuilt from the values S1's text prints where S1 Table 6 (the 12 platforms' fitted
constants) is absent (S1 §4.4.3, §5.2.3.1; model.md §4).

* The constant-energy charge per streamed byte is tau_mem*pi0, the total streaming energy per byte
  eps_mem + tau_mem*pi0 (S1 §4.4.3): ``streaming_energy_per_byte_j``.
* Given tau_mem*pi0 and a bandwidth, pi0 follows; given the peak energy efficiency 1/eps_hat (S1 §4.4.3 prints
  16 GFLOP/J for the GTX Titan) and tau_flop, eps_flop = eps_hat - pi0*tau_flop (S1 eq.5), and a
  :class:`~archline.model.machine.Machine` of them gives S1 §5.2.3.1's balances (B_tau ~ 16, B_eps ~ 8;
  tests/qids/test_qids_s1.py::test_q097_titan_balances).
"""

from __future__ import annotations

from archline.formats.platforms.profiles import Platform


def streaming_energy_per_byte_j(platform: Platform) -> float:
    """eps_mem + tau_mem*pi0 (S1 §4.4.3), from the profile's eps_mem and const_energy_per_byte (or pi0 and
    tau_mem when it has them)."""
    c = platform.value("const_energy_per_byte")
    if c is None:
        c = platform.require("pi0", "the streaming energy") * platform.require("tau_mem", "the streaming energy")
    return platform.require("eps_mem", "the streaming energy") + c
