"""Each sample's resolution bound as the live meter stated it, restated offline from a samples sidecar
(``meter integrate``): the same functions as the live meters, with what they need kept in the sidecar's ``info``
(a PowerMon 2's shunts, a PowerSensor3's or PMD-USB's volts and amps per ADC step)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from archline.common.outputs import show
from archline.formats.meters.samples import Samples
from archline.powermon.record.bounds import half_lsb_power_w


def _kind(kind: Any) -> Any:
    """The registry's declaration of a sidecar's ``type`` (powermon/kinds.py), or None."""
    from archline.powermon import kinds

    return kinds.find(kind) if isinstance(kind, str) else None


def _resolution(kind: Any) -> str | None:
    """What the sidecar of a ``kind`` meter keeps for its resolution bound (its kind's declaration, powermon/kinds.py:
    "shunts (r_sense_ohm)" or "ADC steps (resolution)"); None: no bound of its own."""
    k = _kind(kind)
    return None if k is None else k.resolution


def resolution_w(s: Samples, info: dict[str, Any]) -> Any:
    """Each sample's resolution bound as the live meter had it, so ``meter integrate`` states the bound ``meter
    record`` did: a PowerMon 2 trace, half an ADC step of V and I through the sidecar's shunts; a PowerSensor3 or
    PMD-USB trace, half a step of V and I from the sidecar's ``resolution`` (each pair's volts and amps per step,
    from the device's configuration). None where the sidecar does not say (then the bound covers the integration
    only: :func:`resolution_note`)."""
    k = _kind(info.get("type"))
    what = None if k is None else k.resolution
    if what == "ADC steps (resolution)":
        return _stream_resolution_w(s, info.get("resolution"))
    if what is None or k.resolution_w is None:     # the kind's own bound from the sidecar (the PowerMon 2's shunts)
        return None
    return k.resolution_w(s, info)


def _stream_resolution_w(s: Samples, steps: Any) -> Any:
    """Half a step of V and I per sample from a stream meter's ``resolution`` ({pair: {lsb_v, lsb_a}}); None when
    it is missing, malformed or lacks a channel the samples hold."""
    if not isinstance(steps, dict) or len(s.channel) == 0:
        return None
    chans = np.unique(s.channel)
    lsb_v, lsb_a = np.zeros(len(s.channel)), np.zeros(len(s.channel))
    for c in chans.tolist():
        step = steps.get(str(int(c)))
        if not isinstance(step, dict):
            return None
        v, a = _positive(step.get("lsb_v")), _positive(step.get("lsb_a"))
        if v is None or a is None:
            return None
        sel = s.channel == c
        lsb_v[sel], lsb_a[sel] = v, a
    return half_lsb_power_w(s.voltage_v, s.current_a, lsb_v, lsb_a)


def _positive(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (math.isfinite(v) and v > 0):
        return None
    return float(v)


def resolution_note(path: str | Path, info: dict[str, Any], has_sidecar: bool = True) -> str | None:
    """Why a trace is integrated without its meter's resolution bound: a sidecar written before the bound's terms
    were kept in it, or a meter whose sidecar keeps none; never a silent bound of the integration alone. None
    without a sidecar (its own warning says the sidecar is missing and what that excludes)."""
    if not has_sidecar:
        return None
    kind = info.get("type")
    what = _resolution(kind)
    if what is None:
        what = f"a {kind} meter" if isinstance(kind, str) and kind else "a meter it does not name (no info.type)"
        return (f"{show(path)}: its sidecar gives no resolution for {what}: the energy bound excludes the meter's "
                "resolution (and any averaging) and covers the integration only")
    return (f"{show(path)}: its sidecar does not give the {kind}'s {what} (written by an older archline?): the "
            "energy bound excludes the meter's resolution and covers the integration only; `meter record` and "
            "`meter decode` of this archline keep them")
