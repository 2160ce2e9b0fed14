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

from archline.powermon.errors import DeviceError, MeterError
from archline.powermon.record.meters import ChannelResult, MeterRegion, _devices
from archline.powermon.record.samples import Samples


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
            r = self._sample_readings()
            self._t.append(t)
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
        dur = (t1_s - t0_s) * self.speed            # device seconds (host seconds unless emulated faster)
        # the readings nearest each edge (mark() reads at the edge itself)
        i0 = int(np.clip(np.searchsorted(t, t0_s), 0, t.size - 1))
        i1 = int(np.clip(np.searchsorted(t, t1_s), 0, t.size - 1))
        inside = (t >= t0_s) & (t <= t1_s)
        n = int(np.count_nonzero(inside))
        slack = abs(t[i0] - t0_s) + abs(t[i1] - t1_s)
        for k, nm in enumerate(self.channel_names):
            # cumulative energy interpolated at each edge between the polls around it (a mark's poll can come late
            # when the poll thread holds the device: the nearest poll alone would shift the window)
            de = float(np.interp(t1_s, t, e[:, k]) - np.interp(t0_s, t, e[:, k])) if t.size > 1 else 0.0
            span = float(t[i1] - t[i0])
            p = float(e[i1, k] - e[i0, k]) / span if span > 0 else 0.0
            chans[nm] = ChannelResult(de, 2 * self.resolution_j + p * slack, de / dur if dur > 0 else float("nan"),
                                      n, nm)
        total = sum(c.energy_j for c in chans.values())
        gaps, lost, lost_s, expected = self._gaps(t[inside], t0_s, t1_s)
        warnings = [f"{gaps} poll gap(s) up to {lost_s:.3g} s (the energy is whole: the counter kept counting; "
                    "the trace is coarser there)"] if gaps else []
        return MeterRegion(self.name, self.kind, self.emulated, t0_s, t1_s, chans,
                           _devices(chans, self.devices, dur), total, sum(c.energy_err_j for c in chans.values()),
                           total / dur if dur > 0 else float("nan"), n, 1.0 / self.poll_s,
                           samples=self._samples(t0_s, t1_s), gaps=gaps, lost_samples=lost, lost_s=lost_s,
                           expected_samples=expected, warnings=warnings,
                           device_time_s=dur if self.speed != 1.0 else None,
                           readings=self.window_readings(t0_s, t1_s))

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
