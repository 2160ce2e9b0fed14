"""The two-stage random-effects comparison (fit/analyses/choi/compare.py, issue 28) and the alarm-rate
simulation's machinery (compare_sim.py): stage 2 against the one-way ANOVA worked by hand and against
statsmodels' REML MixedLM on a balanced design, the fallback with one run per node, a fleet end to end (a 5%
node found, identical nodes not flagged, the variance components near the emulated ones), and the rates'
bookkeeping. The rates themselves are measured by benchmarks/compare_alarms.py, not asserted here."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from archline.fit.analyses.choi.compare import Cell, compare_cells, compare_frame, holm
from archline.fit.analyses.choi.compare_sim import Rates, Scenario, fleet_frame, host_effects, simulate_fast


def _cells(values: dict[str, list[float]], se: float = 0.01) -> dict[str, list[Cell]]:
    return {g: [Cell(f"r{i}", v, se, 100, 96) for i, v in enumerate(vs)] for g, vs in values.items()}


def test_stage_two_is_the_one_way_anova_by_hand() -> None:
    from scipy import stats

    vals = {"a": [1.0, 1.2], "b": [2.0, 2.4, 2.2], "c": [1.5, 1.5]}
    cc, ok = compare_cells("x", "J", _cells(vals), 0.05, ("hosts", "runs"))
    assert ok
    # within: (0.02 + 0.02 + 0.08) / (7 - 3) = 0.03... a: 2*0.1^2 = 0.02, b: 0.04+0.04+0 = 0.08, c: 0
    ms_w = (0.02 + 0.08 + 0.0) / 4
    means = {"a": 1.1, "b": 2.2, "c": 1.5}
    for v in cc.values:
        assert v.value == pytest.approx(means[v.group]) and v.n_cells == len(vals[v.group])
        assert v.stderr == pytest.approx(math.sqrt(ms_w / len(vals[v.group])))
        q = stats.t.ppf(0.975, 4)
        assert v.ci95 == pytest.approx((v.value - q * v.stderr, v.value + q * v.stderr))
    grand = (2.2 + 6.6 + 3.0) / 7
    ms_b = (2 * (1.1 - grand) ** 2 + 3 * (2.2 - grand) ** 2 + 2 * (1.5 - grand) ** 2) / 2
    assert cc.spread["anova_f"] == pytest.approx(ms_b / ms_w)
    assert cc.spread["anova_p"] == pytest.approx(stats.f.sf(ms_b / ms_w, 2, 4))
    n0 = (7 - (4 + 9 + 4) / 7) / 2
    assert cc.variance["between_hosts_sd"] == pytest.approx(math.sqrt((ms_b - ms_w) / n0))
    assert cc.variance["between_runs_sd"] == pytest.approx(math.sqrt(ms_w - 0.01**2))
    assert cc.variance["residual_sd"] == pytest.approx(0.01) and cc.variance["df_within"] == 4
    # each against the median of the two others (their mean; variance not inflated for two), df 4, Holm over 3
    raw = []
    for g in ("a", "b", "c"):
        o = [h for h in ("a", "b", "c") if h != g]
        se = math.sqrt(ms_w / len(vals[g]) + sum(ms_w / len(vals[h]) for h in o) / 4)
        raw.append(2 * stats.t.sf(abs(means[g] - (means[o[0]] + means[o[1]]) / 2) / se, 4))
    assert [v.p_vs_others for v in cc.values] == pytest.approx(holm(raw))
    pair = next(p for p in cc.pairs if (p.a, p.b) == ("a", "b"))
    assert pair.t == pytest.approx((1.1 - 2.2) / math.sqrt(ms_w * (1 / 2 + 1 / 3))) and pair.df == 4


@pytest.mark.filterwarnings("ignore::statsmodels.tools.sm_exceptions.ConvergenceWarning")
def test_stage_two_matches_reml_mixedlm_on_a_balanced_design() -> None:
    import pandas as pd
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(3)
    host = rng.normal(0, 0.03, 6)
    vals = {f"h{i}": list(1 + host[i] + rng.normal(0, 0.01, 4)) for i in range(6)}
    cc, _ = compare_cells("x", "J", _cells(vals, se=0.0), 0.05, ("hosts", "runs"))
    df = pd.DataFrame([(g, v) for g, vs in vals.items() for v in vs], columns=["host", "v"])
    m = smf.mixedlm("v ~ 1", df, groups=df["host"]).fit(reml=True)
    assert cc.variance["between_hosts_sd"] == pytest.approx(math.sqrt(float(m.cov_re.iloc[0, 0])), rel=1e-4)
    assert cc.variance["between_runs_sd"] == pytest.approx(math.sqrt(m.scale), rel=1e-4)


def test_one_run_per_node_falls_back_to_the_fits_errors() -> None:
    cc, ok = compare_cells("x", "J", _cells({"a": [1.0], "b": [1.001], "c": [1.2], "d": [0.999]}, se=0.01), 0.05)
    assert not ok and cc.flagged == ["c"] and "cochran_p" in cc.spread and "anova_p" not in cc.spread


def test_a_fleet_end_to_end() -> None:
    s = Scenario("t", effect=0.05, n_hosts=5, n_runs=3, n_repeats=2)
    assert host_effects(s) == {"node00": 0.05, "node01": -0.05, "node02": 0.0, "node03": 0.0, "node04": 0.0}
    frame = fleet_frame(s, seed=5)
    assert len(frame) == 5 * 3 * 2 * 61 and set(frame["run_id"]) == {"run00", "run01", "run02"}
    cmp = compare_frame(frame, "host")
    (b,) = cmp.blocks
    assert b.two_stage and b.n_cells == {h: 3 for h in host_effects(s)} and cmp.method == "two-stage"
    eps = next(c for c in b.coefficients if c.name == "eps_mem")
    assert eps.flagged == ["node00", "node01"]
    assert set(eps.variance) >= {"between_hosts_sd", "between_runs_sd", "residual_sd", "between_hosts_pct"}
    assert 3 < eps.variance["between_hosts_pct"] < 7          # the ±5% nodes
    by_run = compare_frame(frame, "run")
    c = next(c for c in by_run.blocks[0].coefficients if c.name == "eps_mem")
    assert by_run.blocks[0].replicate == "hosts" and "between_hosts_sd" in c.variance and c.flagged == []
    j = cmp.as_json()
    assert j["method"] == "two-stage" and "two-stage" in j["tests"]["flag"]


def test_rates_bookkeeping() -> None:
    r = Rates(Scenario("x", 0.05), "two-stage", 2)
    hosts = ["a", "b", "c", "d"]
    r.add({"a", "c"}, {"a", "b"}, hosts)     # a found, b missed, c a false alarm
    r.add(set(), {"a", "b"}, hosts)
    assert (r.identical_nodes, r.identical_flagged, r.fleets_with_false_alarm) == (4, 1, 1)
    assert r.false_alarm_rate == 0.25 and r.familywise_rate == 0.5 and r.power == 0.25


def test_fast_simulation_is_seeded_and_counts_every_node() -> None:
    s = Scenario("±5%", 0.05)
    a = simulate_fast(s, 30, seed=2)
    b = simulate_fast(s, 30, seed=2)
    for m in ("pooled", "two-stage"):
        assert a[m].identical_nodes == 30 * 6 and a[m].effect_nodes == 30 * 2
        assert (a[m].identical_flagged, a[m].effect_found) == (b[m].identical_flagged, b[m].effect_found)
    # no run drift and identical nodes: the pooled errors are right, neither method over-alarms by much
    quiet = simulate_fast(replace(s, effect=0.0, run_sd=0.0), 30, seed=2)
    assert all(quiet[m].effect_nodes == 0 for m in quiet)
