"""Running per-configuration statistics for a fit in bounded memory (issue 28): each batch's statistics are
merged into running ones with Chan et al.'s pairwise update, and at most ``max_rows`` rows are kept, a uniform
reservoir sample once there are more. :class:`archline.fit.io.configs.KeyReducer` uses it with ``max_rows``."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from archline.fit.io.config_keys import _hash
from archline.fit.io.config_stats import config_stats, smallest
from archline.model.errors import ArchlineFitError

#: Distinct configurations a bounded fit keeps statistics for, unless ``ARCHLINE_FIT_MAX_CONFIGS`` says otherwise
#: (docs/lab.md). Chosen so that ``archline fit`` stays well under 1 GB peak RSS at the limit: measured 0.47-0.55 GB
#: at 200,000 (basic and auto models, 0.2 M to 2 M rows; benchmarks/fit_bounded.py --configs): the reader holds
#: about 0.35 kB per configuration, the whole fit about 1-1.5 kB.
MAX_CONFIGS = 200_000
CONFIGS_ENV = "ARCHLINE_FIT_MAX_CONFIGS"


class TooManyConfigurationsError(ArchlineFitError):
    """More distinct configurations than the bounded fit keeps statistics for (exit 2, before any output)."""

    def __init__(self, count: int, limit: int) -> None:
        self.count, self.limit = count, limit
        super().__init__(f"the input has more than {limit:,} distinct configurations (kernel, precision, level, "
                         f"counts and settings), the most a fit keeps in bounded memory; select fewer rows with "
                         f"--where, or raise the limit with {CONFIGS_ENV}=N")


def config_limit() -> int:
    """:data:`MAX_CONFIGS`, or the positive integer in ``ARCHLINE_FIT_MAX_CONFIGS``."""
    import os

    raw = os.environ.get(CONFIGS_ENV, "").strip().replace("_", "")
    if not raw:
        return MAX_CONFIGS
    if not raw.isdigit() or int(raw) < 1:
        raise ArchlineFitError(f"{CONFIGS_ENV}={os.environ[CONFIGS_ENV]!r} is not a positive whole number; "
                               f"unset it (default {MAX_CONFIGS:,}) or give one, e.g. {CONFIGS_ENV}=500000")
    return int(raw)

#: Up to this many runs in a batch, each run is reduced on its own slice (cache-sized, no per-row temporaries).
LOOP_RUNS = 512


def _run_sums(t: np.ndarray, e: np.ndarray, starts: np.ndarray, lens_i: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per run: means of time, energy and log time, and the centred sums tt, ee, te, ll (two passes)."""
    lens = lens_i.astype(np.float64)
    lt = np.log(t)
    mt, me, ml = (np.add.reduceat(x, starts) / lens for x in (t, e, lt))
    dt = t - np.repeat(mt, lens_i)
    de = e - np.repeat(me, lens_i)
    dl = lt - np.repeat(ml, lens_i)
    del lt
    r_tt, r_ee, r_te, r_ll = (np.add.reduceat(x * y, starts) for x, y in ((dt, dt), (de, de), (dt, de), (dl, dl)))
    return mt, me, ml, r_tt, r_ee, r_te, r_ll


def _run_sums_loop(t: np.ndarray, e: np.ndarray, starts: np.ndarray, thr: np.ndarray
                   ) -> tuple[tuple[np.ndarray, ...], np.ndarray]:
    """:func:`_run_sums` one run's slice at a time (few long runs), and each run's three fastest times below
    ``thr`` (inf-padded)."""
    r = starts.size
    out = np.zeros((7, r))
    fast = np.full((r, 3), np.inf)
    ends = np.append(starts[1:], t.size)
    for i, (a, b) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
        x, y = t[a:b], e[a:b]
        lx = np.log(x)
        mx, my, ml = x.mean(), y.mean(), lx.mean()
        dx, dy, lx = x - mx, y - my, lx - ml
        out[:, i] = mx, my, ml, dx @ dx, dy @ dy, dx @ dy, lx @ lx
        c = x[x < thr[i]] if np.isfinite(thr[i]) else x
        if c.size > 3:
            c = np.partition(c, 2)[:3]
        fast[i, :c.size] = np.sort(c)
    return tuple(out), fast


