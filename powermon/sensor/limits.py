"""What an emulated probe or calibration can run, checked before anything starts (``meter probe/calibrate
--emulate``): a set-up outside these would run out of memory or time, or measure nothing, and is refused in one line
that says why and what to pass instead (exit 2).

* the emulated sensor's readings, and the window/lag fit over them, are held in memory: at most
  :data:`MAX_SENSOR_READINGS` over the steps (about 0.5 GB measured at 6000; 12 s of steps at the default 0.3 s);
* the emulated reference samples at 1024 Hz, all kept: at most :data:`MAX_REFERENCE_SAMPLES` (about 16 minutes of
  emulated steps);
* a fit needs readings: at least :data:`MIN_SENSOR_READINGS` over the steps;
* a BMC over Redfish is polled :data:`POLLS_PER_PERIOD` times per update period over HTTP, at most one poll per
  :data:`MIN_POLL_S` host seconds;
* a quantum above half the swing between the two levels leaves the readings changing by at most one quantum (never,
  when it is above the whole swing): nothing to fit; above a quarter of it the readings take fewer than 5 distinct
  values (:data:`MIN_QUANTUM_STEPS` quanta across the swing), too few to tell the quantum, and the gain, offset,
  window and lag fitted to three values are off by a share of the quantum that no fit can state;
* the emulated reference (a PowerMon 2) reads each channel up to its full scale (its shunt's 12-bit range,
  :attr:`archline.powermon.spec.ChannelSpec.full_scale_a`, about 25.1 A or 301 W at 12 V on the stock shunt): a
  level above it is clipped, and the sensor would be fitted against a flat reference.
"""

from __future__ import annotations

import math
from typing import Any

from archline.powermon.errors import MeterError

MAX_SENSOR_READINGS = 5_000
MAX_REFERENCE_SAMPLES = 1_000_000
MIN_SENSOR_READINGS = 16
POLLS_PER_PERIOD = 4
MIN_POLL_S = 0.001
MIN_QUANTUM_STEPS = 4


def check_emulated(*, duration_s: float, update_period_s: float, quantum_w: float, gain: float, idle_w: float,
                   busy_w: float, reference_hz: float, speed: float, redfish: bool, reference: Any = None) -> None:
    """Refuse (MeterError, exit 2) an emulated set-up whose steps last ``duration_s`` device seconds in all.
    ``reference``: the emulated reference's MeterSpec (its channels' share, nominal volts and full scale)."""
    if reference is not None:
        _check_full_scale(reference, busy_w)
    n_ref = duration_s * reference_hz
    if n_ref > MAX_REFERENCE_SAMPLES:
        raise MeterError(f"--steps/--step: {duration_s:.4g} s of steps is {n_ref:.3g} samples of the emulated "
                         f"reference ({reference_hz:g} Hz), all held in memory (at most {MAX_REFERENCE_SAMPLES}, "
                         f"{MAX_REFERENCE_SAMPLES / reference_hz:.0f} s): pass fewer or shorter steps")
    n_read = duration_s / update_period_s
    if n_read > MAX_SENSOR_READINGS:
        floor_s = duration_s / MAX_SENSOR_READINGS
        raise MeterError(f"--period {update_period_s:g}: over its {duration_s:.4g} s of steps the emulated sensor "
                         f"would give {n_read:.3g} readings, and the probe holds them and its window/lag fit over "
                         f"them in memory (at most {MAX_SENSOR_READINGS}): pass --period {_up(floor_s)} or more, or "
                         "fewer or shorter --steps/--step")
    if n_read < MIN_SENSOR_READINGS:
        ceil_s = duration_s / MIN_SENSOR_READINGS
        raise MeterError(f"--period {update_period_s:g}: over its {duration_s:.4g} s of steps the emulated sensor "
                         f"would give {max(int(n_read), 0)} reading(s); the fit needs at least {MIN_SENSOR_READINGS}: "
                         f"pass --period {_down(ceil_s)} or less, or more or longer --steps/--step")
    poll_s = update_period_s / speed / POLLS_PER_PERIOD
    if redfish and poll_s < MIN_POLL_S:
        floor_s = MIN_POLL_S * POLLS_PER_PERIOD * speed
        raise MeterError(f"--period {update_period_s:g} with --redfish at --speed {speed:g}: the BMC meter would poll "
                         f"the Redfish service every {poll_s * 1e3:.3g} ms ({POLLS_PER_PERIOD} HTTP polls per "
                         f"period), faster than one per {MIN_POLL_S * 1e3:g} ms: pass --period {_up(floor_s)} or "
                         "more, or a lower --speed")
    swing_w = gain * (busy_w - idle_w)
    if quantum_w > 0.5 * swing_w:
        never = quantum_w > swing_w
        raise MeterError(f"--quantum {quantum_w:g}: the sensor's readings would "
                         f"{'never change' if never else 'change by at most one quantum'}, because the quantum "
                         f"exceeds {'the' if never else 'half the'} swing between --idle-w {idle_w:g} and --busy-w "
                         f"{busy_w:g} ({swing_w:.4g} W as read, gain {gain:g}): nothing to fit; pass a quantum below "
                         f"{0.5 * swing_w:.4g} W or a wider swing")
    if quantum_w > swing_w / MIN_QUANTUM_STEPS:
        raise MeterError(f"--quantum {quantum_w:g}: the swing between --idle-w {idle_w:g} and --busy-w {busy_w:g} "
                         f"({swing_w:.4g} W as read, gain {gain:g}) spans fewer than {MIN_QUANTUM_STEPS} quanta, so "
                         "the readings take fewer than 5 distinct values: the quantum cannot be told, and gain, "
                         "offset, window and lag fitted to them are off by a share of the quantum no fit can state; "
                         f"pass a quantum of {swing_w / MIN_QUANTUM_STEPS:.4g} W or less, or a wider swing")


def _check_full_scale(reference: Any, busy_w: float) -> None:
    """The busy level within every reference channel's full scale (bench run refuses the same, per channel)."""
    for c in reference.channels:
        share = 1.0 if c.share is None else float(c.share)
        if share <= 0:
            continue
        amps = busy_w * share / c.nominal_v
        if amps > c.full_scale_a:
            top_w = c.full_scale_a * c.nominal_v / share
            raise MeterError(f"--busy-w {busy_w:g}: the emulated reference ({reference.kind}) channel {c.id} "
                             f"({c.rail}) would carry {amps:.1f} A, above its {c.full_scale_a:.1f} A full scale "
                             f"({math.floor(10 * top_w) / 10:g} W at {c.nominal_v:g} V): its readings would clip "
                             f"and the fit would be wrong; pass --busy-w {math.floor(top_w):d} or less")


def _up(x: float) -> str:
    """``x`` rounded up to 2 significant digits (a value that passes)."""
    e = math.floor(math.log10(x)) - 1
    return f"{math.ceil(x / 10 ** e) * 10 ** e:.3g}"


def _down(x: float) -> str:
    e = math.floor(math.log10(x)) - 1
    return f"{math.floor(x / 10 ** e) * 10 ** e:.3g}"
