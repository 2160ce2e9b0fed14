"""The one owner of samples files: ``t_s, channel, voltage_v, current_a, power_w`` as ``.csv``, ``.csv.gz`` or
``.parquet``, and the JSON sidecar ``PATH.json`` beside them (:class:`archline.formats.meters.sidecar.SamplesSidecar`,
format ``archline.samples/1``). Every reader and writer of samples files goes through :class:`SamplesFile`.

* **Read once, as a stream**: the file is read whole through :func:`archline.common.files.open_input`, so a pipe
  or ``<(...)`` works (its format is told by its first bytes, not its name); a pipe is bounded by
  :data:`archline.common.files.MAX_STREAM_BYTES`.
* **Checked at the door**: the columns are there and numeric, ``t_s`` of each channel increases, and ``power_w``
  agrees with ``voltage_v`` x ``current_a`` within :data:`~archline.formats.meters.versions.POWER_REL_TOL` (plus
  :data:`~archline.formats.meters.versions.POWER_ABS_TOL_W`) where both are given; the sidecar is validated (pydantic,
  imported only when a sidecar is read).
* **Written under the output policy** (:mod:`archline.common.atomic`): atomically, never onto an input, through a
  symlink; a device or pipe (``/dev/null``) is written as a stream (CSV unless its name says otherwise) and gets no
  sidecar (nothing is written beside a device).

The CSV bytes themselves are formatted by :mod:`archline.formats.meters.traces` (whole samples) and
:mod:`archline.formats.meters.samples_csv` (decoded records, while the decoder goes on).
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from archline.common.atomic import atomic_path, write_atomic
from archline.common.outputs import check_output, is_stream, resolve_output, show
from archline.formats.meters.errors import MeterError
from archline.formats.meters.samples import COLUMNS, Samples
from archline.formats.meters.versions import POWER_ABS_TOL_W, POWER_REL_TOL, SAMPLES_FORMAT

if TYPE_CHECKING:  # pragma: no cover
    from archline.formats.meters.samples_csv import CsvStream, RowFormat
    from archline.formats.meters.sidecar import SamplesSidecar

#: the samples formats, by suffix
SUFFIXES = (".csv", ".csv.gz", ".parquet")


def format_name(path: str | Path) -> str:
    """The name whose suffix gives the format of samples written to ``path``: a symlink's final target's (the
    target names the outputs, docs/errors.md) where that has a samples suffix, else ``path``'s own."""
    p = Path(path)
    try:
        target = resolve_output(p) if p.is_symlink() else p
    except OSError:                      # a loop: the link's own name (writing it is exit 7)
        target = p
    return target.name if target.name.lower().endswith(SUFFIXES) else p.name


def kind_of(path: str | Path) -> str:
    """``parquet``, ``csv.gz`` or ``csv`` by the name (a link's target's, :func:`format_name`; a stream output
    without a known suffix is CSV)."""
    name = format_name(path).lower()
    if name.endswith(".parquet"):
        return "parquet"
    if name.endswith(".csv.gz"):
        return "csv.gz"
    return "csv"


def check_samples_path(path: str | Path) -> None:
    """An output samples file is .csv, .csv.gz or .parquet, or a stream (``/dev/null``, a pipe: CSV), checked
    before anything is recorded or decoded."""
    if not format_name(path).lower().endswith(SUFFIXES) and not is_stream(path):
        raise MeterError(f"unknown samples format for {show(path)} (use .csv, .csv.gz or .parquet)")


def check_samples_output(path: str | Path) -> None:
    """Every file writing samples to ``path`` makes, checked before any is written: the format, then the samples
    file and its sidecar ``PATH.json`` under the output policy (neither may be an input of the command: a decode
    must not leave ``q.csv`` behind and then refuse its sidecar ``q.csv.json``, the capture it read)."""
    check_samples_path(path)
    check_output(path)
    side = sidecar_of(path)
    if side is not None:
        check_output(side)


def sidecar_of(path: str | Path) -> Path | None:
    """``PATH.json``, the sidecar beside a samples file; None for a stream (nothing is written beside a device)."""
    p = Path(path)
    if is_stream(p):
        return None
    return p.with_name(p.name + ".json")


