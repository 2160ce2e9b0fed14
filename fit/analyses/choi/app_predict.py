"""Application energy and time from counted work and traffic per level (S1 Ch. 6; S0 §V-C; model.md §6.6).

    E_pred = sum_i N_i * eps_i(Vcore, Vmem) + pi0(Vcore, Vmem) * T

N_i are counts per operation or access type (flops, integer ops, bytes from DRAM, L3, L2, L1, shared memory,
random accesses), keyed by the archline.results/1 column names. T is the measured time when the counts give
``time_s`` (as in the thesis); otherwise the model's time, every counted component at its peak rate and overlapped
(:func:`model_time`: S0 eq.3's max(W*tau_flop, Q*tau_mem) with a component per count of S1 eq.10), which the
thesis notes could supply it. A table without some energy cost the counts need gives the time and says which.
Costs come from a profile, a basic cost table, or a DVFS cost table (a setting picked by the row's core/memory
clocks or voltages).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archline.formats.app_counts import CountsFormatError, CountsRow
from archline.formats.platforms.profiles import Platform
from archline.model.dvfs import DVFS_COEFFICIENTS, costs_at
from archline.model.errors import MissingValueError
from archline.model.hierarchy import COUNT_TO_COST, TIME_EXTRA, model_time

#: Terms of the breakdown, in display order: term -> count columns charged to it.
TERMS: dict[str, tuple[str, ...]] = {
    "flops": ("flops_sp", "flops_dp"),
    "int": ("int_ops",),
    "dram": ("bytes_mem",),
    "l3": ("bytes_l3",),
    "l2": ("bytes_l2",),
    "l1": ("bytes_l1",),
    "shared": ("bytes_shared",),
    "rand": ("rand_accesses",),
}
CONSTANT_TERM = "constant"
#: The largest count taken as physical (docs/model.md §3): 1e24 operations or bytes is about 30 years of an
#: exaflop machine's work; a larger count is a typo or a unit mix-up, refused rather than predicted.
MAX_COUNT = 1e24
@dataclass
class Prediction:
    name: str
    energy_j: float | None             # None: the costs have no energy (a time table), ``energy_missing`` says why
    time_s: float
    time_source: str                   # "measured" or "model"
    terms_j: dict[str, float]          # term -> energy, constant included
    costs_used: dict[str, float]       # coefficient -> value
    setting: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    energy_missing: str = ""

    @property
    def power_w(self) -> float | None:
        if self.energy_j is None:
            return None
        return self.energy_j / self.time_s if self.time_s > 0 else math.nan

    def as_dict(self) -> dict[str, Any]:
        d = {"name": self.name, "energy_j": self.energy_j, "time_s": self.time_s,
             "time_source": self.time_source, "power_w": self.power_w,
             "terms_j": self.terms_j, "costs": self.costs_used, "setting": self.setting, "notes": self.notes}
        if self.energy_j is None:
            d["energy_missing"] = self.energy_missing
        return d


# --- costs -----------------------------------------------------------------------------------------------

def is_dvfs(platform: Platform) -> bool:
    return bool(platform.dvfs.get("settings")) or bool(platform.dvfs.get("coefficients"))


def _dvfs_coefficients(platform: Platform) -> dict[str, float]:
    raw = platform.dvfs.get("coefficients", {})
    out: dict[str, float] = {}
    for k in DVFS_COEFFICIENTS:
        e = raw.get(k)
        if isinstance(e, dict) and "value" in e:
            out[k] = float(e["value"])
        elif isinstance(e, (int, float)):
            out[k] = float(e)
    return out


def _match(setting: Mapping[str, Any], want: Mapping[str, float]) -> bool:
    for k, v in want.items():
        if k in setting and setting[k] is not None and not math.isclose(float(setting[k]), v, rel_tol=1e-6):
            return False
    return True


def dvfs_setting_costs(platform: Platform,
                       want: Mapping[str, float]) -> tuple[dict[str, float], dict[str, float]]:
    """Costs at one DVFS setting: from the table's ``settings`` list when one matches the wanted
    clocks/voltages, else from the eq.48 coefficients at the wanted voltages (eq.44-46).
    Returns (costs, setting)."""
    settings = platform.dvfs.get("settings") or []
    hits = [s for s in settings if isinstance(s, dict) and _match(s, want)]
    if len(hits) == 1 or (hits and want):
        s = hits[0]
        costs = {k: float(v) for k, v in s.items()
                 if k not in ("core_mhz", "mem_mhz", "core_v", "mem_v", "id") and isinstance(v, (int, float))}
        return costs, {k: float(s[k]) for k in ("core_mhz", "mem_mhz", "core_v", "mem_v") if k in s}
    if "core_v" in want and "mem_v" in want:
        coeffs = _dvfs_coefficients(platform)
        missing = [k for k in DVFS_COEFFICIENTS if k not in coeffs]
        if missing:
            raise MissingValueError(f"cost table '{platform.name}' has no DVFS coefficient {missing[0]}; "
                                    "costs at an arbitrary voltage need all of eq.48")
        return costs_at(coeffs, want["core_v"], want["mem_v"]).as_dict(), dict(want)
    what = ", ".join(f"{k}={v:g}" for k, v in want.items()) or "no setting given"
    raise MissingValueError(
        f"DVFS cost table '{platform.name}' has {len(settings)} settings and none matches ({what}); give "
        "core_mhz/mem_mhz of a listed setting, or core_v and mem_v, in the counts")


def platform_costs(platform: Platform) -> dict[str, float]:
    keys = [*COUNT_TO_COST.values(), "pi0", "tau_flop_sp", "tau_flop_dp", "tau_mem", *TIME_EXTRA.values()]
    return {k: v for k in keys if (v := platform.value(k)) is not None}


def predict_row(row: CountsRow, costs: Mapping[str, float], platform_name: str,
                setting: Mapping[str, float] | None = None) -> Prediction:
    used: dict[str, float] = {}

    def need(key: str, why: str) -> float:
        if key not in costs:
            raise MissingValueError(f"cost table '{platform_name}' has no value for {key}; {why} needs it")
        used[key] = costs[key]
        return costs[key]

    terms: dict[str, float] = {}
    for term, columns in TERMS.items():
        e = 0.0
        for c in columns:
            n = row.counts.get(c, 0.0)
            if n:
                e += n * need(COUNT_TO_COST[c], f"the {term} term of '{row.name}' ({c} = {n:g})")
        if e or any(c in row.counts for c in columns):
            terms[term] = e
    t, source, time_notes = _row_time(row, costs, platform_name, used)
    terms[CONSTANT_TERM] = need("pi0", f"the constant-power term of '{row.name}'") * t
    return Prediction(row.name, sum(terms.values()), t, source, terms, used, dict(setting or row.setting),
                      [*row.notes, *time_notes])


def _row_time(row: CountsRow, costs: Mapping[str, float], platform_name: str,
              used: dict[str, float]) -> tuple[float, str, list[str]]:
    """The measured time_s, else the model time (:func:`model_time`)."""
    if row.time_s is not None:
        try:
            least_s, _ = model_time(row.counts, costs, platform_name, row.name)
        except MissingValueError:                 # no taus: the roofline cannot be checked
            least_s = 0.0
        if row.time_s < least_s:
            # as place_program says it: the counts or the table are wrong, and so is every energy from them
            return row.time_s, "measured", [
                f"measured faster than the roofline allows ({least_s / row.time_s:.3g}x its attainable rate: "
                f"measured {row.time_s:.4g} s, least model time {least_s:.4g} s): the counts or the cost table "
                "must be wrong"]
        return row.time_s, "measured", []
    t, notes = model_time(row.counts, costs, platform_name, row.name, used)
    return t, "model", notes


def predict_time(row: CountsRow, costs: Mapping[str, float], platform_name: str, reason: str) -> Prediction:
    """A row on a platform without energy constants (issue 34), or missing one its counts need: its time
    (measured, else the model's), energy None and why."""
    used: dict[str, float] = {}
    t, source, time_notes = _row_time(row, costs, platform_name, used)
    return Prediction(row.name, None, t, source, {}, used, dict(row.setting), [*row.notes, *time_notes],
                      energy_missing=reason)


def time_only_reason(platform: Platform) -> str | None:
    """Why ``platform`` predicts no energy (it has no energy constant at all: a time cost table, localhost from its
    peaks), or None when it has energy constants."""
    if platform.value("pi0") is not None or any(platform.value(k) is not None for k in COUNT_TO_COST.values()):
        return None
    why = platform.source("pi0")
    return f"'{platform.name}' has no energy constants" + (f" ({why})" if why else "")


def check_counts(name: str, counts: Mapping[str, float]) -> None:
    """Every count a finite number in [0, MAX_COUNT] (a larger one is not a physical program's)."""
    for c, n in counts.items():
        if not (math.isfinite(n) and 0 <= n <= MAX_COUNT):
            raise CountsFormatError(f"'{name}': {c} = {n:g} is not a physical count (archline takes 0 to "
                                    f"{MAX_COUNT:g}: more is decades of an exaflop machine's work); check its units")


def predict(rows: Sequence[CountsRow], platform: Platform) -> list[Prediction]:
    for row in rows:
        check_counts(row.name, row.counts)
    out = []
    base = platform_costs(platform)
    no_energy = time_only_reason(platform)
    if no_energy is not None and not is_dvfs(platform):
        return [predict_time(row, base, platform.name, no_energy) for row in rows]
    for row in rows:
        if is_dvfs(platform):
            costs, setting = dvfs_setting_costs(platform, row.setting)
            out.append(predict_row(row, {**base, **costs}, platform.name, setting))
        else:
            try:
                out.append(predict_row(row, base, platform.name))
            except MissingValueError as e:   # a partial energy table: the time stands, the energy says what is missing
                if "no value for eps_" not in str(e) and "no value for pi0" not in str(e):
                    raise
                out.append(predict_time(row, base, platform.name, str(e)))
    return out


# --- figure ------------------------------------------------------------------------------------------------

_LABELS = {"flops": "flops", "int": "integer ops", "dram": "DRAM", "l3": "L3", "l2": "L2", "l1": "L1",
           "shared": "shared memory", "rand": "random access", "constant": "constant power (pi0*T)"}

def plot_breakdown(predictions: Sequence[Prediction], out_path: Path, title: str = "") -> Path:
    """Stacked bar chart of the predicted energy of each row, by term."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from archline.fit.figure_layout import legend_outside, save_figure

    terms = [t for t in [*TERMS, CONSTANT_TERM] if any(t in p.terms_j for p in predictions)]
    from archline.formats.counters.kernels import short_labels

    names = short_labels([p.name for p in predictions], width=40)   # a CUTLASS name would squeeze the axes to 0
    fig, ax = plt.subplots(figsize=(max(5.0, 0.9 * len(names) + 3), 4.2), layout="constrained")
    bottom = [0.0] * len(predictions)
    for t in terms:
        vals = [p.terms_j.get(t, 0.0) for p in predictions]
        ax.bar(names, vals, bottom=bottom, label=_LABELS.get(t, t))
        bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
    ax.set_ylabel("predicted energy (J)")
    ax.set_title(title or "predicted energy by term (S1 Ch. 6)")
    legend_outside(ax, fontsize=8, where="right")
    plt.setp(ax.get_xticklabels(), rotation=30, ha="right")
    return save_figure(fig, out_path, dpi=120)
