"""``archline meter probe``: an on-board sensor's update period, averaging window, lag behind a power step and
quantum, measured against a reference meter while a step load switches the power between two levels.

The analysis is pure functions on arrays (:func:`update_period`, :func:`quantum`, :func:`analyse`); :func:`run_probe`
drives a step load (anything with ``high()`` and ``low()``: the caller's kernel or an emulated device's busy/idle
switch; powermon never imports bench) inside one :class:`~archline.powermon.record.recorder.Recorder` holding the
reference and the sensor, then analyses what both recorded.

* update period: the times at which a new reading appeared (a value change, for a sensor that is polled) lie on a
  lattice ``t0 + k * period``; each gap is rounded to a whole number of periods and the period is the slope of a
  straight-line fit of time on lattice index, so hundreds of readings pin it far below one gap's jitter
  (:mod:`archline.powermon.sensor.lattice`; a reading that changes only at some updates gives the largest period
  every interval between changes is a whole multiple of, with a warning);
* window and lag: :func:`archline.powermon.sensor.response.fit_response` (the step edges are what separate them: a
  reading starts to move ``lag`` after an edge and stops ``window`` later);
* quantum: the distinct reading values sit on multiples of the quantum; the smallest gap between distinct values is
  refined by a fit of value on multiple, and a set of values on no lattice is a quantum of 0 (none seen).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from archline.powermon.errors import MeterError
from archline.powermon.sensor.lattice import MAX_CHANCE as MAX_CHANCE
from archline.powermon.sensor.lattice import _lattice_fit as _lattice_fit
from archline.powermon.sensor.lattice import period_warning as period_warning
from archline.powermon.sensor.lattice import update_period as update_period
from archline.powermon.sensor.response import Response, fit_response

F64 = npt.NDArray[np.float64]


class StepLoad(Protocol):
    """What switches the power: ``high()`` starts the busy level, ``low()`` the idle one."""

    def high(self) -> None: ...
    def low(self) -> None: ...


@dataclass(frozen=True)
class ProbeResult:
    update_period_s: float
    update_period_err_s: float
    quantum_w: float
    quantum_err_w: float
    response: Response
    n_steps: int
    reference_period_s: float
    quantum_resolved: bool = True          #: False: fewer than 5 distinct values, quantum_w 0 means "not told"
    n_edge_readings: int = -1              #: readings that fell inside an edge's window (-1: not counted)

    @property
    def warnings(self) -> tuple[str, ...]:
        return self.response.warnings

    def as_dict(self) -> dict[str, Any]:
        r = self.response
        return {"update_period_s": self.update_period_s, "update_period_err_s": self.update_period_err_s,
                "window_s": r.window_s, "window_err_s": r.window_err_s, "lag_s": r.lag_s, "lag_err_s": r.lag_err_s,
                "quantum_w": self.quantum_w, "quantum_err_w": self.quantum_err_w,
                "quantum_resolved": self.quantum_resolved, "gain": r.gain,
                "gain_err": r.gain_err, "offset_w": r.offset_w, "offset_err_w": r.offset_err_w,
                "residual_w": r.residual_w, "n_readings": r.n_readings, "n_steps": self.n_steps,
                "n_edge_readings": self.n_edge_readings, "reference_period_s": self.reference_period_s}


def reading_times(t_s: F64, value_w: F64) -> F64:
    """Times at which a new value appeared (the first sample, then every change): for a polled sensor the
    update instants; for a meter that reports each reading, those readings whose value moved."""
    t = np.asarray(t_s, dtype=np.float64)
    v = np.asarray(value_w, dtype=np.float64)
    if t.size == 0:
        return t
    return t[np.concatenate([[True], np.diff(v) != 0])]


def _lattice(u: F64, scale: float, max_divisor: int, max_chance: float = MAX_CHANCE) -> float:
    """The largest step of which every value of ``u`` is a whole multiple (the smallest gap between values divided by
    1, 2, 3, ...), or 0 when none fits better than chance (``max_chance``)."""
    gaps = np.diff(np.unique(u))
    gaps = gaps[gaps > 1e-9 * scale]
    if gaps.size == 0:
        return 0.0
    cand = float(np.min(gaps)) / np.arange(1, max_divisor + 1)
    cand = cand[cand >= 1e-6 * scale]
    if cand.size == 0:
        return 0.0
    tried = 0
    for chunk in np.array_split(cand, max(1, cand.size // 1000)):
        r = u[None, :] / chunk[:, None]
        # a digital sensor reports whole multiples of its unit: exact but for float rounding
        tol = np.minimum(0.01, 1e-6 * scale / chunk[:, None])
        ok = np.all(np.abs(r - np.rint(r)) < tol, axis=1)
        if ok.any():
            i = int(np.argmax(ok))
            # continuous values fit one lattice by chance with probability (2 tau)^n, and i + 1 more were tried
            if (tried + i + 1) * float(2 * tol[i, 0]) ** u.size > max_chance:
                return 0.0
            return float(chunk[i])
        tried += chunk.size
    return 0.0


def quantum(values_w: F64, *, max_divisor: int = 20_000) -> tuple[float, float]:
    """(quantum, standard error) of reading values: the largest step of which every distinct value is a whole
    multiple (an approximate greatest common divisor: the smallest gap between values divided by 1, 2, 3, ...),
    accepted only when continuous values would fit it by chance with probability below :data:`MAX_CHANCE`.
    (0, 0) when fewer than 5 distinct values are seen or none of those steps fits (no quantum).

    A sensor rounds its reading, so its lattice holds 0 and the values use every residue of it; values that sit on
    a lattice offset from zero (their differences on a coarser step than the values themselves: 40 + 0.46875 k W,
    whose zero-based step is 0.15625 W) are a few power levels mixed in fixed proportions (a step between two
    levels seen at a clock's resolution, an emulator's fixed-point window mean), not a rounding: quantum 0."""
    u = np.unique(np.asarray(values_w, dtype=np.float64))
    u = u[u != 0]
    if u.size < 5:         # fewer values fit some fine lattice by chance
        return 0.0, 0.0
    scale = float(np.max(np.abs(u)))
    q = _lattice(u, scale, max_divisor)
    if q == 0.0:
        return 0.0, 0.0
    diff_q = _lattice(u[1:] - u[0], scale, max_divisor)
    if diff_q > 1.5 * q:   # the differences step coarser than the values: an offset lattice, not a rounding
        return 0.0, 0.0
    k = np.rint(u / q)
    q = float(np.sum(u * k) / np.sum(k * k))
    resid = u - q * k
    s2 = float(resid @ resid) / max(u.size - 1, 1)
    return q, math.sqrt(s2 / float(np.sum(k * k)))


#: distinct reading values below which a quantum cannot be told (:func:`quantum` returns 0 for "not resolved")
MIN_DISTINCT_VALUES = 5

#: readings inside an edge's window below which window and lag are pinned only by which side of each edge the
#: readings fell (each one is one equation in window and lag; two unknowns want a few more than two)
MIN_EDGE_READINGS = 5


def quantum_resolved(values_w: F64) -> bool:
    """Whether there are enough distinct (non-zero) values for :func:`quantum` to tell a quantum (else its 0 means
    "not resolved", not "none")."""
    u = np.unique(np.asarray(values_w, dtype=np.float64))
    return int(np.count_nonzero(u)) >= MIN_DISTINCT_VALUES


def rounding_bound_w(values_w: F64, *, max_divisor: int = 20_000) -> float:
    """The largest quantum the readings allow (0 when there is nothing to bound): a sensor that rounds to a quantum
    reads whole multiples of it, so the quantum divides every distinct value; the largest step that does (their
    approximate greatest common divisor, 40 W for readings of 40 and 160 W, 0.4 W for 40.4 and 160.4 W), else the
    smallest gap between values, bounds it. With the quantum not resolved (:func:`quantum_resolved`) each level's
    reading may be rounded by up to half of it, the same way at every reading: gain and offset carry that
    (:func:`archline.powermon.sensor.response.level_systematics`); without it an offset came out -0.416 +- 0.04 W
    (truth 0, levels 40.4/160.4 W read as 40/160 W)."""
    u = np.unique(np.abs(np.asarray(values_w, dtype=np.float64)))
    u = u[u != 0]
    if u.size < 2:
        return float(u[0]) if u.size else 0.0
    scale = float(np.max(u))
    gaps = np.diff(u)
    gaps = gaps[gaps > 1e-9 * scale]
    if gaps.size == 0:
        return 0.0
    q = _lattice(u, scale, max_divisor, max_chance=math.inf)      # any step that fits bounds it, chance or not
    return q if q > 0 else float(np.min(gaps))


def edge_readings(values_w: F64, quantum_w: float) -> int:
    """How many readings fell inside an edge's window: strictly between the two levels (the lowest and the highest
    reading), by more than a quantum and 2% of the swing (what a reading at a level may differ by)."""
    v = np.asarray(values_w, dtype=np.float64)
    if v.size == 0:
        return 0
    lo, hi = float(v.min()), float(v.max())
    margin = max(quantum_w, 0.02 * (hi - lo))
    return int(np.count_nonzero((v > lo + margin) & (v < hi - margin)))


def edge_limits(resp: Response, read_w: F64, *, period_s: float, n_steps: int, reference_period_s: float,
                quantum_w: float, fixed_window: bool = False) -> tuple[Response, int, list[str]]:
    """(response with honest window/lag uncertainties, readings inside edges, warnings).

    A reading inside an edge's window says where the edge fell within it; one outside only on which side of the edge
    its window lay. With fewer than :data:`MIN_EDGE_READINGS` of the former (a slow sensor, few steps) window and
    lag are pinned only to the intersection of one update period per edge, about ``2 x period / (edges + 1)`` wide:
    that term joins their uncertainty (seen 55 sigma off without it: window 0.069 +- 0.0006 s, truth 0.1, reading
    every 0.5 s over 12 edges), and a warning says so. A sensor without a window (shorter than the reference's
    sample period) has no readings inside edges by nature: its window and lag get the term, without a warning."""
    n_edges = 2 * n_steps
    n_in = edge_readings(read_w, quantum_w)
    warnings: list[str] = []
    if n_steps <= 0:
        return resp, n_in, warnings
    pin_s = 2 * period_s / (n_edges + 1)
    if resp.window_s < reference_period_s:
        # no averaging window seen: a reading only says on which side of an edge its instant fell (docs/meters.md),
        # and a window shorter than about the same width would have left no reading inside an edge either
        return dataclasses.replace(resp, lag_err_s=math.hypot(resp.lag_err_s, pin_s),
                                   window_err_s=resp.window_err_s if fixed_window
                                   else math.hypot(resp.window_err_s, pin_s)), n_in, warnings
    if n_in < MIN_EDGE_READINGS:
        resp = dataclasses.replace(resp, lag_err_s=math.hypot(resp.lag_err_s, pin_s),
                                   window_err_s=resp.window_err_s if fixed_window
                                   else math.hypot(resp.window_err_s, pin_s))
        warnings.append(f"only {n_in} of {resp.n_readings} readings fell inside an edge's window over {n_edges} "
                        f"edges (fewer than {MIN_EDGE_READINGS}): {'lag' if fixed_window else 'window and lag'} "
                        f"are pinned only to about 2 x period / (edges + 1) = {pin_s:.3g} s, which their "
                        "uncertainty includes; record more --steps (or a sensor that updates faster) to measure "
                        "them")
    return resp, n_in, warnings


def quantum_warning(resolved: bool, read_w: F64) -> list[str]:
    if resolved:
        return []
    n = int(np.count_nonzero(np.unique(np.asarray(read_w, dtype=np.float64))))
    bound = rounding_bound_w(read_w)
    return [f"quantum not resolved ({n} distinct reading value(s), fewer than {MIN_DISTINCT_VALUES}): the sensor may "
            f"round its readings by a step this probe cannot tell, up to {bound:.4g} W (the largest step every value "
            "is a multiple of); gain and offset uncertainties include a rounding of each level by up to half of it, "
            "window and lag leave it out; record more --steps, or a wider swing"]


def analyse(ref_t_s: F64, ref_power_w: F64, read_t_s: F64, read_w: F64, *, reference_period_s: float,
            max_window_s: float, max_lag_s: float, n_steps: int = 0, ref_resolution_w: F64 | None = None
            ) -> ProbeResult:
    """Everything a probe measures, from the two meters' series on one timeline (device seconds)."""
    changes = reading_times(read_t_s, read_w)
    period, period_err = update_period(changes)
    q, q_err = quantum(read_w)
    resolved = quantum_resolved(read_w)
    resp = fit_response(ref_t_s, ref_power_w, read_t_s, read_w, max_window_s=max_window_s, max_lag_s=max_lag_s,
                        resolution_s=reference_period_s / 4, reference_period_s=reference_period_s, quantum_w=q,
                        ref_resolution_w=ref_resolution_w,
                        level_rounding_w=None if resolved else rounding_bound_w(read_w))
    resp, n_in, warnings = edge_limits(resp, read_w, period_s=period, n_steps=n_steps,
                                       reference_period_s=reference_period_s, quantum_w=q)
    resp = dataclasses.replace(resp, warnings=(*resp.warnings, *period_warning(changes, period),
                                               *quantum_warning(resolved, read_w), *warnings))
    return ProbeResult(period, period_err, q, q_err, resp, n_steps, reference_period_s, resolved, n_in)


