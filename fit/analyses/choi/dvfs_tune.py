"""Choosing a DVFS setting with a fitted cost table (S1 §5.3.2, Table 8; model.md §6.5).

* ``rank_settings``: predicted energy and time per flop at intensity I for every (f_core, f_mem) setting of a DVFS
  cost table, E/W = eps_flop + eps_mem/I + pi0 * max(tau_flop, tau_mem/I) (eq.43-46 with the S0 time model);
  the lowest energy is the model's choice, the lowest time is race-to-halt.
* ``evaluate``: the Table 8 method on measured data. For each distinct case (benchmark, work and traffic), the
  Model picks the setting of least predicted energy (eq.47/48 costs of that setting, with the measured time, as in
  the thesis fit) and the Time Oracle picks the least measured time (race-to-halt). A misprediction is a choice
  other than the setting of least measured energy; energy lost = 100*(E(choice) - E_min)/E_min, and its mean,
  min and max are taken over the mispredicted cases (Table 8's minima are > 0).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archline.common.inputs import show_value
from archline.fit.analyses.choi.app_predict import predict_row
from archline.formats import dvfs_rows
from archline.formats.app_counts import CountsRow
from archline.formats.platforms.profiles import Platform
from archline.model.errors import ArchlineFitError, MissingValueError
from archline.model.hierarchy import COUNT_TO_COST


class TuneInputError(ArchlineFitError):
    pass


@dataclass(frozen=True)
class Setting:
    core_mhz: float
    mem_mhz: float
    costs: dict[str, float]
    core_v: float | None = None
    mem_v: float | None = None

    @property
    def key(self) -> tuple[float, float]:
        return (self.core_mhz, self.mem_mhz)

    @property
    def label(self) -> str:
        return f"{self.core_mhz:g}/{self.mem_mhz:g}"


def settings_of(platform: Platform) -> list[Setting]:
    """The ``settings`` list of an archline.costs/1 DVFS table (docs/design.md §4)."""
    raw = platform.dvfs.get("settings") or []
    if not raw:
        raise MissingValueError(
            f"cost table '{platform.name}' has no DVFS settings; tune needs a table from "
            "'archline fit --model dvfs' (a \"settings\" list of derived costs per (core_mhz, mem_mhz))")
    out: list[Setting] = []
    for k, s in enumerate(raw):
        if not isinstance(s, dict) or "core_mhz" not in s or "mem_mhz" not in s:
            raise TuneInputError(f"cost table '{platform.name}': settings[{k}] lacks core_mhz/mem_mhz")
        costs = {a: float(b) for a, b in s.items() if isinstance(b, (int, float)) and not isinstance(b, bool)
                 and a not in ("core_mhz", "mem_mhz", "core_v", "mem_v")}
        where = f"cost table '{platform.name}': settings[{k}]"
        clocks = {c: s[c] for c in ("core_mhz", "mem_mhz", "core_v", "mem_v") if c in s}
        for c, v in clocks.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (math.isfinite(v) and v > 0):
                raise TuneInputError(f"{where}: {c} must be a positive number, got {show_value(v)}")
        for c, v in costs.items():
            if not (math.isfinite(v) and v >= 0):
                raise TuneInputError(f"{where}: {c} must be finite and not negative, got {show_value(v)}")
        out.append(Setting(float(s["core_mhz"]), float(s["mem_mhz"]), costs,
                           float(s["core_v"]) if "core_v" in s else None,
                           float(s["mem_v"]) if "mem_v" in s else None))
    return out


# --- prediction at one intensity ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Ranked:
    setting: Setting
    energy_per_flop_j: float
    time_per_flop_s: float

    @property
    def power_w(self) -> float:
        return self.energy_per_flop_j / self.time_per_flop_s


def _need(s: Setting, key: str, table: str) -> float:
    if key not in s.costs:
        raise MissingValueError(f"cost table '{table}' has no {key} at setting {s.label} MHz; "
                                "choosing a setting needs it")
    return s.costs[key]


def setting_taus(s: Setting, precision: str, flops_per_cycle: float | None,
                 bytes_per_cycle: float | None, table: str) -> tuple[float, float]:
    """tau_flop and tau_mem at a setting: from the table when it gives them, else from the clocks:
    tau_flop = 1/(flops_per_cycle * f_core) (S1 below eq.47: 2*N_cores flops per cycle), tau_mem =
    1/(bytes_per_cycle * f_mem) (DERIVED: tau_mem proportional to 1/f_mem, model.md §5)."""
    tf_key = f"tau_flop_{precision}"
    if tf_key in s.costs:
        tf = s.costs[tf_key]
    elif flops_per_cycle:
        tf = 1.0 / (flops_per_cycle * s.core_mhz * 1e6)
    else:
        raise MissingValueError(f"cost table '{table}' has no {tf_key} at setting {s.label} MHz; give "
                                "--flops-per-cycle (2 x cores for one FMA per core per cycle)")
    if "tau_mem" in s.costs:
        tm = s.costs["tau_mem"]
    elif bytes_per_cycle:
        tm = 1.0 / (bytes_per_cycle * s.mem_mhz * 1e6)
    else:
        raise MissingValueError(f"cost table '{table}' has no tau_mem at setting {s.label} MHz; give "
                                "--bytes-per-cycle (memory bytes per memory clock)")
    return tf, tm


def rank_settings(platform: Platform, intensity_flop_per_byte: float, precision: str = "sp", *,
                  flops_per_cycle: float | None = None, bytes_per_cycle: float | None = None) -> list[Ranked]:
    """Every setting with its predicted energy and time per flop at intensity I, least energy first."""
    if not intensity_flop_per_byte > 0:
        raise TuneInputError(f"intensity must be positive, got {intensity_flop_per_byte:g} flop/B")
    i = intensity_flop_per_byte
    out = []
    for s in settings_of(platform):
        eps_f = _need(s, f"eps_flop_{precision}", platform.name)
        eps_m = _need(s, "eps_mem", platform.name)
        pi0 = _need(s, "pi0", platform.name)
        tf, tm = setting_taus(s, precision, flops_per_cycle, bytes_per_cycle, platform.name)
        t = max(tf, tm / i)
        out.append(Ranked(s, eps_f + eps_m / i + pi0 * t, t))
    return sorted(out, key=lambda r: r.energy_per_flop_j)


def race_to_halt(ranked: Sequence[Ranked]) -> Ranked:
    """The fastest setting; ties go to the lower-energy one."""
    return min(ranked, key=lambda r: (r.time_per_flop_s, r.energy_per_flop_j))


# --- Table 8 evaluation on measured data -------------------------------------------------------------------------

#: benchmark name (Table 8) <- (kernel, precision or level)
BENCHMARKS: tuple[tuple[str, str, str], ...] = (
    ("single-precision intensity", "intensity", "sp"),
    ("double-precision intensity", "intensity", "dp"),
    ("integer", "int", ""),
    ("shared memory", "cache", "shared"),
    ("L2", "cache", "l2"),
)
STRATEGIES = ("Model", "Time Oracle")


def benchmark_of(kernel: str, precision: str, level: str) -> str:
    for name, k, sub in BENCHMARKS:
        if kernel == k and (k == "int" or sub in (precision, level)):
            return name
    return f"{kernel}/{level or precision}" if (level or precision) else kernel


@dataclass
class MeasuredPoint:
    benchmark: str
    case: tuple[float, ...]            # the counts that identify the case
    setting: tuple[float, float]
    time_s: float
    energy_j: float
    counts: dict[str, float]


def read_measured(path: Path) -> list[MeasuredPoint]:
    """Result rows (archline.results/1) with core_mhz, mem_mhz, time_s, energy_j and count columns (read by their
    owner, :mod:`archline.formats.dvfs_rows`), as Table 8's cases."""
    out: list[MeasuredPoint] = []
    for r in dvfs_rows.read_dvfs_rows(path, error=TuneInputError):
        bench = benchmark_of(r.kernel, r.precision, r.level)
        case = tuple(round(r.counts.get(c, 0.0), 6) for c in COUNT_TO_COST)
        out.append(MeasuredPoint(bench, case, r.setting, r.time_s, r.energy_j, r.counts))
    return out


