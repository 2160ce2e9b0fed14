"""Byte sizes as people write them: ``65536``, ``512K``, ``512KiB``, ``8MB``, ``1.5G`` (binary multiples, as cache
and working-set sizes are quoted)."""

from __future__ import annotations

_MULT = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}


def parse_bytes(text: str) -> int:
    """Bytes in ``text``; ValueError naming the text when it is not a size (or not positive)."""
    t = str(text).strip().upper().replace(" ", "")
    t = t.removesuffix("B").removesuffix("I")
    unit = t[-1] if t and t[-1] in _MULT else ""
    num = t[: len(t) - len(unit)]
    try:
        value = float(num) * _MULT[unit]
    except ValueError:
        raise ValueError(f"cannot read size {text!r} (use bytes or K/M/G suffixes: 65536, 512K, 64MiB)") from None
    if not value > 0 or value != value or value == float("inf"):
        raise ValueError(f"size must be positive, got {text!r}")
    return int(value)
