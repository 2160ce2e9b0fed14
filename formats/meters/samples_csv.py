"""The samples CSV (``t_s,channel,voltage_v,current_a,power_w``) written straight from decoded PowerMon 2
records, a block at a time, while the decoder goes on: the bytes :func:`archline.formats.meters.traces.csv_bytes`
writes, in a third of the time.

Everything after ``t_s`` on a row depends only on the record's (channel, voltage code, current code): a block's
distinct keys (a few thousand among hundreds of thousands of records) are formatted once and gathered, as is
``t_s``, which depends only on the event. Blocks are formatted on worker threads (numpy releases the GIL) and
written in order by a writer thread that also flushes to disk as it goes, so the decoder, the formatting and
the disk overlap. A block whose keys are mostly distinct, or whose times fall outside the fixed-width format,
is formatted row by row instead (same bytes).
"""

from __future__ import annotations

import gzip
import os
import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any, Protocol

import numpy as np
import numpy.typing as npt

from archline.common.arrow import arrow_of, numpy_of
from archline.formats.meters.samples import COLUMNS, Samples
from archline.formats.meters.traces import SIG_T, SIG_V, _chunk_rows, _fmt_matrix

T_WIDTH = SIG_T + 2                           #: "t_s," bytes
TAIL_WIDTH = 2 + 3 * (SIG_V + 2) + 1          #: ",c,V,I,P\n" bytes
SYNC_BYTES = 64 << 20                         #: flush to disk every this many bytes written
QUEUE_BLOCKS = 3                              #: blocks formatted ahead of the writer (bounds memory)
BLOCK_ROWS = 1 << 19                          #: rows formatted as one block


class CodeRecords(Protocol):
    """A meter's decoded records as raw codes (the PowerMon 2's ``RecordArrays``), in arrival order."""

    event: npt.NDArray[np.int64]
    channel: npt.NDArray[np.int16]
    vcode: npt.NDArray[np.uint16]
    icode: npt.NDArray[np.uint16]

    def __len__(self) -> int: ...

    @staticmethod
    def concat(parts: Sequence[Any]) -> Any: ...


class RowFormat(Protocol):
    """What a row needs besides the record, from the meter that decodes the codes (the PowerMon 2's
    ``RowFormat`` in its folder's ``row_format.py``): the event -> t_s map, the formatted volts of each
    voltage code and amps of each (channel, current code), and the power of (channel, vcode, icode)."""

    t_of_event: Callable[[npt.NDArray[np.int64]], npt.NDArray[np.float64]]
    vtab: npt.NDArray[np.uint8]
    itab: npt.NDArray[np.uint8]
    meter: str
    emulated: bool | None
    clock: str

    def samples(self, rec: Any) -> Samples: ...

    def power_w(self, channel: npt.NDArray[np.int64], vcode: npt.NDArray[Any], icode: npt.NDArray[Any]
                ) -> npt.NDArray[np.float64]: ...


#: the largest (channels x voltage codes x current codes) box a block's keys are numbered in directly
DIRECT_KEYS = 1 << 22


def _distinct(ch: npt.NDArray[Any], vcode: npt.NDArray[Any], icode: npt.NDArray[Any]
              ) -> tuple[npt.NDArray[np.int32], int]:
    """Index of each (channel, voltage code, current code) among the block's distinct ones, and their number.

    A meter's codes move within a narrow band, so the keys are numbered in the box their ranges span (one scatter
    and one gather, no sort, no hash); a block whose box is too large (noise over the whole ADC range) goes to
    pyarrow's hash table (imported only then: it costs a tenth of a second, a fifth of a decode)."""
    c0, v0, i0 = int(ch.min()), int(vcode.min()), int(icode.min())
    nc, nv, ni = int(ch.max()) - c0 + 1, int(vcode.max()) - v0 + 1, int(icode.max()) - i0 + 1
    if nc * nv * ni <= DIRECT_KEYS:
        box = ch.astype(np.int32)          # ((c - c0) * nv + v - v0) * ni + i - i0, in place
        box -= c0
        box *= nv
        box += vcode
        box -= v0
        box *= ni
        box += icode
        box -= i0
        present = np.zeros(nc * nv * ni, dtype=bool)
        present[box] = True
        ids = np.flatnonzero(present)
        number = np.empty(present.size, dtype=np.int32)
        number[ids] = np.arange(ids.size, dtype=np.int32)
        return number[box], int(ids.size)
    import pyarrow.compute as pc

    key = (ch.astype(np.uint32) << 24) | (vcode.astype(np.uint32) << 12) | icode.astype(np.uint32)
    enc = pc.dictionary_encode(arrow_of(key))
    return numpy_of(enc.indices), len(enc.dictionary)