@dataclass
class CaseResult:
    benchmark: str
    case: tuple[float, ...]
    optimum: tuple[float, float]
    choice: dict[str, tuple[float, float]]
    energy_lost_pct: dict[str, float]


@dataclass
class Table8Row:
    benchmark: str
    strategy: str
    mispredictions: int
    cases: int
    energy_lost_mean_pct: float
    energy_lost_min_pct: float
    energy_lost_max_pct: float

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Evaluation:
    rows: list[Table8Row]
    cases: list[CaseResult] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def evaluate(platform: Platform, measured: Sequence[MeasuredPoint]) -> Evaluation:
    """Table 8: Model and Time Oracle against the measured optimum, per benchmark (S1 §5.3.2)."""
    by_key = {s.key: s for s in settings_of(platform)}
    groups: dict[tuple[str, tuple[float, ...]], dict[tuple[float, float], list[MeasuredPoint]]] = {}
    for p in measured:
        groups.setdefault((p.benchmark, p.case), {}).setdefault(p.setting, []).append(p)
    unknown = sorted({p.setting for p in measured} - set(by_key))
    skipped = [f"{a:g}/{b:g} MHz: measured but not in the cost table" for a, b in unknown]
    cases: list[CaseResult] = []
    for (bench, case), per_setting in groups.items():
        per_setting = {k: v for k, v in per_setting.items() if k in by_key}
        if len(per_setting) < 2:
            continue
        e_meas = {k: sum(p.energy_j for p in v) / len(v) for k, v in per_setting.items()}
        t_meas = {k: sum(p.time_s for p in v) / len(v) for k, v in per_setting.items()}
        e_pred = {}
        for k, v in per_setting.items():
            row = CountsRow(bench, dict(v[0].counts), t_meas[k])
            e_pred[k] = predict_row(row, by_key[k].costs, platform.name).energy_j
        optimum = min(e_meas, key=lambda k: e_meas[k])
        choice = {"Model": min(e_pred, key=lambda k: e_pred[k]),
                  "Time Oracle": min(t_meas, key=lambda k: (t_meas[k], e_meas[k]))}
        lost = {s: 100.0 * (e_meas[c] - e_meas[optimum]) / e_meas[optimum] for s, c in choice.items()}
        cases.append(CaseResult(bench, case, optimum, choice, lost))
    order = [b[0] for b in BENCHMARKS] + sorted({c.benchmark for c in cases} - {b[0] for b in BENCHMARKS})
    rows: list[Table8Row] = []
    for bench in order:
        cs = [c for c in cases if c.benchmark == bench]
        if not cs:
            continue
        for strat in STRATEGIES:
            missed = [c.energy_lost_pct[strat] for c in cs if c.choice[strat] != c.optimum]
            rows.append(Table8Row(bench, strat, len(missed), len(cs),
                                  sum(missed) / len(missed) if missed else 0.0,
                                  min(missed) if missed else 0.0, max(missed) if missed else 0.0))
    return Evaluation(rows, cases, skipped)


