"""Running per-configuration statistics for a fit in bounded memory (issue 28): each batch's statistics are
merged into running ones with Chan et al.'s pairwise update, and at most ``max_rows`` rows are kept, a uniform
reservoir sample once there are more. :class:`archline.fit.io.configs.KeyReducer` uses it with ``max_rows``."""

from __future__ import annotations

import numpy as np

from archline.fit.io.configs import config_stats


class StreamStats:
    """Running per-configuration statistics (the :data:`STAT_COLUMNS`), merged batch by batch with the
    pairwise update of Chan, Golub and LeVeque (1979) for means and centred sums, and a reservoir of rows
    (Vitter's algorithm R, a batch at a time) once there are more than ``max_rows``."""

    _SUMS = ("time_s", "energy_j", "log_time_mean", "time_ss", "energy_ss", "time_energy_sp", "log_time_ss")

    def __init__(self, n_keys: int, max_rows: int | None, seed: int = 0) -> None:
        self.n_keys = n_keys
        self.max_rows = max_rows if max_rows is not None else 1 << 62
        self.ids: dict[bytes, int] = {}
        self.keys: list[np.ndarray] = []
        self.cap = 0
        self.n = np.zeros(0)
        self.acc: dict[str, np.ndarray] = {k: np.zeros(0) for k in self._SUMS}
        self.fastest = np.zeros((0, 3))
        self.first_src = np.zeros(0, dtype=np.int64)
        self.first_pos = np.zeros(0, dtype=np.int64)
        self.n_seen = 0
        self.sampled = False
        self.rng = np.random.default_rng(seed)
        self._rows: list[tuple[np.ndarray, ...]] = []      # until max_rows is passed
        self._res: tuple[np.ndarray, ...] | None = None    # the reservoir after

    def _grow(self, size: int) -> None:
        if size <= self.cap:
            return
        new = max(size, 2 * self.cap, 64)

        def ext(a: np.ndarray, fill: float) -> np.ndarray:
            out = np.full((new, *a.shape[1:]), fill, dtype=a.dtype)
            out[: a.shape[0]] = a
            return out
        self.n = ext(self.n, 0.0)
        self.acc = {k: ext(v, 0.0) for k, v in self.acc.items()}
        self.fastest = ext(self.fastest, np.inf)
        self.first_src, self.first_pos = ext(self.first_src, 0), ext(self.first_pos, 0)
        self.cap = new

    def add(self, keys: np.ndarray, codes: np.ndarray, t: np.ndarray, e: np.ndarray, src: int, pos: np.ndarray,
            first: np.ndarray) -> None:
        gid = np.empty(len(keys), dtype=np.int64)
        for j, row in enumerate(np.ascontiguousarray(keys)):
            b = row.tobytes()
            k = self.ids.get(b)
            if k is None:
                k = self.ids[b] = len(self.ids)
                self.keys.append(row.copy())
                self._grow(k + 1)
                self.first_src[k], self.first_pos[k] = src, int(pos[first[j]])
            gid[j] = k
        b_stats = config_stats(codes, t, e, len(keys))
        self._merge(gid, b_stats)
        self._keep(gid[codes].astype(np.int32), t, e, src, pos)

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

    def _keep(self, g: np.ndarray, t: np.ndarray, e: np.ndarray, src: int, pos: np.ndarray) -> None:
        batch: tuple[np.ndarray, ...] = (g, t, e, np.full(t.size, src, dtype=np.int32), pos.astype(np.int64))
        start, self.n_seen = self.n_seen, self.n_seen + t.size
        if not self.sampled and self.n_seen <= self.max_rows:
            self._rows.append(batch)
            return
        if not self.sampled:       # the rows no longer fit: the ones so far become the reservoir's start
            self.sampled = True
            old = tuple(np.concatenate([r[i] for r in self._rows]) if self._rows else batch[i][:0]
                        for i in range(5))
            self._rows.clear()
            room = self.max_rows - old[0].size
            self._res = tuple(np.concatenate([o, b[:room]]) for o, b in zip(old, batch, strict=True))
            batch, start = tuple(b[room:] for b in batch), start + room
        assert self._res is not None
        if not batch[0].size:
            return
        # algorithm R: row i (0-based over all rows) replaces slot j ~ U{0..i} when j < max_rows
        j = (self.rng.random(batch[0].size) * (start + 1 + np.arange(batch[0].size))).astype(np.int64)
        hit = j < self.max_rows
        for r, b in zip(self._res, batch, strict=True):
            r[j[hit]] = b[hit]       # a slot drawn twice keeps the later row, as the sequential algorithm

    def keys_table(self) -> np.ndarray:
        return np.vstack(self.keys) if self.keys else np.zeros((0, self.n_keys), dtype=np.uint64)

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
        k = len(self.keys)
        d = {"n": self.n[:k].copy(), **{name: v[:k].copy() for name, v in self.acc.items()}}
        d["time_min1"], d["time_min2"], d["time_min3"] = (self.fastest[:k, i].copy() for i in range(3))
        return d


#: Rows per slice in the passes over rows (bounded temporaries for ten million rows).
