"""Offline work on files: decode a raw capture (its kind's decoder, from the registry), integrate a samples
file, list meters."""

from __future__ import annotations

import importlib
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from archline.common.outputs import show
from archline.formats.meters.samples import Samples
from archline.formats.meters.samples_file import SamplesFile
from archline.powermon import kinds
from archline.powermon.errors import MeterError, SamplesLostError
from archline.powermon.meter_list import list_meters as list_meters  # re-exported: `meter list`'s rows
from archline.powermon.record.resolution import resolution_note, resolution_w

if TYPE_CHECKING:  # pragma: no cover
    from archline.powermon.record.integrate import Integration


def _decoder() -> Any:
    """The module that decodes a raw capture whose sidecar is not a byte-stream meter's (or that has none): the
    decoder of archline's kind that declares one (the PowerMon 2's)."""
    return importlib.import_module(next(k.decoder for k in kinds.builtin_kinds() if k.decoder is not None))


def decode_file(raw_path: str | Path, out: str | Path | None = None, channels: Sequence[int] | None = None,
                rate_hz: float | None = None, r_sense_ohm: float | None = None, *, partial: bool = False
                ) -> tuple[Samples, dict[str, Any]]:
    """Decode a raw capture into samples, optionally written to ``out`` (the decoder's ``decode_file``)."""
    return _decoder().decode_file(raw_path, out, channels, rate_hz, r_sense_ohm, partial=partial)  # type: ignore[no-any-return]


def decode_to_file(raw_path: str | Path, out: str | Path, channels: Sequence[int] | None = None,
                   rate_hz: float | None = None, r_sense_ohm: float | None = None, *, partial: bool = False
                   ) -> tuple[int, bool | None, dict[str, Any]]:
    """Decode a raw capture into a samples file: (rows written, emulated (None: not known), meta)."""
    return _decoder().decode_to_file(raw_path, out, channels, rate_hz, r_sense_ohm, partial=partial)  # type: ignore[no-any-return]


def integrate_file(path: str | Path, t0_s: float | None = None, t1_s: float | None = None, *,
                   min_samples: int = 2) -> Integration:
    """Integrate a samples file the way its recording did: on the device's timeline (``speed``, an emulator's time
    compression, from the file's sidecar) and, unless a window is given, over the recorded window. With the
    sidecar's ``rate_hz``, holes in a channel's cadence are lost samples (counted as the live recorder counts them,
    :func:`archline.powermon.record.integrate.integrate_series`); :func:`loss_error` says when they are too many."""
    from archline.powermon.record.integrate import integrate_samples

    f = SamplesFile.load(path)
    s, side = f.samples, f.side
    info = (side.info or {}) if side is not None else {}
    if side is not None and "type" not in info and isinstance(side.extra("type"), str):
        # `meter decode` keeps the meter's kind and its steps (a stream capture) or shunts (a PowerMon 2 capture) at
        # the top of the sidecar
        info = {**info, "type": side.extra("type"), "resolution": side.extra("resolution"),
                "r_sense_ohm": side.extra("r_sense_ohm")}
    stats = side.counts() if side is not None else {}
    speed = side.speed if side is not None and s.clock != "device_s" else 1.0
    # the cadence the meter promised, on the t_s timeline: holes in it are lost samples (the live recorder's rule)
    period_s = 1.0 / (side.rate_hz * speed) if side is not None and side.rate_hz else None
    window = side.window_s if side is not None else None
    recorded = t0_s is None and t1_s is None and window is not None
    # a stale BMC (docs/meters.md): a window past its last reading (periods lost), if the sidecar counts its rows
    stale_ok = info.get("type") == "bmc" and info.get("readings") == len(s)
    if window is not None and recorded:
        t0_s, t1_s = window[0], window[1]
        _check_belongs(path, s, window, stats, stale_ok)
    if info.get("type") == "bmc":
        bmc = _integrate_bmc(path, s, side, info, t0_s, t1_s, stale_ok and recorded)
        if bmc is not None:
            return _trace_warnings(bmc, path, side)
    overflows = stats.get("overflows", side.overflows if side is not None else None)
    power_err_w = resolution_w(s, info)
    try:
        res = integrate_samples(s, t0_s, t1_s, overflows=overflows if isinstance(overflows, int) else None,
                                gaps=side.gaps if side is not None else None, period_s=period_s,
                                power_err_w=power_err_w, min_samples=min_samples,
                                time_compression=float(speed))
    except MeterError as e:
        if recorded and "outside the samples" in str(e):
            raise MeterError(f"{show(path)}: the recorded window reaches past the samples (the meter lost the rest "
                             f"of the recording; its sidecar says: {info.get('error') or 'no error'}); give --start "
                             f"and --end inside them to integrate what arrived ({e})") from None
        raise
    records = stats.get("sample_records")
    if isinstance(records, int) and records > s.t_s.size:       # rows the meter sent that the file no longer holds
        missing = records - int(s.t_s.size)
        # holes inside the window are already lost by the cadence; rows cut from the end are not seen by it
        whole = (recorded or (t0_s is None and t1_s is None)) and res.lost_samples == 0
        if whole:
            res.expected_samples = (res.expected_samples or int(s.t_s.size)) + missing
            res.lost_samples += missing
        res.warnings.append(f"{show(path)} holds {s.t_s.size} samples but its sidecar lists {records}: {missing} "
                            "are missing (a file cut short?)" + ("; counted as lost, and the energy is of the "
                                                                "samples held only" if whole else ""))
    note = resolution_note(path, info, side is not None) if power_err_w is None else None
    if note is not None:
        res.warnings.append(note)
    return _trace_warnings(res, path, side)


