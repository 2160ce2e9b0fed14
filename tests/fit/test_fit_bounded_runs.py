"""The bounded reader's fast paths (issue 28): a Parquet batch whose rows come in runs of one configuration is
keyed and reduced run by run (fit/io/stream_stats.StreamStats.add_runs), and must give the statistics and
coefficients of the row-keeping reader; the same rows shuffled take the row-by-row path and agree too; the
reservoir's replacements (drawn by thinning) keep every row with the same probability."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from archline.fit.io.configs import STAT_COLUMNS
from archline.fit.io.results import group_rows, read_results
from archline.fit.io.stream_stats import StreamStats
from archline.fit.regress.api import FitOptions, fit_group
from archline.fit.regress.synthetic import GTX580, synthetic_results

EXACT = ("first_src", "first_pos", "n", "time_min1", "time_min2", "time_min3")


def _parquet(frame: pd.DataFrame, path: Path) -> Path:
    frame.to_parquet(path, index=False)
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    f = synthetic_results(GTX580, seed=7, n_repeats=150)        # 101 configurations, 150 repeats each in a row
    half = (np.arange(len(f)) % 150) >= 75                       # each configuration in two runs of 75
    f = pd.concat([f[~half], f[half]], ignore_index=True)
    f.loc[5, "checksum_ok"] = "false"                            # dropped inside a run
    f["flops_dp"] = f["flops_dp"].astype(float)
    f.loc[f.index[:300], "flops_dp"] = -0.0                      # the same key as 0.0
    return f


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    original = StreamStats.add_runs

    def add_runs(self: StreamStats, *a: object) -> None:
        calls.append(1)
        original(self, *a)  # type: ignore[arg-type]
    monkeypatch.setattr(StreamStats, "add_runs", add_runs)
    return calls


@pytest.mark.parametrize("shuffle", [False, True])
def test_runs_and_rows_give_the_row_keeping_statistics(runs: pd.DataFrame, tmp_path: Path, shuffle: bool,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    frame = runs.sample(frac=1.0, random_state=3).reset_index(drop=True) if shuffle else runs
    p = _parquet(frame, tmp_path / "r.parquet")
    calls = _spy(monkeypatch)
    full = read_results([p], carry=())
    bounded = read_results([p], carry=(), max_rows=1000)
    assert (len(calls) > 0) != shuffle           # runs take the run path, shuffled rows the row path
    assert bounded.data.sampled and bounded.data.n_kept == 1000
    assert bounded.data.n_rows == full.data.n_rows == len(runs) - 1
    assert bounded.data.n_configs == full.data.n_configs
    for k in STAT_COLUMNS:
        a, b = full.data.cfg[k], bounded.data.cfg[k]
        if k in EXACT:
            assert np.array_equal(a, b), k
        else:
            assert np.allclose(b, a, rtol=1e-9, atol=1e-12 * np.abs(a).max()), k
    (ga,), (gb,) = group_rows(full), group_rows(bounded)
    opts = FitOptions(model="basic", validate=False)
    ra, rb = fit_group(ga, opts), fit_group(gb, opts)
    for k, c in ra.coefficients.items():
        assert rb.coefficients[k].value == pytest.approx(c.value, rel=1e-9), k
    # the kept rows are real rows, with their own configuration
    cfg_of = {(t, e): int(g) for t, e, g in zip(full.data.t.tolist(), full.data.e.tolist(), full.data.g.tolist(),
                                                strict=True)}
    d = bounded.data
    assert all(cfg_of[(t, e)] == g for t, e, g in zip(d.t.tolist(), d.e.tolist(), d.g.tolist(), strict=True))


def test_the_reservoir_keeps_each_row_with_the_same_probability() -> None:
    k, n, trials = 40, 800, 300
    counts = np.zeros(n)
    for seed in range(trials):
        st = StreamStats(1, k, seed=seed)
        for lo in range(0, n, 100):          # batches of 100 rows, one configuration
            t = np.arange(lo, lo + 100, dtype=np.float64) + 1.0
            st.add(np.zeros((1, 1), dtype=np.uint64), np.zeros(100, dtype=np.int64), t, t, 0,
                   np.arange(lo, lo + 100), np.zeros(1, dtype=np.int64))
        _, kept, _, _, _ = st.rows()
        assert kept.size == k and np.unique(kept).size == k
        counts[kept.astype(np.int64) - 1] += 1
    rate = counts / trials                   # each row: k/n = 0.05; quarters of the rows: 0.05 +- ~0.003
    quarters = rate.reshape(4, -1).mean(axis=1)
    assert np.all(np.abs(quarters - k / n) < 0.006), quarters