def _arrow_rows(s: Samples) -> bytes:
    import pyarrow as pa
    import pyarrow.csv as pcsv

    cols = s.columns()
    table = pa.Table.from_arrays([arrow_of(np.asarray(v)) for v in cols.values()], names=list(cols))
    sink = pa.BufferOutputStream()
    pcsv.write_csv(table, sink, pcsv.WriteOptions(include_header=False, quoting_style="none"))
    return bytes(sink.getvalue())


ROW_DTYPE = np.dtype([("t", f"V{SIG_T + 1}"), ("rest", f"V{TAIL_WIDTH}")])


def format_block(rec: CodeRecords, fmt: RowFormat, out: npt.NDArray[np.uint8] | None = None) -> npt.NDArray[Any]:
    """The CSV rows of a block of records, as one contiguous byte array (in ``out`` when it is big enough)."""
    n = len(rec)
    ch = rec.channel
    e0, e1 = int(rec.event.min()), int(rec.event.max())
    times = fmt.t_of_event(np.arange(e0, e1 + 1, dtype=np.int64))
    fixed = (int(ch.min()) >= 0 and int(ch.max()) <= 9 and bool(np.isfinite(times).all())
             and float(times.min()) >= 0 and float(times.max()) < 10.0 ** (SIG_T - 7))
    if not fixed:   # as csv_bytes does: pyarrow's writer (shortest repr) instead of the fixed-width format
        return np.frombuffer(_arrow_rows(fmt.samples(rec)), dtype=np.uint8)
    kidx, u = _distinct(ch, rec.vcode, rec.icode)
    if u > n // 4:
        return np.frombuffer(_chunk_rows(fmt.samples(rec), 0, n), dtype=np.uint8)
    first = np.full(u, n, dtype=np.int64)
    np.minimum.at(first, kidx, np.arange(n, dtype=np.int64))
    c, v, i = ch[first].astype(np.int64), rec.vcode[first], rec.icode[first]
    tail = np.empty((u, TAIL_WIDTH), dtype=np.uint8)
    w = SIG_V + 1
    tail[:, 0], tail[:, 1], tail[:, 2] = ord(","), c + ord("0"), ord(",")
    tail[:, 3:3 + w] = fmt.vtab[v]
    tail[:, 3 + w] = ord(",")
    tail[:, 4 + w:4 + 2 * w] = fmt.itab[c * 4096 + i]
    tail[:, 4 + 2 * w] = ord(",")
    tail[:, 5 + 2 * w:5 + 3 * w] = _fmt_matrix(fmt.power_w(c, v, i), SIG_V)
    tail[:, -1] = ord("\n")
    head = _fmt_matrix(times, SIG_T)
    size = n * ROW_DTYPE.itemsize
    rows = (out[:size] if out is not None and out.nbytes >= size else np.empty(size, np.uint8)).view(ROW_DTYPE)
    np.take(head.view(f"V{SIG_T + 1}").reshape(-1), rec.event - e0, out=rows["t"], mode="clip")
    np.take(tail.view(f"V{TAIL_WIDTH}").reshape(-1), kidx, out=rows["rest"], mode="clip")
    return rows.view(np.uint8)


