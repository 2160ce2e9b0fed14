"""The microbenchmark rows of the Hong & Kim unit-power fit (S3 §3.4, §6.1; ``archline ipp fit``/``validate`` read
them, ``archline ipp rows`` writes emulated ones): this module is their only reader and writer.

CSV with a header; ``name`` and ``gpu_power_w`` (measured, W) required, ``active_sms`` optional (default: all SMs),
and ``rate_<unit>`` (access rate 0..1, eq.10) for any of the GPU's units (fp, reg, alu, sfu, int, fds, shared,
texture, const_cache, global_mem, local_mem). A missing rate is 0. ``emulated`` (true/false) marks rows that did
not come from hardware. The file has no version of its own."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from archline.common.files import read_text
from archline.formats.costs_units import PLAUSIBLE_MAX_SI, implausible
from archline.model.errors import ArchlineFitError


class UnitRowsError(ArchlineFitError):
    """A rows file that cannot be read (the fit passes its own error type)."""


RATE_PREFIX = "rate_"


@dataclass(frozen=True)
class MicroRow:
    name: str
    rates: dict[str, float]
    active_sms: int | None
    gpu_power_w: float
    emulated: bool = False


def _strict_records(text: str, path: str | Path, error: type[Exception]) -> list[tuple[int, list[str]]]:
    """Every non-blank CSV record with the line it starts on; a column named twice or a row with more or fewer
    fields than the header is an error naming the file and the line."""
    out: list[tuple[int, list[str]]] = []
    reader = csv.reader(io.StringIO(text))
    start = 1
    try:
        for rec in reader:
            line, start = start, reader.line_num + 1
            if not rec or (len(rec) == 1 and not rec[0].strip()):
                continue
            out.append((line, [f.strip() if not out else f for f in rec]))
    except csv.Error as e:
        raise error(f"{path}, line {reader.line_num}: not valid CSV ({e})") from None
    if not out:
        return out
    header_line, header = out[0]
    seen: set[str] = set()
    for c in header:
        if c in seen:
            raise error(f"{path}, line {header_line}: column '{c}' is named twice in the header")
        seen.add(c)
    for line, rec in out[1:]:
        if len(rec) != len(header):
            raise error(f"{path}, line {line}: {len(rec)} fields, the header has {len(header)} "
                                f"({'more' if len(rec) > len(header) else 'fewer'} than the header)")
    return out


def read_rows(path: str | Path, units: Sequence[str], num_sms: int, error: type[Exception] = UnitRowsError
              ) -> list[MicroRow]:
    """The rows of a microbenchmark file for a GPU of ``units`` (their keys, Const_SM left out) and ``num_sms`` SMs;
    every problem is one ``error`` naming the file, the row and the column."""
    text = read_text(path, error=error, what="microbenchmark rows", lines=True)
    records = _strict_records(text, path, error)
    cols = records[0][1] if records else []
    for need in ("name", "gpu_power_w"):
        if need not in cols:
            raise error(f"{path}: no '{need}' column (has: {', '.join(cols) or 'none'})")
    known = {f"{RATE_PREFIX}{u}" for u in units} | {"name", "gpu_power_w", "active_sms",
                                                                           "emulated"}
    extra = [c for c in cols if c not in known]
    if extra:
        raise error(f"{path}: unknown column '{extra[0]}' (known: name, gpu_power_w, active_sms, emulated, "
                            + ", ".join(sorted(k for k in known if k.startswith(RATE_PREFIX))) + ")")
    rows: list[MicroRow] = []
    for n, fields in records[1:]:
        where = f"{path}, line {n}"
        r: dict[str, Any] = dict(zip(cols, fields, strict=True))

        def num(col: str, *, positive: bool = False, where: str = where, r: dict[str, Any] = r) -> float | None:
            v = (r.get(col) or "").strip()
            if not v:
                return None
            try:
                x = float(v)
            except ValueError:
                raise error(f"{where}: {col} '{v}' is not a number") from None
            if not math.isfinite(x) or x < 0 or (positive and x == 0):
                raise error(f"{where}: {col} must be a {'positive' if positive else 'non-negative'} "
                                    f"finite number, got '{v}'")
            return x

        name = (r.get("name") or "").strip()
        if not name:
            raise error(f"{where}: empty name")
        power = num("gpu_power_w", positive=True)
        if power is None:
            raise error(f"{where}: no gpu_power_w")
        if implausible(power, "W"):
            raise error(f"{where}: gpu_power_w {power:g} W is not a real machine's (at most "
                                f"{PLAUSIBLE_MAX_SI['W']:g} W; give watts)")
        act = num("active_sms", positive=True)
        if act is not None and (not act.is_integer() or act > num_sms):
            raise error(f"{where}: active_sms must be a whole number 1..{num_sms}, got {act:g}")
        rates = {c.removeprefix(RATE_PREFIX): v for c in cols if c.startswith(RATE_PREFIX)
                 and (v := num(c)) is not None}
        emu = (r.get("emulated") or "").strip().lower()
        if emu not in ("", "true", "false"):
            raise error(f"{where}: emulated must be true or false, got '{emu}'")
        rows.append(MicroRow(name, rates, None if act is None else int(act), power, emu == "true"))
    if not rows:
        raise error(f"{path}: no rows")
    return rows


def rows_csv(rows: Sequence[MicroRow], units: Sequence[str]) -> str:
    """Rows in the file format :func:`read_rows` reads, with a rate column for each of ``units``."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["name", "gpu_power_w", "active_sms", "emulated", *(RATE_PREFIX + u for u in units)])
    for r in rows:
        w.writerow([r.name, f"{r.gpu_power_w:.12g}", "" if r.active_sms is None else r.active_sms,
                    "true" if r.emulated else "false", *(f"{r.rates[u]:g}" if u in r.rates else "" for u in units)])
    return buf.getvalue()