def recorded_capture(path: str | Path) -> Any:
    """The raw capture the sidecar of the samples file ``path`` names (its ``raw`` key), or None where there is no
    sidecar or it cannot be read: a lenient look (a damaged sidecar belongs to the recording being replaced)."""
    side = sidecar_of(path)
    try:
        return json.loads(side.read_text()).get("raw") if side is not None and side.is_file() else None
    except (OSError, ValueError, AttributeError):
        return None


def find_sidecar(path: str | Path) -> Path | None:
    """The sidecar of an input: ``PATH.json`` beside the name given, else beside a symlink's target; None when
    there is none (a pipe has none)."""
    p = Path(path)
    for cand in (p, Path(os.path.realpath(p)) if p.is_symlink() else None):   # realpath: a loop is no sidecar
        if cand is not None and cand.with_name(cand.name + ".json").is_file():
            return cand.with_name(cand.name + ".json")
    return None


def samples_meta(samples: Samples, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """The sidecar a writer writes: the format, the meter, its clock and the columns, then ``meta``."""
    out: dict[str, Any] = {"format": SAMPLES_FORMAT, "meter": samples.meter, "emulated": samples.emulated,
                           "clock": samples.clock, "columns": list(COLUMNS)}
    out.update(meta or {})
    return out


def _write_sidecar(path: str | Path, meta: dict[str, Any]) -> None:
    side = sidecar_of(path)
    if side is not None:
        write_atomic(side, json.dumps(meta, indent=1, default=str))


def _write_stream(path: Path, data: memoryview) -> None:
    """``data`` written to a stream output (a FIFO, ``/dev/stdout``) in place: appended, never truncated or
    replaced."""
    with open(path, "ab") as f:
        f.write(data)


def _fsync_quietly(fd: int) -> None:
    """fsync, except on a device or pipe (``/dev/null`` cannot be synced: EINVAL)."""
    try:
        os.fsync(fd)
    except OSError as e:
        import errno

        if e.errno not in (errno.EINVAL, errno.EROFS, errno.ENOTSUP):
            raise


@dataclass
class SamplesFile:
    """A samples file: its samples and its sidecar (None when there is none), read and written here only."""

    samples: Samples
    side: SamplesSidecar | None = None
    meta: dict[str, Any] = field(default_factory=dict)     #: the sidecar as a dict (unknown keys included)
    path: Path | None = None

    # ------------------------------------------------------------------ reading
    @classmethod
    def load(cls, path: str | Path) -> SamplesFile:
        """Read a samples file (once: a pipe works) and its sidecar, checked; one line naming the problem."""
        from archline.common.files import check_text_bytes, read_bytes

        p = Path(path)
        data = read_bytes(p, error=MeterError, what="samples file")
        side = None
        meta: dict[str, Any] = {}
        sp = find_sidecar(p)
        if sp is not None:
            from archline.formats.meters.sidecar import SamplesSidecar

            side = SamplesSidecar.load(sp)
            meta = side.model_dump(exclude_none=True)
        if data[:4] != b"PAR1" and data[:2] != b"\x1f\x8b":
            check_text_bytes(data, p, error=MeterError, what="samples file")
        cols = _parse(data, p)
        s = Samples(cols["t_s"].astype(np.float64), cols["channel"].astype(np.int16),
                    cols["voltage_v"].astype(np.float64), cols["current_a"].astype(np.float64),
                    cols["power_w"].astype(np.float64), None, side.meter if side else "",
                    side.emulated if side else None, side.clock if side else "unknown")
        check_power(s, show(p))
        check_time_order(s, show(p))
        check_power_vi(s, show(p))
        return cls(s, side, meta, p)

    # ------------------------------------------------------------------ writing
    def dump(self, path: str | Path, meta: dict[str, Any] | None = None) -> Path:
        """Write the samples as ``.csv``, ``.csv.gz`` or ``.parquet`` (by suffix; a stream as CSV), then the
        sidecar ``PATH.json`` (``meta`` on top of the meter, clock and columns)."""
        from archline.formats.meters.traces import csv_bytes

        samples = self.samples
        p = Path(path)
        check_samples_output(p)
        kind = kind_of(p)
        side = samples_meta(samples, {**self.meta, **(meta or {})})
        with atomic_path(p) as tmp:
            if kind == "parquet":
                import pyarrow as pa
                import pyarrow.parquet as pq

                from archline.common.arrow import arrow_of, arrow_strings

                n = len(samples)
                meter = pa.DictionaryArray.from_arrays(arrow_of(np.zeros(n, dtype=np.int8)),
                                                       arrow_strings([samples.meter]))
                cols = {k: arrow_of(v) for k, v in samples.columns().items()}
                emulated = (pa.nulls(n, pa.bool_()) if samples.emulated is None    # the source is not known
                            else arrow_of(np.full(n, bool(samples.emulated))))
                cols.update({"meter": meter, "emulated": emulated})
                table = pa.Table.from_arrays(list(cols.values()), names=list(cols))
                table = table.replace_schema_metadata({"archline": json.dumps(side, default=str)})
                # dictionary pages only where values repeat (a float column's dictionary is wasted work)
                dictionary = ["channel", "meter", "emulated"]
                if tmp == p and is_stream(p):
                    # Parquet needs a seekable file and pyarrow removes the path it fails on: a FIFO or device is
                    # given the bytes built in memory, never handed to pyarrow by name (it would be unlinked)
                    sink = pa.BufferOutputStream()
                    pq.write_table(table, sink, use_dictionary=dictionary)
                    _write_stream(p, memoryview(sink.getvalue()))
                else:
                    pq.write_table(table, tmp, use_dictionary=dictionary)
            else:
                with open(tmp, "ab" if tmp == p and is_stream(p) else "wb") as raw:
                    out: Any = gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1) if kind == "csv.gz" else raw
                    for chunk in csv_bytes(samples):
                        out.write(chunk)
                    if out is not raw:
                        out.close()
        _write_sidecar(p, side)
        return p

    @staticmethod
    @contextlib.contextmanager
    def csv_stream(path: str | Path, fmt: RowFormat, meta: Callable[[], dict[str, Any]]) -> Iterator[CsvStream]:
        """A samples CSV (or csv.gz) written while a decoder goes on: feed the stream blocks of records; on a clean
        exit the file is finished, renamed onto ``path`` and ``meta()`` (called then) becomes its sidecar. On an
        error or an interrupt nothing is left (no temp file, no half file under ``path``)."""
        from archline.formats.meters.samples_csv import CsvStream

        p = Path(path)
        check_samples_output(p)
        with atomic_path(p) as tmp:
            stream = CsvStream(p, tmp, fmt, sync=_fsync_quietly)
            try:
                yield stream
                info = meta()
            except BaseException:
                stream.abort()
                raise
            stream.close()
        empty = Samples.empty(fmt.meter, fmt.emulated)
        empty.clock = fmt.clock
        _write_sidecar(p, samples_meta(empty, info))


