"""A program on its machine's energy roofline (S1 Ch. 6, validated against the meter): the measured point (time,
energy, intensity from its counts) beside the model's prediction for the same counts, with their difference and
whether it is within the fit's uncertainty; and its figure (:func:`plot_placement`).

    predicted energy   E_pred = sum_i N_i*eps_i + pi0*T_meas         (S1 Ch. 6: the measured time, as the thesis)
    its uncertainty    sigma_E = sqrt(sum_i (N_i*se(eps_i))^2 + (T_meas*se(pi0))^2)   (the cost table's stderr,
                       coefficients taken as independent)
    agreement          |E_meas - E_pred| <= K_SIGMA*sigma_E + the meter's bound on E_meas
    model time         T_model = max(W_sp*tau_sp + W_dp*tau_dp, Q*tau_mem, ...)  (S0 eq.3 with a component per
                       count: app_predict.model_time; the time roofline's point)

A coefficient without a stderr (a profile's paper value) adds nothing to sigma_E and is named in the notes; when
no used coefficient has one, agreement is not judged (``within`` is None). Energy may be missing on either side
(no meter measured it; a time-only cost table has no eps or pi0): its fields are then None, ``energy_reason``
says why, and the time side (achieved GFLOP/s against the time roofline's attainable bound) stands alone.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from archline.fit.analyses.choi import app_predict as ap
from archline.formats.app_counts import CountsRow
from archline.formats.counters.base import CountersFormatError, Counts
from archline.formats.platforms.profiles import Platform, load_platform
from archline.model.errors import ArchlineFitError, MissingValueError
from archline.model.hierarchy import COUNT_TO_COST
from archline.model.machine import Machine

#: coverage factor of the agreement test: 2 standard errors (about 95 %)
K_SIGMA = 2.0


class PlacementError(ArchlineFitError):
    pass


@dataclass(frozen=True)
class Placement:
    """Where a measured program sits against the model of ``platform`` (SI units throughout)."""

    name: str
    platform: str
    emulated: bool                        # the cost table (or the measurement) is not from real hardware
    precision: str                        # the roofline drawn: the precision with most flops
    flops: float                          # W_sp + W_dp (each timed by its own tau in model_time_s)
    bytes_mem: float
    intensity_flop_per_byte: float        # flops per DRAM byte (inf: no DRAM traffic)
    measured_time_s: float
    measured_energy_j: float | None       # None: not measured (energy_reason says why)
    measured_energy_err_j: float          # the meter's bound (0 when not given)
    predicted_energy_j: float             # at the measured time (S1 Ch. 6); NaN: the table has no energy costs
    predicted_energy_err_j: float         # 1 standard error from the cost table's stderrs (NaN: none known)
    model_time_s: float                   # the model time (app_predict.model_time: every counted component)
    flops_sp: float = 0.0
    flops_dp: float = 0.0
    terms_j: dict[str, float] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    figure: Path | None = None
    energy_reason: str | None = None      # why an energy is missing (None: both are there)

    @property
    def has_energy(self) -> bool:
        return self.measured_energy_j is not None and math.isfinite(self.predicted_energy_j)

    @property
    def precision_label(self) -> str:
        """'sp', 'dp', or 'sp+dp' when the program counts both (each timed by its own tau)."""
        return "sp+dp" if self.flops_sp > 0 and self.flops_dp > 0 else self.precision

    @property
    def above_roofline(self) -> bool:
        """Measured faster than the model's least time: impossible for a right count and a right table."""
        return self.measured_time_s < self.model_time_s

    @property
    def energy_diff_j(self) -> float:
        """measured - predicted (NaN when either is missing)."""
        if self.measured_energy_j is None:
            return math.nan
        return self.measured_energy_j - self.predicted_energy_j

    @property
    def energy_diff_rel(self) -> float:
        return self.energy_diff_j / self.predicted_energy_j if self.predicted_energy_j else math.nan

    @property
    def achieved_gflop_per_s(self) -> float:
        return self.flops / self.measured_time_s / 1e9

    @property
    def attainable_gflop_per_s(self) -> float:
        """The time roofline's bound at the program's counts: W / the model time (S0 eq.3, every counted component)."""
        return self.flops / self.model_time_s / 1e9 if self.model_time_s > 0 else math.nan

    @property
    def time_diff_s(self) -> float:
        """measured - model time (>= 0 when the program runs below the time roofline)."""
        return self.measured_time_s - self.model_time_s

    @property
    def tolerance_j(self) -> float:
        return K_SIGMA * self.predicted_energy_err_j + self.measured_energy_err_j

    @property
    def within(self) -> bool | None:
        """Measured and predicted energies agree within the fit's uncertainty (and the meter's bound)."""
        if not (math.isfinite(self.predicted_energy_err_j) and self.has_energy):
            return None
        return abs(self.energy_diff_j) <= self.tolerance_j

    @property
    def measured_power_w(self) -> float:
        return math.nan if self.measured_energy_j is None else self.measured_energy_j / self.measured_time_s

    @property
    def predicted_power_w(self) -> float:
        return self.predicted_energy_j / self.measured_time_s

    @property
    def fraction_of_peak_time(self) -> float:
        """model time / measured time: 1 on the time roofline, less below it."""
        return self.model_time_s / self.measured_time_s

    def as_dict(self) -> dict[str, Any]:
        def num(x: float | None) -> float | None:
            return x if x is not None and math.isfinite(x) else None

        measured_e = self.measured_energy_j is not None
        return {"name": self.name, "platform": self.platform, "emulated": self.emulated, "source": "S1 Ch. 6",
                "precision": self.precision_label, "roofline_precision": self.precision, "flops": self.flops,
                "flops_sp": self.flops_sp, "flops_dp": self.flops_dp, "bytes_mem": self.bytes_mem,
                "intensity_flop_per_byte": num(self.intensity_flop_per_byte),
                "achieved_gflop_per_s": self.achieved_gflop_per_s,
                "attainable_gflop_per_s": num(self.attainable_gflop_per_s),
                "above_roofline": self.above_roofline,
                "measured": {"time_s": self.measured_time_s, "energy_j": num(self.measured_energy_j),
                             "energy_err_j": self.measured_energy_err_j if measured_e else None,
                             "power_w": num(self.measured_power_w)},
                "predicted": {"energy_j": num(self.predicted_energy_j),
                              "energy_err_j": num(self.predicted_energy_err_j),
                              "power_w": num(self.predicted_power_w), "model_time_s": self.model_time_s,
                              "terms_j": self.terms_j},
                "difference": {"energy_j": num(self.energy_diff_j), "energy_rel": num(self.energy_diff_rel),
                               "time_s": self.time_diff_s, "tolerance_j": num(self.tolerance_j),
                               "k_sigma": K_SIGMA, "within": self.within},
                "energy_reason": self.energy_reason,
                "notes": list(self.notes), "figure": None if self.figure is None else str(self.figure)}


