"""Stream decoder for PowerMon 2 records: alignment, resynchronisation, overflow and gap accounting.

The same class decodes a live stream chunk by chunk and a whole raw capture at once; all per-record work is
vectorised with numpy. Plausibility checks (the protocol has no sync word): a sample's sensor id is an enabled
channel and bit 28 is clear, a time record's counter increases, the sticky overflow flag never clears, and
(while searching for alignment) consecutive samples follow the enabled channels in increasing id order.

Each sample gets an *event index* (its sampling event; device time = event × period / 1024 s). Time records
anchor the index absolutely (time record with counter ``c`` precedes event ``ceil((c - c0) × 1024 / period)``),
so records lost to an overflow, a stall or a resync show up as a shortfall between two time records and are
counted in ``lost_records``; a break in the channel order tells where within the second they were lost.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from archline.powermon.errors import MeterError
from archline.powermon.powermon2.guess import guess_channels
from archline.powermon.powermon2.protocol import (
    N_SENSORS,
    PROMPT,
    RECORD_BYTES,
    TICK_HZ,
    Words,
)
from archline.powermon.powermon2.records import DecodeStats, RecordArrays, _Segment

I64 = npt.NDArray[np.int64]
__all__ = ["DecodeStats", "RecordArrays", "StreamDecoder", "decode_bytes", "guess_channels"]


class StreamDecoder:
    """Decode PowerMon 2 stream bytes fed in any chunking.

    ``channels``: the enabled sensor ids (the mask sent with ``m``); ``period_ticks``: the ``s`` period;
    ``time_set_s``: the value sent with ``t`` before streaming (None: infer from the first time record).
    """

    def __init__(self, channels: Sequence[int], period_ticks: int = 8, time_set_s: int | None = 0,
                 window: int | None = None, max_jump_s: int = 3600) -> None:
        chans = sorted({int(c) for c in channels})
        if not chans:
            raise MeterError("no channels enabled")
        if any(c < 0 or c >= N_SENSORS for c in chans):
            raise MeterError(f"channel ids must be 0..{N_SENSORS - 1}, got {chans}")
        if period_ticks < 1:
            raise MeterError(f"sampling period must be >= 1 tick, got {period_ticks}")
        self.channels = chans
        self.n = len(chans)
        self.period_ticks = int(period_ticks)
        self._enabled = np.zeros(N_SENSORS, dtype=bool)
        self._enabled[chans] = True
        self._rank = np.full(N_SENSORS, -1, dtype=np.int64)
        self._rank[chans] = np.arange(self.n)
        self.window = window or max(2 * self.n, 6)
        self.max_jump_s = max_jump_s
        self.stats = DecodeStats()
        self.time_set_s = time_set_s
        self._c0: int | None = time_set_s
        self._last_counter: int | None = time_set_s
        self._ovf = False
        self.first_overflow_event: int | None = None     #: event index where the first overflow was flagged
        self._synced = False
        self._at_start = True
        self._hole_pending = False
        self._cur_event = -1
        self._last_rank = self.n
        self._buf = bytearray()
        self._final: list[RecordArrays] = []
        self._final_ev0: list[int] = []          # first event of each finalized part (non-decreasing)
        self._final_n = 0
        self._seg = _Segment()
        self._cache: RecordArrays | None = None
        self.time_anchors: list[tuple[int, int]] = []   # (counter, event index after it)
        self.trailer = bytearray()                        # bytes after the done record (the prompt)
        self.bytes_fed = 0

    # ---------------------------------------------------------------- public
    @property
    def done(self) -> bool:
        return self.stats.done

    @property
    def n_accepted(self) -> int:
        return self._final_n + self._seg.n

    @property
    def open_second_event(self) -> int:
        """First event of the second still open (events before it are final: their holes are accounted)."""
        return self._seg.start_event

    @property
    def has_open_hole(self) -> bool:
        """True while the current (unfinished) second has a hole whose size the next time record will tell."""
        return bool(self._seg.holes) or (self._ovf and self._seg.n > 0)

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        self.bytes_fed += len(data)
        if self.stats.done:
            self.trailer += data
            return
        self._buf += data
        self._process(final=False)

    def finish(self) -> None:
        """No more bytes: decode what is left and close the last second. Bytes after the done record other than
        the device's prompt (e.g. a second capture joined on) are not decoded: they are counted, in
        ``after_done_bytes`` and ``skipped_bytes``. Idempotent; a stream that delivered nothing finishes empty."""
        if not self.stats.done:
            self._process(final=True)
            self._close_segment(None)
        self._buf.clear()
        extra = len(self.trailer) - (len(PROMPT) if self.trailer.startswith(PROMPT) else 0)
        new = max(extra, 0) - self.stats.after_done_bytes
        if new > 0:
            self.stats.after_done_bytes += new
            self.stats.skipped_bytes += new

    @property
    def last_event(self) -> int:
        """Event index of the newest accepted sample (-1 before any)."""
        return self._cur_event

    def records_between(self, event_lo: int, event_hi: int) -> RecordArrays:
        """Decoded records with ``event_lo <= event <= event_hi`` (touches only the parts that overlap)."""
        import bisect

        i0 = max(bisect.bisect_right(self._final_ev0, event_lo) - 1, 0)
        i1 = bisect.bisect_right(self._final_ev0, event_hi)
        rec = RecordArrays.concat([*self._final[i0:i1], *self._seg.parts])
        sel = np.flatnonzero((rec.event >= event_lo) & (rec.event <= event_hi))
        return RecordArrays(rec.event[sel], rec.channel[sel], rec.vcode[sel], rec.icode[sel], rec.overflow[sel])

    def final_parts(self, start: int = 0) -> list[RecordArrays]:
        """Finished blocks of records from block ``start`` on: their events no longer move, so a writer can
        take them while decoding goes on."""
        return self._final[start:]

    def records(self) -> RecordArrays:
        """All decoded sample records so far (the current second's event indices may still shift)."""
        if self._cache is None or len(self._cache) != self.n_accepted:
            self._cache = RecordArrays.concat([*self._final, *self._seg.parts])
        return self._cache

    # ---------------------------------------------------------------- validity
    def _basic_valid(self, f: Words, relaxed_time: bool) -> npt.NDArray[np.bool_]:
        v = f.is_sample & ~f.bit28 & self._enabled[f.sensor]
        v |= f.done_clean
        ti = np.flatnonzero(f.is_time)
        if ti.size:
            c = f.counter_at(ti)
            if relaxed_time:
                if self._last_counter is None:
                    ok = np.ones(ti.size, dtype=bool)
                else:
                    d = c - self._last_counter
                    ok = (d >= 1) & (d <= self.max_jump_s + 1)
            else:
                prev = np.empty_like(c)
                prev[0] = self._last_counter if self._last_counter is not None else c[0] - 1
                prev[1:] = c[:-1]
                d = c - prev
                ok = (d >= 1) & (d <= self.max_jump_s)
            v[ti] = ok
        if self._ovf:
            v &= f.overflow
        return v

    def _valid(self, f: Words) -> npt.NDArray[np.bool_]:
        v = self._basic_valid(f, relaxed_time=False)
        if not self._ovf and v.size:
            seen = np.maximum.accumulate(f.overflow & v)
            v[1:] &= ~(seen[:-1] & ~f.overflow[1:])
        return v

    def _find_sync(self, buf: bytearray, start: int, final: bool, chunk: int = 4096) -> int | None:
        """First byte position >= start where ``window`` plausible records in channel order begin."""
        margin = (self.window + 1) * RECORD_BYTES
        pos = start
        while True:
            end = min(len(buf), pos + chunk + margin)
            last_window = end >= len(buf)
            hit = self._find_sync_in(memoryview(buf)[:end], pos, final and last_window)
            if hit is not None and (hit < pos + chunk or last_window):
                return hit
            if last_window:
                return None
            pos += chunk

    def _find_sync_in(self, buf: bytearray | memoryview, start: int, final: bool) -> int | None:
        best: int | None = None
        for s in range(RECORD_BYTES):
            off = start + s
            f = Words.from_bytes(buf, off)
            m = len(f)
            if m == 0:
                continue
            good = self._basic_valid(f, relaxed_time=True)
            r = self._rank[f.sensor]
            if self._last_counter is None:
                # the counter is not known yet, so any word with bit 30 set (every ASCII letter) passes as a time
                # record: one is plausible only right after a sampling event's last record (never first in a window)
                after_event = np.zeros(m, dtype=bool)
                after_event[1:] = f.is_sample[:-1] & (r[:-1] == self.n - 1)
                good &= ~f.is_time | after_event
            if m > 1:
                both = f.is_sample[:-1] & f.is_sample[1:]
                pair_ok = ~both | (r[1:] == (r[:-1] + 1) % self.n)
                # the overflow flag is sticky: a flagged record followed by a clean one is not the stream
                good[:-1] &= pair_ok & ~(f.overflow[:-1] & ~f.overflow[1:])
            dn = np.flatnonzero(good & f.is_done)
            if dn.size:
                good[dn[0] + 1:] = True
            win = self.window
            if m < win:
                if not final:
                    continue
                good = np.concatenate([good, np.ones(win - m, dtype=bool)])
            cs = np.concatenate([[0], np.cumsum(good)])
            hits = np.flatnonzero(cs[win:] - cs[:-win] == win)
            if hits.size and hits[0] < m:
                cand = off + RECORD_BYTES * int(hits[0])
                best = cand if best is None else min(best, cand)
        return best

    # ---------------------------------------------------------------- main loop
    def _process(self, final: bool) -> None:
        buf = self._buf
        pos = 0
        while not self.stats.done:
            if not self._synced:
                q = self._find_sync(buf, pos, final)
                if q is None:
                    keep = 0 if final else self.window * RECORD_BYTES + RECORD_BYTES
                    drop = max(0, len(buf) - pos - keep)
                    if final or drop > 1 << 16:
                        self.stats.skipped_bytes += drop
                        pos += drop
                    break
                if q > pos:
                    self.stats.skipped_bytes += q - pos
                    self._hole_pending = True
                if not self._at_start:
                    self.stats.resyncs += 1
                self._synced = True
                pos = q
            f = Words.from_bytes(buf, pos)
            m = len(f)
            if m == 0:
                break
            v = self._valid(f)
            bad = np.flatnonzero(~v)
            i = int(bad[0]) if bad.size else m
            dn = np.flatnonzero(f.is_done[:i])
            if dn.size:
                pos += RECORD_BYTES * self._accept(f.head(int(dn[0]) + 1))
                break
            if not bad.size:
                take = m if final else m - 1
                pos += RECORD_BYTES * self._accept(f.head(take))
                break
            pos += RECORD_BYTES * self._accept(f.head(max(i - 1, 0)))
            # the record before the implausible one may hold the lost byte: discard it and realign (a resync
            # only once records were accepted: before that this is still the first alignment, past a stray prefix)
            self._synced = False
            self._hole_pending = True
            self.stats.skipped_bytes += 1
            pos += 1
        if final and not self.stats.done and pos < len(buf):
            self.stats.skipped_bytes += len(buf) - pos
            pos = len(buf)
        if self.stats.done:
            self.trailer += buf[pos:]
            pos = len(buf)
        del buf[:pos]

    def _accept(self, f: Words) -> int:
        m = len(f)
        if m == 0:
            return 0
        self._at_start = False
        ovf_at = -1
        if not self._ovf:
            o = np.flatnonzero(f.overflow)
            if o.size:
                self._ovf = True
                self.stats.overflows += 1
                ovf_at = int(o[0])
        ti = np.flatnonzero(f.is_time)
        end = m - 1 if f.is_done[-1] else m
        a = 0
        for t in ti:
            self._add_samples(f, a, int(t), ovf_at)
            self._time_record(int(f.counter_at(np.array([t]))[0]))
            if t == ovf_at:       # the first flagged record is a time record: the loss is just before it
                self.first_overflow_event = self._cur_event + 1
            a = int(t) + 1
        self._add_samples(f, a, end, ovf_at)
        if ovf_at >= end:         # ... or the done record
            self.first_overflow_event = self._cur_event + 1
        if end < m:
            self.stats.done = True
            self._close_segment(None)
        return m

    def _add_samples(self, f: Words, a: int, b: int, ovf_at: int) -> None:
        if b <= a:
            return
        sensor = f.sensor[a:b]
        r = self._rank[sensor]
        prev = np.empty_like(r)
        prev[0] = self._last_rank
        prev[1:] = r[:-1]
        ev = self._cur_event + np.cumsum(r <= prev)
        expected = np.where(prev >= self.n - 1, 0, prev + 1)
        seg = self._seg
        base = seg.n
        if self._hole_pending:
            seg.holes.append((base, "resync"))
            self._hole_pending = False
        if a <= ovf_at < b:
            seg.holes.append((base + ovf_at - a, "overflow"))
            self.first_overflow_event = int(ev[ovf_at - a])
        for k in np.flatnonzero(r != expected):
            seg.holes.append((base + int(k), "order"))
        vc = f.vcode[a:b].astype(np.uint16)
        ic = f.icode[a:b].astype(np.uint16)
        self.stats.failed_reads += int(np.count_nonzero((vc == 0) & (ic == 0)))
        seg.parts.append(RecordArrays(ev.astype(np.int64), sensor.astype(np.int16), vc, ic, f.overflow[a:b].copy()))
        seg.n += b - a
        self.stats.sample_records += b - a
        self._cur_event = int(ev[-1])
        self._last_rank = int(r[-1])

    def _time_record(self, counter: int) -> None:
        self.stats.time_records += 1
        if self._c0 is None:
            self._c0 = counter - 1
        anchor = math.ceil((counter - self._c0) * TICK_HZ / self.period_ticks)
        self._close_segment(anchor)
        self._last_counter = counter
        self.time_anchors.append((counter, anchor))
        self._cur_event = anchor - 1
        self._last_rank = self.n
        self._hole_pending = False
        self._seg.start_event = anchor

    def _close_segment(self, anchor: int | None) -> None:
        seg = self._seg
        end_event = self._cur_event + 1 if anchor is None else anchor
        missing_events = end_event - (self._cur_event + 1)
        lost = (end_event - seg.start_event) * self.n - seg.n
        holes = sorted(set(seg.holes))
        if missing_events < 0:
            self.stats.cadence_errors += 1
        positions = {p for p, _ in holes}
        if missing_events > 0:
            kinds = {"overflow": 0, "resync": 1, "order": 2}
            if holes:
                pos = min(holes, key=lambda h: (kinds[h[1]], h[0]))[0]
                rec = RecordArrays.concat(seg.parts)
                rec.event[pos:] += missing_events
                seg.parts = [rec]
                positions.add(pos)
            else:
                self.stats.uncertain_gaps += 1
                self.stats.gaps += 1
        if lost > 0:
            self.stats.lost_records += lost
            self.stats.gaps += len(positions)
        for part in seg.parts:
            if len(part):
                self._final.append(part)
                self._final_ev0.append(int(part.event[0]))
        self._final_n += seg.n
        start = end_event
        self._seg = _Segment(start_event=start)
        self._cache = None


def decode_bytes(data: bytes | bytearray | memoryview, channels: Sequence[int], period_ticks: int = 8,
                 time_set_s: int | None = 0) -> StreamDecoder:
    """Decode a whole capture at once; one shorter than a record is a MeterError."""
    if len(data) < RECORD_BYTES:
        raise MeterError(f"nothing to decode: the capture holds {len(data)} byte(s), less than one "
                         f"{RECORD_BYTES}-byte record")
    dec = StreamDecoder(channels, period_ticks, time_set_s)
    dec.feed(data)
    dec.finish()
    return dec
