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

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from archline.fit.analyses.choi.compare_stats import (  # re-exported: the comparison's one API
    Cell as Cell,
)
from archline.fit.analyses.choi.compare_stats import (
    CoefComparison as CoefComparison,
)
from archline.fit.analyses.choi.compare_stats import (
    GroupValue as GroupValue,
)
from archline.fit.analyses.choi.compare_stats import (
    PairTest as PairTest,
)
from archline.fit.analyses.choi.compare_stats import (
    compare_cells as compare_cells,
)
from archline.fit.analyses.choi.compare_stats import (
    compare_values as compare_values,
)
from archline.fit.analyses.choi.compare_stats import (
    holm as holm,
)
from archline.fit.analyses.choi.compare_stats import (
    welch as welch,
)
from archline.model.errors import ArchlineFitError

if TYPE_CHECKING:  # pragma: no cover
    from archline.fit.io.configs import Grouped

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


#: what a cell (a stage-1 fit) is, by the grouping: (the groups' word, the replicate column, its word)
REPLICATE: dict[str, tuple[str, tuple[str, ...], str]] = {
    "host": ("hosts", ("run_id",), "runs"), "run": ("runs", ("host",), "hosts"),
    "platform": ("platforms", ("host", "run_id"), "runs"),
}


class CompareError(ArchlineFitError):
    pass


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
    warnings: list[str] = field(default_factory=list)      #: the input's and the cells' checks (compare_checks)
    off_sources: list[dict[str, Any]] = field(default_factory=list)
    unreliable: bool = False             #: a source or a cell fit warned: the values and tests are not to be used


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
    warnings: list[str] = field(default_factory=list)     #: every block's, its scope named (stderr)

    def as_json(self) -> dict[str, Any]:
        d = asdict(self)
        for b, bj in zip(self.blocks, d["blocks"], strict=True):
            for c, cj in zip(b.coefficients, bj["coefficients"], strict=True):
                cj["flagged"] = c.flagged
        return {"schema": "archline.compare/1", **d}


def extra_keys(by: str, method: str) -> tuple[str, ...]:
    """The text columns a cell's configurations are keyed by beside the platform: the group's column and, for
    the two-stage method, the replicate's (a configuration is then one run's repeats of one point)."""
    reps = REPLICATE[by][1] if method == "two-stage" else ()
    return tuple(k for k in (BY_COLUMN[by], *reps) if k != "platform")


def _fit_cells(data: Grouped, on: np.ndarray, column: str, reps: Sequence[str], model: str
               ) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Stage 1: one fit per (group, replicate) cell of the configurations ``on``; with no replicate columns, one
    per group. Each cell is its configurations' statistics (``Grouped.select``), never a regrouping of rows."""
    from archline.fit.io.configs import iter_groups
    from archline.fit.io.results import Group
    from archline.fit.regress.api import FitOptions, fit_group
    from archline.formats.results_check import ResultsError

    fits: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    cfg = data.cfg
    for key, mask in iter_groups(cfg, [column, *reps]):
        mask &= on
        if not mask.any():
            continue
        label, cell = str(key[0]), "/".join(str(x) for x in key[1:]) or str(key[0])
        platform = str(cfg["platform"][mask][0])
        emulated = bool(cfg["emulated"][mask].any())
        try:
            fits.setdefault(label, {})[cell] = fit_group(
                Group(platform, emulated, data.select(mask)),
                FitOptions(model=model, validate=False, one_precision=True))
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


def _checked(b: Block, data: Grouped, fits: dict[str, dict[str, Any]]) -> Block:
    """The block with the checks ``archline fit`` makes of its input (a source off by a unit factor) and each
    cell fit's own warnings that make it unusable (:mod:`archline.fit.analyses.choi.compare_checks`)."""
    from archline.fit.analyses.choi.compare_checks import cell_warnings, source_warnings, unreliable_note

    said, b.off_sources = source_warnings(data)
    cells = cell_warnings(fits)
    b.warnings = said + cells
    b.unreliable = bool(b.warnings)
    if b.unreliable:
        b.notes.insert(0, unreliable_note(b.scope, len(said), len(cells)))
    return b


def _check_args(by: str, model: str, method: str, alpha: float) -> None:
    if by not in BY_COLUMN:
        raise CompareError(f"--by must be one of {', '.join(BY_COLUMN)}, got {by!r}")
    if model == "auto":
        raise CompareError("compare fits every group with the same model: pass --model basic, cache or capped")
    if method not in METHODS:
        raise CompareError(f"--method must be one of {', '.join(METHODS)}, got {method!r}")
    if not 0 < alpha < 1:
        raise CompareError(f"--alpha must be between 0 and 1, got {alpha}")


