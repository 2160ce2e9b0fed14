"""The fit in bounded memory (issue 28, fit/io/configs.py StreamStats): configuration statistics merged batch
by batch equal those of every row (so the coefficients equal the row-keeping fit's to 1e-9 relative), the
reservoir keeps max_rows real rows, below the bound the result is the row-keeping reader's exactly, and archline
fit says when its per-row figures come from a sample. Time and memory: benchmarks/fit_bounded.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from archline.fit.io.configs import STAT_COLUMNS
from archline.fit.io.results import group_rows, read_results
from archline.fit.regress.api import FitOptions, fit_files, fit_group
from archline.fit.regress.synthetic import GTX580, synthetic_results, write_results_csv


@pytest.fixture(scope="module")
def parts(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    d = tmp_path_factory.mktemp("bounded")
    return [write_results_csv(synthetic_results(GTX580, seed=40 + k, n_repeats=4), d / f"p{k}.csv")
            for k in range(4)]


@pytest.mark.parametrize("model", ["basic", "cache"])
def test_streamed_statistics_give_the_row_wise_coefficients(parts: list[Path], model: str) -> None:
    full = read_results(parts, carry=())
    bounded = read_results(parts, carry=(), max_rows=300)
    assert bounded.data.sampled and not full.data.sampled
    assert bounded.data.n_rows == full.data.n_rows and bounded.data.n_kept == 300
    for k in STAT_COLUMNS:
        if k in ("first_src", "first_pos", "n", "time_min1", "time_min2", "time_min3"):
            assert np.array_equal(bounded.data.cfg[k], full.data.cfg[k]), k
        else:
            assert np.allclose(bounded.data.cfg[k], full.data.cfg[k], rtol=1e-9, atol=0), k
    opts = FitOptions(model=model, validate=False)
    (a,), (b,) = group_rows(full), group_rows(bounded)
    ra, rb = fit_group(a, opts), fit_group(b, opts)
    assert ra.coefficients.keys() == rb.coefficients.keys() and ra.n_points == rb.n_points
    for k, c in ra.coefficients.items():
        assert rb.coefficients[k].value == pytest.approx(c.value, rel=1e-9), k
        if c.stderr:
            assert rb.coefficients[k].stderr == pytest.approx(c.stderr, rel=1e-9), k


def test_the_reservoir_keeps_real_rows_from_every_file(parts: list[Path]) -> None:
    full = read_results(parts, carry=()).data
    d = read_results(parts, carry=(), max_rows=400).data
    pairs = set(zip(full.t.tolist(), full.e.tolist(), strict=True))
    assert all((t, e) in pairs for t, e in zip(d.t.tolist(), d.e.tolist(), strict=True))
    assert set(d.src.tolist()) == {0, 1, 2, 3}           # a uniform sample reaches the last file too
    # the row's configuration is the one its (time, energy) came from
    cfg_of = {(t, e): int(g) for t, e, g in zip(full.t.tolist(), full.e.tolist(), full.g.tolist(), strict=True)}
    assert all(cfg_of[(t, e)] == g for t, e, g in zip(d.t.tolist(), d.e.tolist(), d.g.tolist(), strict=True))


def test_below_the_bound_the_reader_is_unchanged(parts: list[Path]) -> None:
    a = read_results(parts, carry=()).data
    b = read_results(parts, carry=(), max_rows=10**9).data
    assert not b.sampled
    for k in a.cfg.columns:
        assert np.array_equal(a.cfg[k], b.cfg[k], equal_nan=a.cfg[k].dtype.kind == "f"), k
    for x, y in ((a.g, b.g), (a.t, b.t), (a.e, b.e), (a.src, b.src), (a.pos, b.pos)):
        assert np.array_equal(x, y)


def test_fit_files_says_when_it_sampled(parts: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    import archline.fit.io.results as results

    monkeypatch.setattr(results, "FIT_MAX_ROWS", 500)
    (r,) = fit_files(parts, FitOptions(model="basic", folds=5))
    assert r.extra["rows_kept"] == 500 and any("uniform sample of 500 rows" in w for w in r.warnings)
    assert r.quality["cv_folds"] == 5 and np.isfinite(r.quality["cv_mape_pct"])
