"""Say where an emulated stream meter runs at another rate than the real device: a profile's ``rate_hz`` (gtx580's
``ps3`` streams 250 frames/s so the emulator keeps up; a real PowerSensor3 streams 20000) must not pass for the
hardware's."""

from __future__ import annotations

import logging
import math
from typing import Any

log = logging.getLogger("archline.powermon")

#: the prefix of every warning archline prints on stderr (the console handler prints the message alone)
WARNING = "archline: warning: "


def emulated_rate_note(driver: type[Any], name: str, rate_hz: float) -> str | None:
    """The line saying an emulated ``driver`` streams ``rate_hz``, not the real device's rate (its
    ``real_rate_hz``), or None when it streams the real rate (or the real one is not fixed)."""
    real = getattr(driver, "real_rate_hz", None)
    if real is None or math.isclose(rate_hz, real):
        return None
    return (f"{name}: the emulated {driver.label} streams {rate_hz:g} frames/s (the emulator's rate: the profile's "
            f"rate_hz, --rate or ?rate=); a real {driver.label} streams {real:g}, so a real run's sample counts "
            "and bounds differ")


def note_rate(drv: Any) -> None:
    """An emulated driver at another rate: the note kept as a warning to log when the stream starts
    (:func:`say_rate_warning`: ``archline: warning: ...`` on stderr, from ``bench run`` and ``meter record``) and as
    ``drv.rate_note`` (its info, so the trace's sidecar carries it);
    a real one told another rate than its own: a warning naming the setting to fix."""
    note = emulated_rate_note(type(drv), drv.name, drv.rate_hz)
    if note is None:
        return
    if not drv.emulated:       # the device's cadence is its own: frames would be placed on the wrong one
        if getattr(drv, "checks_own_rate", False):      # its handshake checks it against the board it finds
            return
        drv.rate_warning = (f"{drv.name}: a real {drv.label} streams {drv.real_rate_hz:g} frames/s but this one is "
                            f"told {drv.rate_hz:g} (an emulator's rate, as gtx580's ps3 entry has): set rate_hz = "
                            f"{drv.real_rate_hz:g} in its [[meters]] entry")
        return
    drv.rate_warning = note     # said once the stream starts: an error before it comes alone (issue 35 S#11)
    drv.rate_note = note


def say_rate_warning(drv: Any) -> None:
    """Log the driver's rate warning (``archline: warning: ...`` on stderr), once: called when its stream started."""
    line = getattr(drv, "rate_warning", None)
    if line:
        log.warning("%s%s", WARNING, line)     # a warning like every other on stderr (the sidecar keeps it bare)
        drv.rate_warning = None
