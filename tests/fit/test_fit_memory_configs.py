"""Breaker 28 item 4: a bounded fit's memory per distinct configuration is a few numpy rows, and past the
documented limit (ARCHLINE_FIT_MAX_CONFIGS) the fit refuses with one line, exit 2, nothing written."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from archline.fit.io import stream_stats
from archline.fit.io.configs import config_stats
from archline.fit.io.stream_stats import CONFIGS_ENV, StreamStats, TooManyConfigurationsError
from archline.fit.regress.synthetic import GTX580, synthetic_results

K = 19          # the fit's key columns: 4 text, 9 counts, 5 settings, emulated


def _batches(n_cfg: int, batch: int, seed: int = 0):  # type: ignore[no-untyped-def]
    """Batches of distinct keys (one row each), as the row-by-row path hands them over."""
    rng = np.random.default_rng(seed)
    for b in range(0, n_cfg, batch):
        m = min(batch, n_cfg - b)
        keys = np.zeros((m, K), dtype=np.uint64)
        keys[:, 0] = 3
        keys[:, 5] = np.arange(b, b + m)
        t = rng.random(m) + 1.0
        yield keys, np.arange(m), t, 2.0 * t, np.arange(b + 1, b + m + 1, dtype=np.int64), np.arange(m)


def test_a_configuration_costs_a_few_hundred_bytes() -> None:
    n = 50_000
    tracemalloc.start()
    try:
        st = StreamStats(K, 1000, max_configs=10**7)
        for keys, codes, t, e, pos, first in _batches(n, 10_000):
            st.add(keys, codes, t, e, 0, pos, first)
        retained, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert st.size == n and st.sampled
    # 152 B of key bits, 104 B of statistics, 16 B of index, growth slack; a dict entry and an array object
    # per configuration (before) cost 717 B
    assert retained / n < 450, retained / n
    assert (st.keys_table()[:, 5] == np.arange(n)).all()
    assert (st.first_pos[:n] == np.arange(1, n + 1)).all()


def test_keys_are_found_again_and_hash_collisions_stay_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every key hashed alike (the spill dict's path) gives the same statistics as exact grouping."""
    rng = np.random.default_rng(3)
    n_keys, rows = 40, 4000
    key_of_row = rng.integers(0, n_keys, rows)
    key_rows = np.zeros((n_keys, K), dtype=np.uint64)
    key_rows[:, 2] = np.arange(n_keys) * 7
    t = rng.random(rows) + 0.5
    e = 3.0 * t + rng.random(rows)
    want = config_stats(key_of_row, t, e, n_keys)
    for collide in (False, True):
        if collide:
            monkeypatch.setattr(stream_stats, "_hash", lambda cols: np.zeros(cols[0].size, dtype=np.uint64))
        st = StreamStats(K, None, max_configs=10**6)
        for a in range(0, rows, 500):
            g = key_of_row[a:a + 500]
            u, first, codes = np.unique(g, return_index=True, return_inverse=True)
            order = np.argsort(first)                 # distinct keys in order of first appearance
            rank = np.empty_like(order)
            rank[order] = np.arange(order.size)
            st.add(key_rows[u[order]], rank[codes], t[a:a + 500], e[a:a + 500], 0,
                   np.arange(a + 1, a + g.size + 1, dtype=np.int64), first[order])
        assert st.size == n_keys
        ids = st.keys_table()[:, 2] // 7           # running index -> original key
        got = st.stats()
        inv = np.argsort(ids)
        assert (got["n"][inv] == want["n"]).all()
        for k in ("time_s", "energy_j", "time_ss", "energy_ss", "time_energy_sp", "log_time_ss", "time_min1"):
            assert np.allclose(got[k][inv], want[k], rtol=1e-12, atol=1e-12), (collide, k)


def test_the_limit_is_refused_when_crossed_and_nothing_is_registered() -> None:
    st = StreamStats(K, None, max_configs=25_000)
    batches = list(_batches(30_000, 10_000))
    for keys, codes, t, e, pos, first in batches[:2]:
        st.add(keys, codes, t, e, 0, pos, first)
    keys, codes, t, e, pos, first = batches[2]
    with pytest.raises(TooManyConfigurationsError, match="more than 25,000 distinct configurations"):
        st.add(keys, codes, t, e, 0, pos, first)
    assert st.size == 20_000
    st.add(*batches[0][:4], 0, *batches[0][4:])      # known keys still add after a refusal (nothing half-kept)
    assert st.size == 20_000 and st.stats()["n"].sum() == 30_000


def _distinct_configs(tmp: Path, n: int) -> Path:
    frame = synthetic_results(GTX580, seed=2, n_repeats=1, n_l1=0, n_l2=0, n_rand=0)
    frame = frame[frame["kernel"] == "intensity"].reset_index(drop=True)
    frame = frame.iloc[np.arange(n) % len(frame)].reset_index(drop=True)
    scale = 1.0 + np.arange(n) * 1e-6           # every row its own working set
    for c in ("bytes_mem", "time_s", "energy_j"):
        frame[c] = frame[c] * scale
    path = tmp / "distinct.parquet"
    frame.to_parquet(path, index=False)
    return path


def test_fit_past_the_limit_is_one_line_exit_2_and_writes_nothing(run_cli, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    src = _distinct_configs(tmp_path, 300)
    out = tmp_path / "fit.json"
    monkeypatch.setenv(CONFIGS_ENV, "200")
    r = run_cli("fit", str(src), "--model", "basic", "--format", "json", "--out", str(out))
    assert r.exit_code == 2, r.stderr
    line = r.stderr.strip().splitlines()
    assert len(line) == 1 and "more than 200 distinct configurations" in line[0] and "--where" in line[0]
    assert CONFIGS_ENV in line[0] and "Traceback" not in r.stderr
    assert not out.exists()
    monkeypatch.setenv(CONFIGS_ENV, "300")
    ok = run_cli("fit", str(src), "--model", "basic", "--format", "json", "--out", str(out))
    assert ok.exit_code == 0 and out.exists(), ok.stderr
    monkeypatch.setenv(CONFIGS_ENV, "lots")
    bad = run_cli("fit", str(src), "--model", "basic")
    assert bad.exit_code == 2 and CONFIGS_ENV in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_the_limit_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CONFIGS_ENV, raising=False)
    assert stream_stats.config_limit() == stream_stats.MAX_CONFIGS == 200_000
    assert StreamStats(K, None).max_configs == 200_000
    monkeypatch.setenv(CONFIGS_ENV, "250_000")
    assert stream_stats.config_limit() == 250_000
    for bad in ("0", "-5", "1e6", "many"):
        monkeypatch.setenv(CONFIGS_ENV, bad)
        with pytest.raises(stream_stats.ArchlineFitError, match=CONFIGS_ENV):
            stream_stats.config_limit()
