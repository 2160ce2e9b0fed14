"""The one rule that turns many measured rates of one figure into its peak: the reference is the median of the best
three (the best of two or one), so one lucky point cannot set it; the rows within :data:`PLATEAU_REL` of it on either
side are the plateau, and a row further above is an outlier, left out. The run summary (bench/run/summary.py) and
the time cost table (fit/regress/timing.py) both call it, so a run's printed peaks and its fitted taus agree."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

#: the plateau's half-width around the reference (a VM's clock hiccup once gave 146.9 GFLOP/s on a 2-core Zen 3
#: that peaks near 100: 47% above, far outside)
PLATEAU_REL = 0.10


@dataclass(frozen=True)
class Plateau:
    reference: float             #: median of the best three rates
    indices: tuple[int, ...]     #: positions (in the rates given) of the plateau's rates, fastest first
    outliers: int                #: rates above the plateau

    def rates(self, rates: Sequence[float]) -> list[float]:
        return [rates[i] for i in self.indices]


def plateau(rates: Sequence[float]) -> Plateau:
    """The plateau of ``rates`` (finite and positive; at least one)."""
    if not rates:
        raise ValueError("plateau of no rates")
    order = sorted(range(len(rates)), key=lambda i: -rates[i])
    best = [rates[i] for i in order[:3]]
    ref = statistics.median(best) if len(best) >= 3 else best[0]
    lo, hi = ref * (1 - PLATEAU_REL), ref * (1 + PLATEAU_REL)
    return Plateau(ref, tuple(i for i in order if lo <= rates[i] <= hi), sum(rates[i] > hi for i in order))
