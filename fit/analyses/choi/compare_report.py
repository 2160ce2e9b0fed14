"""``archline compare`` for people: per block, the coefficients side by side (each group's value and 95% CI, a
``*`` where the group differs from the others), then per coefficient the spread, the groups that differ with
their Holm-corrected p, the ones that do not, the pairs that differ and the variance components (between the
groups, between their runs or hosts, residual); the tests named on top."""

from __future__ import annotations

from archline.fit.analyses.choi.compare import Block, CoefComparison, Comparison
from archline.formats.costs import HUMAN_UNITS

#: up to this many groups are columns (side by side); more become rows
MAX_COLUMNS = 6


def _num(x: float) -> str:
    return f"{x:.4g}"


def _p(p: float | None) -> str:
    if p is None:
        return "-"
    return f"{p:.2g}" if p >= 1e-4 else "<1e-4"


def _cell(c: CoefComparison, group: str) -> str:
    f, _ = HUMAN_UNITS.get(c.unit, (1.0, c.unit))
    for v in c.values:
        if v.group == group:
            ci = f" [{_num(v.ci95[0] * f)}, {_num(v.ci95[1] * f)}]" if v.ci95 else ""
            return f"{_num(v.value * f)}{ci}{' *' if v.differs else ''}"
    return "-"


def _grid(head: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    out = ["  " + "  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)).rstrip()]
    out.append("  " + "  ".join("-" * w for w in widths))
    out += ["  " + "  ".join(x.ljust(w) for x, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return out


def _side_by_side(b: Block) -> list[str]:
    def label(c: CoefComparison) -> str:
        return f"{c.name} ({HUMAN_UNITS.get(c.unit, (1.0, c.unit))[1]})"

    if len(b.groups) <= MAX_COLUMNS:
        return _grid(["coefficient", *b.groups], [[label(c), *(_cell(c, g) for g in b.groups)]
                                                  for c in b.coefficients])
    return _grid([b.scope, *(label(c) for c in b.coefficients)],
                 [[g, *(_cell(c, g) for c in b.coefficients)] for g in b.groups])


def _tests(c: CoefComparison, alpha: float) -> str:
    f, unit = HUMAN_UNITS.get(c.unit, (1.0, c.unit))
    s = c.spread
    parts = [f"spread {_num((s['min'] or 0) * f)}..{_num((s['max'] or 0) * f)} {unit}"]
    if s.get("range_rel") is not None:
        parts[-1] += f" (range {100 * (s['range_rel'] or 0):.2f}% of the median"
        parts[-1] += f", CV {s['cv_pct']:.2f}%)" if s.get("cv_pct") is not None else ")"
    if s.get("anova_p") is not None:
        parts.append(f"ANOVA F {s['anova_f']:.3g}, p {_p(s['anova_p'])}")
    elif "anova_f" in s:
        parts.append("ANOVA F undefined (every fit the same value: no variation between or within groups)")
    elif s.get("cochran_p") is not None:
        parts.append(f"Cochran's Q {s['cochran_q']:.3g}, p {_p(s['cochran_p'])}")
    tested = [v for v in c.values if v.p_vs_others is not None]
    if tested:
        yes = [f"{v.group} (p {_p(v.p_vs_others)})" for v in tested if v.differs]
        no = [f"{v.group} (p {_p(v.p_vs_others)})" for v in tested if not v.differs]
        parts.append("differs: " + (", ".join(yes) or "none"))
        if no:
            parts.append("same as the others: " + ", ".join(no))
        sig = [p for p in c.pairs if p.significant]
        parts.append("pairs that differ: " + (", ".join(f"{p.a}/{p.b} {100 * p.diff_rel:+.2f}% (p {_p(p.p_holm)})"
                                                        for p in sig) or "none"))
    out = f"  {c.name}: " + "; ".join(parts)
    comps = [(k[:-3], v, c.variance.get(k[:-3] + "_pct")) for k, v in c.variance.items() if k.endswith("_sd")]
    if comps:
        out += "\n    variance components (s.d.): " + ", ".join(
            f"{k.replace('_', ' ')} " + ("-" if v is None else f"{_num(v * f)} {unit}"
                                         + (f" ({pct:.2f}%)" if pct is not None else ""))
            for k, v, pct in comps)
    return out


def _block_lines(b: Block, cmp: Comparison) -> list[str]:
    title = f"{b.scope}: {len(b.groups)} {cmp.by}(s), each fitted with the {cmp.model} model" + \
        ("  EMULATED" if b.emulated else "")
    how = (f"mean of each {cmp.by}'s per-{b.replicate[:-1]} fits [95% CI from the variation between "
           f"{b.replicate}]" if b.two_stage else "value [95% CI of the fit]")
    out = [title, "=" * len(title)]
    if b.unreliable:
        out.append(f"  UNRELIABLE: {len(b.warnings)} warning(s) below; the values and tests mix a unit slip or a "
                   "non-physical fit in")
    if b.two_stage and b.n_cells:
        lo, hi = min(b.n_cells.values()), max(b.n_cells.values())
        out.append(f"  {sum(b.n_cells.values())} fits: {lo if lo == hi else f'{lo}-{hi}'} {b.replicate} per {cmp.by}")
    out += [*_side_by_side(b), f"  ({how}; * differs from the others)", ""]
    if len(b.groups) > 1:
        out += [_tests(c, cmp.alpha) for c in b.coefficients] + [""]
    out += [f"note: {n}" for n in b.notes]
    out += [f"warning: {w}" for w in b.warnings]
    return out


def to_table(cmp: Comparison) -> str:
    lines = [f"archline compare --by {cmp.by} (alpha {cmp.alpha:g})",
             f"  differs: {cmp.tests['flag']}", f"  pairs:   {cmp.tests['pairs']}",
             f"  spread:  {cmp.tests['spread']}", ""]
    for b in cmp.blocks:
        lines += _block_lines(b, cmp)
    return "\n".join(lines).rstrip() + "\n"
