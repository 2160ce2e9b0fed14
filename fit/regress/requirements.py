"""What a model needs of the configurations before it is fitted: its extra columns filled, and enough distinct
points for its parameters. Each failure is a one-line user error (:mod:`archline.formats.results_check`' types)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from archline.common.inputs import show_value
from archline.fit.io.configs import Grouped
from archline.formats.results_check import BadValueError, MissingColumnError, TooFewPointsError


def require_columns(data: Grouped, columns: Sequence[str], model: str) -> None:
    """A model's extra inputs (e.g. core_v, mem_v for dvfs) must be filled and positive on every row it uses."""
    for c in columns:
        v = data.cfg.num(c) if c in data.cfg else np.full(len(data.cfg), np.nan)
        bad = ~np.isfinite(v) | (v <= 0)
        if bad.all() and len(v):
            raise MissingColumnError(f"the {model} model needs column(s) {', '.join(columns)}, which the data lack")
        if bad.any():
            j = int(np.argmax(bad))
            raise BadValueError(f"{data.where_config(j)}: the {model} model needs a positive {c}, "
                                f"got {show_value(v[j])}")


def require_points(n_points: int, n_params: int, model: str, what: str = "rows") -> None:
    if n_points < n_params + 1:
        raise TooFewPointsError(f"the {model} model has {n_params} parameters but only {n_points} {what}; "
                                f"need at least {n_params + 1}")
