"""``archline compare INPUTS... --by host|run|platform``: the fitted coefficients of each group side by side, in
the spirit of clpeak's ``--compare``, answering the node-variability and before/after questions.

Each group (a host, a run or a platform) is fitted on its own with one model (basic unless asked), giving each
coefficient a value, a standard error and a 95% CI from the fit. With ``--by host`` or ``--by run``, groups are
compared within each platform (a GTX 580 node is never tested against an i7-950 node); ``--by platform``
compares the platforms.

Tests (named in every output):

* **differs from the others** (the flag): each group's coefficient against the median of the other groups'
  values, a Welch t-test with the two standard errors (the median's taken as sqrt(pi/2) x the standard error of
  the others' mean) and Welch-Satterthwaite degrees of freedom (each fit's residual degrees of freedom),
  Holm-corrected over the groups at ``alpha``. The median keeps one outlier node from moving the reference, so
  identical nodes are not flagged because a third one differs.
* **pairs**: every pair of groups, Welch t-test as above, Holm-corrected over the pairs of that coefficient.
* **spread**: min, max, range relative to the median, coefficient of variation across the groups, and Cochran's
  Q test of heterogeneity (do the groups differ at all beyond their standard errors).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from archline.fit.errors import ArchlineFitError

BY_COLUMN: dict[str, str] = {"host": "host", "run": "run_id", "platform": "platform"}
TEST_FLAG = ("Welch t-test of each group against the median of the other groups (standard errors from each "
             "group's fit, Welch-Satterthwaite df), Holm-corrected over the groups")
TEST_PAIRS = "pairwise Welch t-tests on the fitted coefficients, Holm-corrected over the pairs"
TEST_SPREAD = "Cochran's Q test of heterogeneity (chi-square, k-1 df)"


class CompareError(ArchlineFitError):
    pass


@dataclass
class GroupValue:
    group: str
    value: float
    stderr: float | None
    ci95: tuple[float, float] | None
    dof: int
    n_points: int
    p_vs_others: float | None = None       #: Holm-corrected
    differs: bool | None = None


@dataclass
class PairTest:
    a: str
    b: str
    diff_rel: float          #: (a - b) / b
    t: float
    df: float
    p: float
    p_holm: float
    significant: bool


@dataclass
class CoefComparison:
    name: str
    unit: str
    values: list[GroupValue]
    spread: dict[str, float | None] = field(default_factory=dict)
    pairs: list[PairTest] = field(default_factory=list)

    @property
    def flagged(self) -> list[str]:
        return [v.group for v in self.values if v.differs]


@dataclass
class Block:
    scope: str                   #: the platform compared across its hosts/runs, or "platforms"
    groups: list[str]
    emulated: bool
    coefficients: list[CoefComparison]
    notes: list[str] = field(default_factory=list)


@dataclass
class Comparison:
    by: str
    model: str
    alpha: float
    blocks: list[Block]
    tests: dict[str, str] = field(default_factory=lambda: {"flag": TEST_FLAG, "pairs": TEST_PAIRS,
                                                           "spread": TEST_SPREAD})
    files: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        d = asdict(self)
        for b, bj in zip(self.blocks, d["blocks"], strict=True):
            for c, cj in zip(b.coefficients, bj["coefficients"], strict=True):
                cj["flagged"] = c.flagged
        return {"schema": "archline.compare/1", **d}


def welch(a: float, sa: float, dfa: float, b: float, sb: float, dfb: float) -> tuple[float, float, float]:
    """(t, df, two-sided p) of a - b with standard errors sa, sb (Welch-Satterthwaite df)."""
    from scipy import stats

    va, vb = sa * sa, sb * sb
    se = math.sqrt(va + vb)
    if se == 0:
        return (0.0 if a == b else math.inf), math.inf, (1.0 if a == b else 0.0)
    t = (a - b) / se
    den = (va * va / max(dfa, 1) if va else 0.0) + (vb * vb / max(dfb, 1) if vb else 0.0)
    df = (va + vb) ** 2 / den if den > 0 else math.inf
    return t, df, float(2 * stats.t.sf(abs(t), df))


def holm(p: Sequence[float]) -> list[float]:
    if not p:
        return []
    from statsmodels.stats.multitest import multipletests

    return [float(x) for x in multipletests(list(p), method="holm")[1]]


def _spread(vals: list[GroupValue]) -> dict[str, float | None]:
    from scipy import stats

    v = np.array([g.value for g in vals])
    med = float(np.median(v))
    out: dict[str, float | None] = {"min": float(v.min()), "max": float(v.max()), "median": med,
                                    "range_rel": float((v.max() - v.min()) / abs(med)) if med else None,
                                    "cv_pct": float(np.std(v, ddof=1) / abs(np.mean(v)) * 100) if len(v) > 1 else None,
                                    "cochran_q": None, "cochran_p": None}
    se = np.array([g.stderr or 0.0 for g in vals])
    if len(v) > 1 and (se > 0).all():
        w = 1 / se**2
        mean_w = float((w * v).sum() / w.sum())
        q = float((w * (v - mean_w) ** 2).sum())
        out["cochran_q"], out["cochran_p"] = q, float(stats.chi2.sf(q, len(v) - 1))
    return out


def compare_values(name: str, unit: str, vals: list[GroupValue], alpha: float) -> CoefComparison:
    """The tests of one coefficient across groups (values carry their stderr and residual dof)."""
    cc = CoefComparison(name, unit, vals, _spread(vals))
    testable = [g for g in vals if g.stderr is not None and math.isfinite(g.stderr)]
    if len(testable) < 2:
        return cc
    raw: list[float] = []
    for g in testable:
        others = [o for o in testable if o is not g]
        ref = float(np.median([o.value for o in others]))
        se_ref = math.sqrt(math.pi / 2) * math.sqrt(sum((o.stderr or 0.0) ** 2 for o in others)) / len(others)
        _, _, p = welch(g.value, g.stderr or 0.0, g.dof, ref, se_ref, sum(o.dof for o in others))
        raw.append(p)
    for g, p in zip(testable, holm(raw), strict=True):
        g.p_vs_others, g.differs = p, p < alpha
    pairs = [(a, b) for i, a in enumerate(testable) for b in testable[i + 1:]]
    stats = [welch(a.value, a.stderr or 0.0, a.dof, b.value, b.stderr or 0.0, b.dof) for a, b in pairs]
    for (a, b), (t, df, p), ph in zip(pairs, stats, holm([s[2] for s in stats]), strict=True):
        cc.pairs.append(PairTest(a.group, b.group, (a.value - b.value) / b.value if b.value else math.nan,
                                 t, df, p, ph, ph < alpha))
    return cc


def _fit_groups(frame: Any, column: str, model: str) -> tuple[dict[str, Any], list[str]]:
    from archline.fit.io.results import Group, ResultsError
    from archline.fit.regress.api import FitOptions, fit_group

    fits: dict[str, Any] = {}
    notes: list[str] = []
    for key, sub in frame.groupby(column, sort=True):
        label = str(key)
        platform = str(sub["platform"].iloc[0])
        emulated = bool(sub["emulated"].any())
        try:
            fits[label] = fit_group(Group(platform, emulated, sub.reset_index(drop=True)),
                                    FitOptions(model=model, validate=False, one_precision=True))
        except ResultsError as e:
            notes.append(f"{label}: not fitted: {e}")
    return fits, notes


def _block(scope: str, fits: dict[str, Any], alpha: float, notes: list[str]) -> Block:
    names: list[str] = []
    for r in fits.values():
        names += [n for n in r.coefficients if n not in names]
    coefs = []
    for n in names:
        vals = []
        for label, r in fits.items():
            c = r.coefficients.get(n)
            if c is None:
                continue
            dof = max(int(r.n_points) - len(r.coefficients), 1)
            vals.append(GroupValue(label, float(c.value), c.stderr, c.ci95, dof, int(r.n_points)))
        if vals:
            unit = next(r.coefficients[n].unit for r in fits.values() if n in r.coefficients)
            coefs.append(compare_values(n, unit, vals, alpha))
    if len(fits) < 2:
        notes.append(f"{scope}: only {len(fits)} group(s); nothing to compare")
    return Block(scope, list(fits), any(r.emulated for r in fits.values()), coefs, notes)


def compare_files(paths: Sequence[str | Path], by: str, *, where: Sequence[str] = (), model: str = "basic",
                  alpha: float = 0.05) -> Comparison:
    from archline.fit.io.results import read_results

    if by not in BY_COLUMN:
        raise CompareError(f"--by must be one of {', '.join(BY_COLUMN)}, got {by!r}")
    if model == "auto":
        raise CompareError("compare fits every group with the same model: pass --model basic, cache or capped")
    if not 0 < alpha < 1:
        raise CompareError(f"--alpha must be between 0 and 1, got {alpha}")
    rs = read_results(paths, where)
    frame = rs.frame
    column = BY_COLUMN[by]
    if column not in frame.columns or frame[column].isna().all():
        raise CompareError(f"--by {by}: the rows have no '{column}' column to group by")
    frame = frame.loc[frame[column].notna()]
    blocks: list[Block] = []
    if by == "platform":
        fits, notes = _fit_groups(frame, column, model)
        blocks.append(_block("platforms", fits, alpha, notes + list(rs.notes)))
    else:
        for platform, sub in frame.groupby("platform", sort=True):
            fits, notes = _fit_groups(sub, column, model)
            blocks.append(_block(str(platform), fits, alpha, notes))
    if not any(b.coefficients for b in blocks):
        raise CompareError("no group could be fitted: " + "; ".join(n for b in blocks for n in b.notes))
    return Comparison(by, model, alpha, blocks, files=list(rs.files))
