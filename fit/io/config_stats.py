"""Per-configuration statistics of grouped rows (:mod:`archline.fit.io.configs`): count, means, centred sums of
squares and cross-products, log-time mean and spread, and the fastest times; the grouping and the running
statistics of a bounded fit (:mod:`archline.fit.io.stream_stats`) both compute them here."""

from __future__ import annotations

import numpy as np

#: Rows per slice of a pass over the rows (bounds the temporaries).
CHUNK_ROWS = 1 << 20


def smallest(g: np.ndarray, t: np.ndarray, n_cfg: int, k: int) -> np.ndarray:
    """(n_cfg, k): the k smallest values of t in each configuration (inf where it has fewer rows)."""
    out = np.full((n_cfg, k), np.inf)
    filled = np.zeros(n_cfg, dtype=np.int64)
    rest_g, rest_t = g, t
    while rest_t.size and int(filled.min()) < k:
        m = np.full(n_cfg, np.inf)
        np.minimum.at(m, rest_g, rest_t)
        hit = rest_t == m[rest_g]
        cnt = np.bincount(rest_g[hit], minlength=n_cfg)
        for j in range(k):
            take = (filled <= j) & (j < filled + cnt)
            out[take, j] = m[take]
        filled += cnt
        rest = ~hit & (filled[rest_g] < k)
        rest_g, rest_t = rest_g[rest], rest_t[rest]
    return out


def config_stats(g: np.ndarray, t: np.ndarray, e: np.ndarray, n_cfg: int) -> dict[str, np.ndarray]:
    """Per configuration: count, means, centred sums of squares and cross-products, log-time mean and
    spread, and the three fastest times. Two passes (means, then centred sums) for accuracy, each a slice of
    rows at a time."""
    n = np.bincount(g, minlength=n_cfg).astype(np.float64)
    sums = {k: np.zeros(n_cfg) for k in ("t", "e", "lt", "tt", "ee", "te", "ll")}
    fastest = np.full((n_cfg, 3), np.inf)
    for i in range(0, t.size, CHUNK_ROWS):
        gs, ts = g[i:i + CHUNK_ROWS], t[i:i + CHUNK_ROWS]
        sums["t"] += np.bincount(gs, ts, minlength=n_cfg)
        sums["e"] += np.bincount(gs, e[i:i + CHUNK_ROWS], minlength=n_cfg)
        sums["lt"] += np.bincount(gs, np.log(ts), minlength=n_cfg)
        fastest = np.sort(np.hstack([fastest, smallest(gs, ts, n_cfg, 3)]), axis=1)[:, :3]
    with np.errstate(invalid="ignore", divide="ignore"):
        tm, em, ltm = sums["t"] / n, sums["e"] / n, sums["lt"] / n
    for i in range(0, t.size, CHUNK_ROWS):
        gs = g[i:i + CHUNK_ROWS]
        dt = t[i:i + CHUNK_ROWS] - tm[gs]
        de = e[i:i + CHUNK_ROWS] - em[gs]
        dl = np.log(t[i:i + CHUNK_ROWS]) - ltm[gs]
        sums["tt"] += np.bincount(gs, dt * dt, minlength=n_cfg)
        sums["ee"] += np.bincount(gs, de * de, minlength=n_cfg)
        sums["te"] += np.bincount(gs, dt * de, minlength=n_cfg)
        sums["ll"] += np.bincount(gs, dl * dl, minlength=n_cfg)
    return {"n": n, "time_s": tm, "energy_j": em, "time_ss": sums["tt"], "energy_ss": sums["ee"],
            "time_energy_sp": sums["te"], "log_time_mean": ltm, "log_time_ss": sums["ll"],
            "time_min1": fastest[:, 0], "time_min2": fastest[:, 1], "time_min3": fastest[:, 2]}
