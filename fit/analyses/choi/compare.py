"""``archline compare INPUTS... --by host|run|platform``: the fitted coefficients of each group side by side, in
the spirit of clpeak's ``--compare``, answering the node-variability and before/after questions.

With ``--by host`` or ``--by run``, groups are compared within each platform (a GTX 580 node is never tested
against an i7-950 node); ``--by platform`` compares the platforms.

**Two-stage random-effects comparison** (the default, issue 28). Repeats of one run share its drift
(temperature, clocks, the meter's offset), so a fit of all of a node's rows, taking every repeat as independent,
gives standard errors far smaller than the run-to-run variation, and identical nodes get flagged. So:

1. *stage 1*: one fit per cell, a cell being one run of a host (``--by host``), one host of a run (``--by run``:
   the host is the random effect) or one (host, run) of a platform (``--by platform``), each with the same
   model and reader as ``archline fit``;
2. *stage 2*, per coefficient: the one-way random-effects model v_gc = mu + a_g + b_gc + e_gc over the cells'
   values, b_gc the replicate (run) effect, e_gc the fit's own noise. A group's value is the mean of its cells;
   its variance is MS_w/n_g, MS_w the pooled mean square of the cells within groups (df = cells - groups),
   which holds the run-to-run variation and the fits' noise without trusting the fits' standard errors.

Why two-stage and not statsmodels MixedLM on the rows: the energy model is a relative-weighted (and for
``capped`` nonlinear) regression of 4-7 coefficients, every one of which can drift from run to run; a mixed
model on the rows would need a random slope per coefficient per run (a 7x7 covariance), cannot keep the
relative weighting or the capped model, needs every row in memory and often fails to converge. Stage 1 is the
exact fit ``archline fit`` makes, from configuration statistics (memory bounded by configurations); with
hundreds of rows per run its noise is small beside the run-to-run variation, and for a balanced design the
stage-2 ANOVA t-tests are exact under normality (the estimates equal REML's when positive).

Tests (named in every output):

* **differs from the others** (the flag): each group's value against the median of the other groups' values,
  t-test with MS_w (the median's variance taken as pi/2 x that of the others' mean, conservative for few
  groups), df = cells - groups, Holm-corrected over the groups at ``alpha``. The median keeps one outlier node
  from moving the reference, so identical nodes are not flagged because a third one differs.
* **pairs**: every pair of groups, t-test with MS_w, Holm-corrected over the pairs of that coefficient.
* **spread**: min, max, range relative to the median, coefficient of variation, and the one-way ANOVA F test
  (do the groups differ beyond the variation between their cells).
* **variance components** (standard deviations and % of the mean): between groups, between replicates (runs,
  or hosts with ``--by run``), and residual (the fits' own noise: the rms standard error of a cell's fit).

Where every group has a single cell (one run per host), run-to-run variation cannot be told from a difference
between groups: the tests fall back to the fits' own standard errors (``method="pooled"``, the comparison
before issue 28: Welch t-tests, Cochran's Q) and a note says so.
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
TEST_FLAG_2 = ("two-stage random effects: one fit per {c1} of each {g1}; each {g1}'s mean against the median "
               "of the other {g}' means, t-test with the pooled variance between the {c} within a {g1} "
               "(df = fits - groups), Holm-corrected over the groups")
TEST_PAIRS_2 = "pairwise t-tests of the {g}' means with the pooled variance between {c}, Holm-corrected over the pairs"
TEST_SPREAD_2 = "one-way random-effects ANOVA F test ({g} against the variation between {c})"
METHODS: tuple[str, ...] = ("two-stage", "pooled")


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
    n_cells: int = 1                       #: stage-1 fits (runs, or hosts) behind the value


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
    #: variance components as standard deviations (``*_sd``, the coefficient's unit) and % of the mean
    variance: dict[str, float | None] = field(default_factory=dict)

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
    replicate: str = ""                  #: what one stage-1 fit is: "runs" (of a host), "hosts" (of a run)
    n_cells: dict[str, int] = field(default_factory=dict)
    two_stage: bool = False              #: the random-effects tests were used (else the fits' errors)


@dataclass
class Comparison:
    by: str
    model: str
    alpha: float
    blocks: list[Block]
    tests: dict[str, str] = field(default_factory=lambda: {"flag": TEST_FLAG, "pairs": TEST_PAIRS,
                                                           "spread": TEST_SPREAD})
    files: list[str] = field(default_factory=list)
    method: str = "two-stage"

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
    """Holm's step-down adjusted p-values (as statsmodels' multipletests(method="holm"), without its cost)."""
    if not p:
        return []
    a = np.asarray(p, dtype=float)
    order = np.argsort(a, kind="stable")
    m = a.size
    adj = np.minimum(np.maximum.accumulate((m - np.arange(m)) * a[order]), 1.0)
    out = np.empty(m)
    out[order] = adj
    return [float(x) for x in out]


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


@dataclass
class Cell:
    """One stage-1 fit: a group's rows of one replicate (a run of a host, a host of a run)."""

    label: str
    value: float
    stderr: float | None
    n_points: int
    dof: int = 1
    ci95: tuple[float, float] | None = None


