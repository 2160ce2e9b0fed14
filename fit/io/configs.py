"""Result rows grouped into configurations, with the sufficient statistics every fit works from.

A sweep repeats each configuration (the same kernel, precision, level, counts and settings) many times, and
every model here is, for one configuration, affine in the row's measured time: the design row is
``a + t*b`` and the response ``e/N`` (N the configuration's own operation count). So a configuration's rows
enter least squares only through their count n, the means of time and energy, and the centred sums of
squares and cross-products of time and energy (:mod:`archline.fit.regress.sufficient` turns these into two
pseudo-rows whose Gram matrix equals that of the n rows). Beside those the table keeps the mean and spread
of log time (the capped fit's time residual), the three fastest times (the observed peak rates) and where
each configuration first appears (for messages).

Rows keep only what per-row errors need: time, energy, configuration index, and file and line.

Grouping hashes the key columns' bit patterns (NaN and -0.0 made canonical) and checks the result; a hash
collision falls back to an exact sort, so two rows share a configuration exactly when every key is equal.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from archline.fit.io.config_keys import factorize_rows, key_bits
from archline.fit.io.config_stats import config_stats
from archline.formats.results_check import Source

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from archline.fit.io.stream_stats import StreamStats

#: Statistics columns of a configuration table (besides its keys). ``time_s`` and ``energy_j`` are means,
#: so a model's prediction on the table is its prediction at each configuration's mean time.
STAT_COLUMNS: tuple[str, ...] = ("n", "time_s", "energy_j", "time_ss", "energy_ss", "time_energy_sp",
                                 "log_time_mean", "log_time_ss", "time_min1", "time_min2", "time_min3",
                                 "first_src", "first_pos")


class Columns:
    """A small column table: name -> 1-D numpy array, all of one length (one entry per configuration)."""

    def __init__(self, data: dict[str, np.ndarray] | None = None) -> None:
        self._d: dict[str, np.ndarray] = dict(data or {})

    def __getitem__(self, name: str) -> np.ndarray:
        return self._d[name]

    def __setitem__(self, name: str, value: np.ndarray) -> None:
        self._d[name] = np.asarray(value)

    def __contains__(self, name: object) -> bool:
        return name in self._d

    def __len__(self) -> int:
        return len(next(iter(self._d.values()))) if self._d else 0

    @property
    def columns(self) -> list[str]:
        return list(self._d)

    def get(self, name: str, default: Any = None) -> Any:
        return self._d.get(name, default)

    def take(self, index: np.ndarray) -> Columns:
        """Rows by integer index or boolean mask."""
        return Columns({k: v[index] for k, v in self._d.items()})

    def num(self, name: str) -> np.ndarray:
        """A numeric column as float64; 0 when absent (a count not in the data)."""
        v = self._d.get(name)
        return np.zeros(len(self)) if v is None else np.asarray(v, dtype=np.float64)


@dataclass
class Grouped:
    """Configurations (``cfg``, one entry each: keys and statistics) and the rows behind them."""

    cfg: Columns
    g: np.ndarray            # row -> configuration index
    t: np.ndarray            # row time_s
    e: np.ndarray            # row energy_j
    src: np.ndarray          # row -> index into sources
    pos: np.ndarray          # row line (CSV) or row number (Parquet)
    sources: list[Source] = field(default_factory=list)
    #: text columns kept per row beside the configuration: name -> (codes, values)
    carry: dict[str, tuple[np.ndarray, list[str]]] = field(default_factory=dict)
    #: the rows kept are a uniform (reservoir) sample; the statistics in ``cfg`` are those of every row
    sampled: bool = False
    #: platform -> why its time-only rows have no energy (their notes, once each; fit/io/time_only.py)
    time_only_reasons: dict[str, dict[str, None]] = field(default_factory=dict)

    @property
    def n_rows(self) -> int:
        """Rows behind the configurations (all of them, also when only a sample is kept)."""
        return int(self.cfg["n"].sum()) if self.sampled else int(self.t.size)

    @property
    def n_kept(self) -> int:
        """Rows kept (time, energy, configuration, position): every row, or the reservoir sample."""
        return int(self.t.size)

    @property
    def n_configs(self) -> int:
        return len(self.cfg)

    def where_config(self, j: int) -> str:
        """file:line of the first row of configuration ``j``."""
        if not self.sources:
            return f"configuration {j}"
        return self.sources[int(self.cfg["first_src"][j])].where(int(self.cfg["first_pos"][j]))

    def select(self, keep: np.ndarray) -> Grouped:
        """The configurations where ``keep`` is true, with their rows."""
        keep = np.asarray(keep, dtype=bool)
        if keep.all():
            return self
        new_index = np.cumsum(keep) - 1
        rows = keep[self.g]
        return Grouped(self.cfg.take(keep), new_index[self.g[rows]], self.t[rows], self.e[rows], self.src[rows],
                       self.pos[rows], self.sources, {k: (c[rows], v) for k, (c, v) in self.carry.items()},
                       self.sampled)

    def frame(self) -> pd.DataFrame:
        """The rows as one pandas frame (keys repeated), e.g. for small data in tests and for --points."""
        import pandas as pd

        d: dict[str, Any] = {}
        for k in self.cfg.columns:
            if k in STAT_COLUMNS:
                continue
            d[k] = self.cfg[k][self.g]
        d["time_s"] = self.t
        d["energy_j"] = self.e
        names = np.array([s.name for s in self.sources] or [""], dtype=object)
        d["_file"] = names[self.src] if self.sources else np.full(self.n_kept, "", dtype=object)
        d["_line"] = self.pos
        for k, (codes, values) in self.carry.items():
            d[k] = np.array(values, dtype=object)[codes]
        return pd.DataFrame(d)


class KeyReducer:
    """Builds configuration keys batch by batch (bounded memory): each batch is reduced to its distinct keys
    at once, and only rows' time, energy, local code and position are kept.

    With ``max_rows`` (issue 28) memory does not grow with rows: every batch's configuration statistics are
    merged at once into running ones (:class:`StreamStats`), and at most ``max_rows`` rows are kept, a uniform
    reservoir sample once there are more (for per-row error figures, outliers and plots). While the rows fit,
    they are all kept and ``finish`` computes the statistics from them exactly as without ``max_rows``."""

    def __init__(self, text_keys: Sequence[str], num_keys: Sequence[str], max_rows: int | None = None,
                 seed: int = 0) -> None:
        self.max_rows = max_rows
        from archline.fit.io.stream_stats import StreamStats

        self._stream: StreamStats | None = StreamStats(len(text_keys) + len(num_keys), max_rows, seed) \
            if max_rows is not None else None
        self.text_keys = tuple(text_keys)
        self.num_keys = tuple(num_keys)
        self.dictionaries: dict[str, dict[str, int]] = {k: {} for k in self.text_keys}
        self._keys: list[np.ndarray] = []      # per batch: (U_b, K) uint64 distinct keys
        self._codes: list[np.ndarray] = []     # per batch: row -> offset + local code
        self._first: list[np.ndarray] = []     # per batch: (src, pos) of each distinct key's first row
        self._t: list[np.ndarray] = []
        self._e: list[np.ndarray] = []
        self._src: list[np.ndarray] = []
        self._pos: list[np.ndarray] = []
        self._offset = 0
        self.sources: list[Source] = []
        self._carry: dict[str, list[np.ndarray]] = {}
        self._luts: dict[str, np.ndarray] = {}   # per batch: text key -> local to global codes (stream only)
        self.time_only_reasons: dict[str, dict[str, None]] = {}     # Grouped.time_only_reasons

    @property
    def n_rows(self) -> int:
        """Rows added so far."""
        if self._stream is not None:
            return self._stream.n_seen
        return sum(t.size for t in self._t)

    def source_index(self, src: Source) -> int:
        if not self.sources or self.sources[-1] != src:
            self.sources.append(src)
        return len(self.sources) - 1

    def text_codes(self, name: str, indices: np.ndarray, dictionary: Iterable[str | None],
                   full: bool = False) -> np.ndarray:
        """Global codes of a text column given as dictionary ``indices`` into ``dictionary`` (length 1 when the
        column holds one value, unless ``full``)."""
        glob = self.dictionaries.setdefault(name, {})
        lut = np.array([glob.setdefault("" if v is None else v, len(glob)) for v in dictionary] or [0],
                       dtype=np.uint64)
        if not full and indices.size > 1 and indices.min() == indices.max():
            indices = indices[:1]
        if self._stream is not None and not full and indices.size > 1:
            self._luts[name] = lut      # mapped in add(): at the run starts only, when the rows are in runs
            return indices
        self._luts.pop(name, None)
        return lut[indices]

    def add(self, text: dict[str, np.ndarray], num: dict[str, np.ndarray], t: np.ndarray, e: np.ndarray,
            src: int, pos: np.ndarray, carried: dict[str, np.ndarray] | None = None) -> None:
        if self._stream is not None:
            # runs found on the values themselves (a NaN setting only splits a run), keys made per run
            luts, self._luts = self._luts, {}
            starts = run_starts([text[k] for k in self.text_keys] + [num[k] for k in self.num_keys], t.size)
            if starts is not None:      # rows come in runs of one configuration: key and reduce the runs
                rcols = [luts[k][text[k][starts]] if k in luts else text[k] for k in self.text_keys]
                rcols += [key_bits(num[k][starts] if num[k].size == t.size else num[k]) for k in self.num_keys]
                rcodes, rfirst = factorize_rows(rcols)
                if rcodes.size != starts.size:
                    rcodes, rfirst = np.zeros(starts.size, dtype=np.int64), rfirst[:1]
                keys = np.column_stack([c[rfirst] if c.size == starts.size else np.repeat(c, rfirst.size)
                                        for c in rcols])
                self._stream.add_runs(keys, rcodes, starts, t, e, src, pos, starts[rfirst])
                return
            text = {k: luts[k][v] if k in luts else v for k, v in text.items()}
        cols = [text[k] for k in self.text_keys] + [key_bits(num[k]) for k in self.num_keys]
        codes, first = factorize_rows(cols)
        if codes.size != t.size:     # every key column constant over the batch: all rows are one configuration
            codes, first = np.zeros(t.size, dtype=codes.dtype), first[:1]
        if self._stream is not None:
            keys = np.column_stack([c[first] if c.size == t.size else np.repeat(c, first.size) for c in cols])
            self._stream.add(keys, codes, t, e, src, pos, first)
            return
        self._keys.append(np.column_stack([c[first] if c.size == t.size else np.repeat(c, first.size)
                                           for c in cols]))
        self._codes.append((codes + self._offset).astype(np.int32 if self._offset + first.size < 2**31 else np.int64))
        self._first.append(np.column_stack([np.full(first.size, src, dtype=np.int64), pos[first]]))
        self._offset += first.size
        self._t.append(t)
        self._e.append(e)
        self._src.append(np.full(t.size, src, dtype=np.int32))
        self._pos.append(pos.astype(np.int64 if pos.size and pos.max() >= 2**31 else np.int32))
        for k, v in (carried or {}).items():
            self._carry.setdefault(k, []).append(v.astype(np.int32))

    def finish(self) -> Grouped:
        if self._stream is not None:
            return self._finish_stream(self._stream)
        keys = np.concatenate(self._keys) if self._keys else np.zeros((0, 0), dtype=np.uint64)
        gcodes, gfirst = factorize_rows([keys[:, j] for j in range(keys.shape[1])]) if keys.shape[0] else (
            np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
        wide = self._offset >= 2**31
        g = gcodes.astype(np.int64 if wide else np.int32)[_concat(self._codes, np.int64 if wide else np.int32)]
        first = np.concatenate(self._first)[gfirst]
        cfg = self._config_table(keys[gfirst])
        t, e = _concat(self._t, np.float64), _concat(self._e, np.float64)
        stats = config_stats(g, t, e, gfirst.size)
        for k, v in stats.items():
            cfg[k] = v
        cfg["first_src"], cfg["first_pos"] = first[:, 0], first[:, 1]
        carry: dict[str, tuple[np.ndarray, list[str]]] = {}
        for k, parts in self._carry.items():
            values = [""] * len(self.dictionaries[k])
            for value, code in self.dictionaries[k].items():
                values[code] = value
            carry[k] = (_concat(parts, np.int32), values)
        return Grouped(cfg, g, t, e, _concat(self._src, np.int32), np.concatenate(self._pos), self.sources, carry,
                       time_only_reasons=self.time_only_reasons)

    def _config_table(self, keys: np.ndarray) -> Columns:
        cfg = Columns()
        k_text = len(self.text_keys)
        for j, name in enumerate(self.text_keys):
            names = np.empty(len(self.dictionaries[name]), dtype=object)
            for value, code in self.dictionaries[name].items():
                names[code] = value
            cfg[name] = names[keys[:, j].astype(np.int64)] if names.size else np.full(len(keys), "", dtype=object)
        for j, name in enumerate(self.num_keys):
            cfg[name] = keys[:, k_text + j].copy().view(np.float64)
        return cfg

    def _finish_stream(self, st: StreamStats) -> Grouped:
        keys = st.keys_table()
        cfg = self._config_table(keys)
        g, t, e, src, pos = st.rows()
        n_cfg = len(keys)
        stats = config_stats(g, t, e, n_cfg) if not st.sampled else st.stats()
        for k, v in stats.items():
            cfg[k] = v
        cfg["first_src"], cfg["first_pos"] = st.first_src[:n_cfg], st.first_pos[:n_cfg]
        return Grouped(cfg, g, t, e, src, pos, self.sources, {}, st.sampled, self.time_only_reasons)


#: A batch is reduced run by run when it has at most one run of equal keys per this many rows.
RUN_ROWS = 64


def run_starts(cols: Sequence[np.ndarray], n: int) -> np.ndarray | None:
    """The first row of each run of equal keys (key columns of ``n`` rows, or of one for a constant),
    or None when the runs are short (rows not in runs: grouping row by row is cheaper). A sweep writes a
    point's repeats one after another, so a lab's batches are a few long runs."""
    varying = [c for c in cols if c.size == n and n > 1]
    if not varying:
        return np.zeros(1, dtype=np.int64)
    change = varying[0][1:] != varying[0][:-1]
    tmp = np.empty_like(change)
    for c in varying[1:]:
        np.logical_or(change, np.not_equal(c[1:], c[:-1], out=tmp), out=change)
    inner = np.flatnonzero(change)
    if inner.size + 1 > max(n // RUN_ROWS, 1):
        return None
    out = np.empty(inner.size + 1, dtype=np.int64)
    out[0] = 0
    out[1:] = inner + 1
    return out


def _concat(parts: list[np.ndarray], dtype: type) -> np.ndarray:
    """Concatenate and empty the list (one array type at a time keeps the peak down)."""
    out: np.ndarray = np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype=dtype)
    parts.clear()
    return out


def restat(data: Grouped, rows: np.ndarray) -> Grouped:
    """The same configurations with statistics recomputed from a subset of rows (row-wise cross-validation);
    configurations left without rows are dropped."""
    sub_g, sub_t, sub_e = data.g[rows], data.t[rows], data.e[rows]
    cfg = Columns({k: data.cfg[k] for k in data.cfg.columns})
    for k, v in config_stats(sub_g, sub_t, sub_e, len(cfg)).items():
        cfg[k] = v
    out = Grouped(cfg, sub_g, sub_t, sub_e, data.src[rows], data.pos[rows], data.sources,
                  {k: (c[rows], v) for k, (c, v) in data.carry.items()})
    return out.select(cfg["n"] > 0)


def iter_groups(cfg: Columns, keys: Sequence[str]) -> Iterator[tuple[tuple[Any, ...], np.ndarray]]:
    """(key values, boolean mask over configurations) for each distinct combination of ``keys``, sorted."""
    cols = [np.asarray(cfg[k]) for k in keys]
    seen: dict[tuple[Any, ...], list[int]] = {}
    for j in range(len(cfg)):
        seen.setdefault(tuple(c[j] for c in cols), []).append(j)
    for key in sorted(seen, key=lambda x: tuple(str(v) for v in x)):
        mask = np.zeros(len(cfg), dtype=bool)
        mask[seen[key]] = True
        yield key, mask