def counts_rows(counts: Sequence[Counts]) -> list[CountsRow]:
    """Counter imports as the rows ``archline predict`` takes (their source and notes kept)."""
    out = []
    for c in counts:
        if not c.counts:                  # a time or an energy alone: E would be pi0 x T, no N_i eps_i
            have = [f"a time, {c.time_s:.6g} s"] if c.time_s is not None else []
            have += [f"a measured energy, {c.energy_j:.6g} J"] if c.energy_j is not None else []
            raise CountersFormatError(f"{c.source or c.name}: no flop or byte count (only "
                                      f"{' and '.join(have) or 'events the model does not use'}): nothing to "
                                      "predict from (E would be pi0 x T alone); count flops or bytes "
                                      "(docs/counters.md)")
        notes = [f"counts from {c.source}"] if c.source else []
        out.append(CountsRow(c.name, dict(c.counts), c.time_s, notes=[*notes, *c.notes]))
    return out


def _stderr(platform: Platform, key: str) -> float | None:
    c = platform.constants.get(key)
    return None if c is None else c.stderr


def _positive(x: float, what: str) -> float:
    if not (math.isfinite(x) and x > 0):
        raise PlacementError(f"{what} must be a positive finite number, got {x!r}")
    return float(x)


def machine_of(platform: Platform, precision: str) -> Machine:
    return platform.machine(precision, "the program's place on the roofline")


def _model_time_s(platform: Platform, counts: Counts) -> tuple[float, list[str]]:
    """The model time of the counts (app_predict.model_time: every counted component at its peak rate, SP and DP
    flops each by their own tau), from the table's taus alone (a time-only table has no eps or pi0)."""
    return ap.model_time(counts.counts, ap.platform_costs(platform), platform.name, counts.name)


def as_counts(counts: Counts | Mapping[str, float], name: str = "program") -> Counts:
    """``counts`` as a Counts: a plain mapping of result columns (flops_dp, bytes_mem ...) to numbers is taken."""
    if isinstance(counts, Counts):
        return counts
    if not isinstance(counts, Mapping):
        raise PlacementError(f"counts must be a Counts or a mapping of count columns to numbers, got "
                             f"{type(counts).__name__}")
    unknown = [k for k in counts if k not in COUNT_TO_COST]
    if unknown:
        raise PlacementError(f"unknown count column {unknown[0]!r} (counts: {', '.join(COUNT_TO_COST)})")
    out: dict[str, float] = {}
    for k, v in counts.items():
        try:
            out[k] = float(v)
        except (TypeError, ValueError):
            raise PlacementError(f"count {k} must be a number, got {v!r}") from None
    return Counts(name, out, source="given as a mapping")


