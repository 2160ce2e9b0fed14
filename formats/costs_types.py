"""What a cost table (``archline.costs/1``, :mod:`archline.formats.costs`) is made of: a :class:`Coefficient` (one
fitted cost in its SI unit) and the :class:`FitResult` protocol it is written from. Both its writer
(:mod:`~archline.formats.costs`) and its table for people (:mod:`~archline.formats.costs_table`) take them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


@dataclass
class Coefficient:
    """One fitted cost, in its SI unit (:data:`archline.formats.costs_units.UNITS`)."""

    name: str
    value: float
    stderr: float | None
    ci95: tuple[float, float] | None
    unit: str
    method: str = ""

    def as_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"value": self.value,
                             "stderr": None if self.stderr is None else float(self.stderr),
                             "ci95": None if self.ci95 is None else [float(self.ci95[0]), float(self.ci95[1])],
                             "unit": self.unit}
        if self.method:
            d["method"] = self.method
        return d


class FitResult(Protocol):
    """What a cost table is written from: the fields of a fit's outcome (``archline.fit.regress.result.FitResult``
    has them). A protocol, so this format never imports the fit that produces it (docs/design.md §6)."""

    platform: str
    model: str
    emulated: bool
    n_points: int
    coefficients: dict[str, Coefficient]
    tau: dict[str, Coefficient]
    derived: dict[str, float]
    quality: dict[str, Any]
    warnings: list[str]
    omitted: dict[str, str]
    extra: dict[str, Any]

    @property
    def point_errors(self) -> pd.DataFrame | None: ...
