"""The statistics of ``archline compare``: Welch and Holm, the spread across groups, and the two-stage random-effects
comparison of cells (one fit per run of each host), with its variance components. Pure numpy and scipy."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache

import numpy as np

#: up to this many values the median's variance is the exact order-statistics one; beyond, pi/(2m) (0.7% above
#: the exact value at m = 200, and closer as m grows)
MEDIAN_EXACT_UP_TO = 200
#: values closer than this (relative to the largest) are equal: a mean square below its square is rounding, not
#: variation (identical noise-free cells differ by a few ulps at most)
ROUNDING_REL = 1e-12


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
    notes: list[str] = field(default_factory=list)

    @property
    def flagged(self) -> list[str]:
        return [v.group for v in self.values if v.differs]


@cache
def median_variance_factor(m: int) -> float:
    """Var(median of m independent N(0, 1) values), exact for small m; times sigma^2 for N(mu, sigma^2).

    The reference of a group is the median of the others; its textbook variance pi*sigma^2/(2m) is asymptotic and
    wrong for the few hosts or runs a comparison has (m = 1: 1.57x too big; m = 2, the mean of two: 1.57x;
    m = 3: 0.5236 instead of 0.4487). From the order statistics X_(1) <= ... <= X_(m) (David & Nagaraja, Order
    Statistics, 2.1-2.2): m odd, the median is X_(k), k = (m+1)/2, of density
    m!/((k-1)!(m-k)!) Phi^(k-1) (1-Phi)^(m-k) phi, and Var = E[X_(k)^2] (the mean is 0); m even, the median is
    (X_(k) + X_(k+1))/2, k = m/2, Var = (E[X_(k)^2] + E[X_(k) X_(k+1)])/2 by symmetry, the cross moment from the
    joint density m!/((k-1)!^2) Phi(x)^(k-1) phi(x) phi(y) (1-Phi(y))^(k-1) on x < y. The integrals are taken on a
    grid over [-10, 10] (Simpson; the inner one by a trapezoid cumulated from the right, so nothing cancels):
    within 1e-4 relative up to m = 50."""
    from scipy import stats
    from scipy.integrate import cumulative_trapezoid, simpson

    if m < 1:
        raise ValueError(f"median of {m} values")
    if m <= 2:
        return 1.0 / m
    if m > MEDIAN_EXACT_UP_TO:
        return math.pi / (2 * m)
    x = np.linspace(-10.0, 10.0, 20001)
    lp, ls, lf = stats.norm.logcdf(x), stats.norm.logsf(x), stats.norm.logpdf(x)
    lg = math.lgamma
    if m % 2:
        k = (m + 1) // 2
        return float(simpson(x * x * np.exp(lg(m + 1) - 2 * lg(k) + (k - 1) * (lp + ls) + lf), x=x))
    k = m // 2
    ea2 = float(simpson(x * x * np.exp(lg(m + 1) - lg(k) - lg(k + 1) + (k - 1) * lp + k * ls + lf), x=x))
    # H(x) = integral from x to the right end of y phi(y) (1-Phi(y))^(k-1) dy
    h = cumulative_trapezoid((x * np.exp((k - 1) * ls + lf))[::-1], dx=float(x[1] - x[0]), initial=0.0)[::-1]
    eab = float(simpson(x * np.exp(lg(m + 1) - 2 * lg(k) + (k - 1) * lp + lf) * h, x=x))
    return (ea2 + eab) / 2


def median_variance(variances: Sequence[float]) -> float:
    """Variance of the median of independent estimates of one value with these variances: exact
    (:func:`median_variance_factor`) when they are equal; otherwise their mean is used as the common variance
    (an approximation: the order statistics of unequal normals have no closed form)."""
    m = len(variances)
    return median_variance_factor(m) * float(sum(variances)) / m


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
        se_ref = math.sqrt(median_variance([(o.stderr or 0.0) ** 2 for o in others]))
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
    # rounding: values this close are one value, and a mean square below tiny**2 is no variation at all
    tiny = ROUNDING_REL * max((abs(c.value) for g in groups for c in cells[g]), default=0.0)
    if ms_w <= tiny * tiny:
        ms_w = 0.0
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
            var_ref = median_variance([ms_w / o.n_cells for o in others])
            se = math.sqrt(ms_w / gv.n_cells + var_ref)
            t = (gv.value - ref) / se if se > 0 else (0.0 if abs(gv.value - ref) <= tiny else math.inf)
            raw.append(float(2 * stats.t.sf(abs(t), df_w)))
        for gv, p in zip(vals, holm(raw), strict=True):
            gv.p_vs_others, gv.differs = p, p < alpha
        pairs = [(a, b) for i, a in enumerate(vals) for b in vals[i + 1:]]
        ts = []
        for a, b in pairs:
            se = math.sqrt(ms_w * (1 / a.n_cells + 1 / b.n_cells))
            t = (a.value - b.value) / se if se > 0 else (0.0 if abs(a.value - b.value) <= tiny else math.inf)
            ts.append((t, float(2 * stats.t.sf(abs(t), df_w))))
        for (a, b), (t, p), ph in zip(pairs, ts, holm([x[1] for x in ts]), strict=True):
            cc.pairs.append(PairTest(a.group, b.group, (a.value - b.value) / b.value if b.value else math.nan,
                                     t, float(df_w), p, ph, ph < alpha))
        ms_b = float(np.sum(n_g * (means - grand) ** 2) / (k - 1))
        if ms_w > 0:
            f = ms_b / ms_w
            cc.spread["anova_f"], cc.spread["anova_p"] = f, float(stats.f.sf(f, k - 1, df_w))
        elif ms_b > tiny * tiny:     # the cells of each group equal, the groups not: they differ beyond doubt
            cc.spread["anova_f"], cc.spread["anova_p"] = math.inf, 0.0
        else:                        # 0/0: every cell the same value
            ms_b = 0.0
            cc.spread["anova_f"], cc.spread["anova_p"] = None, None
            cc.notes.append(f"ANOVA F undefined: every fit gave the same value (no variation between {g_name} "
                            f"or between {c_name}); nothing differs")
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