def paper_table8(data_dir: Path | None = None) -> list[Table8Row]:
    """S1 Table 8 as printed (Jetson TK1), for side-by-side display."""
    d = data_dir or Path(__file__).parent.parent / "data"
    out = []
    with (d / "thesis_table8_autotuning.csv").open() as f:
        for r in csv.DictReader(f):
            out.append(Table8Row(r["benchmark"], r["strategy"], int(r["mispredictions"]), int(r["cases"]),
                                 float(r["energy_lost_mean_pct"]), float(r["energy_lost_min_pct"]),
                                 float(r["energy_lost_max_pct"])))
    return out


def format_table8(rows: Sequence[Table8Row], paper: Mapping[tuple[str, str], Table8Row] | None = None) -> str:
    """Rows in the layout of S1 Table 8: benchmark, strategy, mispredictions (out of cases), energy lost %."""
    head = f"{'Benchmark':<28}{'Strategy':<13}{'Mispredictions':>18}{'Mean %':>9}{'Min %':>8}{'Max %':>8}"
    if paper:
        head += "   S1 Table 8, Jetson TK1 (mispred., mean/min/max %)"
    lines = [head, "-" * len(head)]
    for r in rows:
        s = (f"{r.benchmark:<28}{r.strategy:<13}{f'{r.mispredictions} (out of {r.cases})':>18}"
             f"{r.energy_lost_mean_pct:>9.2f}{r.energy_lost_min_pct:>8.2f}{r.energy_lost_max_pct:>8.2f}")
        if paper and (p := paper.get((r.benchmark, r.strategy))) is not None:
            s += (f"   {p.mispredictions} (out of {p.cases}) {p.energy_lost_mean_pct:.2f} "
                  f"{p.energy_lost_min_pct:.2f} {p.energy_lost_max_pct:.2f}")
        lines.append(s)
    return "\n".join(lines)
