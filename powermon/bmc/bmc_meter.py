"""The node's BMC as a recorder meter (``kind = "redfish"`` or ``"ipmi"``, DCMI): slow, averaged readings.

A BMC shows one power reading at a time, replaced every update period ``P`` (Redfish ``SensingInterval``; 1 s where
the BMC does not say), each the mean power over a window ending ``lag_s`` before it appears. The meter polls four
times per period, keeps each distinct reading once (by its ``ReadingTime`` where the BMC gives one, else by value
and age) and takes reading k to cover the time since reading k-1, shifted back by the lag: the energy of a window
is the integral of that step function. Its bound says what averaging hides: at each edge the reading that straddles
it is spread over P (its power may sit on either side), readings whose window is shorter than P miss part of
their period, and watts are quantised. A window shorter than P is warned about and gets a bound of its whole
energy (one averaged reading says nothing about where inside it the power went). Readings the BMC never showed
(stale stretches, HTTP 5xx) are counted as lost.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from archline.formats.meters.samples import Samples
from archline.powermon.bmc.bound import MAX_FAILED_KEPT, BoundTerms, window_energy
from archline.powermon.bmc.reading import BmcUnavailable, PowerReading
from archline.powermon.bmc.redfish_sources import SOURCE_SUBSYSTEM
from archline.powermon.counters.base import CounterMeter
from archline.powermon.emulator.sensor import SensorModel
from archline.powermon.errors import DeviceError, MeterError
from archline.powermon.record.meters import ChannelResult, MeterRegion, _devices

if TYPE_CHECKING:  # pragma: no cover
    from archline.powermon.spec import MeterSpec


def spec_channel(spec: MeterSpec) -> tuple[str, str]:
    """(rail, device) of a BMC entry: its one channel's, else (its kind, "node")."""
    c = spec.channels[0] if spec.channels else None
    return (c.rail, c.device) if c is not None else (spec.kind, "node")


POLLS_PER_PERIOD = 4
#: a BMC clock whose ReadingTime runs off the host's by more than this share is not used to place readings
CLOCK_RATE_TOL = 0.05