def place_program(costs: str | Platform, counts: Counts | Mapping[str, float], measured_time_s: float,
                  measured_energy_j: float | None,
                  out_png: str | Path | None = None, *, measured_energy_err_j: float = 0.0,
                  emulated: bool = False, energy_reason: str | None = None) -> Placement:
    """The program counted in ``counts`` and measured (``measured_time_s``, ``measured_energy_j``, with the meter's
    bound ``measured_energy_err_j``) placed against ``costs`` (a cost table path, profile path or platform name, or
    a loaded Platform); ``out_png``: also draw it (time roofline, arch line, power line). ``emulated``: the
    measurement did not come from real hardware (the placement says so). ``measured_energy_j`` None: no energy
    was measured, ``energy_reason`` says why (a NaN, inf or value <= 0 is refused); a table without energy costs
    (time-only) predicts none either: the placement is then the time roofline's alone, its energy fields None
    with the reason. ``counts``: a Counts or a plain mapping of count columns (``{"flops_dp": 2e9, "bytes_mem":
    2.4e7}``). A measured time below the model's least time is flagged (``above_roofline``, with a note): the
    counts or the table must be wrong."""
    counts = as_counts(counts)
    ap.check_counts(counts.name, counts.counts)
    platform = load_platform(costs) if isinstance(costs, str) else costs
    t = _positive(measured_time_s, "measured_time_s")
    # None is "no meter"; a NaN is a broken measurement, refused as any non-physical energy (not read as no meter)
    no_meter = measured_energy_j is None
    e = None if measured_energy_j is None else _positive(float(measured_energy_j), "measured_energy_j (None for no "
                                                                                    "meter)")
    err = float(measured_energy_err_j)
    if not (math.isfinite(err) and err >= 0):
        raise PlacementError(f"measured_energy_err_j must be a finite number >= 0, got {measured_energy_err_j!r}")
    w = counts.flops
    if w <= 0:
        raise PlacementError(f"'{counts.name}' ({counts.source or 'counts'}) has no flops: the roofline's "
                             "intensity needs flops_sp or flops_dp")
    precision = "dp" if counts.counts.get("flops_dp", 0.0) >= counts.counts.get("flops_sp", 0.0) else "sp"
    reasons = [f"no energy was measured: {energy_reason or 'no meter'}"] if no_meter else []
    try:
        pred = ap.predict([CountsRow(counts.name, dict(counts.counts), t)], platform)[0]
    except MissingValueError as missing:      # a table missing a cost: the time roofline still places the program
        reasons.append(f"no energy predicted: {missing}")
        pred = None
    if pred is not None and pred.energy_j is None:     # a time-only table or localhost's peaks: no energy costs
        reasons.append(f"no energy predicted: {pred.energy_missing}")
        pred = None
    model_time_s, time_notes = _model_time_s(platform, counts)
    var = 0.0
    known: list[str] = []
    unknown: list[str] = []
    for column, n in counts.counts.items():
        cost = COUNT_TO_COST[column]
        if not n:
            continue
        se = _stderr(platform, cost)
        (known if se is not None else unknown).append(cost)
        var += (n * se) ** 2 if se is not None else 0.0
    se0 = _stderr(platform, "pi0")
    (known if se0 is not None else unknown).append("pi0")
    var += (t * se0) ** 2 if se0 is not None else 0.0
    notes = [*counts.notes, *time_notes]
    if counts.count_rel_err > 0 and pred is not None:
        # multiplexed counts are +-rel_err each: the count-driven energy (every term but pi0 T) widens with them
        dynamic_j = sum(v for k, v in pred.terms_j.items() if k != ap.CONSTANT_TERM)
        var += (counts.count_rel_err * dynamic_j) ** 2
        known.append("counts")
        notes.append(f"predicted energy's uncertainty includes the counts' +-{100 * counts.count_rel_err:.0f}% "
                     "(multiplexed)")
    if unknown and pred is not None and not no_meter:
        notes.append(f"no stderr for {', '.join(unknown)} in '{platform.name}': "
                     + ("the uncertainty leaves them out" if known else "agreement not judged"))
    if counts.scaled:
        notes.append("some counts are estimates (multiplexed or extrapolated by the profiler)")
    if t < model_time_s:
        notes.append(f"measured faster than the roofline allows ({model_time_s / t:.3g}x its attainable rate: "
                     f"measured {t:.4g} s, least model time {model_time_s:.4g} s): the counts or the cost table "
                     "must be wrong")
    q = counts.counts.get("bytes_mem", 0.0)
    placed = Placement(
        name=counts.name, platform=platform.name, emulated=platform.emulated or emulated, precision=precision,
        flops=w, bytes_mem=q, intensity_flop_per_byte=counts.intensity_flop_per_byte,
        measured_time_s=t, measured_energy_j=e, measured_energy_err_j=err,
        predicted_energy_j=math.nan if pred is None else pred.energy_j,
        predicted_energy_err_j=math.sqrt(var) if known and pred is not None else math.nan,
        model_time_s=model_time_s, flops_sp=counts.counts.get("flops_sp", 0.0),
        flops_dp=counts.counts.get("flops_dp", 0.0), terms_j={} if pred is None else dict(pred.terms_j),
        notes=tuple(notes),
        energy_reason="; ".join(reasons) or None)
    if out_png is None:
        return placed
    from dataclasses import replace

    if not placed.has_energy:      # its arch and power lines are energy: said, not drawn half
        return replace(placed, notes=(*placed.notes, f"no figure drawn ({out_png}): it plots energy, and there "
                                      "is none (energy_reason says why)"))

    path = plot_placement(placed, machine_of(platform, precision), Path(out_png))
    return replace(placed, figure=path)


