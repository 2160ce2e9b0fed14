"""Offline work on files: decode a raw PowerMon 2 capture, integrate a samples file, list meters, record."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from archline.common.outputs import show
from archline.powermon.errors import MeterError, SamplesLostError
from archline.powermon.meter_list import list_meters as list_meters  # re-exported: `meter list`'s rows
from archline.powermon.powermon2.decode import StreamDecoder, guess_channels
from archline.powermon.powermon2.kind import NAME as POWERMON2
from archline.powermon.powermon2.protocol import DEFAULT_R_SENSE_OHM, TICK_HZ, period_for_rate
from archline.powermon.record.resolution import resolution_note, resolution_w
from archline.powermon.record.samples import Samples
from archline.powermon.record.samples_file import (
    SamplesFile,
    check_samples_output,
    check_samples_path,
    kind_of,
    write_samples,
)

if TYPE_CHECKING:  # pragma: no cover
    from archline.powermon.record.integrate import Integration
    from archline.powermon.record.samples_csv import CsvStream, RowFormat
    from archline.powermon.sidecar import CaptureSidecar


#: Raw bytes fed to the decoder at a time when writing as it decodes (~260 k records, half a minute of 8 channels
#: at 1024 Hz): small enough that the writer starts early, big enough that per-block work is amortised.
FEED_BYTES = 1 << 20


def _prepare(raw_path: str | Path, channels: Sequence[int] | None, rate_hz: float | None,
             r_sense_ohm: float | None) -> tuple[bytes, list[int], int, CaptureSidecar | None, RowFormat]:
    """The capture's bytes, channels, period and sidecar, and how its records become rows."""
    from archline.powermon.powermon2.capture import read_capture
    from archline.powermon.record.samples_csv import RowFormat

    raw = Path(raw_path)
    data, side = read_capture(raw)
    if len(data) < 4:
        raise MeterError(f"capture {show(raw)} is empty or truncated ({len(data)} bytes)")
    if r_sense_ohm is not None and not (math.isfinite(r_sense_ohm) and r_sense_ohm > 0):
        raise MeterError(f"shunt resistance must be a positive number of ohms, got {r_sense_ohm:g}")
    if side is None:
        _not_a_stream_capture(raw, data)
    else:
        _check_against_sidecar(raw, side, channels, rate_hz)
    try:
        chans = list(channels) if channels else (side.channels if side else None) or guess_channels(data)
    except MeterError as e:      # no PowerMon 2 records: say what else it may be
        raise MeterError(f"{e} in {show(raw)}{_or_stream_capture(raw, side)}") from None
    if rate_hz is not None:
        period = period_for_rate(rate_hz)
    elif side is not None and side.period_ticks is not None:
        period = side.period_ticks
    elif side is not None and side.rate_hz is not None:
        period = period_for_rate(side.rate_hz)
    else:
        period = 8
    r_lut = np.full(16, DEFAULT_R_SENSE_OHM if r_sense_ohm is None else r_sense_ohm)
    if r_sense_ohm is None and side is not None:
        for c, r in side.shunts().items():
            r_lut[c] = r
    dt = period / TICK_HZ
    clock = side.clock if side is not None else None
    if clock is not None:
        offset, scale = clock.offset_s, clock.scale()

        def t_of_event(ev: np.ndarray) -> np.ndarray:
            return offset + (ev * dt) * scale
        clock_name = "host_monotonic"
    else:
        def t_of_event(ev: np.ndarray) -> np.ndarray:
            return ev * dt
        clock_name = "device_s"
    fmt = RowFormat(r_lut, t_of_event, side.meter if side else POWERMON2, side.emulated if side else
                    _emulated_bytes(data), clock_name)
    return data, chans, period, side, fmt


def _check_against_sidecar(raw: Path, side: CaptureSidecar, channels: Sequence[int] | None,
                           rate_hz: float | None) -> None:
    """--channels and --rate that disagree with what the capture's sidecar says the device was told: refused (the
    records would be decoded on another channel map or cadence than they were sent on); agreeing ones are fine."""
    where = f"the capture's sidecar ({show(str(raw) + '.json')})"
    if channels and side.channels and sorted(channels) != sorted(side.channels):
        raise MeterError(f"--channels {','.join(map(str, channels))} disagrees with {where}, which says the capture "
                         f"holds channels {','.join(map(str, side.channels))}: the records would be decoded on the "
                         "wrong channel map; leave --channels out")
    side_period = side.period_ticks or (period_for_rate(side.rate_hz) if side.rate_hz else None)
    if rate_hz is not None and side_period is not None and period_for_rate(rate_hz) != side_period:
        raise MeterError(f"--rate {rate_hz:g} disagrees with {where}, which says the device sampled at "
                         f"{TICK_HZ / side_period:g} Hz per channel: the samples would be put on the wrong times; "
                         "leave --rate out")