def compare_cells(name: str, unit: str, cells: dict[str, list[Cell]], alpha: float,
                  names: tuple[str, str] = ("groups", "replicates")) -> tuple[CoefComparison, bool]:
    """Stage 2 of the two-stage random-effects comparison of one coefficient: ``cells[group]`` are the group's
    per-replicate fits. Returns the comparison and whether the replicate variance could be estimated (some
    group has two or more cells); without it, the fits' own standard errors are used (:func:`compare_values`).

    Model: v_gc = mu + a_g + b_gc + e_gc, with b_gc ~ N(0, s_rep^2) the replicate effect (a run's drift) and
    e_gc ~ N(0, se_gc^2) the fit's own noise. The pooled mean square within groups, MS_w (df = N - G), estimates
    s_rep^2 + mean(se^2) without assuming the fits' standard errors are right; group g's mean has variance
    MS_w / n_g. Variance components by one-way ANOVA moments (negative estimates set to 0)."""
    from scipy import stats

    groups = [g for g in cells if cells[g]]
    n_g = np.array([len(cells[g]) for g in groups], dtype=float)
    means = np.array([float(np.mean([c.value for c in cells[g]])) for g in groups])
    big_n, k = float(n_g.sum()), len(groups)
    df_w = int(big_n - k)
    se2 = np.array([c.stderr**2 for g in groups for c in cells[g] if c.stderr is not None
                    and math.isfinite(c.stderr)])
    resid_var = float(se2.mean()) if se2.size else math.nan
    grand = float(np.sum(n_g * means) / big_n) if big_n else math.nan
    g_name, c_name = names
    if df_w < 1:
        vals = [GroupValue(g, c.value, c.stderr, c.ci95, c.dof, c.n_points) for g in groups for c in cells[g]]
        cc = compare_values(name, unit, vals, alpha)
        v = np.array([x.value for x in vals])
        between = float(np.var(v, ddof=1)) - resid_var if len(v) > 1 and math.isfinite(resid_var) else math.nan
        cc.variance = _components(grand, {f"between_{g_name}_and_{c_name}": between, f"between_{c_name}": None,
                                          "residual": resid_var})
        return cc, False
    ms_w = float(sum(((np.array([c.value for c in cells[g]]) - m) ** 2).sum()
                     for g, m in zip(groups, means, strict=True)) / df_w)
    q = float(stats.t.ppf(0.975, df_w))
    vals = []
    for g, m, n in zip(groups, means, n_g, strict=True):
        se = math.sqrt(ms_w / n)
        vals.append(GroupValue(g, m, se, (m - q * se, m + q * se), df_w, sum(c.n_points for c in cells[g]),
                               n_cells=int(n)))
    cc = CoefComparison(name, unit, vals, _spread(vals))
    if k >= 2:
        raw = []
        for i, gv in enumerate(vals):
            others = [o for j, o in enumerate(vals) if j != i]
            ref = float(np.median([o.value for o in others]))
            var_ref = (math.pi / 2 if len(others) > 2 else 1.0) * sum(ms_w / o.n_cells for o in others) \
                / len(others) ** 2
            se = math.sqrt(ms_w / gv.n_cells + var_ref)
            t = (gv.value - ref) / se if se > 0 else (0.0 if gv.value == ref else math.inf)
            raw.append(float(2 * stats.t.sf(abs(t), df_w)))
        for gv, p in zip(vals, holm(raw), strict=True):
            gv.p_vs_others, gv.differs = p, p < alpha
        pairs = [(a, b) for i, a in enumerate(vals) for b in vals[i + 1:]]
        ts = []
        for a, b in pairs:
            se = math.sqrt(ms_w * (1 / a.n_cells + 1 / b.n_cells))
            t = (a.value - b.value) / se if se > 0 else 0.0
            ts.append((t, float(2 * stats.t.sf(abs(t), df_w))))
        for (a, b), (t, p), ph in zip(pairs, ts, holm([x[1] for x in ts]), strict=True):
            cc.pairs.append(PairTest(a.group, b.group, (a.value - b.value) / b.value if b.value else math.nan,
                                     t, float(df_w), p, ph, ph < alpha))
        ms_b = float(np.sum(n_g * (means - grand) ** 2) / (k - 1))
        f = ms_b / ms_w if ms_w > 0 else math.inf
        cc.spread["anova_f"], cc.spread["anova_p"] = f, float(stats.f.sf(f, k - 1, df_w))
        n0 = (big_n - float(np.sum(n_g**2)) / big_n) / (k - 1)
        between_g = (ms_b - ms_w) / n0
    else:
        between_g = math.nan
    cc.variance = _components(grand, {f"between_{g_name}": between_g,
                                      f"between_{c_name}": ms_w - resid_var if math.isfinite(resid_var) else ms_w,
                                      "residual": resid_var})
    cc.variance["df_within"] = float(df_w)
    return cc, True