def _x_range(p: Placement, m: Machine) -> np.ndarray:
    i = p.intensity_flop_per_byte if math.isfinite(p.intensity_flop_per_byte) else 64.0 * m.B_tau
    lo = min(i, m.B_tau) / 16.0
    hi = max(i, m.B_tau) * 16.0
    return np.logspace(math.log2(lo), math.log2(hi), 256, base=2.0)


def plot_placement(p: Placement, machine: Machine, out_path: Path) -> Path:
    """The figure of a program placed on its machine's roofline: three panels against intensity, the platform's
    time roofline (flop/s), arch line (flop/J) and power line (W), each with the measured point and the model's
    prediction for the program's counts, and both numbers in the title."""
    from archline.fit.figure_layout import legend_outside, pyplot, save_figure, title_with_notes

    plt = pyplot()
    x = _x_range(p, machine)
    i = p.intensity_flop_per_byte if math.isfinite(p.intensity_flop_per_byte) else float(x[-1])
    w = p.flops
    e_meas = math.nan if p.measured_energy_j is None else p.measured_energy_j   # drawn only with energy
    panels = [
        ("time roofline", "performance (Gflop/s)", machine.performance_flop_per_s(x) / 1e9,
         w / p.measured_time_s / 1e9, w / p.model_time_s / 1e9, "model time"),
        ("arch line", "energy efficiency (Gflop/J)", machine.efficiency_flop_per_j(x) / 1e9,
         w / e_meas / 1e9, w / p.predicted_energy_j / 1e9, "predicted energy"),
        ("power line", "average power (W)", machine.power_w(x),
         p.measured_power_w, p.predicted_power_w, "predicted power"),
    ]
    fig, axes = plt.subplots(1, 3, figsize=(12.0, 4.6), layout="constrained")
    for ax, (title, ylabel, curve, meas, pred, pred_label) in zip(axes, panels, strict=True):
        ax.plot(x, curve, color="0.35", lw=1.6, label=f"{p.platform} ({p.precision})")
        ax.axvline(machine.B_tau, color="0.7", lw=0.8, ls=":", label=f"B_tau = {machine.B_tau:.3g}")
        ax.plot([i], [pred], marker="s", ms=8, mfc="none", mec="tab:blue", ls="none", label=pred_label)
        ax.plot([i], [meas], marker="o", ms=6, color="tab:red", ls="none", label="measured")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("intensity (flop per DRAM byte)")
        ax.set_ylabel(ylabel)
        ax.set_title(title, fontsize=9)
        legend_outside(ax, fontsize=7.5, ncol=2)
    ok = {True: "within", False: "outside", None: "not judged:"}[p.within]
    err = f" +- {p.predicted_energy_err_j:.3g}" if math.isfinite(p.predicted_energy_err_j) else ""
    tag = " (emulated)" if p.emulated else ""
    title = (f"{p.name} on {p.platform}{tag}: measured {p.measured_energy_j:.4g} J in {p.measured_time_s:.4g} s, "
             f"predicted {p.predicted_energy_j:.4g}{err} J (S1 Ch. 6); difference {p.energy_diff_j:+.3g} J "
             f"({100 * p.energy_diff_rel:+.2f}%), {ok} {K_SIGMA:g} standard errors + the meter's bound; model time "
             f"{p.model_time_s:.4g} s")
    title_with_notes(fig, title, fontsize=9)
    return save_figure(fig, out_path, dpi=120)
