"""Iso-power comparison of a big and a small system (S1 §4.1, §5.2.3; model.md §4)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class IsoPower:
    n_small: float          # N = P_max(big) / P_max(small)
    flop_per_s: float       # aggregate of N small systems
    byte_per_s: float
    power_w: float
    flop_per_j: float       # unchanged by scaling: network cost is ignored


def iso_power(big_peak_power_w: float, small_peak_power_w: float, small_flop_per_s: float,
              small_byte_per_s: float, small_flop_per_j: float) -> IsoPower:
    """Scale the small system by N so that both draw the same peak power."""
    if small_peak_power_w <= 0 or big_peak_power_w <= 0:
        raise ValueError("peak powers must be positive")
    n = big_peak_power_w / small_peak_power_w
    return IsoPower(n, n * small_flop_per_s, n * small_byte_per_s, n * small_peak_power_w, small_flop_per_j)
