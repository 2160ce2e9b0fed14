"""Display units for people: pJ, pJ/B, GFLOP/s, GB/s, W. JSON stays SI."""

from __future__ import annotations

import math

#: SI unit -> (scale, display unit)
_DISPLAY: dict[str, tuple[float, str]] = {
    "J/flop": (1e12, "pJ/flop"), "J/byte": (1e12, "pJ/B"), "J/access": (1e12, "pJ/access"),
    "J/op": (1e12, "pJ/op"), "s/flop": (1e12, "ps/flop"), "s/byte": (1e12, "ps/B"), "s/op": (1e12, "ps/op"),
    "flop/s": (1e-9, "GFLOP/s"), "byte/s": (1e-9, "GB/s"), "flop/J": (1e-9, "GFLOP/J"),
}


def display(value: float | None, unit: str) -> tuple[str, str]:
    """(formatted number, unit) for a value in SI ``unit``."""
    if value is None:
        return "—", ""
    scale, shown = _DISPLAY.get(unit, (1.0, unit))
    v = value * scale
    if math.isinf(v):
        return "inf", shown
    return (f"{v:.4g}", shown)
