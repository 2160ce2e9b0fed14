"""Capped (eq.32-38) and DVFS (eq.48) fits on synthetic data with known coefficients."""

from __future__ import annotations

import json

import pytest

from archline.fit.regress.api import FitOptions, fit_frame, prepare_frame
from archline.fit.regress.capped import fit_capped
from archline.fit.regress.synthetic import (
    DVFS_TRUTH,
    GTX580,
    GTX580_CAPPED,
    dvfs_pi0_truth,
    synthetic_dvfs,
    synthetic_results,
)
from archline.formats.costs import to_costs_dict


def test_fit_capped_recovers_delta_pi_within_3pct() -> None:
    f = prepare_frame(synthetic_results(GTX580_CAPPED, noise=0.01, seed=11, n_l1=0, n_l2=0, n_rand=0,
                                        efficiency_spread=0.0, n_repeats=10))
    r = fit_capped(f, n_boot=20, seed=1)
    truth = GTX580_CAPPED.truth()
    assert "delta_pi" in r.coefficients, r.omitted
    assert abs(r.coefficients["delta_pi"].value / truth["delta_pi"] - 1) < 0.03
    for name in ("eps_flop_sp", "eps_flop_dp", "eps_mem", "pi0"):
        assert abs(r.coefficients[name].value / truth[name] - 1) < 0.03, name
    for name in ("tau_flop_sp", "tau_flop_dp", "tau_mem"):
        assert abs(r.tau[name].value / truth[name] - 1) < 0.03, name
    lo, hi = r.coefficients["delta_pi"].ci95  # type: ignore[misc]
    assert lo < r.coefficients["delta_pi"].value < hi
    cap = r.extra["cap"]
    assert cap["points_where_cap_binds"] > 0 and cap["cap_binds_sp"]
    assert cap["B_tau_minus_sp"] < 8.2 < cap["B_tau_plus_sp"]  # B_tau(SP) = 1398/170
    ks = r.extra["ks_free_vs_capped"]
    assert ks["performance"]["differ"] and ks["performance"]["pvalue"] < 0.05
    doc = to_costs_dict(r)
    assert doc["model"] == "capped" and "delta_pi" in doc["coefficients"] and doc["cap"]


def test_fit_capped_says_when_cap_does_not_bind() -> None:
    f = prepare_frame(synthetic_results(GTX580, noise=0.01, seed=2, n_l1=0, n_l2=0, n_rand=0,
                                        efficiency_spread=0.0))
    r = fit_capped(f, n_boot=10)
    assert "delta_pi" not in r.coefficients
    assert "does not bind" in r.omitted["delta_pi"]


@pytest.fixture(scope="module")
def dvfs_varied():  # type: ignore[no-untyped-def]
    f = prepare_frame(synthetic_dvfs(mem_v_spread=0.15, noise=0.01, seed=5))
    return fit_frame(f, FitOptions(model="dvfs", n_boot=100, seed=2), platform="jetson-tk1")


def test_fit_dvfs_recovers_eq48_within_5pct(dvfs_varied) -> None:  # type: ignore[no-untyped-def]
    r = dvfs_varied
    assert r.n_points == 16 * 116
    for name in ("c0_core_single", "delta_c0_core_double", "c0_mem", "c0_core_integer", "c0_core_sm", "c0_core_l2",
                 "c1_core"):
        assert name in r.coefficients, (name, r.omitted)
        assert abs(r.coefficients[name].value / DVFS_TRUTH[name] - 1) < 0.05, name
        assert r.coefficients[name].ci95 is not None


def test_fit_dvfs_pi0_per_setting_within_2pct(dvfs_varied) -> None:  # type: ignore[no-untyped-def]
    truth = dvfs_pi0_truth(mem_v_spread=0.15)
    settings = dvfs_varied.extra["settings"]
    assert len(settings) == 16
    for s in settings:
        assert abs(s["pi0"] / truth[(s["core_mhz"], s["mem_mhz"])] - 1) < 0.02
        for k in ("eps_flop_sp", "eps_flop_dp", "eps_mem", "eps_int", "eps_shared", "eps_l2"):
            assert s[k] > 0


def test_fit_dvfs_reports_16_fold_cv(dvfs_varied) -> None:  # type: ignore[no-untyped-def]
    q = dvfs_varied.quality
    assert q["cv_folds"] == 16 and len(q["cv_fold_mape_pct"]) == 16
    assert 0 < q["cv_mape_pct"] < 3
    for k in ("cv_sd_pct", "cv_min_pct", "cv_max_pct"):
        assert k in q


def test_fit_dvfs_says_c1_mem_and_pi_misc_cannot_be_told_apart() -> None:
    f = prepare_frame(synthetic_dvfs(mem_v_spread=0.002, noise=0.01, seed=5))
    r = fit_frame(f, FitOptions(model="dvfs", n_boot=100, seed=2, validate=False), platform="jetson-tk1")
    assert "c1_mem" not in r.coefficients and "pi_misc" not in r.coefficients
    assert "c1_mem" in r.omitted and "pi_misc" in r.omitted
    assert any("c1_mem and pi_misc cannot be told apart" in w for w in r.warnings)
    doc = to_costs_dict(r)
    assert "c1_mem" not in doc["coefficients"] and "pi_misc" not in doc["coefficients"]
    assert "c1_mem" in json.dumps(doc["warnings"])
    truth = dvfs_pi0_truth(mem_v_spread=0.002)
    for s in r.extra["settings"]:  # the sum is still determined
        assert abs(s["pi0"] / truth[(s["core_mhz"], s["mem_mhz"])] - 1) < 0.02
    assert abs(r.coefficients["c1_core"].value / DVFS_TRUTH["c1_core"] - 1) < 0.05


def test_fit_auto_picks_dvfs_for_voltage_settings() -> None:
    f = prepare_frame(synthetic_dvfs(n_settings=4, noise=0.01, seed=1))
    r = fit_frame(f, FitOptions(model="auto", n_boot=20))
    assert r.model == "dvfs" and r.extra["auto"]["chosen"] == "dvfs"
    assert r.quality["cv_folds"] == 4


def test_fit_auto_picks_capped_when_the_cap_binds() -> None:
    f = prepare_frame(synthetic_results(GTX580_CAPPED, noise=0.01, seed=3, n_l1=0, n_l2=0, n_rand=0,
                                        efficiency_spread=0.0, n_repeats=2))
    r = fit_frame(f, FitOptions(model="auto", n_boot=10, folds=5))
    assert r.model == "capped"
    scores = r.extra["auto"]["cv_scores_pct"]
    assert scores["capped"] < scores["basic"]
    assert r.quality["cv_folds"] == 5
