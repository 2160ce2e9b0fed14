"""The bytes of a samples CSV (``t_s, channel, voltage_v, current_a, power_w``), formatted with numpy, not per row:
each column becomes fixed-point digits in a byte matrix, and the padding is squeezed out in one pass. Files are
read and written by their owner, :mod:`archline.formats.meters.samples_file`; this module only formats.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import numpy.typing as npt

from archline.formats.meters.samples import COLUMNS, Samples

#: "000".."999" as 4-byte words (3 ASCII digits + a spare byte): one 1-D gather gives three digits
_LUT4 = np.frombuffer(b"".join(f"{i:03d}".encode() + b"0" for i in range(1000)), dtype=np.uint32).copy()
_POW10 = 10.0 ** np.arange(0, 19)


def _digits(v: npt.NDArray[np.int64], n: int) -> npt.NDArray[np.uint8]:
    """The last ``n`` decimal digits of non-negative integers, zero-padded, as an (m, n) ASCII matrix."""
    groups = -(-n // 3)
    words = np.empty((v.size, groups), dtype=np.uint32)
    w = v
    for g in range(groups):
        w, r = np.divmod(w, 1000)
        words[:, groups - 1 - g] = _LUT4[r]
    b = words.view(np.uint8).reshape(v.size, groups, 4)[:, :, :3].reshape(v.size, 3 * groups)
    return b[:, 3 * groups - n:]


def _fixed_sig(x: npt.NDArray[np.float64], sig: int, out: npt.NDArray[np.uint8]) -> None:
    """Write non-negative ``x`` with ``sig`` significant digits and a decimal point into ``out`` (m, sig + 1):
    every row has the same width, so rows need no padding and no squeezing (e.g. 12.00000, 0.123456, 665.1234)."""
    n_int = np.ones(x.size, dtype=np.int64)
    for k in range(1, sig):
        n_int += x >= _POW10[k]
    scaled = np.rint(x * _POW10[sig - n_int]).astype(np.int64)
    over = scaled >= 10**sig                # 9.9999999 rounds up to 10.000000
    if over.any():
        n_int[over] += 1
        scaled[over] = np.rint(x[over] * _POW10[np.maximum(sig - n_int[over], 0)]).astype(np.int64)
    if sig == 7:
        # a row is 8 bytes = one little-endian uint64 (7 digits + the point), built from 3-digit words
        a, rest = np.divmod(scaled, 1_000_000)
        b, c = np.divmod(rest, 1000)
        lut = _LUT4.astype(np.uint64) & np.uint64(0xFFFFFF)
        u = (a.astype(np.uint64) + np.uint64(48)) | (lut[b] << np.uint64(8)) | (lut[c] << np.uint64(32))
        shift = (n_int.astype(np.uint64) << np.uint64(3))
        low = u & ((np.uint64(1) << shift) - np.uint64(1))
        high = (u >> shift) << (shift + np.uint64(8))
        res = low | (np.uint64(46) << shift) | high
        out[:] = res.view(np.uint8).reshape(-1, 8)
        return
    d = _digits(scaled, sig)
    lo_k, hi_k = int(n_int.min()), int(n_int.max())
    for k in range(lo_k, hi_k + 1):
        if lo_k == hi_k:
            out[:, :k] = d[:, :k]
            out[:, k] = 46
            out[:, k + 1:] = d[:, k:]
        else:
            rows = np.flatnonzero(n_int == k)
            if rows.size:
                dr = d[rows]
                block = np.empty((rows.size, sig + 1), dtype=np.uint8)
                block[:, :k] = dr[:, :k]
                block[:, k] = 46
                block[:, k + 1:] = dr[:, k:]
                out[rows] = block


SIG_T = 13      #: significant digits of t_s (0.1 us at 1e5 s)
SIG_V = 7       #: of voltage_v, current_a, power_w (the ADC has 12 bits)


def _fmt_matrix(x: npt.NDArray[np.float64], sig: int) -> npt.NDArray[np.uint8]:
    out = np.empty((x.size, sig + 1), dtype=np.uint8)
    _fixed_sig(np.asarray(x, dtype=np.float64), sig, out)
    return out


def _gather_rows(table: npt.NDArray[np.uint8], idx: npt.NDArray[Any]) -> npt.NDArray[np.uint8]:
    """``table[idx]`` for a byte matrix, one memcpy-like gather per row (void dtype)."""
    w = table.shape[1]
    flat = np.ascontiguousarray(table).view(f"V{w}").reshape(-1)
    return flat[idx].view(np.uint8).reshape(-1, w)


def _chunk_rows(samples: Samples, lo: int, hi: int) -> bytes:
    widths = [SIG_T + 1, 1, SIG_V + 1, SIG_V + 1, SIG_V + 1]
    row = sum(widths) + len(widths)
    m = hi - lo
    mat = np.empty((m, row), dtype=np.uint8)
    codes = samples.meta.get("codes")
    cols: list[npt.NDArray[np.uint8]] = []
    t = samples.t_s[lo:hi]
    # t_s: rows of one sampling event share a time: format each distinct time once
    if m > 1:
        new = np.empty(m, dtype=bool)
        new[0] = True
        np.not_equal(t[1:], t[:-1], out=new[1:])
        starts = np.flatnonzero(new)
        cols.append(_gather_rows(_fmt_matrix(t[starts], SIG_T), np.cumsum(new) - 1))
    else:
        cols.append(_fmt_matrix(t, SIG_T))
    cols.append((samples.channel[lo:hi].astype(np.uint8) + 48)[:, None])
    if codes is not None:
        # volts and amps take one of 4096 values per channel: format the tables, then gather
        vtab, itab = codes["vtab"], codes["itab"]
        cols.append(_gather_rows(vtab, codes["vcode"][lo:hi]))
        cols.append(_gather_rows(itab, samples.channel[lo:hi].astype(np.int64) * 4096 + codes["icode"][lo:hi]))
    else:
        cols.append(_fmt_matrix(samples.voltage_v[lo:hi], SIG_V))
        cols.append(_fmt_matrix(samples.current_a[lo:hi], SIG_V))
    cols.append(_fmt_matrix(samples.power_w[lo:hi], SIG_V))
    c = 0
    for k, (wdt, col) in enumerate(zip(widths, cols, strict=True)):
        mat[:, c: c + wdt] = col
        c += wdt
        mat[:, c] = ord("," if k < len(widths) - 1 else "\n")
        c += 1
    return mat.tobytes()


def csv_bytes(samples: Samples, chunk_rows: int = 1 << 18) -> list[bytes]:
    """The samples CSV as byte chunks (header first). Fixed significant digits, formatted with numpy on all
    cores (numpy releases the GIL)."""
    from concurrent.futures import ThreadPoolExecutor

    parts = [(",".join(COLUMNS) + "\n").encode()]
    n = len(samples)
    cols = (samples.t_s, samples.voltage_v, samples.current_a, samples.power_w)
    if n and (min(float(np.min(c)) for c in cols) < 0 or not all(np.isfinite(c).all() for c in cols)
              or float(np.max(samples.t_s)) >= 10.0 ** (SIG_T - 7)):
        return _csv_bytes_arrow(samples)
    if n and (int(samples.channel.min()) < 0 or int(samples.channel.max()) > 9):
        return _csv_bytes_arrow(samples)
    bounds = list(range(0, n, chunk_rows))
    workers = min(len(bounds), os.cpu_count() or 1) or 1
    with ThreadPoolExecutor(workers) as ex:
        parts.extend(ex.map(lambda lo: _chunk_rows(samples, lo, min(n, lo + chunk_rows)), bounds))
    return parts


def _csv_bytes_arrow(samples: Samples) -> list[bytes]:
    import pyarrow as pa
    import pyarrow.csv as pcsv

    sink = pa.BufferOutputStream()
    pcsv.write_csv(pa.table(samples.columns()), sink, pcsv.WriteOptions(quoting_style="none"))
    return [sink.getvalue().to_pybytes()]
