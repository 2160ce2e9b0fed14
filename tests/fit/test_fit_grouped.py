"""The fit from configuration statistics equals the row-wise fit; grouped cross-validation never splits a
configuration; power is predicted at the model's own time."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from archline.fit.regress.api import FitOptions, fit_frame, prepare_frame
from archline.fit.regress.basic import fit_basic
from archline.fit.regress.cache import fit_cache
from archline.fit.regress.dvfs import fit_dvfs
from archline.fit.regress.result import row_normaliser
from archline.fit.regress.synthetic import GTX580, synthetic_dvfs, synthetic_results
from archline.fit.regress.validation import config_folds
from archline.model.machine import Machine

KEYS = ["kernel", "precision", "level", "flops_sp", "flops_dp", "int_ops", "bytes_mem", "bytes_l1", "bytes_l2",
        "bytes_l3", "bytes_shared", "rand_accesses", "core_v", "mem_v"]


@pytest.fixture(scope="module")
def repeated() -> pd.DataFrame:
    # every configuration measured 7 times; 1% noise and a 30% efficiency spread within each configuration
    return prepare_frame(synthetic_results(GTX580, noise=0.01, seed=21, n_repeats=7))


def _rowwise_relative_wls(x: np.ndarray, y: np.ndarray, config: np.ndarray):  # type: ignore[no-untyped-def]
    """The estimator written row by row with statsmodels: OLS, then WLS with each configuration weighted by
    1/yhat^2, yhat its rows' mean OLS fitted value. Columns are scaled to unit norm first (T/W is ~1e-12 next
    to a column of ones; unscaled, statsmodels' pinv loses ~6 digits), and the results scaled back."""
    from types import SimpleNamespace

    from statsmodels.regression.linear_model import OLS, WLS

    s = np.linalg.norm(x, axis=0)
    fitted = np.asarray(OLS(y, x / s).fit().fittedvalues)
    yhat = pd.Series(fitted).groupby(config).transform("mean").to_numpy()
    res = WLS(y, x / s, weights=1.0 / np.where(yhat > 0, yhat, y) ** 2).fit()
    return SimpleNamespace(params=res.params / s, bse=res.bse / s, conf_int=lambda: res.conf_int() / s[:, None],
                           rsquared=res.rsquared, pvalues=res.pvalues)


def _config_ids(frame: pd.DataFrame) -> np.ndarray:
    return frame.groupby([c for c in KEYS if c in frame.columns], dropna=False, sort=False).ngroup().to_numpy()


def _rel(a: float, b: float) -> float:
    return abs(a - b) / abs(b)


def test_fit_grouped_basic_equals_rowwise_statsmodels(repeated: pd.DataFrame) -> None:
    rows = repeated[(repeated["kernel"] == "intensity")].reset_index(drop=True)
    r = fit_basic(rows)
    assert r.n_points == 61 * 7 and r.quality["n_configurations"] == 61
    w = rows["work_flop"].to_numpy()
    x = np.column_stack([np.ones_like(w), rows["bytes_mem"] / w, rows["time_s"] / w, rows["flops_dp"] / w])
    ref = _rowwise_relative_wls(x, rows["energy_j"].to_numpy() / w, _config_ids(rows))
    for j, name in enumerate(("eps_flop_sp", "eps_mem", "pi0", "delta_eps_dp")):
        c = r.coefficients[name]
        assert _rel(c.value, ref.params[j]) < 1e-9, name
        assert c.stderr is not None and _rel(c.stderr, ref.bse[j]) < 1e-7, name
        assert c.ci95 is not None and _rel(c.ci95[0], ref.conf_int()[j, 0]) < 1e-7, name
    assert _rel(r.quality["r2"], ref.rsquared) < 1e-9
    assert _rel(r.quality["pvalue_max"], float(np.max(ref.pvalues))) < 1e-6


