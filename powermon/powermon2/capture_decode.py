"""Decoding a raw PowerMon 2 capture (``meter decode``): its records into samples, with its sidecar's channels,
rate, shunts and clock; a .csv/.csv.gz is written while decoding goes on (:mod:`archline.formats.meters.
samples_csv`). The kind's ``decoder`` in the registry (powermon/kinds.py): :mod:`archline.powermon.offline`
calls it for a capture whose sidecar is not a byte-stream meter's."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from archline.common.outputs import show
from archline.formats.meters.samples import Samples
from archline.formats.meters.samples_file import (
    SamplesFile,
    check_samples_output,
    check_samples_path,
    kind_of,
    write_samples,
)
from archline.powermon.errors import MeterError
from archline.powermon.powermon2.decode import StreamDecoder, guess_channels
from archline.powermon.powermon2.kind import NAME as POWERMON2
from archline.powermon.powermon2.protocol import DEFAULT_R_SENSE_OHM, TICK_HZ, period_for_rate

if TYPE_CHECKING:  # pragma: no cover
    from archline.formats.meters.samples_csv import CsvStream
    from archline.formats.meters.sidecar import CaptureSidecar
    from archline.powermon.powermon2.row_format import RowFormat


#: Raw bytes fed to the decoder at a time when writing as it decodes (~260 k records, half a minute of 8 channels
#: at 1024 Hz): small enough that the writer starts early, big enough that per-block work is amortised.
FEED_BYTES = 1 << 20


def _prepare(raw_path: str | Path, channels: Sequence[int] | None, rate_hz: float | None,
             r_sense_ohm: float | None) -> tuple[bytes, list[int], int, CaptureSidecar | None, RowFormat]:
    """The capture's bytes, channels, period and sidecar, and how its records become rows."""
    from archline.formats.meters.capture import read_capture
    from archline.powermon.powermon2.row_format import RowFormat

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
    meter = side.meter if side is not None and side.meter is not None else POWERMON2
    fmt = RowFormat(r_lut, t_of_event, meter, side.emulated if side else _emulated_bytes(data), clock_name)
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
