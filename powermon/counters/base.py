"""Cumulative energy counters (RAPL, NVML total energy) polled on a thread and read at region edges."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from archline.powermon.errors import MeterError
from archline.powermon.record.meters import ChannelResult, MeterRegion, _devices
from archline.powermon.record.samples import Samples


class CounterMeter:
    """Base for meters whose channels are cumulative energy counters in joules.

    Subclasses implement ``_read() -> list[float]`` (cumulative joules per channel, wraps already unrolled)
    and set ``channel_names``. The poll thread keeps a trace; ``mark`` reads at once (region edges).
    """

    kind = "counter"
    name = "counter"
    emulated = False
    resolution_j = 0.0

    def __init__(self, channel_names: list[str], devices: dict[str, list[str]] | None = None, poll_s: float = 0.1,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.channel_names = channel_names
        self.devices = devices or {}
        self.poll_s = poll_s
        self.clock = clock
        self._t: list[float] = []
        self._e: list[list[float]] = []
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
            self._t.append(t)
            self._e.append(e)

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
            return np.asarray(self._t), np.asarray(self._e, dtype=np.float64).reshape(len(self._t), -1)

    def region(self, t0_s: float, t1_s: float) -> MeterRegion:
        if self.error is not None:
            raise self.error
        t, e = self._arrays()
        if t.size == 0:
            raise MeterError(f"{self.name}: no readings")
        chans: dict[str, ChannelResult] = {}
        dur = t1_s - t0_s
        # the readings nearest each edge (mark() reads at the edge itself)
        i0 = int(np.clip(np.searchsorted(t, t0_s), 0, t.size - 1))
        i1 = int(np.clip(np.searchsorted(t, t1_s), 0, t.size - 1))
        n = int(np.count_nonzero((t >= t0_s) & (t <= t1_s)))
        slack = abs(t[i0] - t0_s) + abs(t[i1] - t1_s)
        for k, nm in enumerate(self.channel_names):
            de = float(e[i1, k] - e[i0, k])
            span = float(t[i1] - t[i0])
            p = de / span if span > 0 else 0.0
            chans[nm] = ChannelResult(de, 2 * self.resolution_j + p * slack, de / dur if dur > 0 else float("nan"),
                                      n, nm)
        total = sum(c.energy_j for c in chans.values())
        return MeterRegion(self.name, self.kind, self.emulated, t0_s, t1_s, chans,
                           _devices(chans, self.devices, dur), total, sum(c.energy_err_j for c in chans.values()),
                           total / dur if dur > 0 else float("nan"), n, 1.0 / self.poll_s,
                           samples=self._samples(t0_s, t1_s))

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
        return {"meter": self.name, "type": self.kind, "channels": self.channel_names, "devices": self.devices,
                "emulated": self.emulated, "poll_s": self.poll_s}
