"""Alarm rates of ``archline compare --by host`` on emulated fleets (issue 28): how often an identical node is
flagged, and how often a node that really differs is found.

A fleet is ``n_hosts`` emulated GTX 580 nodes (S1 Table 4's coefficients, :mod:`archline.fit.regress.synthetic`,
every row labelled emulated), each swept ``n_runs`` times. A node's ``eps_mem`` is the table's times
(1 + node effect); each run multiplies every energy coefficient (eps_s, eps_d, eps_mem, pi0) by its own
1 + N(0, ``run_sd``) (a run's drift: temperature, clocks, the meter's offset), and every row carries ``noise``
relative Gaussian noise on time and energy. The first ``n_effect`` nodes get +effect, the next ``n_effect``
-effect; the others are identical.

Two counts per scenario, over ``n_fleets`` seeded fleets, both on ``eps_mem``:

* **identical node flagged**: flagged identical nodes / identical nodes (per node), and the share of fleets in
  which any identical node is flagged (family-wise; Holm over the nodes targets alpha);
* **real node found**: flagged nodes with an effect / nodes with an effect (the power).

Both the two-stage random-effects comparison (the default) and the pooled one (one fit per node, its own
standard errors: archline before issue 28) run on the same rows. ``fast=True`` draws stage 1's per-run
coefficients directly (value = truth x node x run effect + the fit's noise at the standard error a run's fit
has) instead of fitting rows, so thousands of fleets take seconds; the pooled method's value is then the
mean of the runs, with the standard error of one fit of all the rows (per-run error / sqrt(runs)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from archline.fit.analyses.choi.compare import Cell, GroupValue, compare_cells, compare_frame, compare_values


@dataclass(frozen=True)
class Scenario:
    name: str
    effect: float = 0.0          #: relative node effect on eps_mem (+ on n_effect nodes, - on n_effect more)
    n_effect: int = 1
    n_hosts: int = 8
    n_runs: int = 4
    run_sd: float = 0.01         #: relative s.d. of a run's drift of every energy coefficient
    noise: float = 0.01          #: relative s.d. of a row's time and energy noise
    n_repeats: int = 3           #: repeats of each of the 61 intensity points per run


@dataclass
class Rates:
    scenario: Scenario
    method: str
    n_fleets: int
    identical_nodes: int = 0
    identical_flagged: int = 0
    fleets_with_false_alarm: int = 0
    effect_nodes: int = 0
    effect_found: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def false_alarm_rate(self) -> float:
        return self.identical_flagged / self.identical_nodes if self.identical_nodes else math.nan

    @property
    def familywise_rate(self) -> float:
        return self.fleets_with_false_alarm / self.n_fleets if self.n_fleets else math.nan

    @property
    def power(self) -> float:
        return self.effect_found / self.effect_nodes if self.effect_nodes else math.nan

    def add(self, flagged: set[str], effect_hosts: set[str], hosts: list[str]) -> None:
        """Count one fleet's flags (``flagged``: the hosts compare flagged on the coefficient)."""
        same = [h for h in hosts if h not in effect_hosts]
        false = [h for h in same if h in flagged]
        self.identical_nodes += len(same)
        self.identical_flagged += len(false)
        self.fleets_with_false_alarm += bool(false)
        self.effect_nodes += len(effect_hosts)
        self.effect_found += len(effect_hosts & flagged)


def host_effects(s: Scenario) -> dict[str, float]:
    hosts = [f"node{i:02d}" for i in range(s.n_hosts)]
    eff = {h: 0.0 for h in hosts}
    if s.effect:
        for i in range(min(s.n_effect, s.n_hosts)):
            eff[hosts[i]] = s.effect
        for i in range(s.n_effect, min(2 * s.n_effect, s.n_hosts)):
            eff[hosts[i]] = -s.effect
    return eff