class _Buffers:
    """Row buffers the writer hands back for the next blocks: a fresh process would otherwise fault in (and the
    kernel zero) every block's pages, a tenth of the whole decode."""

    def __init__(self) -> None:
        self._free: list[npt.NDArray[np.uint8]] = []
        self._lock = threading.Lock()

    def get(self, nbytes: int) -> npt.NDArray[np.uint8] | None:
        with self._lock:
            for k, b in enumerate(self._free):
                if b.nbytes >= nbytes:
                    return self._free.pop(k)
        return np.empty(nbytes + nbytes // 4, np.uint8) if nbytes else None   # room for a longer next block

    def put(self, buf: npt.NDArray[Any]) -> None:
        base = buf.base if isinstance(buf.base, np.ndarray) and buf.base.dtype == np.uint8 else buf
        if base.dtype == np.uint8 and base.ndim == 1:
            with self._lock:
                self._free.append(base)


def _format_parts(parts: list[CodeRecords], fmt: RowFormat, buffers: _Buffers) -> npt.NDArray[Any]:
    rec: CodeRecords = type(parts[0]).concat(parts)
    return format_block(rec, fmt, buffers.get(len(rec) * ROW_DTYPE.itemsize))


class CsvStream:
    """Blocks of records in, CSV rows out, in order, formatted ahead on worker threads.

    ``path`` is the final name; rows go to ``tmp`` (the owner, :class:`archline.formats.meters.samples_file.
    SamplesFile`, renames it). ``.csv.gz`` is compressed (level 1) by the writer thread. ``sync(fd)`` makes the
    file durable (a device output cannot be synced: the owner passes one that allows that)."""

    def __init__(self, path: Path, tmp: Path, fmt: RowFormat, workers: int | None = None,
                 sync: Callable[[int], None] = os.fsync) -> None:
        self.fmt = fmt
        self._sync = sync
        self.n_rows = 0
        self._raw: IO[bytes] = open(tmp, "wb")
        self._out: IO[bytes] = (gzip.GzipFile(fileobj=self._raw, mode="wb", compresslevel=1)  # type: ignore[assignment]
                                if path.name.lower().endswith(".gz") else self._raw)
        self._out.write((",".join(COLUMNS) + "\n").encode())
        self._pool = ThreadPoolExecutor(workers or max(1, min(2, os.cpu_count() or 1)))
        self._q: queue.Queue[Future[npt.NDArray[Any]] | None] = queue.Queue(maxsize=QUEUE_BLOCKS)
        self._error: BaseException | None = None
        self._buffers = _Buffers()
        self._writer = threading.Thread(target=self._drain, name="samples csv writer", daemon=True)
        self._writer.start()

    def submit(self, parts: list[CodeRecords]) -> None:
        """Queue finished blocks of records (joined and formatted on a worker, not on the caller's thread)."""
        if self._error is not None:
            raise self._error
        batch: list[CodeRecords] = []
        size = 0
        for p in [*parts, None]:
            if p is not None and size + len(p) <= BLOCK_ROWS:
                batch.append(p)
                size += len(p)
                continue
            if size:
                self.n_rows += size
                self._q.put(self._pool.submit(_format_parts, batch, self.fmt, self._buffers))
            batch, size = ([p], len(p)) if p is not None else ([], 0)

    def _drain(self) -> None:
        since = 0
        while True:
            fut = self._q.get()
            if fut is None:
                return
            try:
                if self._error is None:
                    block = fut.result()
                    self._out.write(block.data)
                    since += block.nbytes
                    self._buffers.put(block)
                    if since >= SYNC_BYTES and self._out is self._raw:
                        self._raw.flush()
                        self._sync(self._raw.fileno())  # the disk keeps up instead of one long fsync at the end
                        since = 0
            except BaseException as e:  # handed to the caller by close()
                self._error = e

    def close(self) -> None:
        """Write what is queued, flush and fsync; raises a formatting or disk error."""
        self._q.put(None)
        self._writer.join()
        self._pool.shutdown()
        try:
            if self._out is not self._raw:
                self._out.close()
            self._raw.flush()
            self._sync(self._raw.fileno())
        finally:
            self._raw.close()
        if self._error is not None:
            raise self._error

    def abort(self) -> None:
        self._error = self._error or RuntimeError("aborted")
        self._q.put(None)
        self._writer.join()
        self._pool.shutdown(cancel_futures=True)
        self._raw.close()
