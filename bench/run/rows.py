"""Result rows, once: who and where a run is (:class:`RunContext`, one run-id format), the one row builder (a
point's regions -> one ``archline.results/1`` row). Rows are appended through the results file's owner,
:class:`archline.formats.results_file.ResultsFile` (one complete line per ``os.write`` and fsynced, so a killed run
never leaves half a row; a file that is not a results file is refused). The columns are the schema's
(:mod:`archline.formats.schema`).
"""

from __future__ import annotations

import math
import socket
import statistics
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from archline._version import __version__
from archline.bench.kernels import KernelSpec, RunResult
from archline.common.stamps import utc_compact, utc_iso, utc_now
from archline.formats import schema
from archline.formats.results_file import ResultsFile

#: the writer and reader of a results CSV is its owner (ResultsFile, imported from here by the runner); a partial
#: last line is cut by it too, never in a file that is not a results file
repair_tail = ResultsFile.repair_tail

#: per-repetition time rising by more than this over a point's regions flags throttling
THROTTLE_REL = 0.05
#: meter-clock vs kernel-timer disagreement above this flags clock drift
DRIFT_REL = 0.01


@dataclass
class RunContext:
    """Who and where: the fixed columns of every row in one run."""

    run_id: str
    started_at: str
    platform: str            #: always the profile's name
    host: str
    device: str
    backend: str
    emulated: bool
    config_hash: str = ""
    note: str = ""

    @classmethod
    def new(cls, platform: str, device: str, backend: str, emulated: bool, *, config_hash: str = "",
            note: str = "") -> RunContext:
        now = utc_now()
        return cls(run_id=f"{platform}-{utc_compact(now)}-{uuid.uuid4().hex[:6]}", started_at=utc_iso(now),
                   platform=platform, host=socket.gethostname(), device=device, backend=backend, emulated=emulated,
                   config_hash=config_hash, note=note)


@dataclass
class Region:
    """One timed region of a point: the kernel's result and what the meter saw (energy None: time only)."""

    result: RunResult
    duration_s: float                       #: the meter's view of the region, device seconds
    energy_j: float | None = None
    energy_err_j: float | None = None
    n_samples: int | None = None
    per_device_j: dict[str, float] = field(default_factory=dict)
    lost_samples: int = 0                   #: meter samples the region should hold that never arrived
    lost_s: float = 0.0                     #: the longest stretch a channel saw nothing (device seconds)
    gaps: int = 0
    overflows: int = 0
    #: clocks and temperature the meter sampled on its polls over the region (NVML, AMD SMI: powermon's
    #: MeterRegion.readings, each key's mean, ``<key>_min``, ``<key>_max``, ``n_readings``); {} for other meters
    readings: dict[str, float] = field(default_factory=dict)

    @property
    def clock_hz(self) -> float | None:
        """The clock while the region ran: the back end's own measure, else the mean the meter sampled."""
        hz = self.result.extra.get("effective_clock_hz")
        if hz:
            return float(hz)
        mhz = self.readings.get("core_mhz")
        return float(mhz) * 1e6 if mhz else None

    @property
    def value(self) -> float:
        """What the early stop and the median look at: energy per repetition, else time per repetition."""
        return (self.energy_j if self.energy_j is not None else self.result.time_s) / self.result.reps


def ci_halfwidth_rel(values: Sequence[float]) -> float:
    """95% CI half-width of the mean (Student t), relative to the median; inf with fewer than 2 values."""
    n = len(values)
    if n < 2:
        return math.inf
    med = statistics.median(values)
    if med == 0:
        return math.inf
    # two-sided 97.5% t quantiles for n-1 = 1..10 degrees of freedom, then the normal value
    t = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228)
    q = t[n - 2] if n - 2 < len(t) else 1.96
    return q * statistics.stdev(values) / math.sqrt(n) / abs(med)


@dataclass
class MeterInfo:
    label: str               #: the meter column ("" without a meter)
    sample_hz: float | None  #: None: time only
    emulated: bool
    reason: str              #: what it is, or why there is no energy
    calibration: str = ""    #: the calibration its energy is corrected by ('' when none)


def calibration_of(meter: Any) -> str:
    """What a calibrated meter (a profile entry's ``calibration``) corrects its energy by; '' for any other."""
    cal = getattr(meter, "cal", None) if getattr(meter, "calibrated", False) else None
    return str(cal.text()) if cal is not None else ""