def _components(mean: float, var: dict[str, float | None]) -> dict[str, float | None]:
    """Variance components as standard deviations (negative moment estimates are 0) and % of the mean."""
    out: dict[str, float | None] = {}
    for k, v in var.items():
        sd = None if v is None or not math.isfinite(v) else math.sqrt(max(v, 0.0))
        out[f"{k}_sd"] = sd
        out[f"{k}_pct"] = None if sd is None or not mean else 100 * sd / abs(mean)
    return out


#: what a cell (a stage-1 fit) is, by the grouping: (the groups' word, the replicate column, its word)
REPLICATE: dict[str, tuple[str, tuple[str, ...], str]] = {
    "host": ("hosts", ("run_id",), "runs"), "run": ("runs", ("host",), "hosts"),
    "platform": ("platforms", ("host", "run_id"), "runs"),
}


def _fit_cells(frame: Any, column: str, reps: Sequence[str], model: str) -> tuple[dict[str, dict[str, Any]],
                                                                                   list[str]]:
    """Stage 1: one fit per (group, replicate) cell; with no replicate columns, one per group."""
    from archline.fit.io.results import Group, ResultsError, from_frame
    from archline.fit.regress.api import FitOptions, fit_group

    fits: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    keys = [column, *reps]
    frame = frame.copy()
    for r in reps:
        frame[r] = frame[r].fillna("").astype(str) if r in frame.columns else ""
    for key, sub in frame.groupby(keys, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        label, cell = str(key[0]), "/".join(str(x) for x in key[1:]) or str(key[0])
        platform = str(sub["platform"].iloc[0])
        emulated = bool(sub["emulated"].any()) if "emulated" in sub.columns else False
        try:
            data = from_frame(sub.reset_index(drop=True))
            fits.setdefault(label, {})[cell] = fit_group(
                Group(platform, emulated, data), FitOptions(model=model, validate=False, one_precision=True))
        except ResultsError as e:
            notes.append(f"{label} {cell}: not fitted: {e}")
    return fits, notes


def _block(scope: str, fits: dict[str, dict[str, Any]], alpha: float, notes: list[str], by: str,
           method: str) -> Block:
    g_name, _, c_name = REPLICATE[by]
    names: list[str] = []
    for per_group in fits.values():
        for r in per_group.values():
            names += [n for n in r.coefficients if n not in names]
    coefs = []
    pooled_used = False
    for n in names:
        cells: dict[str, list[Cell]] = {}
        unit = ""
        for label, per in fits.items():
            for cell, r in per.items():
                c = r.coefficients.get(n)
                if c is None:
                    continue
                unit = c.unit
                cells.setdefault(label, []).append(Cell(cell, float(c.value), c.stderr, int(r.n_points),
                                                        max(int(r.n_points) - len(r.coefficients), 1), c.ci95))
        if not cells:
            continue
        if method == "pooled":
            vals = [GroupValue(g, cs[0].value, cs[0].stderr, cs[0].ci95, cs[0].dof, cs[0].n_points)
                    for g, cs in cells.items()]
            coefs.append(compare_values(n, unit, vals, alpha))
            continue
        cc, ok = compare_cells(n, unit, cells, alpha, (g_name, c_name))
        pooled_used |= not ok
        coefs.append(cc)
    if pooled_used:
        notes.append(f"{scope}: every {by} has one {c_name[:-1]} only, so variation between {c_name} cannot be "
                     f"told from a difference between {g_name}; the tests use the fits' standard errors, which "
                     f"take repeats as independent (optimistic: give each {by} two or more {c_name})")
    if len(fits) < 2:
        notes.append(f"{scope}: only {len(fits)} group(s); nothing to compare")
    emulated = any(r.emulated for per in fits.values() for r in per.values())
    n_cells = {g: len(per) for g, per in fits.items()}
    return Block(scope, list(fits), emulated, coefs, notes, replicate=c_name, n_cells=n_cells,
                 two_stage=method == "two-stage" and not pooled_used)


def compare_frame(frame: Any, by: str, *, model: str = "basic", alpha: float = 0.05,
                  method: str = "two-stage") -> Comparison:
    """The comparison of a row-wise frame (``ResultsSet.frame``: platform, host, run_id, counts, time, energy).

    ``method="two-stage"`` (default): one fit per (group, replicate) cell, then per coefficient a one-way
    random-effects ANOVA of the cells (:func:`compare_cells`). ``method="pooled"``: one fit per group, tests
    on the fits' own standard errors (archline before issue 28; repeats of one run taken as independent)."""
    if by not in BY_COLUMN:
        raise CompareError(f"--by must be one of {', '.join(BY_COLUMN)}, got {by!r}")
    if model == "auto":
        raise CompareError("compare fits every group with the same model: pass --model basic, cache or capped")
    if method not in METHODS:
        raise CompareError(f"--method must be one of {', '.join(METHODS)}, got {method!r}")
    if not 0 < alpha < 1:
        raise CompareError(f"--alpha must be between 0 and 1, got {alpha}")
    column = BY_COLUMN[by]
    if column not in frame.columns or frame[column].isna().all():
        raise CompareError(f"--by {by}: the rows have no '{column}' column to group by")
    frame = frame.loc[frame[column].notna()]
    reps = REPLICATE[by][1] if method == "two-stage" else ()
    blocks: list[Block] = []
    if by == "platform":
        fits, notes = _fit_cells(frame, column, reps, model)
        blocks.append(_block("platforms", fits, alpha, notes, by, method))
    else:
        for platform, sub in frame.groupby("platform", sort=True):
            fits, notes = _fit_cells(sub, column, reps, model)
            blocks.append(_block(str(platform), fits, alpha, notes, by, method))
    if not any(b.coefficients for b in blocks):
        raise CompareError("no group could be fitted: " + "; ".join(n for b in blocks for n in b.notes))
    cmp = Comparison(by, model, alpha, blocks, method=method)
    used = [b.two_stage for b in blocks if b.coefficients]
    cmp.tests = tests_for(by, "two-stage" if method == "two-stage" and any(used) else "pooled")
    if method == "two-stage" and any(used) and not all(used):
        cmp.tests["flag_one_cell"] = TEST_FLAG + " (blocks whose groups have one fit each)"
    return cmp


def tests_for(by: str, method: str) -> dict[str, str]:
    if method == "pooled":
        return {"flag": TEST_FLAG, "pairs": TEST_PAIRS, "spread": TEST_SPREAD}
    g, _, c = REPLICATE[by]
    w = {"g": g, "c": c, "g1": g[:-1], "c1": c[:-1]}
    return {"flag": TEST_FLAG_2.format(**w), "pairs": TEST_PAIRS_2.format(**w), "spread": TEST_SPREAD_2.format(**w)}


def compare_files(paths: Sequence[str | Path], by: str, *, where: Sequence[str] = (), model: str = "basic",
                  alpha: float = 0.05, method: str = "two-stage") -> Comparison:
    from archline.fit.io.results import read_results

    if by not in BY_COLUMN:
        raise CompareError(f"--by must be one of {', '.join(BY_COLUMN)}, got {by!r}")
    if model == "auto":
        raise CompareError("compare fits every group with the same model: pass --model basic, cache or capped")
    if method not in METHODS:
        raise CompareError(f"--method must be one of {', '.join(METHODS)}, got {method!r}")
    if not 0 < alpha < 1:
        raise CompareError(f"--alpha must be between 0 and 1, got {alpha}")
    rs = read_results(paths, where)
    cmp = compare_frame(rs.frame, by, model=model, alpha=alpha, method=method)
    if rs.notes and cmp.blocks:
        cmp.blocks[0].notes.extend(rs.notes)
    cmp.files = list(rs.files)
    return cmp
