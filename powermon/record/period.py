"""A meter's sample period, and the rule that a recording is not shorter than one of them (``meter record
--duration``): a shorter one would still span a whole sample, a window wider than asked, so it is refused."""

from __future__ import annotations

import contextlib
import math
from typing import Any

from archline.powermon.errors import MeterError


def sample_period_s(meter: Any) -> tuple[float, float] | None:
    """A meter's sample (update) period: (device seconds, host seconds at its speed), or None when it has none."""
    hz = getattr(meter, "update_hz", None)
    if isinstance(hz, bool) or not isinstance(hz, (int, float)) or not (math.isfinite(hz) and hz > 0):
        return None
    speed = getattr(meter, "speed", 1.0)
    speed = float(speed) if isinstance(speed, (int, float)) and math.isfinite(speed) and speed > 0 else 1.0
    return 1.0 / float(hz), 1.0 / (float(hz) * speed)


def check_duration(meter: Any, duration_s: float) -> None:
    """Refuse a ``--duration`` under one sample period of ``meter`` (one line naming the duration, the period and
    the least duration to pass); the meter, built but not started, is stopped first (an emulator's pty is open
    from its construction)."""
    period = sample_period_s(meter)
    if period is None or duration_s >= period[1] * (1 - 1e-9):
        return
    stop = getattr(meter, "stop", None)
    if callable(stop):
        with contextlib.suppress(MeterError, OSError):
            stop()
    dev_s, host_s = period
    at = f" ({host_s:.4g} s at its {dev_s / host_s:g}x speed)" if not math.isclose(dev_s, host_s) else ""
    name = getattr(meter, "name", "the meter")
    raise MeterError(f"--duration {duration_s:g} s is shorter than {name}'s sample period of {dev_s:.6g} s{at}: "
                     "the recording would still span a whole sample, longer than asked; pass --duration "
                     f"{round_up(host_s):.4g} or more")


def round_up(x: float, digits: int = 4) -> float:
    """``x`` rounded up to ``digits`` significant digits (a least value to print that is not below ``x``)."""
    q = 10.0 ** (math.floor(math.log10(x)) - digits + 1)
    return math.ceil(x / q - 1e-9) * q
