"""The time half of the cost table (issue 34): tau per flop (SP, DP), per byte of each level, per random access
and per integer op, from any result rows, with or without energy.

The time roofline (model.md §1.1) runs each operation at its peak rate, so tau_c is the inverse of the sustained
peak throughput of count c, found as the run summary finds its peaks (one rule, archline.common.peaks): rank the rows
with N_c > 0 by rate N_c/t; the reference is the fastest rate another supports; the rows within ``PLATEAU_REL`` of it
are the peak's plateau (a row further above is an outlier, left out) and the peak is their median rate. Its
standard error is a median's, sqrt(pi/2) times the plateau rates' standard deviation over the square root of their
number (carried to tau by its inverse), with a Student-t 95% interval; a plateau of one row gives none (null).

Rows without energy (no meter: ``energy_j`` empty, ``meter`` empty, their ``note`` says why) give a table with
these taus only; every energy term is listed as absent with the rows' own reason. Mixed rows: the energy model
is fitted to the rows with energy and the taus come from all rows (:func:`archline.fit.regress.api.fit_group`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from archline.common.peaks import PLATEAU_REL
from archline.common.peaks import plateau as find_plateau
from archline.fit.io.configs import Grouped
from archline.fit.regress.result import COUNT_COEFFICIENT, UNITS, Coefficient, FitResult, t_interval
from archline.formats.results_check import TIME_ONLY, ResultsError

#: count column -> its time constant (archline.costs/1 ``tau`` section)
TAU_OF_COUNT: dict[str, str] = {
    "flops_sp": "tau_flop_sp", "flops_dp": "tau_flop_dp", "int_ops": "tau_int", "bytes_mem": "tau_mem",
    "bytes_l1": "tau_l1", "bytes_l2": "tau_l2", "bytes_l3": "tau_l3", "bytes_shared": "tau_shared",
    "rand_accesses": "tau_rand",
}
TAU_METHOD = (f"observed peak: 1 / median rate of the rows within {PLATEAU_REL:.0%} of the fastest rate another "
              "supports (as the run summary); stderr from the spread of those rates")
#: tau_rand is the time per random access to DRAM (model.md §3, S1 §4.3: pointer chasing through main memory):
#: only the rows at this level measure it (an L1 chase is a cache hit, not a random DRAM access)
RAND_LEVEL = "mem"
TAU_RAND_METHOD = (f"random accesses of the level-{RAND_LEVEL} rows only (pointer chasing in DRAM, S1 §4.3); the "
                   "rate counts the accesses of every chain, so tau_rand is the time per access at the sustained "
                   "rate (the best case, as every tau; one dependent chain runs at its latency, up to chains times "
                   "slower); " + TAU_METHOD)
#: what a time-only table says of its energy terms when the rows give no reason of their own
NO_METER = "no meter measured these rows"


def time_taus(data: Grouped) -> dict[str, Coefficient]:
    """Every tau the rows can give (module docstring), in SI, by archline.costs/1 name."""
    out: dict[str, Coefficient] = {}
    cfg = data.cfg
    for col, name in TAU_OF_COUNT.items():
        n_cfg = cfg.num(col)
        n_row = n_cfg[data.g] if n_cfg.size > 1 else np.full(data.t.size, n_cfg[0] if n_cfg.size else 0.0)
        use = n_row > 0
        if col == "rand_accesses":
            level = cfg.get("level")
            if level is not None:
                lv = np.asarray(level)
                lv_row = lv[data.g] if lv.size > 1 else np.full(data.t.size, lv[0] if lv.size else "")
                use &= np.char.lower(lv_row.astype(str)) == RAND_LEVEL
        if not use.any():
            continue
        rates = n_row[use] / data.t[use]
        rates = np.sort(rates[np.isfinite(rates) & (rates > 0)])[::-1]
        if not rates.size:
            continue
        plateau = np.asarray(find_plateau(list(rates)).rates(list(rates)))   # the run summary's rule
        peak = float(np.median(plateau))
        value = 1.0 / peak
        se = ci = None
        if plateau.size > 1:      # a median's stderr (sqrt(pi/2) s/sqrt(n)), carried to tau = 1/peak by d(peak)/peak^2
            se = math.sqrt(math.pi / 2) * float(np.std(plateau, ddof=1) / math.sqrt(plateau.size)) / peak**2
            ci = t_interval(value, se, plateau.size - 1)
        out[name] = Coefficient(name, value, se, ci, UNITS[name],
                                TAU_RAND_METHOD if col == "rand_accesses" else TAU_METHOD)
    return out


def rand_warnings(data: Grouped, tau: dict[str, Coefficient]) -> list[str]:
    """What the table says of tau_rand: left out (random-access rows, none at level mem) or without uncertainty."""
    if not bool((data.cfg.num("rand_accesses") > 0).any()):
        return []
    if "tau_rand" not in tau:
        return [f"tau_rand left out: no random-access row is at level {RAND_LEVEL} (pointer chasing in DRAM, S1 "
                "§4.3); cache-level chases do not measure it"]
    if tau["tau_rand"].stderr is None:
        return ["tau_rand from one level-mem row: no uncertainty (repeat the DRAM chase points for one)"]
    return []


def energy_terms(data: Grouped) -> list[str]:
    """The energy coefficients the rows' counts would identify (eps_* of each count present, and pi0)."""
    cfg = data.cfg
    return [name for col, name in COUNT_COEFFICIENT.items() if bool((cfg.num(col) > 0).any())] + ["pi0"]