class BmcMeter(CounterMeter):
    """Node power from a BMC ``client`` (anything with ``read() -> PowerReading``).

    ``update_period_s``, ``lag_s`` and ``window_s`` are device seconds (``speed`` device seconds per host second;
    1 for real hardware); ``window_s`` None: the window is taken to be the period; ``quantum_w``: the reading step.
    """

    kind = "counter"

    def __init__(self, client: Any, channel: str = "node", device: str = "node", update_period_s: float = 1.0,
                 lag_s: float = 0.0, window_s: float | None = None, quantum_w: float = 0.0, speed: float = 1.0,
                 poll_s: float | None = None, name: str = "bmc", emulated: bool = False,
                 clock: Callable[[], float] = time.monotonic, period_assumed: bool = False) -> None:
        if not (update_period_s > 0 and math.isfinite(update_period_s)):
            raise MeterError(f"{name}: the update period must be > 0 s, got {update_period_s}")
        self.client = client
        self.speed = speed
        self.period_s = update_period_s / speed              # host seconds
        self.lag_host_s = lag_s / speed
        self.window_s, self.quantum_w = window_s, quantum_w
        self.update_period_s, self.lag_s = update_period_s, lag_s
        super().__init__([channel], {device: [channel]}, poll_s or self.period_s / POLLS_PER_PERIOD, clock)
        self.name, self.emulated = name, emulated
        self.update_hz = 1.0 / update_period_s
        self._seen: list[tuple[float, float | None, float]] = []     # (host time first seen, ReadingTime, watts)
        self._prev_seen_at: list[float] = []     # each reading's lower bound: the host time of the poll before it
        #: no period was stated or served (the 1 s default): the readings' own spacing replaces it when longer
        self.period_assumed = period_assumed
        self.notes: list[str] = []          # warnings said once and kept in each window's (the summary's) warnings
        self.bad_readings = 0               # readings no meter can use (text, negative, a bad ReadingTime): failed
        self._backwards = 0                 # ReadingTimes that stepped back: placed at host time
        self._by_age: list[bool] = []       # taken as new for its age alone (no ReadingTime, value unchanged)
        self._timed = True                  # every reading carried a ReadingTime
        # a sum of readings the BMC updates apart (Redfish PowerSubsystem's supplies): see BoundTerms.summed
        self._summed = getattr(client, "source", None) == SOURCE_SUBSYSTEM
        self._prev_poll_s: float | None = None
        self.polls = 0
        self.failed_polls = 0                # HTTP 5xx / no answer: reported
        self.last_failure = ""
        self._failed_at: list[float] = []
        self._on_stop: list[Callable[[], None]] = []
        self.sensor: SensorModel | None = None
        self._window_readings: int | None = None

    # --- polling ------------------------------------------------------------------------------------------------
    def _note(self, text: str) -> None:
        """Kept once per kind (its first words): each window's warnings carry it (printed by meter record)."""
        if not any(n[:30] == text[:30] for n in self.notes):
            self.notes.append(text)

    def poll(self) -> None:
        t = self.clock()
        try:
            r: PowerReading = self.client.read()
        except (BmcUnavailable, DeviceError) as e:
            # the first reading decides whether the meter can be read at all (one line, exit 4); later, one bad
            # reading (text, -5 W, a ReadingTime no clock reads) is a failed poll: the recording keeps the rest
            if not isinstance(e, BmcUnavailable):
                if not self._seen and self.polls == 0:
                    raise
                self.bad_readings += 1
                self._note(f"a reading the BMC served cannot be used ({e}); counted as a failed poll")
            with self._lock:
                self.polls += 1
                self.failed_polls += 1
                self.last_failure = str(e)
                self._failed_at.append(t)
                self._prev_poll_s = None
            return
        t_after = self.clock()
        with self._lock:
            self.polls += 1
            if self._is_new(r, t_after):
                if (r.reading_time_s is not None and self._seen and self._seen[-1][1] is not None
                        and r.reading_time_s < self._seen[-1][1]):
                    self._backwards += 1
                    back_s = r.reading_time_s - self._seen[-1][1]
                    self._note(f"the BMC's ReadingTime stepped back ({back_s:+.3g} s); such readings "
                               "are placed at the host time they were seen")
                self._prev_seen_at.append(self._seen[-1][0] if self._seen else t_after - self.period_s)
                self._seen.append((t_after, r.reading_time_s, r.power_w))
                self._by_age.append(bool(self._seen[:-1]) and r.power_w == self._seen[-2][2])
                if self.period_assumed:
                    self._infer_period()
            self._prev_poll_s = t

    def _infer_period(self) -> None:
        """No period stated or served: where the readings change (or their ReadingTimes step) no more often than
        every 1.5 assumed periods, over three changes at least, that spacing is the BMC's update period."""
        timed = [s[1] for s in self._seen if s[1] is not None]
        if len(timed) == len(self._seen):       # ReadingTime steps: exact, two suffice
            steps, need = np.diff(np.asarray(timed)) / self.speed, 2
        else:                                   # changes of value, each placed to within a poll
            changes = [s[0] for k, s in enumerate(self._seen) if k and s[2] != self._seen[k - 1][2]]
            steps, need = np.diff(np.asarray(changes)), 3
        steps = steps[steps > 0]
        if steps.size < need:
            return
        step = float(steps.min()) * self.speed
        if step > 1.5 * self.update_period_s:
            period = round(step * 4) / 4            # host-timed changes are placed to within a poll
            self._note(f"the BMC's readings change every {period:g} s, not the assumed "
                       f"{self.update_period_s:g} s: taken as its update period (state update_period_s in a "
                       "profile's [[meters]] entry)")
            self.update_period_s = period
            self.period_assumed = False
            self.period_s = period / self.speed
            self.update_hz = 1.0 / period
            if self._by_age:        # readings taken for their age at the assumed period were repeats
                keep = [k for k in range(len(self._seen)) if not self._by_age[k]]
                self._seen = [self._seen[k] for k in keep]
                self._by_age = [False for _ in keep]
                self._prev_seen_at = [self._seen[k - 1][0] if k else self._prev_seen_at[0]
                                      for k in range(len(self._seen))]

    def _is_new(self, r: PowerReading, t: float) -> bool:
        if not self._seen:
            return True
        t_last, rt_last, w_last = self._seen[-1]
        if r.reading_time_s is not None and rt_last is not None:
            return r.reading_time_s != rt_last
        # no ReadingTime: a changed value is a new reading; an unchanged one is taken as new once a period has passed
        return r.power_w != w_last or t - t_last >= 0.95 * self.period_s

    def _read(self) -> list[float]:       # CounterMeter's hook: unused (poll is overridden)
        return [0.0]

    def _arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """Breakpoints of the cumulative energy (host seconds, device joules): reading k covers (b[k-1], b[k]]."""
        with self._lock:
            seen = list(self._seen)
            by_age = list(self._by_age)
        if not seen:
            return np.zeros(0), np.zeros((0, 1))
        t_seen = np.array([s[0] for s in seen])
        w = np.array([s[2] for s in seen])
        with self._lock:
            lower = np.array(self._prev_seen_at[:len(seen)], dtype=np.float64)
        self._timed = all(s[1] is not None for s in seen) and self._clock_usable(seen)
        if self._timed:
            # the BMC's clock spaces readings exactly; its offset to the host clock is the earliest sighting among
            # those near the typical one (a ReadingTime that jumped must not move every other reading)
            rt = np.array([s[1] for s in seen], dtype=np.float64) / self.speed
            d = t_seen - rt
            d_ok = d[d >= float(np.median(d)) - (self.period_s + self.poll_s)]
            t_app = rt + float(np.min(d_ok))
            # never outside the host window the reading appeared in: after the previous sighting, by its own
            t_app = np.clip(t_app, lower, t_seen)
            for k in range(1, t_app.size):          # a ReadingTime that stepped back: its host sighting
                if t_app[k] <= t_app[k - 1]:
                    t_app[k] = max(t_seen[k], t_app[k - 1] + 1e-6)
        else:
            t_app, w = self._rephase(t_seen - 0.5 * self.poll_s, w, by_age)   # first seen between two polls
        b = t_app - self.lag_host_s
        t = np.concatenate([[b[0] - self.period_s], b])
        e = np.concatenate([[0.0], np.cumsum(w * np.diff(t) * self.speed)])
        return t, e[:, None]

    def _clock_usable(self, seen: list[tuple[float, float | None, float]]) -> bool:
        """Whether the BMC's clock runs at the host's (over at least 4 periods): a clock running fast or slow would
        stretch the timeline (a 2x clock invents losses), so its ReadingTimes are then not used, and said."""
        if len(seen) < 3:
            return True
        dt_host = seen[-1][0] - seen[0][0]
        dt_dev = (float(seen[-1][1]) - float(seen[0][1])) / self.speed   # type: ignore[arg-type]
        if dt_host < 4 * self.period_s:
            return True
        rate = dt_dev / dt_host
        # a reading may be seen up to a period and a poll after its ReadingTime (a coarse clock), at either end
        if abs(rate - 1) <= CLOCK_RATE_TOL + 2 * (self.period_s + self.poll_s) / dt_host:
            return True
        self._note(f"the BMC's ReadingTime advanced {dt_dev * self.speed:.3g} s in "
                   f"{dt_host * self.speed:.3g} s of the host's: its clock is not used; readings are placed at the "
                   "host time they were seen")
        return False

    def _rephase(self, t_app: np.ndarray, w: np.ndarray, by_age: list[bool]) -> tuple[np.ndarray, np.ndarray]:
        """Without a ReadingTime an unchanged value is taken as new once a period has passed, at a phase that drifts;
        a changed value shows when its reading really appeared, so the reading before it (one taken by age) ends a
        period earlier, and one that would then end before its own predecessor is dropped (it repeats its value)."""
        tl, wl = list(t_app), list(w)
        ages = list(by_age)
        k = len(tl) - 1
        while k >= 1:
            if not ages[k] and ages[k - 1] and tl[k] - tl[k - 1] < self.period_s:
                tl[k - 1] = tl[k] - self.period_s
                if k >= 2 and tl[k - 1] <= tl[k - 2]:
                    del tl[k - 1], wl[k - 1], ages[k - 1]
                    k -= 1                   # the changed reading moved down one: compare it with its new neighbour
                    continue
            k -= 1
        return np.asarray(tl), np.asarray(wl)

    def wait_until(self, t_s: float, timeout_s: float = 2.0) -> bool:
        """Wait for the reading whose period covers ``t_s`` (it appears up to a period plus the lag later)."""
        deadline = time.monotonic() + max(timeout_s, self.period_s + self.lag_host_s + 2 * self.poll_s)
        while True:
            t, _ = self._arrays()
            if t.size and t[-1] >= t_s:
                return True
            if time.monotonic() >= deadline or self._stop.is_set():
                return False
            time.sleep(min(self.poll_s, 0.05))

    # --- a window -----------------------------------------------------------------------------------------------
    def region(self, t0_s: float, t1_s: float) -> MeterRegion:
        if self.error is not None:
            raise self.error
        t, e = self._arrays()
        if t.size < 2:
            # the BMC was reached but gave nothing to integrate: a silent meter, exit 4
            raise DeviceError(f"{self.name}: no readings from the BMC ({self.last_failure or 'none arrived'})")
        with self._lock:
            failed = sum(1 for x in self._failed_at if t0_s <= x <= t1_s)
        self._window_readings = t.size - 1             # the sidecar's window_readings: see BoundTerms.readings
        w = window_energy(t, e[:, 0], t0_s, t1_s, self.bound_terms(), failed, self.last_failure)
        w.warnings[:0] = [*getattr(self.client, "notes", []), *self.notes]
        if self.period_assumed:     # nothing said the period, and the readings did not show it: say so
            w.warnings.append(f"the BMC states no update period: {self.update_period_s:g} s assumed (a BMC that "
                              "updates slower, e.g. a 5 s mean, shifts energy by up to its period times each change, "
                              "beyond this bound); state update_period_s in a profile's [[meters]] entry")
        chan = self.channel_names[0]
        chans = {chan: ChannelResult(w.energy_j, w.err_j, w.mean_power_w, w.n, chan)}
        dur = (t1_s - t0_s) * self.speed
        return MeterRegion(self.name, self.kind, self.emulated, t0_s, t1_s, chans,
                           _devices(chans, self.devices, dur), w.energy_j, w.err_j, w.mean_power_w, w.n,
                           self.update_hz, samples=self._samples(t0_s, t1_s), gaps=w.gaps,
                           lost_samples=w.lost, lost_s=w.lost_s, expected_samples=w.expected, warnings=w.warnings,
                           device_time_s=dur if self.speed != 1.0 else None)

    def bound_terms(self) -> BoundTerms:
        """What this meter's window bound needs, as a trace's sidecar keeps it (``info``) for ``meter integrate``."""
        return BoundTerms(self.update_period_s, self.speed, self.poll_s, self.window_s, self.quantum_w, self._timed,
                          self._summed)

    def reading_samples(self, clock_zero_s: float = 0.0) -> Samples:
        """Every distinct reading once, at the instant the BMC says it was taken: ``meta['t_dev_s']`` is its
        ``ReadingTime`` minus ``clock_zero_s`` (the BMC clock's reading at device time 0, where known), so a probe
        sees the update lattice exactly rather than to within a poll. Readings without a ReadingTime are left out."""
        with self._lock:
            seen = [s for s in self._seen if s[1] is not None]
        t_host = np.array([s[0] for s in seen], dtype=np.float64)
        t_dev = np.array([s[1] for s in seen], dtype=np.float64) - clock_zero_s
        w = np.array([s[2] for s in seen], dtype=np.float64)
        return Samples(t_host, np.zeros(t_host.size, np.int16), np.ones(t_host.size), w.copy(), w.copy(), None,
                       self.name, self.emulated, "host_monotonic", {"t_dev_s": t_dev})

    def stop(self) -> None:
        try:
            super().stop()
        finally:
            for fn in self._on_stop:
                fn()
            self._on_stop.clear()

    def info(self) -> dict[str, Any]:
        self._arrays()                        # brings ``_timed`` up to date with every reading
        out = super().info()
        out.update({"type": "bmc", "update_period_s": self.update_period_s, "lag_s": self.lag_s,
                    "window_s": self.window_s, "quantum_w": self.quantum_w, "speed": self.speed,
                    "readings": len(self._seen), "polls": self.polls, "failed_polls": self.failed_polls,
                    "timed": self._timed, "summed": self._summed, "window_readings": self._window_readings,
                    # a mark's poll (the caller's thread) and the poll thread's can finish in either order
                    "failed_poll_s": sorted(self._failed_at)[-MAX_FAILED_KEPT:]})
        url = getattr(self.client, "url", None)
        if url:
            out["url"] = url
        describe = getattr(self.client, "describe", None)
        if callable(describe):                # which Redfish resource the readings came from
            out["source"] = describe()
            if isinstance(out["source"], dict) and "reading_time" in out["source"]:
                out["source"]["reading_time"] = self._timed     # the readings placed by ReadingTime, as info.timed
        out["bad_readings"] = self.bad_readings
        out["period_assumed"] = self.period_assumed
        notes = [*getattr(self.client, "notes", []), *self.notes]
        if notes:
            out["notes"] = notes
        if self.sensor is not None:
            out["sensor_model"] = dataclasses.asdict(self.sensor)
        return out
