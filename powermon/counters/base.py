"""Cumulative energy counters (RAPL, NVML, AMD SMI, hwmon) polled on a thread and read at region edges.

A counter meter of a GPU also samples the device layer's clocks and temperature (``readings()``) on the same polls,
on the same clock, so each window reports them (:attr:`MeterRegion.readings`: per key the mean over the window's
polls, ``<key>_min`` and ``<key>_max``, and ``n_readings``) instead of callers reading them at region edges.
:class:`ReadingsMeter` is that sampling alone, for a run whose energy comes from another meter.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from archline.formats.meters.samples import Samples
from archline.powermon.counters.edges import at_poll, interp_range_j, outside_edge_j, spaced
from archline.powermon.errors import DeviceError, MeterError
from archline.powermon.record.meters import ChannelResult, MeterRegion, _devices


def read_int(path: Path, denied: str, gone: str, read: Callable[[Path], str] = Path.read_text) -> int:
    """A sysfs counter file's integer; DeviceError saying ``denied`` (how to get permission) or ``gone`` (what
    vanished), MeterError when it holds no number."""
    try:
        return int(read(path).strip())
    except PermissionError:
        raise DeviceError(f"cannot read {path}: permission denied; {denied}") from None
    except FileNotFoundError:
        raise DeviceError(f"{path} does not exist ({gone})") from None
    except OSError as e:
        raise DeviceError(f"cannot read {path}: {e.strerror or e}") from None
    except ValueError:
        raise MeterError(f"{path} does not hold a number") from None


def unwrap(prev_raw: int, raw: int, total: int) -> int:
    """The running total after reading ``raw`` (the previous reading ``prev_raw``) from a counter that wraps at
    2**32 or 2**64 and documents neither (AMD SMI's accumulator, hwmon's energy inputs): a step back is one wrap,
    modulo 2**32 while the readings fit in 32 bits, else 2**64."""
    if raw >= prev_raw:
        return total + raw - prev_raw
    modulus = 1 << (32 if prev_raw < (1 << 32) else 64)
    return total + raw + modulus - prev_raw


class CounterMeter:
    """Base for meters whose channels are cumulative energy counters in joules.

    Subclasses implement ``_read() -> list[float]`` (cumulative joules per channel, wraps already unrolled)
    and set ``channel_names``. The poll thread keeps a trace; ``mark`` reads at once (region edges).
    """

    kind = "counter"
    name = "counter"
    emulated = False
    resolution_j = 0.0
    speed = 1.0                 #: device seconds per host second (an emulator may run faster)
    #: the device latches its value as the read begins (an emulator reads its clock first), so a poll's value is of
    #: its clock reading; False: of some time during the read, which the bound then covers
    latched_at_read_start = False
    #: clocks and temperature now (a device layer's ``readings``), sampled on every poll; None: none
    readings_source: Callable[[], dict[str, float]] | None = None

    def __init__(self, channel_names: list[str], devices: dict[str, list[str]] | None = None, poll_s: float = 0.1,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.channel_names = channel_names
        self.devices = devices or {}
        self.poll_s = poll_s
        self.clock = clock
        self._t: list[float] = []
        self._e: list[list[float]] = []
        self._r: list[dict[str, float]] = []
        self.readings_error = ""
        self._rd: list[float] = []  #: how long each poll took to read the device (host seconds)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: MeterError | None = None

    def _read(self) -> list[float]:
        raise NotImplementedError

    def poll(self) -> None:
        with self._lock:
            t = self.clock()
            e = self._read()
            rd = self.clock() - t
            r = self._sample_readings()
            self._t.append(t)
            self._rd.append(rd)
            self._e.append(e)
            self._r.append(r)

    def _sample_readings(self) -> dict[str, float]:
        if self.readings_source is None or self.readings_error:
            return {}
        try:
            return dict(self.readings_source())
        except Exception as e:   # a layer without clocks (an old GPU, a fake) keeps its energy; info() says why
            self.readings_error = str(e) or type(e).__name__
            return {}

    def window_readings(self, t0_s: float, t1_s: float) -> dict[str, float]:
        """Clocks and temperature over the window's polls: those from t0_s on up to the first at or after t1_s
        (mark() polls at each edge just after its time). Each key's mean, ``<key>_min``, ``<key>_max``, and
        ``n_readings``; {} when nothing was sampled."""
        with self._lock:
            t = np.asarray(self._t)
            i0, i1 = int(np.searchsorted(t, t0_s)), int(np.searchsorted(t, t1_s))
            picked = [r for r in self._r[i0:i1 + 1] if r]
        if not picked:
            return {}
        out: dict[str, float] = {"n_readings": float(len(picked))}
        for k in sorted({k for r in picked for k in r}):
            v = np.array([r[k] for r in picked if k in r], dtype=np.float64)
            out[k], out[f"{k}_min"], out[f"{k}_max"] = float(v.mean()), float(v.min()), float(v.max())
        return out

    def start(self) -> None:
        self.poll()
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=f"{self.name} poll", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.poll_s):
            try:
                self.poll()
            except MeterError as e:
                self.error = e
                return

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        if self.error is None:
            self.poll()

    def mark(self, t_s: float) -> None:
        self.poll()

    def wait_until(self, t_s: float, timeout_s: float = 2.0) -> bool:
        """Whether the trace reaches ``t_s`` (a window's end: its mark polled there). It also waits until one update
        period after ``t_s`` (at most ``timeout_s``) and polls there unless the thread already did, and until the
        trace spans four update periods: the bound's staleness term needs the power about the window's end, which
        a window shorter than an update period (its two mark polls between the same two updates) does not show."""
        if self.error is None and self._t and self._thread is not None and self._thread.is_alive():
            period = self.update_period_host_s()
            need = max(t_s + period, self._t[0] + 4.0 * period)
            if period > 0 and self._t[-1] < need:
                time.sleep(min(max(need - self.clock(), 0.0), 5.0 * period, timeout_s))
                if self._t[-1] < need:
                    try:
                        self.poll()
                    except MeterError as e:
                        self.error = e
        return bool(self._t) and self._t[-1] >= t_s

    def _arrays(self) -> tuple[np.ndarray, np.ndarray]:
        with self._lock:
            return np.asarray(self._t), np.asarray(self._e, dtype=np.float64).reshape(len(self._t),
                                                                                        len(self.channel_names))

    def region(self, t0_s: float, t1_s: float) -> MeterRegion:
        if self.error is not None:
            raise self.error
        t, e = self._arrays()
        if t.size == 0:
            raise MeterError(f"{self.name}: no readings")
        chans: dict[str, ChannelResult] = {}
        seen = self._window_seen(t, t0_s, t1_s)
        dur = (t1_s - t0_s) * self.speed            # device seconds (host seconds unless emulated faster)
        inside = (t >= t0_s) & (t <= t1_s)
        n = int(np.count_nonzero(inside))
        for k, nm in enumerate(self.channel_names):
            # cumulative energy interpolated at each edge between the polls around it (a mark's poll can come late
            # when the poll thread holds the device: the nearest poll alone would shift the window)
            de = self.window_energy_j(t, e[:, k], t0_s, t1_s, seen) if t.size > 1 else 0.0
            chans[nm] = ChannelResult(de, self.energy_bound_j(t, e[:, k], t0_s, t1_s),
                                      de / dur if dur > 0 else float("nan"), n, nm)
        total = sum(c.energy_j for c in chans.values())
        gaps, lost, lost_s, expected = self._gaps(t[inside], t0_s, t1_s)
        warnings = [f"{gaps} poll gap(s) up to {lost_s:.3g} s (the energy is whole: the counter kept counting; "
                    "the trace is coarser there)"] if gaps else []
        warnings += self._short_window_warnings(t, t0_s, t1_s)
        return MeterRegion(self.name, self.kind, self.emulated, t0_s, t1_s, chans,
                           _devices(chans, self.devices, dur), total, sum(c.energy_err_j for c in chans.values()),
                           total / dur if dur > 0 else float("nan"), n, 1.0 / self.poll_s,
                           samples=self._samples(t0_s, t1_s), gaps=gaps, lost_samples=lost, lost_s=lost_s,
                           expected_samples=expected, warnings=warnings,
                           device_time_s=dur if self.speed != 1.0 else None,
                           readings=self.window_readings(t0_s, t1_s))

    def _short_window_warnings(self, t: np.ndarray, t0_s: float, t1_s: float) -> list[str]:
        """What a window too short for the counter makes of its energy and bound (see :meth:`energy_bound_j`)."""
        out = []
        period = self.update_period_host_s()
        dur = t1_s - t0_s
        if period > 0 and dur < period:
            out.append(f"window of {1e3 * dur:.3g} ms is shorter than the counter's update period "
                       f"({1e3 * period:.3g} ms): its energy is an interpolation (none or one whole update falls "
                       "inside it), known only to the update period times the power about it (the bound)")
        if t.size > 1 and t[-1] - t[0] < max(period, 1e-12):
            out.append("the counter's polls span less than one update period: no power is known about the window, "
                       "and the bound holds its quanta only")
        elif t.size > 1 and not self._window_seen(t, t0_s, t1_s):
            out.append(f"no two polls {4 * period * 1e3:.3g} ms or more apart inside the window (its edges fell "
                       f"between the meter's polls, {1e3 * self.poll_s:.3g} ms apart): the power inside it is unseen, "
                       "so each edge's bound is the counter's whole advance between the polls about it (the "
                       "power is only taken to be >= 0); a mark's poll at each edge would make it tight")
        return out

    def _window_seen(self, t: np.ndarray, t0_s: float, t1_s: float) -> bool:
        """Whether the window's own power shows in the trace: an edge at a poll (a mark), or two polls four
        update periods apart or more inside the window (their mean power is of the window alone)."""
        period = self.update_period_host_s()
        if not all(at_poll(t, te, period) for te in (t0_s, t1_s)):
            inside = t[(t >= t0_s) & (t <= t1_s)]
            return inside.size > 1 and float(inside[-1] - inside[0]) >= max(4.0 * period, 1e-12)
        return True

    def window_energy_j(self, t: np.ndarray, e: np.ndarray, t0_s: float, t1_s: float, seen: bool = True) -> float:
        """The counter's advance over [t0_s, t1_s], each edge's cumulative energy interpolated between the polls
        about it: linearly when the window's power is ``seen`` (:meth:`_window_seen`); else (a phase shorter than
        the polls, whose power changes at its edges: a straight line put its energy 30-70% low) an edge far from a
        poll takes the power outside the window from the mean before the poll ahead of its start and after the poll
        past its end (:func:`_outside_edge_j`), the rest of the advance between the polls being the window's."""
        if seen:
            return float(np.interp(t1_s, t, e) - np.interp(t0_s, t, e))
        period = self.update_period_host_s()
        e0, e1 = (outside_edge_j(t, e, te, start, period) for te, start in ((t0_s, True), (t1_s, False)))
        return max(e1 - e0, 0.0)

    def update_period_host_s(self) -> float:
        """How often the counter advances, in host seconds (its ``update_hz`` at its ``speed``); 0 when unknown."""
        hz = getattr(self, "update_hz", None)
        if isinstance(hz, bool) or not isinstance(hz, (int, float)) or not (np.isfinite(hz) and hz > 0):
            return 0.0
        return 1.0 / (float(hz) * (self.speed if self.speed > 0 else 1.0))

    def energy_bound_j(self, t: np.ndarray, e: np.ndarray, t0_s: float, t1_s: float) -> float:
        """What one channel's energy over [t0_s, t1_s] (``e``: its cumulative joules at the poll times ``t``) may
        be off by. A counter advances once an update period ``P``, by the power it saw times ``P``:

        * each edge's reading is known only to the last update before it, up to ``P`` stale: the window takes in
          up to ``P`` of power before its start and misses up to ``P`` before its end. The two are of opposite
          signs, so the larger of them bounds both: ``P`` times the power at that edge (the most of the mean
          powers between polls four updates apart, within ``2P`` plus one poll of the edge);
        * an edge between two polls ``a`` and ``b`` seconds away is interpolated, off by up to ``a b / (a + b)``
          times the power's swing between the polls (none at a mark's own poll; a steady power interpolates
          exactly): the swing of the mean powers about the edge, which sees a step but not a burst shorter than a
          poll; and a poll reads the device some time after its clock reading (the longer of the two polls'
          reads), at the edge's power, either sign;
        * an update that samples its power misplaces a power step inside the window by up to ``P``: ``P`` times
          the steps seen between the polls inside (each change of the mean power less what one update more or
          less makes of a steady power);
        * one resolution step (quantum) per reading, two readings.

        A wrap is not in it: a counter read too seldom to see every wrap is an error of its own (RAPL's
        ``EnergyCounter``; AMD SMI and hwmon counters are 64 bits wide or wrap after hours)."""
        q = 2.0 * self.resolution_j
        if t.size < 2:
            return q
        period = self.update_period_host_s()
        # mean powers (J per host second) between polls at least four updates apart: between two close polls (a
        # mark's poll just after the thread's) one update more or less would read as a spike of many times the power
        # (four: a steady power reads at most 1.25 times itself)
        margin = 4.0 * (period + self.poll_s)
        lo = max(int(np.searchsorted(t, t0_s - margin)) - 1, 0)
        hi = min(int(np.searchsorted(t, t1_s + margin)) + 1, t.size)
        keep = lo + spaced(t[lo:hi], 4.0 * period)
        tc, ec = t[keep], e[keep]
        dt = np.diff(tc)
        ok = dt > 0
        p = np.where(ok, np.diff(ec) / np.where(ok, dt, 1.0), 0.0)
        tm0, tm1 = tc[:-1], tc[1:]
        reach = 2.0 * period + self.poll_s
        with self._lock:
            rd = np.asarray(self._rd[:t.size]) if len(self._rd) >= t.size and not self.latched_at_read_start \
                else np.zeros(t.size)
        # the most power the channel was seen to draw: the mean between any two polls four updates apart or more
        dt_all = np.diff(t)
        wide = dt_all >= max(4.0 * period, 1e-12)
        p_top = float(np.max(np.diff(e)[wide] / dt_all[wide])) if wide.any() else 0.0
        stale_j, edge_j = 0.0, 0.0
        seen = self._window_seen(t, t0_s, t1_s)
        span_lo, span_hi = 0.0, 0.0     # unseen: how far the window's advance may be below and above the estimate
        for te in (t0_s, t1_s):
            near = ok & (tm1 >= te - reach) & (tm0 <= te + reach)
            p_edge = float(np.max(np.abs(p[near]))) if near.any() else float(np.max(np.abs(p), initial=0.0))
            stale_j = max(stale_j, p_edge * period)
            ib = int(np.clip(np.searchsorted(t, te), 0, t.size - 1))
            ia = max(ib - 1, 0)
            # how much the power changes between the polls about the edge: the swing of the mean powers over them
            # and the next on either side, the power itself when one mean alone is there (nothing to compare)
            a, b = te - float(t[ia]), float(t[ib]) - te
            if a > 0 and b > 0:        # interpolated between two polls: the truth lies from ``below`` under the
                # straight line to ``above`` over it
                d_e = float(e[ib]) - float(e[ia])
                if not seen and min(a, b) > period:
                    # the window's power is unseen (no mean of its own): it may hold all of the counter's advance
                    # between the two polls on either side of the edge
                    below, above = abs(d_e) * a / (a + b), abs(d_e) * b / (a + b)
                else:
                    below, above = interp_range_j(a, b, d_e / (a + b), max(p_top, p_edge), period)
                if seen:
                    edge_j += max(below, above)
                else:                  # the edge's estimate, off the line, within [line - below, line + above]
                    lin = float(np.interp(te, t, e))
                    est = outside_edge_j(t, e, te, te == t0_s, period)
                    sign = -1.0 if te == t0_s else 1.0
                    span_lo += (est - (lin - below)) if sign > 0 else (lin + above - est)
                    span_hi += (lin + above - est) if sign > 0 else (est - (lin - below))
            else:                      # at a poll, or beyond the first or the last (held there)
                off_s = min(abs(a), abs(b)) if ia != ib else abs(te - float(t[ib]))
                edge_j += p_edge * off_s
            edge_j += p_edge * max(float(rd[ia]), float(rd[ib]))
        edge_j += max(span_lo, span_hi)
        within = ok & (tm0 >= t0_s - self.poll_s) & (tm1 <= t1_s + self.poll_s)
        steps_j = 0.0
        if period > 0 and np.count_nonzero(within) > 1:
            pw, dw = p[within], dt[within]
            jitter = np.abs(pw) * period / dw + self.resolution_j / dw      # one update more or less
            steps_w = np.maximum(np.abs(np.diff(pw)) - jitter[1:] - jitter[:-1], 0.0)
            steps_j = period * float(steps_w.sum())
        if t1_s - t0_s < period:
            # none or one update inside: off by the power about it times the period (none counted), or by what the
            # one update counted (more than the window's share of it); a mean over four updates or more may have
            # counted one update fewer than the power made (4/3 of it at most)
            stale_j = max(stale_j * 4.0 / 3.0, abs(self.window_energy_j(t, e, t0_s, t1_s, seen)))
        return q + stale_j + edge_j + steps_j

    def _gaps(self, t: np.ndarray, t0_s: float, t1_s: float) -> tuple[int, int, float, int]:
        """(gaps, polls missed, longest gap in device seconds, polls expected) in the window: a gap is a stretch
        of more than three poll periods without a poll (a stalled thread or a slow device call)."""
        edges = np.concatenate([[t0_s], t, [t1_s]])
        dt = np.diff(edges)
        big = dt > 3 * self.poll_s
        missed = int(np.sum(np.round(dt[big] / self.poll_s) - 1)) if big.any() else 0
        expected = int((t1_s - t0_s) / self.poll_s) + 1
        return int(big.sum()), missed, float(dt[big].max() * self.speed) if big.any() else 0.0, expected

    def _samples(self, t0_s: float = -np.inf, t1_s: float = np.inf) -> Samples:
        t, e = self._arrays()
        if t.size < 2:
            return Samples.empty(self.name, self.emulated)
        p = np.diff(e, axis=0) / np.diff(t)[:, None]
        tm = 0.5 * (t[1:] + t[:-1])
        sel = (tm >= t0_s) & (tm <= t1_s)
        k = p.shape[1]
        tt = np.repeat(tm[sel], k)
        ch = np.tile(np.arange(k, dtype=np.int16), int(sel.sum()))
        nan = np.full(tt.size, np.nan)
        return Samples(tt, ch, nan, nan.copy(), p[sel].reshape(-1), None, self.name, self.emulated,
                       meta={"channel_names": self.channel_names, "cumulative_energy_j": e})

    def samples(self) -> Samples:
        return self._samples()

    def info(self) -> dict[str, Any]:
        out = {"meter": self.name, "type": self.kind, "channels": self.channel_names, "devices": self.devices,
               "emulated": self.emulated, "poll_s": self.poll_s}
        if self.readings_error:
            out["readings_error"] = self.readings_error
        return out


class ReadingsMeter(CounterMeter):
    """A device layer's clocks and temperature sampled every ``poll_s`` on the recorder's clock, with no energy
    channel: per-window readings for a run whose energy another meter measures (a GPU driver's timed region).
    ``layer`` is any device layer with ``readings()`` (``NvmlGpu``, ``AmdSmiGpu``)."""

    kind = "readings"

    def __init__(self, layer: Any, name: str, poll_s: float = 0.01,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__([], {}, poll_s, clock)
        self.name = name
        self.layer = layer
        self.readings_source = layer.readings

    def _read(self) -> list[float]:
        return []