def _parse(data: bytes, p: Path) -> dict[str, Any]:
    """The five columns of a samples file's bytes (Parquet, gzip'd CSV or CSV, told by the first bytes)."""
    try:
        import pyarrow as pa

        buf = pa.BufferReader(data)
        if data[:4] == b"PAR1":
            import pyarrow.parquet as pq

            t = pq.read_table(buf)
        else:
            import pyarrow.csv as pcsv

            t = pcsv.read_csv(pa.CompressedInputStream(buf, "gzip") if data[:2] == b"\x1f\x8b" else buf)
        missing = [c for c in COLUMNS if c not in t.column_names]
        if missing:
            raise MeterError(f"{show(p)} lacks column(s) {missing} (expected {', '.join(COLUMNS)})")
        # a power-only meter (a BMC) leaves voltage and current empty: a column of nulls is NaN, not text
        cols = {c: (t.column(c).cast(pa.float64()) if c in ("voltage_v", "current_a")
                    and pa.types.is_null(t.column(c).type) else t.column(c)).to_numpy(zero_copy_only=False)
                for c in COLUMNS}
    except MeterError:
        raise
    except Exception as e:  # pyarrow raises several types for malformed files
        raise MeterError(f"cannot read samples from {show(p)}: {(str(e).splitlines() or [type(e).__name__])[0]}"
                         ) from None
    ch = cols["channel"]
    if ch.size == 0:        # a header alone: pyarrow types its empty columns as text, which is not the problem
        raise MeterError(f"{show(p)} holds no samples (its columns have no rows: the recording kept none); there is "
                         "nothing to integrate: record again, or give a file with samples")
    if ch.size and (ch.dtype.kind not in "iu" or int(ch.min()) < 0 or int(ch.max()) > 32767):
        raise MeterError(f"{show(p)}: column channel must hold channel numbers (whole numbers >= 0)")
    for c in ("t_s", "voltage_v", "current_a", "power_w"):
        if cols[c].dtype.kind not in "iuf":
            raise MeterError(f"{show(p)}: column {c} must hold numbers (found {cols[c].dtype})")
    return cols