def _trace_warnings(res: Integration, path: str | Path, side: Any) -> Integration:
    """What the sidecar says about the recording beyond the integration: interrupted, source not known, none."""
    if side is not None and side.extra("interrupted") is True:
        asked = side.extra("duration_requested_s")
        res.warnings.append(f"{show(path)}: the recording was interrupted (a signal) before its "
                            + (f"{asked:g} s" if isinstance(asked, (int, float)) else "duration") + " ended")
    if side is not None and side.emulated is None:
        res.warnings.append(f"{show(path)}: its sidecar says the source is not known (emulated: null, a capture "
                            "decoded without its sidecar): real hardware or archline's emulator cannot be told")
    if side is None:
        res.warnings.append(f"{show(path)} has no sidecar ({show(path)}.json; a pipe has none): integrated without the "
                            "recording's window, cadence, time compression and emulated label, and the energy bound "
                            "excludes the meter's resolution (it covers the integration only)")
    return res


def _check_belongs(path: str | Path, s: Samples, window: list[float], stats: dict[str, Any], stale: bool) -> None:
    """A sidecar of another recording beside these samples (copied or renamed with another trace): its recorded
    window misses the samples altogether, or it lists fewer rows than the file holds. One line saying the sidecar
    does not match, rather than blaming the meter for samples it never lost (``stale``: a window after them is ok)."""
    if len(s) == 0:
        return
    lo, hi = float(np.min(s.t_s)), float(np.max(s.t_s))
    records = stats.get("sample_records")
    why = ""
    if window[1] < lo or (window[0] > hi and not stale):
        why = (f"its recorded window {window[0]:.9g} .. {window[1]:.9g} s lies wholly outside the samples "
               f"({lo:.9g} .. {hi:.9g} s)")
    elif isinstance(records, int) and not isinstance(records, bool) and records < s.t_s.size:
        why = f"it lists {records} sample records but the file holds {s.t_s.size} rows"
    if why:
        raise MeterError(f"{show(path)}: its sidecar {show(str(path) + '.json')} does not match these samples ({why}): "
                         "it is another recording's; put the trace's own sidecar beside it, or give --start and "
                         "--end to integrate without the recorded window")


def _integrate_bmc(path: str | Path, s: Samples, side: Any, info: dict[str, Any], t0_s: float | None,
                   t1_s: float | None, stale_ok: bool = False) -> Integration | None:
    """A BMC trace integrated as its recording was (the readings' step function and the BMC bound,
    :func:`archline.powermon.bmc.bound.window_energy`), so ``meter integrate`` states ``meter record``'s energy and
    bound; None (the generic integration, with a warning) when the sidecar lacks the bound's terms."""
    from archline.formats.meters.samples_file import check_power
    from archline.powermon.bmc.bound import BoundTerms, breakpoints, window_energy
    from archline.powermon.record.integrate import ChannelEnergy, Integration

    terms = BoundTerms.from_info(info)
    if terms is None or len(s) == 0 or np.unique(s.channel).size != 1:
        return None
    check_power(s, show(path))
    t, e = breakpoints(s, terms)
    if not np.all(np.diff(t) > 0):           # rows that are not a BMC's readings' middles (an edited file)
        return None
    a = float(t[0]) if t0_s is None else float(t0_s)
    b = float(t[-1]) if t1_s is None else float(t1_s)
    if not (math.isfinite(a) and math.isfinite(b) and b > a):
        raise MeterError(f"{show(path)}: the region {a:g} .. {b:g} s is empty or reversed; give --start before --end")
    if not stale_ok and (a < t[0] - terms.period_s or b > t[-1] + terms.period_s):
        raise MeterError(f"{show(path)}: the region {a:.9g} .. {b:.9g} s lies outside the samples "
                         f"({float(t[0]):.9g} .. {float(t[-1]):.9g} s); give --start and --end inside them")
    failed_at = info.get("failed_poll_s")
    failed = sum(1 for x in failed_at if isinstance(x, (int, float)) and a <= x <= b) \
        if isinstance(failed_at, list) else 0
    w = window_energy(t, e, a, b, terms, failed, "see the sidecar's failed_polls")
    chans = {str(int(s.channel[0])): ChannelEnergy(w.energy_j, w.err_j, w.mean_power_w, w.n, (b - a) * terms.speed,
                                                   w.gaps, w.lost, w.lost_s)}
    return Integration(chans, w.energy_j, w.err_j, (b - a) * terms.speed, None, w.gaps, a, b,
                       emulated=bool(side.emulated) if side is not None else False, lost_samples=w.lost,
                       lost_s=w.lost_s, time_compression=terms.speed, warnings=list(w.warnings),
                       expected_samples=w.expected)


def loss_error(res: Integration, path: str | Path, max_lost: float) -> SamplesLostError | None:
    """The error to exit with (6) after showing ``res`` when more than ``max_lost`` of its samples were lost, as a
    recording's window fails (:meth:`archline.powermon.record.recorder.Recorder.end`)."""
    if res.lost_share <= max_lost:
        return None
    return SamplesLostError(f"{show(path)}: {res.loss_text()}: more than --max-lost {100 * max_lost:.3g}%; the "
                            "energy bound covers the holes")
