"""Synthetic data made from the papers' coefficients (S1 Tables 4-5) is recovered by the basic and cache fits."""

from __future__ import annotations

import numpy as np
import pytest

from archline.fit.regress.api import FitOptions, fit_frame, prepare_frame
from archline.fit.regress.basic import fit_basic
from archline.fit.regress.cache import fit_cache
from archline.fit.regress.synthetic import GTX580, I7_950, SyntheticPlatform, synthetic_results

PLATFORMS = [GTX580, I7_950]


def _rel(a: float, b: float) -> float:
    return abs(a / b - 1.0)


@pytest.fixture(scope="module")
def data() -> dict[str, object]:
    # 25 SP + 36 DP intensity points, 16 L1, 16 L2, 8 random-access configurations, each run 100 times
    # (S0 Sec. IV-A), 1% Gaussian noise on time and energy, fixed seeds
    return {p.name: prepare_frame(synthetic_results(p, noise=0.01, seed=7, n_repeats=100)) for p in PLATFORMS}


@pytest.mark.parametrize("plat", PLATFORMS, ids=lambda p: p.name)
def test_fit_basic_recovers_table4_within_2pct(plat: SyntheticPlatform, data: dict[str, object]) -> None:
    r = fit_basic(data[plat.name], platform=plat.name)  # type: ignore[arg-type]
    truth = plat.truth()
    for name in ("eps_flop_sp", "eps_flop_dp", "eps_mem", "pi0"):
        assert name in r.coefficients, r.omitted
        c = r.coefficients[name]
        assert _rel(c.value, truth[name]) < 0.02, (name, c.value, truth[name])
        assert c.stderr is not None and c.stderr > 0
        assert c.ci95 is not None and c.ci95[0] < c.value < c.ci95[1]
    assert r.quality["r2"] > 0.999
    assert r.n_points == (25 + 36) * 100


@pytest.mark.parametrize("method", ["joint", "residual"])
@pytest.mark.parametrize("plat", PLATFORMS, ids=lambda p: p.name)
def test_fit_cache_recovers_every_coefficient_within_2pct(plat: SyntheticPlatform, method: str,
                                                         data: dict[str, object]) -> None:
    r = fit_cache(data[plat.name], platform=plat.name, method=method)  # type: ignore[arg-type]
    assert r.extra["method"] == method
    truth = plat.truth()
    for name in ("eps_flop_sp", "eps_flop_dp", "eps_mem", "pi0", "eps_l1", "eps_l2", "eps_rand"):
        assert name in r.coefficients, (name, r.omitted)
        assert _rel(r.coefficients[name].value, truth[name]) < 0.02, (name, r.coefficients[name].value, truth[name])


def test_fit_basic_single_repeat_ci_coverage() -> None:
    """With one row per configuration the 95% intervals must be honest: over 20 seeds, most cover the truth."""
    covered = total = 0
    for seed in range(20):
        f = prepare_frame(synthetic_results(GTX580, noise=0.01, seed=seed, n_l1=0, n_l2=0, n_rand=0))
        r = fit_basic(f)
        for name in ("eps_flop_sp", "eps_flop_dp", "eps_mem", "pi0"):
            c = r.coefficients[name]
            assert c.ci95 is not None
            covered += c.ci95[0] <= GTX580.truth()[name] <= c.ci95[1]
            total += 1
    assert covered / total > 0.85


def test_fit_auto_picks_cache_and_reports_cv(data: dict[str, object]) -> None:
    r = fit_frame(data["gtx580"], FitOptions(model="auto", folds=5), platform="gtx580")  # type: ignore[arg-type]
    assert r.model == "cache"
    assert r.extra["auto"]["chosen"].startswith("cache/")
    assert set(r.extra["auto"]["cv_scores_pct"]) == {"cache/joint", "cache/residual"}
    assert r.quality["cv_folds"] == 5 and len(r.quality["cv_fold_mape_pct"]) == 5
    assert 0 < r.quality["cv_mape_pct"] < 2.0
    assert any(w.startswith("auto: chose cache") for w in r.warnings)


def test_fit_auto_prefers_basic_on_uncapped_intensity_data() -> None:
    f = prepare_frame(synthetic_results(GTX580, seed=3, n_l1=0, n_l2=0, n_rand=0, n_repeats=2))
    r = fit_frame(f, FitOptions(model="auto", n_boot=10))
    assert r.model == "basic"
    assert "basic" in r.extra["auto"]["cv_scores_pct"]


def test_fit_point_errors_are_signed_relative() -> None:
    f = prepare_frame(synthetic_results(GTX580, seed=1, n_l1=0, n_l2=0, n_rand=0))
    r = fit_basic(f)
    pe = r.point_errors
    assert pe is not None and len(pe) == 61
    np.testing.assert_allclose(pe["energy_rel_err"], (pe["energy_pred_j"] - pe["energy_j"]) / pe["energy_j"])
    for col in ("time_rel_err", "power_rel_err", "intensity_flop_per_byte"):
        assert col in pe
    assert np.abs(pe["energy_rel_err"]).median() < 0.02