def absent_reason(reasons: Sequence[str]) -> str:
    """Why the energy terms are absent: no meter, in the rows' own words, and what would give them."""
    said = "; ".join(reasons) if reasons else NO_METER
    return (f"not measured: the rows have no energy ({said}); a power meter gives them: see `archline meter "
            "list`, then `archline bench run` and `archline fit` again")


def fit_time(data: Grouped, *, platform: str, emulated: bool, reasons: Sequence[str] = ()) -> FitResult:
    """The time cost table of rows without energy: taus with uncertainties, every energy term absent with why."""
    tau = time_taus(data)
    if not tau:
        raise ResultsError(f"the rows of '{platform}' have no counts (flops, bytes, accesses or ops), so no time "
                           "per operation can be fitted")
    why = absent_reason(reasons)
    omitted = {name: why for name in energy_terms(data)}
    n_rows = data.n_rows
    derived: dict[str, float] = {}
    for p in ("sp", "dp"):
        if f"tau_flop_{p}" in tau and "tau_mem" in tau:
            derived[f"B_tau_{p}"] = tau["tau_mem"].value / tau[f"tau_flop_{p}"].value
            derived.setdefault("B_tau", derived[f"B_tau_{p}"])      # unsuffixed = sp if present (basic's rule)
    quality: dict[str, float | int | str] = {"n_points": n_rows, "n_configurations": data.n_configs}
    warnings = [f"time only: {len(omitted)} energy term(s) absent ({', '.join(omitted)}): "
                + ("; ".join(reasons) if reasons else NO_METER), *rand_warnings(data, tau)]
    return FitResult(platform=platform, model="time", emulated=emulated, n_points=n_rows, coefficients={},
                     tau=tau, derived=derived, quality=quality, warnings=warnings, omitted=omitted,
                     extra={"method": "time only: " + TAU_METHOD,
                            "energy_absent": {"terms": list(omitted), "reason": why,
                                              "row_reasons": list(reasons)}},
                     rows=data)


def time_only_mask(data: Grouped) -> np.ndarray:
    """Configurations without energy (one value per configuration)."""
    v = data.cfg.get(TIME_ONLY)
    if v is None:
        return np.zeros(data.n_configs, dtype=bool)
    v = np.asarray(v, dtype=bool)
    return np.broadcast_to(v, (data.n_configs,)).copy() if v.size != data.n_configs else v


def add_time_terms(r: FitResult, data: Grouped, n_time_only: int) -> None:
    """A fit of the rows with energy, given the taus of all rows (``data``), and said so."""
    taus = time_taus(data)
    r.tau = {**r.tau, **taus}
    r.warnings.extend(rand_warnings(data, taus))
    r.extra["time_terms"] = {"from_rows": data.n_rows, "method": TAU_METHOD}
    r.warnings.append(f"{n_time_only} time-only row(s) (no energy) fitted for the time terms only; the energy "
                      "terms come from the rows with energy")

