"""The files one ``bench run`` writes into ``--out``, named and checked before any point runs.

Every output is per run, beside ``<run_id>.csv``: ``<run_id>.roofline.json`` (the ERT export) and
``<run_id>.roofline[-<precision>].png``, so a second run into the same directory never replaces the first's. Each
is checked by the one output policy (:func:`archline.common.outputs.check_output`: never an input of this command,
never outside ``--out``) before the session measures anything, so a refused output costs no work and leaves
nothing behind.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from archline.bench.errors import BenchError
from archline.common.exits import EXIT_WRITE
from archline.common.outputs import check_output, inside, show

T = TypeVar("T")


class ExtraNotWritten(BenchError):
    """A file written after the rows (the ERT export, a figure) could not be written: exit 7, the complete rows
    file is kept (the user's measured data) and named."""

    exit_code = EXIT_WRITE


@dataclass(frozen=True)
class RunFiles:
    out: Path
    run_id: str
    precisions: tuple[str, ...] = ()     #: of the intensity points: one roofline figure each

    @property
    def partial(self) -> Path:
        return self.out / f"{self.run_id}.csv.partial"

    @property
    def results(self) -> Path:
        return self.out / f"{self.run_id}.csv"

    @property
    def roofline_json(self) -> Path:
        return self.out / f"{self.run_id}.roofline.json"

    def figure(self, precision: str) -> Path:
        suffix = ".roofline.png" if len(self.precisions) == 1 else f".roofline-{precision}.png"
        return self.out / f"{self.run_id}{suffix}"

    def all(self) -> list[Path]:
        return [self.partial, self.results, self.roofline_json, *(self.figure(p) for p in self.precisions)]

    def check(self) -> None:
        """Every file this run will write: inside ``out`` and not an input of this command (exit 2)."""
        for p in self.all():
            check_output(p)       # an input of this command first: the more precise refusal
            inside(self.out, p)

    def write_extra(self, path: Path, rows: int, write: Callable[[], T]) -> T:
        """``write()`` of a file made from the finished rows; a write error (a full disk) is one line naming the
        file and the complete rows file, which stays (exit 7)."""
        try:
            return write()
        except OSError as e:
            why = e.strerror or str(e)
            raise ExtraNotWritten(f"cannot write {show(path)}: {why}; the {rows} measured row(s) are complete and "
                                  f"kept in {show(self.results)} (free space, then `archline bench export-ert` "
                                  "or `archline plot` remake it)") from None