class StreamStats:
    """Running per-configuration statistics (the :data:`STAT_COLUMNS`), merged batch by batch with the
    pairwise update of Chan, Golub and LeVeque (1979) for means and centred sums, and a reservoir of rows
    (Vitter's algorithm R, a batch at a time) once there are more than ``max_rows``."""

    _SUMS = ("time_s", "energy_j", "log_time_mean", "time_ss", "energy_ss", "time_energy_sp", "log_time_ss")

    def __init__(self, n_keys: int, max_rows: int | None, seed: int = 0, max_configs: int | None = None) -> None:
        self.n_keys = n_keys
        self.max_rows = max_rows if max_rows is not None else 1 << 62
        self.max_configs = max_configs if max_configs is not None else config_limit()
        # Per configuration only numpy rows (no Python object each): the keys' bits in one (cap, K) table, and a
        # sorted index of the keys' hashes (hash -> configuration) searched a batch at a time. A hash shared by
        # two different keys (never seen) sends the later one to ``_spill``, an exact dict.
        self.size = 0
        self.cap = 0
        self.key_bits = np.zeros((0, n_keys), dtype=np.uint64)
        self._hs = np.zeros(0, dtype=np.uint64)
        self._hid = np.zeros(0, dtype=np.int64)
        self._spill: dict[bytes, int] = {}
        self.n = np.zeros(0)
        self.acc: dict[str, np.ndarray] = {k: np.zeros(0) for k in self._SUMS}
        self.fastest = np.zeros((0, 3))
        self.first_src = np.zeros(0, dtype=np.int32)
        self.first_pos = np.zeros(0, dtype=np.int64)
        self.n_seen = 0
        self.sampled = False
        self.rng = np.random.default_rng(seed)
        self._rows: list[tuple[np.ndarray, ...]] = []      # until max_rows is passed
        self._res: tuple[np.ndarray, ...] | None = None    # the reservoir after

    def _grow(self, size: int) -> None:
        if size <= self.cap:
            return
        new = max(size, self.cap + self.cap // 2, 64)      # 1.5x: the copy made while growing stays small

        def ext(a: np.ndarray, fill: float) -> np.ndarray:
            out = np.full((new, *a.shape[1:]), fill, dtype=a.dtype)
            out[: a.shape[0]] = a
            return out
        self.key_bits = ext(self.key_bits, 0)
        self.n = ext(self.n, 0.0)
        self.acc = {k: ext(v, 0.0) for k, v in self.acc.items()}
        self.fastest = ext(self.fastest, np.inf)
        self.first_src, self.first_pos = ext(self.first_src, 0), ext(self.first_pos, 0)
        self.cap = new

    def _ids(self, keys: np.ndarray, src: int, pos: np.ndarray, first_rows: np.ndarray) -> np.ndarray:
        """Running index of each of a batch's distinct keys; new ones are numbered in batch order (the order of
        first appearance) and registered with their first row. Past ``max_configs`` nothing is registered and
        :class:`TooManyConfigurationsError` is raised."""
        keys = np.ascontiguousarray(keys, dtype=np.uint64).reshape(-1, self.n_keys)
        u = len(keys)
        gid = np.full(u, -1, dtype=np.int64)
        if u == 0:
            return gid
        h = _hash([keys[:, j] for j in range(self.n_keys)]) if self.n_keys else np.zeros(u, dtype=np.uint64)
        at = np.searchsorted(self._hs, h)
        hit = np.zeros(u, dtype=bool)
        inside = at < self._hs.size
        hit[inside] = self._hs[at[inside]] == h[inside]
        cand = self._hid[at[hit]]
        same = (self.key_bits[cand] == keys[hit]).all(axis=1)
        gid[np.flatnonzero(hit)[same]] = cand[same]
        # keys whose hash is new: the first of each hash goes to the index; another key of the same hash
        # (batch keys are distinct) and a key colliding with an indexed one go to the exact spill dict
        fresh = np.flatnonzero(~hit)
        _, first_of = np.unique(h[fresh], return_index=True)
        indexed = np.zeros(u, dtype=bool)
        indexed[fresh[first_of]] = True
        new = indexed.copy()
        spill_new: list[int] = []
        for j in np.flatnonzero((gid < 0) & ~indexed).tolist():     # a hash collision: never seen, kept exact
            k = self._spill.get(keys[j].tobytes())
            if k is None:
                new[j] = True
                spill_new.append(j)
            else:
                gid[j] = k
        js = np.flatnonzero(new)
        if js.size:
            base = self.size
            if base + js.size > self.max_configs:
                raise TooManyConfigurationsError(base + js.size, self.max_configs)
            ids = base + np.arange(js.size, dtype=np.int64)
            self._grow(base + js.size)
            gid[js] = ids
            self.key_bits[ids] = keys[js]
            self.first_src[ids] = src
            self.first_pos[ids] = pos[first_rows[js]]
            self.size = base + js.size
            ix = np.flatnonzero(indexed)
            order = np.argsort(h[ix], kind="stable")
            hs, hid = h[ix][order], gid[ix][order]
            where = np.searchsorted(self._hs, hs)
            self._hs, self._hid = np.insert(self._hs, where, hs), np.insert(self._hid, where, hid)
            for j in spill_new:
                self._spill[keys[j].tobytes()] = int(gid[j])
        return gid

    def add(self, keys: np.ndarray, codes: np.ndarray, t: np.ndarray, e: np.ndarray, src: int, pos: np.ndarray,
            first: np.ndarray) -> None:
        """A batch keyed row by row: ``codes`` (row -> distinct key) and ``first`` (each key's first row)."""
        gid = self._ids(keys, src, pos, first)
        self._merge(gid, config_stats(codes, t, e, len(keys)))
        self._keep(lambda idx: gid[codes[idx]], t, e, src, pos)

    def add_runs(self, keys: np.ndarray, rcodes: np.ndarray, starts: np.ndarray, t: np.ndarray, e: np.ndarray,
                 src: int, pos: np.ndarray, first_rows: np.ndarray) -> None:
        """A batch in runs of one configuration: run ``r`` is rows ``starts[r]`` up to the next start and has
        distinct key ``rcodes[r]``. Each run's mean and centred sums come from its own rows (two passes, as
        :func:`config_stats`), the runs of one key are combined with the pairwise update, and no per-row
        configuration index is made unless a row is kept."""
        gid = self._ids(keys, src, pos, first_rows)
        u, n = len(keys), t.size
        lens_i = np.diff(starts, append=n)
        lens = lens_i.astype(np.float64)
        thr = self.fastest[gid, 2][rcodes]   # only rows faster than a configuration's third fastest count
        if starts.size <= LOOP_RUNS:
            (mt, me, ml, r_tt, r_ee, r_te, r_ll), run_fast = _run_sums_loop(t, e, starts, thr)
        else:
            mt, me, ml, r_tt, r_ee, r_te, r_ll = _run_sums(t, e, starts, lens_i)
            cand = np.flatnonzero(t < np.repeat(thr, lens_i))
            run_of = np.searchsorted(starts, cand, side="right") - 1
            run_fast = smallest(run_of, t[cand], starts.size, 3)
        nb = np.bincount(rcodes, lens, minlength=u)
        bt, be, bl = (np.bincount(rcodes, lens * m, minlength=u) / nb for m in (mt, me, ml))
        ct, ce, cl = mt - bt[rcodes], me - be[rcodes], ml - bl[rcodes]
        b = {"n": nb, "time_s": bt, "energy_j": be, "log_time_mean": bl,
             "time_ss": np.bincount(rcodes, r_tt + lens * ct * ct, minlength=u),
             "energy_ss": np.bincount(rcodes, r_ee + lens * ce * ce, minlength=u),
             "time_energy_sp": np.bincount(rcodes, r_te + lens * ct * ce, minlength=u),
             "log_time_ss": np.bincount(rcodes, r_ll + lens * cl * cl, minlength=u)}
        fastest = smallest(np.repeat(rcodes, 3), run_fast.ravel(), u, 3)
        b["time_min1"], b["time_min2"], b["time_min3"] = fastest[:, 0], fastest[:, 1], fastest[:, 2]
        self._merge(gid, b)
        row_g = gid[rcodes]

        def g_of(idx: slice | np.ndarray) -> np.ndarray:
            if isinstance(idx, slice):
                return np.repeat(row_g, lens_i)[idx]
            return row_g[np.searchsorted(starts, idx, side="right") - 1]
        self._keep(g_of, t, e, src, pos)

    def _merge(self, gid: np.ndarray, b: dict[str, np.ndarray]) -> None:
        na, nb = self.n[gid], b["n"]
        n = na + nb
        a = {k: v[gid] for k, v in self.acc.items()}
        with np.errstate(invalid="ignore", divide="ignore"):
            f = np.where(n > 0, nb / np.where(n > 0, n, 1), 0.0)
            w = np.where(n > 0, na * nb / np.where(n > 0, n, 1), 0.0)
        dt = b["time_s"] - a["time_s"]
        de = b["energy_j"] - a["energy_j"]
        dl = b["log_time_mean"] - a["log_time_mean"]
        out = {"time_ss": a["time_ss"] + b["time_ss"] + w * dt * dt,
               "energy_ss": a["energy_ss"] + b["energy_ss"] + w * de * de,
               "time_energy_sp": a["time_energy_sp"] + b["time_energy_sp"] + w * dt * de,
               "log_time_ss": a["log_time_ss"] + b["log_time_ss"] + w * dl * dl,
               "time_s": a["time_s"] + f * dt, "energy_j": a["energy_j"] + f * de,
               "log_time_mean": a["log_time_mean"] + f * dl}
        for k, v in out.items():
            self.acc[k][gid] = v
        self.n[gid] = n
        self.fastest[gid] = np.sort(np.hstack([self.fastest[gid], np.column_stack(
            [b["time_min1"], b["time_min2"], b["time_min3"]])]), axis=1)[:, :3]

    def _keep(self, g_of: Callable[[slice | np.ndarray], np.ndarray], t: np.ndarray, e: np.ndarray, src: int,
              pos: np.ndarray) -> None:
        """Keep a batch's rows while they fit, a uniform reservoir sample after; ``g_of`` gives the running
        configuration index of the rows asked for (made only for the rows kept)."""
        def take(idx: slice | np.ndarray) -> tuple[np.ndarray, ...]:
            g = g_of(idx).astype(np.int32)
            return g, t[idx], e[idx], np.full(g.size, src, dtype=np.int32), pos[idx].astype(np.int64)

        m = t.size
        start, self.n_seen = self.n_seen, self.n_seen + m
        if not self.sampled and self.n_seen <= self.max_rows:
            self._rows.append(take(slice(None)))
            return
        off = 0
        if not self.sampled:       # the rows no longer fit: the ones so far become the reservoir's start
            self.sampled = True
            room = self.max_rows - start
            head = take(slice(0, room))
            old = tuple(np.concatenate([*(r[i] for r in self._rows), head[i]]) for i in range(5))
            self._rows.clear()
            self._res = old
            off, start = room, start + room
        assert self._res is not None
        rows, slots = self._draw(start, m - off)
        if rows.size:
            for r, b in zip(self._res, take(rows + off), strict=True):
                r[slots] = b       # a slot drawn twice keeps the later row, as the sequential algorithm

    def _draw(self, start: int, m: int) -> tuple[np.ndarray, np.ndarray]:
        """Algorithm R's replacements among rows ``start .. start+m-1`` (0-based over all rows, ``start`` >=
        max_rows): row i replaces a uniform slot with probability max_rows/(i+1), independently. Drawn without a
        random number per row: candidates at the first row's rate (geometric gaps), each kept with the ratio of
        its own rate to that one (thinning), in row order; then a uniform slot for each."""
        k = self.max_rows
        if m <= 0 or k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        p = k / (start + 1)
        if p > 0.1:                # most rows are candidates: one uniform per row is cheaper than the gaps
            cand = np.flatnonzero(self.rng.random(m) * (start + 1 + np.arange(m)) < k)
            return cand, self.rng.integers(0, k, size=cand.size)
        parts, last = [], -1
        while last < m - 1:
            gaps = self.rng.geometric(p, size=int(m * p * 1.05) + 64)
            c = last + np.cumsum(gaps)
            parts.append(c[c < m])
            last = int(c[-1])
        cand = np.concatenate(parts)
        cand = cand[self.rng.random(cand.size) * (start + 1 + cand) < start + 1]
        return cand, self.rng.integers(0, k, size=cand.size)

    def keys_table(self) -> np.ndarray:
        """(configurations, K) key bits (a view)."""
        return self.key_bits[:self.size]

    def rows(self) -> tuple[np.ndarray, ...]:
        if self._res is not None:
            return self._res
        if not self._rows:
            return (np.zeros(0, dtype=np.int32), np.zeros(0), np.zeros(0), np.zeros(0, dtype=np.int32),
                    np.zeros(0, dtype=np.int64))
        out = tuple(np.concatenate([r[i] for r in self._rows]) for i in range(5))
        self._rows.clear()
        self._rows.append(out)
        return out

    def stats(self) -> dict[str, np.ndarray]:
        """The statistics columns (views: no second copy per configuration)."""
        k = self.size
        d = {"n": self.n[:k], **{name: v[:k] for name, v in self.acc.items()}}
        d["time_min1"], d["time_min2"], d["time_min3"] = (self.fastest[:k, i] for i in range(3))
        return d


#: Rows per slice in the passes over rows (bounded temporaries for ten million rows).