def fleet_frame(s: Scenario, seed: int) -> Any:
    """The rows of one emulated fleet (already in the reader's frame form: the columns compare groups on)."""
    import pandas as pd

    from archline.fit.regress.synthetic import GTX580, synthetic_results

    rng = np.random.default_rng(seed)
    frames = []
    for k, (host, eff) in enumerate(host_effects(s).items()):
        for r in range(s.n_runs):
            d = 1 + rng.normal(0.0, s.run_sd, 4)
            plat = replace(GTX580, eps_flop_sp_j=GTX580.eps_flop_sp_j * d[0], eps_flop_dp_j=GTX580.eps_flop_dp_j * d[1],
                           eps_mem_j_per_byte=GTX580.eps_mem_j_per_byte * (1 + eff) * d[2], pi0_w=GTX580.pi0_w * d[3])
            f = synthetic_results(plat, n_sp=25, n_dp=36, n_l1=0, n_l2=0, n_rand=0, noise=s.noise,
                                  seed=seed * 100_003 + k * 101 + r, n_repeats=s.n_repeats)
            f["host"], f["run_id"], f["emulated"] = host, f"run{r:02d}", True
            frames.append(f)
    return pd.concat(frames, ignore_index=True)


def simulate_rows(s: Scenario, n_fleets: int, *, alpha: float = 0.05, seed: int = 0,
                  coefficient: str = "eps_mem") -> dict[str, Rates]:
    """End to end: every fleet's rows through :func:`compare_frame` with both methods."""
    out = {m: Rates(s, m, n_fleets) for m in ("pooled", "two-stage")}
    eff = host_effects(s)
    effect_hosts = {h for h, e in eff.items() if e}
    for i in range(n_fleets):
        frame = fleet_frame(s, seed + i)
        for m, rates in out.items():
            cmp = compare_frame(frame, "host", alpha=alpha, method=m)
            (c,) = [c for c in cmp.blocks[0].coefficients if c.name == coefficient]
            rates.add(set(c.flagged), effect_hosts, list(eff))
    return out


#: the standard error of eps_mem from one run's basic fit, relative (61 points x n_repeats, 1% noise): measured
#: on the emulated rows (about 0.77% at 3 repeats; it falls as 1/sqrt(repeats)).
FIT_SE_REL_3_REPEATS = 0.0077


def simulate_fast(s: Scenario, n_fleets: int, *, alpha: float = 0.05, seed: int = 0,
                  fit_se_rel: float | None = None) -> dict[str, Rates]:
    """Stage 1 drawn, not fitted: a run's eps_mem estimate is truth x (1 + node) x (1 + run drift) x
    (1 + N(0, se)), se the relative standard error of one run's fit; both methods' stage 2 as in compare."""
    se = (FIT_SE_REL_3_REPEATS * math.sqrt(3 / s.n_repeats) * s.noise / 0.01) if fit_se_rel is None else fit_se_rel
    rng = np.random.default_rng(seed)
    out = {m: Rates(s, m, n_fleets) for m in ("pooled", "two-stage")}
    eff = host_effects(s)
    hosts = list(eff)
    effect_hosts = {h for h, e in eff.items() if e}
    n_rows = 61 * s.n_repeats
    for _ in range(n_fleets):
        cells: dict[str, list[Cell]] = {}
        pooled: list[GroupValue] = []
        for h in hosts:
            v = (1 + eff[h]) * (1 + rng.normal(0, s.run_sd, s.n_runs)) * (1 + rng.normal(0, se, s.n_runs))
            cells[h] = [Cell(f"run{r}", float(x), float(se * x), n_rows, n_rows - 4) for r, x in enumerate(v)]
            m = float(v.mean())
            pse = se * m / math.sqrt(s.n_runs)
            pooled.append(GroupValue(h, m, pse, None, n_rows * s.n_runs - 4, n_rows * s.n_runs))
        cc, _ = compare_cells("eps_mem", "J/byte", cells, alpha, ("hosts", "runs"))
        out["two-stage"].add(set(cc.flagged), effect_hosts, hosts)
        out["pooled"].add(set(compare_values("eps_mem", "J/byte", pooled, alpha).flagged), effect_hosts, hosts)
    return out


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("none", 0.0), Scenario("±2%", 0.02), Scenario("±5%", 0.05),
)
