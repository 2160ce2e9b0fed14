"""The measured rows of ``archline tune --measured`` (S1 §5.3.2, Table 8): ``archline.results/1`` rows (read through
their owner, :class:`~archline.formats.results_file.ResultsFile`) that carry the DVFS setting they were measured at
(``core_mhz``, ``mem_mhz``) beside ``time_s``, ``energy_j`` and the count columns. This module is their only
reader; the version is the results file's."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from archline.formats.results_file import ResultsFile
from archline.model.errors import ArchlineFitError
from archline.model.hierarchy import COUNT_TO_COST


class DvfsRowsError(ArchlineFitError):
    """A measured DVFS file that cannot be read (``archline tune`` passes its own error type)."""


@dataclass
class DvfsRow:
    """One measured row: where it is, what ran, at which (core, memory) clocks in MHz, its time, energy and counts
    (the non-zero ones)."""

    line: int
    kernel: str
    precision: str
    level: str
    setting: tuple[float, float]
    time_s: float
    energy_j: float
    counts: dict[str, float]


def read_dvfs_rows(path: Path, error: type[Exception] = DvfsRowsError) -> list[DvfsRow]:
    """Every row of a measured DVFS file, checked: clocks and time_s positive, counts and energy_j finite and
    non-negative; a problem is one ``error`` naming the file and the line."""
    with ResultsFile.open(path, what="measured data") as rf:
        fields, rows = list(rf.columns), list(rf.rows())
    need = {"core_mhz", "mem_mhz", "time_s", "energy_j"}
    if not need <= set(fields):
        raise error(f"{path}: measured data needs columns {', '.join(sorted(need - set(fields)))}")
    out: list[DvfsRow] = []
    for k, r in enumerate(rows, start=2):
        if None in r or None in r.values():
            raise error(f"{path}: line {k}: {len(fields)} columns in the header, a different number in this row")
        try:
            counts = {c: float(r[c]) for c in COUNT_TO_COST if r.get(c) not in (None, "")}
            counts = {c: v for c, v in counts.items() if v}
            setting = (float(r["core_mhz"]), float(r["mem_mhz"]))
            t, e_j = float(r["time_s"]), float(r["energy_j"])
        except ValueError as err:
            raise error(f"{path}: line {k}: {err}") from None
        values = [*counts.values(), *setting, t, e_j]
        if not all(math.isfinite(v) and v >= 0 for v in values) or min(*setting, t) <= 0:
            raise error(f"{path}: line {k}: clocks and time_s must be positive, counts and energy_j finite and "
                        "non-negative")
        out.append(DvfsRow(k, r.get("kernel", ""), r.get("precision", ""), r.get("level", ""), setting, t, e_j, counts))
    if not out:
        raise error(f"{path}: no data rows")
    return out