def nonphysical_power(samples: Samples) -> str | None:
    """What no meter reports in ``samples``, naming the first such row: NaN or infinite power (or time), negative
    power; None when there is none. The one rule: a samples file (:func:`check_power`) and a plugin meter's live
    windows (powermon/guarded.py) are held to it."""
    for name, col in (("t_s", samples.t_s), ("power_w", samples.power_w)):
        bad = ~np.isfinite(col)
        if bad.any():
            i = int(np.argmax(bad))
            return f"{name} is not a finite number in {int(bad.sum())} sample(s) (first: row {i + 1}, {col[i]})"
    neg = samples.power_w < 0
    if neg.any():
        i = int(np.argmax(neg))
        return (f"power_w is negative in {int(neg.sum())} sample(s) (first: row {i + 1}, "
                f"{float(samples.power_w[i]):g} W at t_s {float(samples.t_s[i]):g})")
    return None


def check_power(samples: Samples, where: str = "") -> None:
    """NaN, infinite or negative power (or time) in a samples file is an error naming the first such row: a meter
    never reports it, so the file is damaged or not a meter's."""
    why = nonphysical_power(samples)
    if why is not None:
        what = "negative power" if why.startswith("power_w is negative") else "that"
        raise MeterError(f"{f'{where}: ' if where else ''}{why}; a meter never reports {what}: the file is damaged")


def check_time_order(s: Samples, where: str) -> None:
    """``t_s`` of each channel increases in file order; a sample that goes back or repeats is one line."""
    if len(s) < 2:
        return
    if float(np.min(s.t_s)) == float(np.max(s.t_s)):
        raise MeterError(f"{where}: all {len(s)} samples are at one time (t_s {float(s.t_s[0]):.9g} s): there is no "
                         "duration to integrate over (a file whose times were lost or overwritten?)")
    order = np.argsort(s.channel, kind="stable")
    t, ch = s.t_s[order], s.channel[order]
    same = ch[1:] == ch[:-1]
    with np.errstate(invalid="ignore"):
        back = same & ~(t[1:] > t[:-1]) & np.isfinite(t[1:]) & np.isfinite(t[:-1])
    if back.any():
        k = int(np.argmax(back))
        row = int(order[k + 1])
        raise MeterError(f"{where}: t_s of channel {int(ch[k])} does not increase at data row {row + 1} "
                         f"({t[k]:.9g} s, then {t[k + 1]:.9g} s): each channel's samples must be in time order "
                         "(a file joined from two recordings, or sorted by another column?)")


def check_power_vi(s: Samples, where: str) -> None:
    """``power_w`` agrees with ``voltage_v`` x ``current_a`` within POWER_REL_TOL (+ POWER_ABS_TOL_W) wherever both
    are given (a counter meter's rows leave them empty)."""
    vi = s.voltage_v * s.current_a
    with np.errstate(invalid="ignore"):
        known = np.isfinite(vi) & np.isfinite(s.power_w)
        bad = known & (np.abs(s.power_w - vi) > POWER_REL_TOL * np.abs(vi) + POWER_ABS_TOL_W)
    if bad.any():
        i = int(np.argmax(bad))
        raise MeterError(f"{where}: power_w disagrees with voltage_v x current_a in {int(bad.sum())} row(s) (first: "
                         f"data row {i + 1}, channel {int(s.channel[i])}: {s.power_w[i]:.7g} W beside "
                         f"{s.voltage_v[i]:.7g} V x {s.current_a[i]:.7g} A = {vi[i]:.7g} W; allowed "
                         f"{POWER_REL_TOL:.1%} + {POWER_ABS_TOL_W:g} W): the file is damaged or a column mislabelled")


def read_samples(path: str | Path) -> tuple[Samples, dict[str, Any]]:
    """The samples of a samples file and its sidecar as a dict ({} when there is none)."""
    f = SamplesFile.load(path)
    return f.samples, f.meta


def write_samples(samples: Samples, path: str | Path, meta: dict[str, Any] | None = None) -> Path:
    """Write samples as ``.csv``, ``.csv.gz`` or ``.parquet`` (by suffix), plus its ``PATH.json`` sidecar."""
    return SamplesFile(samples).dump(path, meta)