def test_fit_grouped_cache_joint_equals_rowwise(repeated: pd.DataFrame) -> None:
    r = fit_cache(repeated, method="joint")
    n, _ = row_normaliser(repeated)
    names = ["eps_flop_sp", "eps_flop_dp", "eps_mem", "eps_l1", "eps_l2", "eps_rand"]
    cols = ["flops_sp", "flops_dp", "bytes_mem", "bytes_l1", "bytes_l2", "rand_accesses"]
    x = np.column_stack([repeated[c].to_numpy() / n for c in cols] + [repeated["time_s"].to_numpy() / n])
    ref = _rowwise_relative_wls(x, repeated["energy_j"].to_numpy() / n, _config_ids(repeated))
    for j, name in enumerate([*names, "pi0"]):
        assert _rel(r.coefficients[name].value, ref.params[j]) < 1e-9, name
        assert _rel(r.coefficients[name].stderr, ref.bse[j]) < 1e-7, name  # type: ignore[arg-type]
    assert _rel(r.quality["r2"], ref.rsquared) < 1e-9


def test_fit_grouped_cache_residual_equals_rowwise(repeated: pd.DataFrame) -> None:
    """S1 eq.11/12 per row, averaged over rows: the configuration statistics give the same mean and spread."""
    r = fit_cache(repeated, method="residual")
    base = {k: c.value for k, c in r.coefficients.items()}
    sel = (repeated["bytes_l2"] > 0).to_numpy()
    sub = repeated[sel]
    per_row = (sub["energy_j"] - base["pi0"] * sub["time_s"]) / sub["bytes_l2"]
    assert _rel(base["eps_l2"], float(per_row.mean())) < 1e-9
    assert _rel(r.coefficients["eps_l2"].stderr, float(per_row.std(ddof=1) / np.sqrt(len(per_row)))) < 1e-7  # type: ignore[arg-type]


def test_fit_grouped_dvfs_nnls_equals_rowwise() -> None:
    """eq.48 by two-step NNLS on every row (scipy nnls, configurations weighted by their mean fitted value)."""
    from scipy.optimize import nnls

    # two measurements of every (setting, benchmark) configuration
    frame = prepare_frame(pd.concat([synthetic_dvfs(n_settings=6, noise=0.01, seed=s) for s in (1, 2)],
                                    ignore_index=True))
    r = fit_dvfs(frame, n_boot=2)
    assert r.quality["n_configurations"] * 2 == r.n_points == 6 * 116 * 2
    n, _ = row_normaliser(frame)
    vc, vm, t = frame["core_v"].to_numpy(), frame["mem_v"].to_numpy(), frame["time_s"].to_numpy()
    x = np.column_stack([frame["work_flop"] * vc**2, frame["bytes_mem"] * vm**2, vc * t, vm * t,
                         frame["int_ops"] * vc**2, frame["bytes_shared"] * vc**2, frame["bytes_l2"] * vc**2, t,
                         frame["flops_dp"] * vc**2]) / n[:, None]
    y = frame["energy_j"].to_numpy() / n
    scale = np.linalg.norm(x, axis=0)
    b1 = nnls(x / scale, y, maxiter=450)[0] / scale
    yhat = pd.Series(x @ b1).groupby(_config_ids(frame)).transform("mean").to_numpy()
    wr = 1.0 / np.where(yhat > 0, yhat, y)
    xw = x * wr[:, None]
    scale = np.linalg.norm(xw, axis=0)
    b2 = nnls(xw / scale, y * wr, maxiter=450)[0] / scale
    order = ("c0_core_single", "c0_mem", "c1_core", "c1_mem", "c0_core_integer", "c0_core_sm", "c0_core_l2",
             "pi_misc", "delta_c0_core_double")
    got = np.array([r.extra["all_estimates"][k] for k in order])
    np.testing.assert_allclose(got, b2, rtol=1e-8)


