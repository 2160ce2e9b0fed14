"""The cost table for people: pJ/flop, pJ/B and W, one line per coefficient, then quality and warnings (what
``archline fit`` prints by default). The JSON and CSV are :mod:`archline.formats.costs`'s."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from archline.common.outputs import show
from archline.formats.costs_units import HUMAN_UNITS, UNITS

if TYPE_CHECKING:  # pragma: no cover
    from archline.formats.costs_types import Coefficient, FitResult


def _human(c: Coefficient) -> tuple[str, str, str, str]:
    factor, unit = HUMAN_UNITS.get(c.unit, (1.0, c.unit))
    v = c.value * factor
    se = "" if c.stderr is None or not math.isfinite(c.stderr) else f"±{c.stderr * factor:.3g}"
    ci = "" if c.ci95 is None else f"[{c.ci95[0] * factor:.4g}, {c.ci95[1] * factor:.4g}]"
    return f"{v:.4g}", se, ci, unit


def format_table(r: FitResult) -> str:
    """A plain-text table for people."""
    n_cfg = r.quality.get("n_configurations")
    head = f"{show(r.platform)}  model={r.model}" + (f" ({r.extra['method']})" if r.model == "cache" else "") + \
        f"  points={r.n_points}" + (f"  configurations={n_cfg}" if n_cfg is not None else "") + \
        ("  EMULATED" if r.emulated else "")
    out = [head, "-" * len(head)]
    rows: list[tuple[str, str, str, str, str]] = []
    order = {k: i for i, k in enumerate(UNITS)}
    for c in sorted(r.coefficients.values(), key=lambda c: order.get(c.name, 99)) + list(r.tau.values()):
        v, se, ci, unit = _human(c)
        rows.append((c.name, v, se, unit, ci))
    if rows:
        widths = [max(len(x[i]) for x in [*rows, ("coefficient", "value", "stderr", "unit", "95% CI")])
                  for i in range(5)]
        hdr = ("coefficient", "value", "stderr", "unit", "95% CI")
        out.append("  ".join(h.ljust(w) for h, w in zip(hdr, widths, strict=True)))
        for row in rows:
            out.append("  ".join(x.ljust(w) if i in (0, 3, 4) else x.rjust(w)
                                 for i, (x, w) in enumerate(zip(row, widths, strict=True))))
    absent = r.extra.get("energy_absent") if r.model == "time" else None
    if absent:      # one line for every energy term a time-only table lacks: they share one reason
        out.append(f"energy: - ({', '.join(absent['terms'])}: {absent['reason']})")
    for name, why in r.omitted.items() if not absent else ():
        out.append(f"{name}: not reported ({why})")
    if r.model == "dvfs" and r.extra.get("settings"):
        out.append("")
        out.append("per setting        eps_sp  eps_dp  eps_mem   eps_int  eps_sm  eps_l2     pi0")
        out.append("core/mem MHz       pJ/flop pJ/flop pJ/B      pJ/op    pJ/B    pJ/B       W")
        for s in r.extra["settings"]:
            def g(k: str, f: float = 1e12, s: dict[str, Any] = s) -> str:
                return f"{s[k] * f:.4g}" if k in s and s[k] is not None else "-"
            label = f"{s.get('core_mhz', '?'):g}/{s.get('mem_mhz', '?'):g}" if isinstance(s.get("core_mhz"), float) \
                else f"{s.get('core_v')}V/{s.get('mem_v')}V"
            out.append(f"{label:<18} {g('eps_flop_sp'):>7} {g('eps_flop_dp'):>7} {g('eps_mem'):>7} "
                       f"{g('eps_int'):>9} {g('eps_shared'):>7} {g('eps_l2'):>7} {g('pi0', 1.0):>7}")
    d = r.derived
    if "B_tau" in d:
        out.append("")
        out.append("derived: " + ", ".join(f"{k}={d[k]:.3g}" for k in ("B_tau_sp", "B_eps_sp", "B_tau_dp", "B_eps_dp")
                                           if k in d))
    if r.model == "capped" and "cap" in r.extra:
        cap = r.extra["cap"]
        out.append(f"cap binds at {cap['points_where_cap_binds']} of {cap['of_points']} points; "
                   + ", ".join(f"{p}: I in [{cap[f'B_tau_minus_{p}']:.3g}, {cap[f'B_tau_plus_{p}']:.3g}]"
                               for p in ("sp", "dp") if f"B_tau_minus_{p}" in cap and cap.get(f"cap_binds_{p}")))
        ks = r.extra.get("ks_free_vs_capped", {})
        out.append("KS free vs capped: " + ", ".join(
            f"{q} p={v['pvalue']:.3g}{' **' if v['differ'] else ''}" for q, v in ks.items()))
    q = r.quality
    parts = []
    roof = " vs roofline" if "time_model" in q else ""
    split = {"configuration": " by configuration", "setting": " by setting", "row": " row-wise"}.get(
        str(q.get("cv_split")), "")
    for k, label in (("r2", "R^2"), ("energy_mape_pct", "energy MAPE %"), ("energy_median_ape_pct", "median %"),
                     ("time_mape_pct", f"time MAPE{roof} %"), ("power_mape_pct", f"power MAPE{roof} %"),
                     ("cv_mape_pct", f"{q.get('cv_folds', '?')}-fold CV{split} MAPE %"), ("cv_sd_pct", "CV sd %"),
                     ("holdout_mape_pct", "holdout MAPE %")):
        if k in q and isinstance(q[k], (int, float)):
            parts.append(f"{label} {q[k]:.4g}")
    out.append("")
    out.append("quality: " + (", ".join(parts) if parts or not absent else
                              "time only, no energy model to score (taus: observed peaks)"))
    for w in r.warnings:
        out.append(f"warning: {w}")
    return "\n".join(out)


def to_table(results: list[FitResult]) -> str:
    return "\n\n".join(format_table(r) for r in results) + "\n"
