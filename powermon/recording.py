"""``archline meter record``: one meter into a trace, with everything it lost counted (lost samples, lost seconds,
gaps, overflows, the decoder's own counts), a raw capture beside the trace, and the error to exit with when more
than the allowed share was lost or the meter vanished (docs/errors.md)."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from archline.common.errors import OutputError
from archline.common.outputs import check_output, is_stream, show
from archline.formats.meters.samples_file import (
    SUFFIXES,
    check_samples_output,
    recorded_capture,
    sidecar_of,
    write_samples,
)
from archline.powermon.errors import MAX_LOST_SHARE, DeviceError, MeterError, SamplesLostError
from archline.powermon.meter_words import meter_from_spec
from archline.powermon.monitor import open_windows
from archline.powermon.record.output_files import Made, deferred_interrupts
from archline.powermon.record.output_files import check_writable as check_writable  # re-exported (cli)
from archline.powermon.record.output_files import writes_stdout as writes_stdout


def raw_capture_path(out: Path) -> Path | None:
    """``t.raw.bin`` beside a trace ``t.csv`` (``t.csv.gz``, ``t.parquet``): only the trace's own suffix is replaced,
    so ``run.1.csv`` keeps ``run.1.raw.bin`` and ``run.2.csv`` ``run.2.raw.bin``; None for a stream output
    (``--out /dev/null``: nothing is kept)."""
    if is_stream(out):
        return None
    low = out.name.lower()
    suffix = next((s for s in sorted(SUFFIXES, key=len, reverse=True) if low.endswith(s)), "")
    raw = out.with_name(out.name[: len(out.name) - len(suffix)] + ".raw.bin")
    if raw == out or check_output(raw) == check_output(out):
        raise MeterError(f"--out {show(out)} is the raw capture's name ({show(raw)}): name the trace .csv, .csv.gz "
                         "or .parquet beside it")
    return raw


def _capture_sidecar(raw: Path) -> Path:
    from archline.formats.meters.capture import sidecar_path

    return sidecar_path(raw)


def check_capture_free(raw: Path, out: Path) -> None:
    """Refuse (OutputError, exit 2, before the meter starts) a raw capture ``raw`` (or its sidecar) that already
    exists and is not the capture of the trace ``out`` being replaced (its sidecar names the capture it was recorded
    with): another recording's capture is never overwritten. Rerunning the same ``--out`` replaces both, as
    every archline output is replaced."""
    there = [p for p in (raw, _capture_sidecar(raw)) if os.path.lexists(p)]
    if not there:
        return
    if recorded_capture(out) == raw.name:     # the sidecar's owner reads it
        return
    raise OutputError(f"raw capture {show(there[0])} already exists and is not the capture of --out {show(out)} "
                      f"(another recording's): it would be overwritten; move it away or name another --out")


@dataclass
class Recording:
    """What ``archline meter record`` made: the trace, its summary (counts of everything lost) and, when the
    meter lost more than allowed or vanished, the error to exit with (after the summary is shown)."""

    trace: Path
    summary: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    error: MeterError | None = None
    interrupted: bool = False


def _edge_s(meter: Any) -> float:
    """A sample period in host seconds, less a hair (0 for a meter without one): the window is held to the
    duration plus at most this, so that the samples it snaps to span the whole duration."""
    from archline.powermon.record.period import sample_period_s

    period = sample_period_s(meter)
    return 0.0 if period is None else period[1] * (1 - 1e-6)


def _wait_for_window(rec: Any, meter: Any, duration_s: float) -> None:
    """Until ``duration_s`` has passed since the meter's stream began (a stream meter's window starts there, which
    a late first sample may put after the mark the sleep began at); at most one more ``duration_s``."""
    start = getattr(meter, "stream_start_s", None)
    if not callable(start):
        return
    deadline = rec.clock() + duration_s
    while rec.clock() < deadline:
        try:
            left = float(start()) + duration_s - rec.clock()
        except MeterError:          # no sample yet to place the start by: the recording says what went wrong
            return
        if left <= 0:
            return
        time.sleep(min(left, 0.05))


def record(spec: str, duration_s: float, out: str | Path, channels: Sequence[int] | None = None,
           rate_hz: float | None = None, max_lost: float = MAX_LOST_SHARE) -> Recording:
    """Record one meter for ``duration_s`` into a trace file; a PowerMon 2 also keeps its raw capture beside it.

    Nothing lost passes silently: the summary holds the window's lost samples and lost seconds, gaps, overflows
    and the decoder's own counts; a loss above ``max_lost`` (a share) or a vanished meter is returned as the error
    to exit with. Ctrl-C stops the recording early: what was recorded is written, whole, and reported."""
    from archline.powermon.record.period import check_duration

    if not (math.isfinite(duration_s) and duration_s > 0):
        raise MeterError(f"--duration must be a positive number of seconds, got {duration_s:g}")
    if not (math.isfinite(max_lost) and 0 <= max_lost <= 1):
        raise MeterError(f"--max-lost must be a share between 0 and 1, got {max_lost:g}")
    check_samples_output(out)     # the trace and its sidecar, before anything is recorded
    out_p = Path(out)
    if not is_stream(out_p) and out_p.is_symlink():
        # the samples go through the link: its target names the sidecar and the raw capture, which sit beside it
        out_p = check_writable(out_p)
        check_samples_output(out_p)
    from archline.powermon import kinds

    kind = kinds.by_word(spec.partition(":")[0])
    raw = raw_capture_path(out_p) if kind is not None and kind.captures else None
    outputs = [out_p, *filter(None, [sidecar_of(out_p)]), *([raw, _capture_sidecar(raw)] if raw else [])]
    for o in outputs:               # every file the record writes, writable, before the meter starts
        check_writable(o)
    if raw is not None:
        check_capture_free(raw, out_p)
    made = Made(outputs)
    meter = meter_from_spec(spec, channels, rate_hz, raw)
    check_duration(meter, duration_s)       # not silently widened to one sample period
    interrupted = False
    rec = open_windows([meter], start=True)
    try:
        rec.begin("record")
        try:
            time.sleep(duration_s)
            _wait_for_window(rec, meter, duration_s)
        except KeyboardInterrupt:
            interrupted = True
    except BaseException:
        rec.stop()
        raise
    # what was recorded is finished and written, whole, before exiting; a write that fails removes what this run made
    with deferred_interrupts() as late, made:
        try:
            t1 = rec.clock()
            # the window starts where the stream does, so it holds every sample of the capture (and every loss the
            # decoder counts). Asked only now: the clock map's offset is a minimum over arrival lags, so it moves
            # earlier as data arrives, and an early answer (a late first read on a busy host) would cut the first
            # sample's loss out of the window. A meter without its own stream starts at the mark.
            start = getattr(meter, "stream_start_s", None)
            t0 = float(start()) if callable(start) else rec.marks[-1].t_s
            if not interrupted:     # the window is --duration long, not the sleep's overshoot and the stop's delay
                t1 = min(t1, t0 + duration_s + _edge_s(meter))
            region = rec.end("record", t0_s=t0, t1_s=t1)
        finally:
            rec.stop()
        info = meter.info()
        (mr,) = region.meters.values()
        to_host = getattr(meter, "host_time_s", None)
        if mr.device_window_s is not None and callable(to_host):   # the window as the region integrated it
            t0, t1 = to_host(mr.device_window_s[0]), to_host(mr.device_window_s[1])
        kept = getattr(meter, "raw_path", None)
        samples = meter.samples()
        # the trace is everything the meter sent, as its raw capture and its counts are (a decode of the capture
        # gives the same rows): the samples that arrived while the meter stopped lie past the window, and are counted
        past = int(np.sum(samples.t_s > t1)) if samples.clock != "device_s" else 0
        write_samples(samples, out_p, {"marks": [vars(m) for m in rec.marks], "info": info,
                                       "rows_after_window": past,
                                               "window_s": [t0, t1], "rate_hz": info.get("rate_hz"),
                                               "speed": getattr(meter, "speed", 1.0),
                                               # a short trace says why: stopped by a signal, not the duration
                                               "interrupted": interrupted, "duration_requested_s": duration_s,
                                               # the capture recorded with it (a rerun may replace that one)
                                               **({"raw": Path(kept).name} if kept is not None else {})})
    interrupted = interrupted or late.hit
    summary = region.summary()
    if mr.device_window_s is not None and callable(to_host):
        summary["time_s"] = t1 - t0     # the window integrated (the trace sidecar's window_s), not the one asked
    summary["trace"] = show(out_p)
    summary["interrupted"], summary["duration_requested_s"] = interrupted, duration_s
    for key in ("stats", "stalls", "error", "source"):      # source: which Redfish resource a BMC was read from
        if key in info:
            summary.setdefault("decoder" if key == "stats" else key, info[key])
    if getattr(meter, "raw_path", None) is not None:
        summary["raw"] = show(meter.raw_path)
    for note in info.get("notes") or []:     # said on stderr when it happened (the stop): the summary keeps it
        summary.get(mr.meter, {}).setdefault("warnings", []).append(note)
    warnings = [f"{w}" for w in region.warnings]
    st = info.get("stats") or {}
    skipped = st.get("skipped_bytes", st.get("bytes_skipped", 0))     # PowerMon 2's name, the stream meters'
    if skipped or st.get("resyncs"):
        warnings.append(f"{mr.meter}: {skipped} byte(s) dropped or garbled, "
                        f"{st.get('resyncs', 0)} resync(s)")
    error: MeterError | None = None
    lost = mr.loss_text()
    if mr.lost_share > max_lost:
        why = f" ({info['error']})" if info.get("error") else ""
        error = SamplesLostError(f"{lost}{why}: more than --max-lost {100 * max_lost:.3g}%; the trace {show(out_p)} "
                                 "holds what arrived")
    elif info.get("error") and not interrupted:
        error = DeviceError(f"{info['error']}; the trace {show(out_p)} holds what arrived")
    return Recording(out_p, summary, warnings, error, interrupted)