def test_fit_grouped_cv_never_splits_a_configuration(repeated: pd.DataFrame) -> None:
    from archline.fit.regress.result import as_grouped

    data = as_grouped(repeated)
    fold = config_folds(data.cfg, 10, "configuration", seed=3)
    rows_fold = pd.Series(fold[data.g]).groupby(_config_ids(data.frame())).nunique()
    assert (rows_fold == 1).all() and len(rows_fold) == data.n_configs == 101
    assert sorted(set(fold.tolist())) == list(range(10))
    dv = as_grouped(prepare_frame(synthetic_dvfs(n_settings=8, noise=0.01, seed=4)))
    fold = config_folds(dv.cfg, 4, "setting", seed=0)
    per_setting = pd.DataFrame({"v": dv.cfg["core_v"], "m": dv.cfg["mem_v"], "f": fold}).groupby(["v", "m"])["f"]
    assert (per_setting.nunique() == 1).all() and per_setting.ngroups == 8


def test_fit_cv_split_is_reported_and_rowwise_is_optimistic(repeated: pd.DataFrame) -> None:
    grouped = fit_frame(repeated, FitOptions(model="basic", folds=5))
    rowwise = fit_frame(repeated, FitOptions(model="basic", folds=5, cv="rowwise"))
    assert grouped.quality["cv_split"] == "configuration" and rowwise.quality["cv_split"] == "row"
    assert grouped.quality["cv_folds"] == rowwise.quality["cv_folds"] == 5
    # the same configurations, predicted without (grouped) or with (row-wise) their own repeats in training
    assert grouped.quality["cv_mape_pct"] > 0 and rowwise.quality["cv_mape_pct"] > 0
    dv = fit_frame(prepare_frame(synthetic_dvfs(n_settings=4, noise=0.01, seed=1)), FitOptions(model="dvfs",
                                                                                                n_boot=5))
    assert dv.quality["cv_split"] == "setting" and dv.quality["cv_folds"] == 4


def test_fit_power_prediction_is_the_power_line(repeated: pd.DataFrame) -> None:
    """Predicted power = the model's energy at its own time over that time = eq.7 at the row's intensity."""
    r = fit_basic(repeated)
    pe = r.point_errors
    assert pe is not None
    m = Machine(r.value("tau_flop_sp"), r.value("tau_mem"), r.value("eps_flop_sp"), r.value("eps_mem"),  # type: ignore[arg-type]
                r.value("pi0"))  # type: ignore[arg-type]
    sp = (pe["precision"] == "sp").to_numpy()
    intensity = pe["intensity_flop_per_byte"].to_numpy()[sp]
    np.testing.assert_allclose(pe["power_pred_w"].to_numpy()[sp], m.power_w(intensity), rtol=1e-9)


def test_fit_time_and_power_errors_follow_the_data_not_the_fit() -> None:
    """On rows that reach the roofline (no efficiency spread) time and power errors are the 1% noise; with
    rows at u ~ U(0.7, 1) of the peak rates, the roofline's time error is E|u - 1| = 15%: the distance of the
    rows below a best-case bound, while energy stays at the noise."""
    on_roof = fit_basic(prepare_frame(synthetic_results(GTX580, noise=0.01, seed=5, efficiency_spread=0.0,
                                                        n_l1=0, n_l2=0, n_rand=0, n_repeats=4)))
    assert on_roof.quality["time_mape_pct"] < 3 and on_roof.quality["power_mape_pct"] < 3
    below = fit_basic(prepare_frame(synthetic_results(GTX580, noise=0.01, seed=5, n_l1=0, n_l2=0, n_rand=0,
                                                      n_repeats=20)))
    assert 12.5 < below.quality["time_mape_pct"] < 18.5
    assert below.quality["energy_mape_pct"] < 1.5
    assert "best case" in below.quality["time_model"]


@pytest.mark.parametrize("dof", [100, 999, 1000, 10_000, 1_000_000])
def test_fit_t_distribution_series_matches_scipy(dof: int) -> None:
    from scipy.special import stdtr, stdtrit

    from archline.fit.regress.result import T_SF_SERIES_DOF, t_quantile, t_sf

    for p in (0.9, 0.975, 0.995, 0.9995):
        assert abs(t_quantile(p, dof) / stdtrit(dof, p) - 1) < 3e-9
    for x in (0.3, 1.96, 4.0, 8.0, 15.0):
        tol = 5e-6 if dof >= T_SF_SERIES_DOF else 1e-12
        assert abs(t_sf(x, dof) / stdtr(dof, -x) - 1) < tol, x
