"""The reference of `archline compare` (the median of the other groups) has the exact small-sample variance of the
sample median, not the asymptotic pi*sigma^2/(2m): checked against a seeded Monte Carlo estimate."""

from __future__ import annotations

import math

import numpy as np
import pytest

from archline.fit.analyses.choi.compare_stats import (
    MEDIAN_EXACT_UP_TO,
    GroupValue,
    compare_values,
    median_variance,
    median_variance_factor,
)

#: Monte Carlo draws per m: the relative standard error of a variance estimate is about sqrt(2/N) (x ~1.1 for the
#: median's slightly heavier tails) = 0.35%; the tolerance is 4 of them
N_DRAWS = 200_000
MC_REL_TOL = 0.014


@pytest.mark.parametrize("m", [3, 4, 5, 6, 7, 8, 12, 25])
def test_exact_median_variance_matches_monte_carlo(m: int) -> None:
    rng = np.random.default_rng(1000 + m)
    sigma = 2.5
    med = np.median(rng.normal(7.0, sigma, size=(N_DRAWS, m)), axis=1)
    mc = float(med.var(ddof=1))
    exact = median_variance_factor(m) * sigma**2
    assert exact == pytest.approx(mc, rel=MC_REL_TOL)


@pytest.mark.parametrize(("m", "known"), [(1, 1.0), (2, 0.5), (3, 0.4486711), (4, 0.2981996), (5, 0.2868337)])
def test_known_values_and_the_asymptotic_one_is_not_used_for_small_m(m: int, known: float) -> None:
    """m = 3: 1 - sqrt(3)/pi = 0.4487 (David & Nagaraja); the asymptotic pi/(2m) would be 0.5236."""
    assert median_variance_factor(m) == pytest.approx(known, rel=1e-5)
    if m >= 3:
        assert abs(median_variance_factor(m) - math.pi / (2 * m)) > 0.05 * known


def test_large_m_joins_the_asymptotic_value() -> None:
    m = MEDIAN_EXACT_UP_TO
    assert median_variance_factor(m) * m == pytest.approx(math.pi / 2, rel=0.01)
    assert median_variance_factor(m + 1) == math.pi / (2 * (m + 1))
    assert median_variance([4.0] * 3) == pytest.approx(4.0 * 0.4486711, rel=1e-5)


def test_compare_reference_uses_the_exact_variance() -> None:
    """Four groups of equal stderr: the reference of each is the median of 3, whose variance is 0.4487 se^2 (not
    pi/6 se^2). The p-value of group a then follows from Welch with se_ref = sqrt(0.4487)*se."""
    from scipy import stats

    vals = [GroupValue(g, v, 1.0, None, 50, 60) for g, v in zip("abcd", [13.0, 10.0, 10.5, 9.5], strict=True)]
    cc = compare_values("eps", "J", vals, alpha=0.05)
    se = math.sqrt(1.0 + 0.4486711)
    t = (13.0 - 10.0) / se
    df = (1.0 + 0.4486711) ** 2 / (1.0 / 50 + 0.4486711**2 / 150)
    p_raw = float(2 * stats.t.sf(t, df))
    assert cc.values[0].p_vs_others == pytest.approx(min(1.0, 4 * p_raw), rel=1e-4)   # Holm: smallest times 4