def step_plan(n_steps: int, step_s: float, seed: int = 0) -> list[float]:
    """Durations of the alternating low/high stretches (device seconds): ``step_s`` give or take 30%, at random, so
    that the edges fall at every phase of the sensor's update lattice."""
    rng = np.random.default_rng(seed)
    return [float(step_s * (0.7 + 0.6 * u)) for u in rng.random(2 * n_steps + 1)]


def drive_steps(load: StepLoad, plan: list[float], speed: float = 1.0,
                sleep: Callable[[float], None] = time.sleep) -> None:
    """Play the plan: low, high, low, ... each for its device seconds (host seconds divided by ``speed``)."""
    for k, dur in enumerate(plan):
        (load.low if k % 2 == 0 else load.high)()
        sleep(dur / speed)
    load.low()


def series(samples: Any, device_time: bool) -> tuple[F64, F64]:
    """(times, total power) of a meter's samples: summed over channels at each instant; device seconds when the
    samples carry them (an emulator's timeline) and ``device_time`` asks for them, else host seconds."""
    t = samples.meta.get("t_dev_s") if device_time else None
    t = np.asarray(samples.t_s if t is None else t, dtype=np.float64)
    p = np.asarray(samples.power_w, dtype=np.float64)
    if samples.valid is not None:
        t, p = t[samples.valid], p[samples.valid]
    if t.size == 0:
        raise MeterError(f"meter '{samples.meter}' recorded no samples")
    ut, inv = np.unique(t, return_inverse=True)
    return ut, np.asarray(np.bincount(inv, weights=p, minlength=ut.size), dtype=np.float64)