def build_row(ctx: RunContext, spec: KernelSpec, point_id: str, regions: Sequence[Region], meter: MeterInfo, *,
              ci_rel: float, max_regions: int, in_force: Mapping[str, Any] | None = None,
              idle_w: tuple[float | None, float | None] = (None, None)) -> dict[str, Any]:
    """The row of one point: the median region (by energy when metered), the spread over regions, throttling,
    clock drift, idle power, the settings in force, and every value a back end reports under a schema column
    (so a back end adds a column by naming it in the schema's EXTRA)."""
    times = [g.result.time_s for g in regions]
    metered = all(g.energy_j is not None for g in regions)
    order = sorted(range(len(regions)), key=lambda i: regions[i].value * regions[i].result.reps)
    mid = regions[order[len(order) // 2]]
    res, c = mid.result, mid.result.counts
    med_t = statistics.median(times)
    energies = [g.energy_j for g in regions if g.energy_j is not None]
    med_e = statistics.median(energies) if metered and energies else None
    row: dict[str, Any] = {k: v for k, v in res.extra.items() if k in schema.BY_NAME}
    per_rep = [g.result.time_s / g.result.reps for g in regions]
    throttled = len(per_rep) >= 2 and per_rep[-1] > per_rep[0] * (1 + THROTTLE_REL)
    clocks = [hz for g in regions if (hz := g.clock_hz)]
    if len(clocks) >= 2 and min(clocks) < max(clocks) * (1 - THROTTLE_REL):
        throttled = True
    drifts = [abs(g.duration_s - g.result.time_s) / g.result.time_s for g in regions
              if g.result.time_s > 0 and meter.sample_hz is not None]
    drift = max(drifts) if drifts else None
    notes = [n for n in (ctx.note, "" if meter.sample_hz is not None else meter.reason) if n]
    notes += [str(n) for n in res.extra.get("notes", ()) if n]     # the back end's own notes on this point
    if throttled:
        why = f"time per repetition rose {per_rep[-1] / per_rep[0] - 1:.1%}"
        if len(clocks) >= 2:
            why += f", effective clock {min(clocks) / 1e6:.0f}-{max(clocks) / 1e6:.0f} MHz over the regions"
        notes.append(f"throttling suspected: {why}")
    if drift is not None and drift > DRIFT_REL:
        notes.append(f"clock drift: meter and kernel timer disagree by {drift:.1%}")
    if len(regions) >= max_regions >= 2 and ci_halfwidth_rel([g.value for g in regions]) >= ci_rel:
        notes.append(f"CI not below {ci_rel:g} after {len(regions)} regions")
    flops = c.flops_sp + c.flops_dp + c.int_ops
    row.update({
        "schema": schema.SCHEMA, "archline_version": __version__, "calibration": meter.calibration or None,
        "run_id": ctx.run_id, "started_at": ctx.started_at, "platform": ctx.platform,
        "host": ctx.host, "device": res.extra.get("device") or ctx.device, "backend": ctx.backend,
        "kernel": spec.kernel, "precision": spec.precision, "level": spec.level, "reps": res.reps, "time_s": med_t,
        "energy_j": med_e,
        "energy_err_j": max(g.energy_err_j for g in regions if g.energy_err_j is not None)
        if med_e is not None and all(g.energy_err_j is not None for g in regions) else None,
        **c.as_row(),
        "meter": meter.label, "sample_hz": meter.sample_hz, "n_samples": mid.n_samples if med_e is not None else None,
        # an emulated kernel computes nothing: its checksum is not computed (an empty cell), never "ok"
        "checksum_ok": None if res.extra.get("checksum_computed") is False
        else all(g.result.checksum_ok for g in regions),
        "emulated": ctx.emulated or meter.emulated, "point_id": point_id, "config_hash": ctx.config_hash,
        "params": ";".join(f"{k}={v}" for k, v in sorted(spec.params.items())),
        "intensity_flop_per_byte": res.extra.get("intensity_flop_per_byte",
                                                 flops / c.bytes_total if c.bytes_total else None),
        "n_regions": len(regions), "time_spread_rel": (max(times) - min(times)) / med_t if med_t > 0 else None,
        "energy_spread_rel": (max(energies) - min(energies)) / med_e if med_e else None,
        "power_w": med_e / med_t if med_e is not None and med_t > 0 else None,
        "idle_w_before": idle_w[0], "idle_w_after": idle_w[1], "throttled": throttled, "clock_drift_rel": drift,
        "energy_by_device": ";".join(f"{d}={e!r}" for d, e in sorted(mid.per_device_j.items()))
        if med_e is not None and mid.per_device_j else None,
    })
    if meter.sample_hz is not None:   # what the meter lost over the point's regions (the bound covers it)
        lost = sum(g.lost_samples for g in regions)
        row.update({"lost_samples": lost, "lost_s": sum(g.lost_s for g in regions),
                    "meter_gaps": sum(g.gaps for g in regions), "meter_overflows": sum(g.overflows for g in regions)})
        if lost:
            notes.append(f"meter lost {lost} sample(s) over the regions ({row['lost_s']:.3g} s); the energy bound "
                         "covers them")
    if res.extra.get("core_mhz"):            # measured during the run (NVML) beats the clock estimate
        row["core_mhz"] = round(float(res.extra["core_mhz"]), 1)
    elif res.extra.get("effective_clock_hz"):
        row["core_mhz"] = round(float(res.extra["effective_clock_hz"]) / 1e6, 1)
    elif mid.readings.get("core_mhz"):       # the back end measured none: the meter's polls over the region did
        row["core_mhz"] = round(mid.readings["core_mhz"], 1)
        row["effective_clock_hz"] = mid.readings["core_mhz"] * 1e6
        row["clock_method"] = f"mean of {int(mid.readings.get('n_readings', 0))} polls of meter {meter.label}"
    if row.get("mem_mhz") is None and mid.readings.get("mem_mhz"):
        row["mem_mhz"] = round(mid.readings["mem_mhz"], 1)
    if c.bus_bytes == 0:
        row["bus_bytes"] = None
    forced = dict(in_force or {})
    if forced.get("note"):
        notes.append(str(forced.pop("note")))
    row.update(forced)
    row["note"] = "; ".join(notes)
    return row