def compare_frame(frame: Any, by: str, *, model: str = "basic", alpha: float = 0.05,
                  method: str = "two-stage") -> Comparison:
    """The comparison of a row-wise frame (``ResultsSet.frame``: platform, host, run_id, counts, time, energy).

    ``method="two-stage"`` (default): one fit per (group, replicate) cell, then per coefficient a one-way
    random-effects ANOVA of the cells (:func:`compare_cells`). ``method="pooled"``: one fit per group, tests
    on the fits' own standard errors (archline before issue 28; repeats of one run taken as independent).

    The frame is grouped into configurations once (keyed by the group and replicate columns too) and compared
    as files are (:func:`compare_grouped`); rows without a group value are left out."""
    from archline.fit.io.results import from_frame

    _check_args(by, model, method, alpha)
    column = BY_COLUMN[by]
    if column not in frame.columns or frame[column].isna().all():
        raise CompareError(f"--by {by}: the rows have no '{column}' column to group by")
    frame = frame.loc[frame[column].notna()]
    return compare_grouped(from_frame(frame, extra_keys=extra_keys(by, method)), by, model=model, alpha=alpha,
                           method=method)


def compare_grouped(data: Grouped, by: str, *, model: str = "basic", alpha: float = 0.05,
                    method: str = "two-stage") -> Comparison:
    """The comparison of configurations keyed by the group's column and, for ``method="two-stage"``, the
    replicate's (:func:`extra_keys`): each cell's fit is the selection of its configurations, so memory is
    bounded by configurations whatever the number of rows behind them."""
    _check_args(by, model, method, alpha)
    column = BY_COLUMN[by]
    cfg = data.cfg
    reps = REPLICATE[by][1] if method == "two-stage" else ()
    missing = [k for k in (column, *reps) if k not in cfg]
    if missing:
        raise ValueError(f"compare_grouped: the configurations are not keyed by {', '.join(missing)} "
                         f"(read them with extra_keys={extra_keys(by, method)!r})")
    has = np.asarray(cfg[column] != "", dtype=bool)
    if not has.any():
        raise CompareError(f"--by {by}: the rows have no '{column}' column to group by")
    first_notes: list[str] = []
    if not has.all():
        first_notes.append(f"{int(cfg['n'][~has].sum())} row(s) without a {column} left out")
    blocks: list[Block] = []
    if by == "platform":
        fits, notes = _fit_cells(data, has, column, reps, model)
        blocks.append(_checked(_block("platforms", fits, alpha, notes, by, method), data.select(has), fits))
    else:
        from archline.fit.io.configs import iter_groups

        for (platform,), on in iter_groups(cfg, ["platform"]):
            if not (on & has).any():
                continue
            fits, notes = _fit_cells(data, on & has, column, reps, model)
            blocks.append(_checked(_block(str(platform), fits, alpha, notes, by, method), data.select(on & has),
                                   fits))
    if not any(b.coefficients for b in blocks):
        raise CompareError("no group could be fitted: " + "; ".join(n for b in blocks for n in b.notes))
    if first_notes:
        blocks[0].notes[:0] = first_notes
    cmp = Comparison(by, model, alpha, blocks, method=method)
    cmp.warnings = [f"{b.scope}: {w}" for b in blocks for w in b.warnings]
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
                  alpha: float = 0.05, method: str = "two-stage", max_rows: int | None = None) -> Comparison:
    """The comparison of result files, read as ``archline fit`` reads them: each batch reduced at once to
    configuration statistics keyed by the group and replicate columns, at most ``max_rows`` rows kept (a uniform
    sample beyond; default the fit's bound), so memory is bounded by configurations, not rows."""
    from archline.fit.io.results import FIT_MAX_ROWS, read_results

    _check_args(by, model, method, alpha)
    keys = extra_keys(by, method)
    rs = read_results(paths, where, extra_keys=keys, carry=(), max_rows=FIT_MAX_ROWS if max_rows is None
                      else max_rows)
    cmp = compare_grouped(rs.data, by, model=model, alpha=alpha, method=method)
    notes = list(rs.notes)
    if rs.data.sampled:
        notes.append(f"{rs.data.n_rows} rows: every fit's coefficients and standard errors from all of them (each "
                     f"cell's configuration statistics); a uniform sample of {rs.data.n_kept} rows kept for per-row "
                     f"figures, which compare does not use (bounded memory)")
    if notes:
        cmp.blocks[0].notes.extend(notes)
    cmp.files = list(rs.files)
    return cmp
