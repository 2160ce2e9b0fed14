"""Breaker 28 item 7: one row 1000x too high in energy (kJ written as J, about 250 kW mean power, under the 1 MW
sanity limit) emptied the fit to one coefficient and nothing named the row. The outlier report
(archline.fit.regress.outliers) names it, in the warnings and in the JSON ``outliers`` list; a clean set with 1%
noise raises nothing."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from archline.fit.regress.api import FitOptions, fit_files, fit_frame
from archline.fit.regress.outliers import MIN_RELATIVE, Z_LIMIT, find_outliers
from archline.fit.regress.synthetic import GTX580, synthetic_dvfs, synthetic_results, write_results_csv

#: the row made 1000x too high (0-based in the frame: CSV line = row + 2, the header being line 1)
BAD_ROW = 20


def _bad(frame, row: int = BAD_ROW, factor: float = 1000.0):  # type: ignore[no-untyped-def]
    out = frame.copy()
    out.loc[row, "energy_j"] = out.loc[row, "energy_j"] * factor
    return out


@pytest.mark.parametrize("model", ["basic", "capped", "cache", "auto"])
def test_a_row_1000x_too_high_is_named_by_file_and_line(run_cli, tmp_path: Path, model: str) -> None:  # type: ignore[no-untyped-def]
    frame = synthetic_results(GTX580, seed=4)                 # 101 configurations, 1% noise
    power_w = frame.loc[BAD_ROW, "energy_j"] * 1000 / frame.loc[BAD_ROW, "time_s"]
    assert 1e5 < power_w < 1e6                                # under the reader's 1 MW limit: it must be fitted
    src = write_results_csv(_bad(frame), tmp_path / "r.csv")
    r = run_cli("fit", str(src), "--model", model, "--format", "json", "--bootstrap", "20")
    assert r.exit_code == 0, r.stderr
    where = f"{src}:{BAD_ROW + 2}"
    outliers = json.loads(r.stdout)["outliers"]
    assert [o["where"] for o in outliers] == [where]          # that row and no other
    assert outliers[0]["rows"] == 1
    assert outliers[0]["energy_ratio"] == pytest.approx(1000, rel=0.1)
    assert outliers[0]["robust_z"] > Z_LIMIT
    assert outliers[0]["configuration"]["kernel"] == "intensity"
    assert f"outlier: {where}" in r.stderr


def test_the_collapsed_fit_names_the_most_influential_configuration(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The breaker's case: the bounded least squares (capped) keeps pi0 alone; the warning says so and names
    the row."""
    src = write_results_csv(_bad(synthetic_results(GTX580, seed=4)), tmp_path / "r.csv")
    r = run_cli("fit", str(src), "--model", "capped", "--format", "json", "--bootstrap", "20")
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    assert set(d["coefficients"]) <= {"pi0"}                  # the collapse this test is about
    collapse = [w for w in d["warnings"] if w.startswith("the fit kept")]
    assert len(collapse) == 1 and f"disagrees with most is {src}:{BAD_ROW + 2}" in collapse[0], d["warnings"]


def test_the_row_is_found_among_repeats_of_its_configuration(tmp_path: Path) -> None:
    """With 5 repeats per configuration the mean of the bad one is about 200x; the row named is the bad row, not
    the configuration's first."""
    frame = synthetic_results(GTX580, seed=7, n_l1=0, n_l2=0, n_rand=0, n_repeats=5)
    bad_row = 5 * 10 + 3                                       # the 4th repeat of configuration 10
    src = write_results_csv(_bad(frame, bad_row), tmp_path / "r.csv")
    (r,) = fit_files([src], FitOptions(model="basic", validate=False))
    assert [o["where"] for o in r.extra["outliers"]] == [f"{src}:{bad_row + 2}"]
    assert r.extra["outliers"][0]["rows"] == 5


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_a_clean_set_with_1pct_noise_reports_no_outlier(seed: int) -> None:
    """False-alarm check: 101 configurations (61 over 30+ intensities, cache and random rows), 1% noise, five
    seeds: nothing flagged and no collapse warning."""
    frame = synthetic_results(GTX580, seed=seed, noise=0.01)
    r = fit_frame(frame, FitOptions(model="cache", validate=False))
    assert r.extra["outliers"] == []
    assert not [w for w in r.warnings if w.startswith(("outlier", "the fit kept"))], r.warnings
    _, n_flagged, rf = find_outliers(r)
    assert n_flagged == 0
    assert rf is not None and 0.002 < rf.scale < 0.03          # the robust scale sees the 1% noise (E/N, rel.)
    assert float(np.nanmax(np.abs(rf.z))) < Z_LIMIT