def _shunt_override(raw: str | Path, side: CaptureSidecar | None, chans: Sequence[int],
                    r_sense_ohm: float | None) -> list[str]:
    """--r-sense against the sidecar's shunts: a warning naming both when they differ (re-decoding a capture whose
    profile had a wrong shunt is what --r-sense is for, so it is not refused)."""
    if r_sense_ohm is None or side is None:
        return []
    recorded = side.shunts()
    differ = {c: recorded[c] for c in chans if c in recorded and not math.isclose(recorded[c], r_sense_ohm,
                                                                                   rel_tol=1e-9)}
    if not differ:
        return []
    by_value: dict[float, list[int]] = {}
    for c, r in sorted(differ.items()):
        by_value.setdefault(r, []).append(c)
    were = "; ".join(f"{r:g} ohm on channel(s) {','.join(map(str, cs))}" for r, cs in by_value.items())
    return [f"--r-sense {r_sense_ohm:g} ohm overrides the shunts in {show(str(raw) + '.json')} ({were}): the "
            "currents and powers are those of the shunt given, not of the recording"]


def _not_a_stream_capture(raw: Path, data: bytes) -> None:
    """A capture without its sidecar whose bytes are a PowerSensor3's or PMD-USB's frames: say so (it cannot be
    decoded without the sidecar), rather than fail to find PowerMon 2 records in it."""
    from archline.powermon import kinds
    from archline.powermon.stream.sniff import sniff_stream_kind

    kind = sniff_stream_kind(data, [(k.name, k.frame_share) for k in kinds.kinds() if k.frame_share is not None])
    if kind is not None:
        label = kinds.get(kind).title
        raise MeterError(f"{show(raw)} looks like a {label} capture (its bytes are {label} frames), not a PowerMon 2 "
                         f"one, and its sidecar {show(str(raw) + '.json')} is missing"
                         f"{' (a pipe has none)' if not raw.is_file() else ''}: a {label} capture cannot be decoded "
                         "without it (its device configuration, rate and clock); keep the two together")


def _or_stream_capture(raw: str | Path, side: CaptureSidecar | None) -> str:
    """What a capture without PowerMon 2 records may be instead, when it has no sidecar to say."""
    if side is not None:
        return ""
    return (f" (or it is a PowerSensor3 or PMD-USB capture whose sidecar {show(str(raw) + '.json')} is missing: "
            "those cannot be decoded without it)")


#: where a capture's own bytes may hold the emulator's version reply (a capture of the whole serial session)
EMULATED_MARK, MARK_WINDOW = b"EMULATED by archline", 1 << 16


def _emulated_bytes(data: bytes) -> bool | None:
    """A capture without its sidecar: emulated when its own bytes hold the emulator's version reply, else not
    known (None), never asserted to be real hardware."""
    return True if EMULATED_MARK in data[:MARK_WINDOW] else None


def _feed(dec: StreamDecoder, data: bytes, stream: CsvStream | None) -> None:
    """All of ``data`` through the decoder; with a stream, a block of finished seconds to it after each
    FEED_BYTES, so the rows are formatted and written while decoding goes on."""
    if stream is None:
        dec.feed(data)
        dec.finish()
        return
    done = 0
    view = memoryview(data)
    for i in range(0, len(data), FEED_BYTES):
        dec.feed(view[i:i + FEED_BYTES])
        stream.submit(dec.final_parts(done))
        done = len(dec.final_parts())
    dec.finish()
    stream.submit(dec.final_parts(done))


def _warnings(raw: str | Path, data: bytes, dec: StreamDecoder, side: CaptureSidecar | None, partial: bool
              ) -> list[str]:
    """What went wrong in the capture, one line each; a capture cut short (no done record) is an error unless
    ``partial``."""
    warnings: list[str] = []
    st = dec.stats
    if not st.done:
        msg = (f"capture {show(raw)} ends without its done record ({len(data)} bytes): the recording was cut short "
               "(killed, or the meter vanished), so samples after its end are missing")
        if not partial:
            raise MeterError(msg + "; pass --partial to decode what is there")
        warnings.append(msg)
    if side is None:
        known = ("its own bytes hold the emulator's version reply: labelled emulated" if _emulated_bytes(data)
                 else "whether a real PowerMon 2 or archline's emulator recorded it cannot be told, so the samples "
                 "are labelled neither (emulated: null)")
        warnings.append(f"capture {show(raw)} has no sidecar ({show(raw)}.json; a pipe has none): {known}; its "
                        "channels, rate and shunts are guessed or the defaults, and t_s is device seconds")
    if side is not None and side.error:
        warnings.append(f"the recording reported: {side.error}")
    if st.lost_records or st.uncertain_gaps or st.overflows or st.resyncs or st.skipped_bytes:
        warnings.append(f"{st.lost_records} record(s) lost in {st.gaps} gap(s), {st.overflows} overflow(s), "
                        f"{st.resyncs} resync(s), {st.skipped_bytes} byte(s) skipped")
    if st.after_done_bytes:
        warnings.append(f"{st.after_done_bytes} byte(s) follow the done record and were not decoded (a second "
                        "recording joined on? decode it on its own)")
    return warnings


