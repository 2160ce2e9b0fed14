"""Error bounds a window's energy carries beyond the integration's own: the meter's clock placement at each
edge, and a window shorter than the meter's sample period (a power step can hide between samples)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from archline.powermon.record.meters import MeterRegion


def half_lsb_power_w(volts: Any, amps: Any, lsb_v: Any, lsb_a: Any) -> Any:
    """Half an ADC step of voltage (``lsb_v`` volts per step) and of current (``lsb_a`` amps per step) propagated
    to power (W): each sample's resolution bound for a meter that reads V and I with a fixed step. The one
    function a live stream meter (PowerSensor3, PMD-USB) and ``meter integrate`` of its trace both use, so the
    two state the same bound (the steps travel in the trace's sidecar, ``info.resolution``)."""
    return 0.5 * (np.abs(amps) * lsb_v + np.abs(volts) * lsb_a)


def edge_err_j(mr: MeterRegion, clock_err_s: float) -> float:
    """What a sampling meter's window may be off by because its clock is mapped onto the host's only to within
    ``clock_err_s``: at each edge, the swing of each channel's power within a period and a half of the edge (a
    power step there moves energy across the edge) times that uncertainty. Zero for a counter meter, which is
    read at the marks themselves."""
    s = mr.samples
    if mr.kind != "sampling" or s is None or len(s) == 0 or clock_err_s <= 0 or not mr.sample_hz:
        return 0.0
    speed = mr.duration_s / mr.time_s if mr.time_s > 0 and math.isfinite(mr.duration_s) else 1.0
    reach_s = 1.5 / (mr.sample_hz * speed) + clock_err_s     # host seconds around the edge
    total = 0.0
    for t_edge in (mr.t_start_s, mr.t_end_s):
        near = np.abs(s.t_s - t_edge) <= reach_s
        for c in np.unique(s.channel[near]):
            p = s.power_w[near & (s.channel == c)]
            total += float(p.max() - p.min()) * clock_err_s * speed
    return total


def short_window_err_j(mr: MeterRegion, full_scale_w: float | None) -> tuple[float, str]:
    """A window shorter than two sample periods may hold a power step no sample saw (a burst between two
    samples): its energy is then known only to within its duration times the widest power the meter could have
    missed: its full scale (``full_scale_w``) where known, else the most it saw around the window. Returns that
    bound and a warning, or (0, "") for a longer window or a counter meter."""
    if mr.kind != "sampling" or not mr.sample_hz or not math.isfinite(mr.duration_s):
        return 0.0, ""
    period_s = 1.0 / mr.sample_hz                      # device seconds
    if mr.duration_s >= 2.0 * period_s:
        return 0.0, ""
    s = mr.samples
    seen_w = 0.0
    if s is not None and len(s):
        speed = mr.duration_s / mr.time_s if mr.time_s > 0 else 1.0
        reach_s = 2.0 * period_s / speed
        near = (s.t_s >= mr.t_start_s - reach_s) & (s.t_s <= mr.t_end_s + reach_s)
        for c in np.unique(s.channel[near]):
            seen_w += float(np.max(s.power_w[near & (s.channel == c)]))
    swing_w = max(full_scale_w or 0.0, seen_w)
    note = (f"window of {mr.duration_s * 1e3:.3g} ms is shorter than the meter's sample period "
            f"({period_s * 1e3:.3g} ms) twice over: a power step inside it may be unseen; its bound covers "
            f"{swing_w:.4g} W over the whole window")
    return swing_w * mr.duration_s, note


def full_scale_w(meter: Any) -> float | None:
    """The most power a meter can read, summed over its channels (nominal volts x the sense's full-scale amps),
    where its spec says; else None."""
    chans = getattr(getattr(meter, "spec", None), "channels", None)
    if not chans:
        return None
    try:
        return float(sum(c.nominal_v * c.full_scale_a for c in chans))
    except (AttributeError, TypeError):
        return None


def clock_err_s(meter: Any) -> float:
    """How well a sampling meter's clock is aligned with the host's: what the meter declares (``clock_err_s``),
    else half its sample period (host seconds). The lower envelope of its arrival lags places the device's clock
    late by the least transfer latency it saw: 0.6-2.3 ms was measured at 128 Hz on the emulated PowerMon 2."""
    declared = getattr(meter, "clock_err_s", None)
    if isinstance(declared, (int, float)):
        return float(declared)
    hz = getattr(meter, "update_hz", None)
    if getattr(meter, "kind", "") != "sampling" or not hz:
        return 0.0
    return 0.5 / (float(hz) * float(getattr(meter, "speed", 1.0) or 1.0))
