"""Whole timestamp wraps a stream lost without a trace in its stamps, found from the host's arrival times.

A stamp that repeats (a PowerSensor3's 10-bit microseconds: every 25.6 ms at 20 kHz) hides a gap of whole repeats:
the frames after it decode onto indices a whole number of wraps too early. Their arrival times do not lie: the
arrival lag ``host - k / (rate * speed)`` of every chunk after such a gap is larger by those wraps. The least lag
in a window just before a silence in the arrivals and the least lag in a window just after it (each near the
transfer's least latency, whatever the jitter of single chunks) differ by the wraps lost in the silence.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable
from typing import Any

import numpy as np

#: host seconds of arrivals on each side of a silence whose least lags are compared
WINDOW_S = 0.25
#: the least host time after a silence that is judged at the end of a stream (less is too few chunks to trust)
MIN_TAIL_S = 0.05
#: the shortest wrap (host s) resolved so: the least lag of a window is steady to a few ms on a loaded host
MIN_WRAP_S = 0.01


def wrap_deficits(host_s: np.ndarray, k_newest: np.ndarray, has_frames: np.ndarray, frames_per_host_s: float,
                  wrap_frames: int, start: int, final: bool,
                  first_jump: Callable[[int, int], int | None] | None = None) -> tuple[list[tuple[int, int]], int]:
    """Chunks after which whole wraps were lost: ([(chunk index g, wraps n)], the first chunk not yet judged).

    ``host_s``: each chunk's arrival; ``k_newest``: the newest frame index in hand with it (as decoded so far);
    ``has_frames``: whether the chunk holds frames (only such a chunk can be moved); ``start``: the first chunk
    not yet judged. A chunk ``g`` whose arrival follows a silence of a quarter wrap or more is judged once the
    arrivals reach ``WINDOW_S`` past it (``final``: the stream has ended, ``MIN_TAIL_S`` will do): ``n`` wraps where
    the least lag after it is ``n`` wraps past the least lag before it, to within 3/4 wrap late and 1/4 early (the
    decoder's rule for a hint). The indices found are returned as decoded: the caller moves chunks ``>= g`` by
    ``n * wrap_frames`` (each ``n`` is of the lags once the earlier ones are applied). ``first_jump(c, hi)``: the
    first chunk in ``c..hi-1`` whose frames hold a discontinuity of the stamps (or None). Losses are put at such a
    discontinuity: after a stopped or loaded reader the first chunks hold frames the device queued before the loss
    (arriving late by more than the floor after the silence, the oldest the most), so the loss follows the last
    discontinuity of the first chunk that arrives as fresh as the frames after the gap (within a quarter wrap of
    that floor), or the first one after it; only where the stamps show none (a device that sent nothing for whole
    wraps) the first chunk that is not early (the old rule)."""
    n = len(host_s)
    wrap_s = wrap_frames / frames_per_host_s
    if n < 2 or wrap_s < MIN_WRAP_S:
        return [], max(start, n)
    lag = np.asarray(host_s, np.float64) - np.asarray(k_newest, np.float64) / frames_per_host_s
    out: list[tuple[int, int]] = []
    last = float(host_s[-1])
    # a stall of whole wraps leaves a silence of at least a quarter wrap (the last chunk before it may be late by
    # up to 3/4 of one)
    silent = np.flatnonzero(np.diff(host_s) >= 0.25 * wrap_s) + 1
    for g in silent[silent >= max(start, 1)].tolist():
        t_g = float(host_s[g])
        if last - t_g < (MIN_TAIL_S if final else WINDOW_S):
            return out, g
        lo = int(np.searchsorted(host_s, float(host_s[g - 1]) - WINDOW_S, "left"))
        hi = max(int(np.searchsorted(host_s, t_g + WINDOW_S, "left")), g + 1)
        # the chunks arriving within a wrap of the silence may still be ones from before the gap, late: the floor
        # after it is taken past them (where there are chunks past them)
        near = min(max(int(np.searchsorted(host_s, t_g + wrap_s, "left")), g + 1), hi)
        after = float(np.min(lag[near:hi] if hi > near else lag[g:hi]))
        excess = (after - float(np.min(lag[lo:g]))) / wrap_s
        if excess < 0.75:
            continue
        # the gap lies after the last near chunk whose lag is a quarter wrap under the floor after it (one taken
        # before the gap, late: at most 3/4 wrap over the floor before, a whole one under the floor after), on the
        # first chunk with frames from there
        early = np.flatnonzero(lag[g:near] < after - 0.25 * wrap_s)
        at = g + (int(early[-1]) + 1 if early.size else 0)
        fresh = np.flatnonzero(has_frames[g:hi] & (lag[g:hi] <= after + 0.25 * wrap_s))
        jump = first_jump(g + int(fresh[0]), hi) if first_jump is not None and fresh.size else None
        if jump is not None:
            at = jump
        frames_from = np.flatnonzero(has_frames[at:])
        if not frames_from.size:
            continue
        at += int(frames_from[0])
        wraps = math.floor(excess + 0.25)
        out.append((at, wraps))
        lag[at:] -= wraps * wrap_s          # the chunks after it, as the caller will have moved them
    return out, max(start, n)


def relocate(drv: Any, final: bool = False) -> None:
    """Move the chunks of stream driver ``drv`` (a :class:`~archline.powermon.stream.driver.StreamDriver`, its lock
    held) that follow whole wraps lost in a silence (:func:`wrap_deficits`): their frames, clock pairs and markers,
    and every frame decoded from then on; count them (``frames_relocated``) and keep the chunk's index as a capture
    hint, so that a decode of the capture places it the same."""
    wrap = getattr(drv.decoder, "wrap_frames", None)
    n = len(drv._pairs_host)
    if not wrap or (n <= drv._judged and not final):
        return
    # only the chunks a judgement still looks at (the window before the first one not judged): a long stream's
    # lists are not copied on every call
    base = bisect.bisect_left(drv._pairs_host, drv._pairs_host[max(drv._judged - 1, 0)] - 2 * WINDOW_S) if n else 0
    has_frames = np.array([c[1] > 0 for c in drv._chunks[base:]], bool)

    def compact() -> np.ndarray:
        if len(drv._k) > 1:
            drv._k, drv._v, drv._a = [np.concatenate(drv._k)], [np.concatenate(drv._v)], [np.concatenate(drv._a)]
        return drv._k[0] if drv._k else np.zeros(0, np.int64)

    def first_jump(g: int, hi: int) -> int | None:
        k = compact()
        for c in range(base + g, min(base + hi, len(drv._chunks))):
            f0, nk = drv._chunks[c][0], drv._chunks[c][1]
            if nk and np.any(np.diff(k[max(f0 - 1, 0):f0 + nk]) > 1):
                return c - base
        return None

    found, judged = wrap_deficits(np.asarray(drv._pairs_host[base:]), np.asarray(drv._pairs_k[base:], np.int64),
                                  has_frames, drv.rate_hz * drv.speed, int(wrap), max(drv._judged - base, 0), final,
                                  first_jump)
    drv._judged = base + judged
    for g, wraps in ((base + g, wraps) for g, wraps in found):
        add = wraps * int(wrap)
        f0, nk, lo, hi = drv._chunks[g]
        k = compact()
        # from the chunk's last discontinuity (the decoder's rule for a hint), else its first frame
        prev = max(f0 - 1, 0)
        jumps = np.flatnonzero(np.diff(k[prev:f0 + nk]) > 1)
        f_at = prev + int(jumps[-1]) + 1 if jumps.size else f0
        k_from = int(k[f_at])
        k[f_at:] += add
        drv._pairs_k[g:] = [kn + add for kn in drv._pairs_k[g:]]
        drv._marks = [(t, km + add if km >= k_from else km) for t, km in drv._marks]
        drv._last_k += add
        drv._shift += add
        drv.frames_relocated += add
        if drv.capture is not None and hi > lo:      # a decode feeds the chunk alone, told its last frame's index
            drv._hints = sorted([h for h in drv._hints if h[0] != lo] + [(lo, hi, float(k[f0 + nk - 1]))])