def _decode(raw_path: str | Path, out: str | Path | None, channels: Sequence[int] | None, rate_hz: float | None,
            r_sense_ohm: float | None, partial: bool = False) -> tuple[StreamDecoder, RowFormat, dict[str, Any], bool]:
    """Decode a capture; a .csv/.csv.gz ``out`` (or a stream such as /dev/null) is written while decoding (True in
    the last place)."""
    if out is not None:
        check_samples_path(out)
    data, chans, period, side, fmt = _prepare(raw_path, channels, rate_hz, r_sense_ohm)
    if out is not None:    # the inputs are known now: no output (the samples nor their sidecar) may be one of them
        check_samples_output(out)
    dec = StreamDecoder(chans, period, (side.time_set_s or 0) if side is not None else None)

    def meta() -> dict[str, Any]:
        if dec.n_accepted == 0:
            raise MeterError(f"no PowerMon 2 samples in {show(raw_path)} (garbage or truncated capture; "
                             f"{dec.stats.skipped_bytes} bytes skipped){_or_stream_capture(raw_path, side)}")
        warnings = _shunt_override(raw_path, side, chans, r_sense_ohm) + _warnings(raw_path, data, dec, side,
                                                                                   partial)
        stats = dec.stats.as_dict()
        speed = side.speed if side is not None and fmt.clock == "host_monotonic" else 1.0
        # the meter's kind and the shunts the samples were decoded with: what `meter integrate` needs to state
        # record's resolution bound (half an ADC step, :func:`archline.powermon.record.resolution.resolution_w`)
        shunts = {str(c): float(fmt.r_lut[c]) for c in chans}
        return {"source": show(raw_path), "type": POWERMON2, "r_sense_ohm": shunts,
                "channels": chans, "rate_hz": TICK_HZ / period, "stats": stats,
                "overflows": stats["overflows"], "gaps": stats["gaps"], "lost_records": stats["lost_records"],
                "speed": speed, "warnings": warnings}

    if out is None or kind_of(out) == "parquet":
        _feed(dec, data, None)
        return dec, fmt, meta(), False
    info: dict[str, Any] = {}
    with SamplesFile.csv_stream(out, fmt, lambda: info.update(meta()) or info) as stream:
        _feed(dec, data, stream)
    return dec, fmt, info, True


def decode_file(raw_path: str | Path, out: str | Path | None = None, channels: Sequence[int] | None = None,
                rate_hz: float | None = None, r_sense_ohm: float | None = None, *, partial: bool = False
                ) -> tuple[Samples, dict[str, Any]]:
    """Decode a raw capture (using its ``RAW.json`` sidecar when present) and optionally write the samples
    (.csv and .csv.gz as the decoder goes; .parquet at the end). A capture that ends without its done record was
    cut short: an error unless ``partial``. Every count of what went wrong is in ``meta["stats"]``, every problem
    in ``meta["warnings"]``."""
    dec, fmt, meta, written = _decode(raw_path, out, channels, rate_hz, r_sense_ohm, partial)
    s = fmt.samples(dec.records())
    if out is not None and not written:
        write_samples(s, out, meta)
    return s, meta


def decode_to_file(raw_path: str | Path, out: str | Path, channels: Sequence[int] | None = None,
                   rate_hz: float | None = None, r_sense_ohm: float | None = None, *, partial: bool = False
                   ) -> tuple[int, bool | None, dict[str, Any]]:
    """Decode a capture into a samples file without keeping the samples: (rows written, emulated (None: not
    known, a capture without its sidecar), meta)."""
    dec, fmt, meta, written = _decode(raw_path, out, channels, rate_hz, r_sense_ohm, partial)
    if not written:
        write_samples(fmt.samples(dec.records()), out, meta)
    return dec.n_accepted, fmt.emulated, meta


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
    from archline.powermon.bmc.bound import BoundTerms, breakpoints, window_energy
    from archline.powermon.record.integrate import ChannelEnergy, Integration, check_power

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