def test_noise_free_data_raise_nothing() -> None:
    """Without noise the robust scale is rounding: the 10% floor keeps every configuration unflagged."""
    r = fit_frame(synthetic_results(GTX580, seed=0, noise=0.0), FitOptions(model="basic", validate=False))
    assert r.extra["outliers"] == []
    assert MIN_RELATIVE == 0.10


def test_dvfs_nnls_outlier_is_named(tmp_path: Path) -> None:
    frame = synthetic_dvfs(seed=1)
    bad = _bad(frame, 30)
    src = write_results_csv(bad, tmp_path / "d.csv")
    (r,) = fit_files([src], FitOptions(model="dvfs", n_boot=10, validate=False))
    assert [o["where"] for o in r.extra["outliers"]] == [f"{src}:32"]
    (clean,) = fit_files([write_results_csv(frame, tmp_path / "c.csv")], FitOptions(model="dvfs", n_boot=10,
                                                                                     validate=False))
    assert clean.extra["outliers"] == []


def test_a_row_1000x_too_low_is_named_too(tmp_path: Path) -> None:
    src = write_results_csv(_bad(synthetic_results(GTX580, seed=4), factor=1e-3), tmp_path / "r.csv")
    (r,) = fit_files([src], FitOptions(model="basic", validate=False))
    assert [o["where"] for o in r.extra["outliers"]] == [f"{src}:{BAD_ROW + 2}"]
    assert r.extra["outliers"][0]["energy_ratio"] == pytest.approx(1e-3, rel=0.1)


def test_robust_coefficients_from_a_sample_of_configurations_still_flag_the_row(monkeypatch, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Past MAX_ROBUST_CONFIGS the robust coefficients come from a seeded sample (here 40 of 101); every
    configuration's residual is still tested, so the bad row is found whether or not it is in the sample."""
    import archline.fit.regress.outliers as outliers_mod

    monkeypatch.setattr(outliers_mod, "MAX_ROBUST_CONFIGS", 40)
    src = write_results_csv(_bad(synthetic_results(GTX580, seed=4)), tmp_path / "r.csv")
    (r,) = fit_files([src], FitOptions(model="cache", validate=False))
    assert [o["where"] for o in r.extra["outliers"]] == [f"{src}:{BAD_ROW + 2}"]
    clean = fit_frame(synthetic_results(GTX580, seed=4), FitOptions(model="cache", validate=False))
    assert clean.extra["outliers"] == []


def test_a_table_on_stdout_has_the_outlier_on_stderr_too(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    src = write_results_csv(_bad(synthetic_results(GTX580, seed=4)), tmp_path / "r.csv")
    r = run_cli("fit", str(src), "--model", "basic")
    assert r.exit_code == 0, r.stderr
    assert f"archline: warning: gtx580: outlier: {src}:{BAD_ROW + 2}" in r.stderr
    assert f"outlier: {src}:{BAD_ROW + 2}" in r.stdout                  # the table carries it as before
    clean = run_cli("fit", str(write_results_csv(synthetic_results(GTX580, seed=4), tmp_path / "c.csv")),
                    "--model", "basic")
    assert clean.exit_code == 0 and "outlier" not in clean.stderr + clean.stdout


def test_a_parquet_row_is_named_by_its_row_number(tmp_path: Path) -> None:
    src = tmp_path / "r.parquet"
    _bad(synthetic_results(GTX580, seed=4)).to_parquet(src)
    (r,) = fit_files([src], FitOptions(model="basic", validate=False))
    assert [o["where"] for o in r.extra["outliers"]] == [f"{src}, row {BAD_ROW + 1}"]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_huber_fit_is_statsmodels_rlm(seed: int) -> None:
    """fit/regress/outliers._huber writes out statsmodels' RLM(HuberT, scale_est="mad") (an import of
    statsmodels.api costs seconds per `archline fit`): the same coefficients, with outliers in the data."""
    import statsmodels.api as sm

    from archline.fit.regress.outliers import _huber, _mad

    rng = np.random.default_rng(seed)
    x = np.column_stack([np.ones(60), rng.uniform(1, 10, 60), rng.uniform(0, 5, 60)])
    y = x @ np.array([2.0, 0.5, 1.5]) + rng.normal(0, 0.1, 60)
    y[rng.choice(60, 4, replace=False)] *= 30.0
    want = sm.RLM(y, x, M=sm.robust.norms.HuberT()).fit(scale_est="mad")
    got = _huber(y, x)
    np.testing.assert_allclose(got.params, want.params, rtol=1e-6)
    assert _mad(y - x @ want.params) == pytest.approx(float(sm.robust.scale.mad(y - x @ want.params, center=0.0)))
