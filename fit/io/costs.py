"""Write fit results: ``archline.costs/1`` JSON (DESIGN.md §4), CSV, and a table for people (pJ, pJ/B, W).

The JSON is what :func:`archline.fit.platforms.profiles.load_costs` reads, so a cost table works wherever a profile
does.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from archline.common.atomic import atomic_path, write_atomic
from archline.fit.platforms.profiles import COSTS_SCHEMA
from archline.fit.regress.result import UNITS, Coefficient, FitResult

#: SI unit -> (factor, unit shown to people).
HUMAN_UNITS: dict[str, tuple[float, str]] = {
    "J/flop": (1e12, "pJ/flop"), "J/byte": (1e12, "pJ/B"), "J/access": (1e12, "pJ/access"), "J/op": (1e12, "pJ/op"),
    "W": (1.0, "W"), "W/V": (1.0, "W/V"), "s/flop": (1e12, "ps/flop"), "s/byte": (1e12, "ps/B"),
    "J/(flop*V^2)": (1e12, "pJ/(flop V^2)"), "J/(byte*V^2)": (1e12, "pJ/(B V^2)"), "J/(op*V^2)": (1e12, "pJ/(op V^2)"),
}


def _clean(x: Any) -> Any:
    """JSON-safe: NaN/inf become null; numpy scalars become Python numbers."""
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if hasattr(x, "item") and not isinstance(x, (str, bytes)):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def to_costs_dict(r: FitResult) -> dict[str, Any]:
    d: dict[str, Any] = {
        "schema": COSTS_SCHEMA, "platform": r.platform, "model": r.model, "emulated": bool(r.emulated),
        "n_points": int(r.n_points),
        "coefficients": {k: c.as_json() for k, c in r.coefficients.items()},
        "tau": {k: c.as_json() for k, c in r.tau.items()},
        "derived": r.derived,
        "quality": r.quality,
        "omitted": r.omitted,
        "warnings": r.warnings,
    }
    if "method" in r.extra:
        d["method"] = r.extra["method"]
    if r.model == "dvfs":
        d["settings"] = r.extra.get("settings", [])
    if r.model == "capped":
        d["cap"] = r.extra.get("cap", {})
        d["ks_free_vs_capped"] = r.extra.get("ks_free_vs_capped", {})
    if "auto" in r.extra:
        d["auto"] = r.extra["auto"]
    if "files" in r.extra:
        d["files"] = r.extra["files"]
    return _clean(d)  # type: ignore[no-any-return]


def to_json(results: list[FitResult]) -> str:
    docs = [to_costs_dict(r) for r in results]
    return json.dumps(docs[0] if len(docs) == 1 else docs, indent=2)


CSV_HEADER = "platform,model,emulated,section,name,value,stderr,ci95_low,ci95_high,unit"


def _csv_line(r: FitResult, section: str, c: Coefficient) -> str:
    def f(v: float | None) -> str:
        return "" if v is None or not math.isfinite(v) else repr(float(v))
    lo, hi = c.ci95 if c.ci95 else (None, None)
    return ",".join([r.platform, r.model, "true" if r.emulated else "false", section, c.name, f(c.value),
                     f(c.stderr), f(lo), f(hi), c.unit])


def to_csv(results: list[FitResult]) -> str:
    """One line per coefficient (SI units), tau, dvfs per-setting costs, and quality figure."""
    lines = [CSV_HEADER]
    for r in results:
        for c in r.coefficients.values():
            lines.append(_csv_line(r, "coefficients", c))
        for c in r.tau.values():
            lines.append(_csv_line(r, "tau", c))
        for i, s in enumerate(r.extra.get("settings", []) if r.model == "dvfs" else []):
            for k in ("eps_flop_sp", "eps_flop_dp", "eps_mem", "eps_int", "eps_shared", "eps_l2", "pi0"):
                if k in s:
                    unit = "W" if k == "pi0" else ("J/flop" if "flop" in k else "J/op" if k == "eps_int" else "J/byte")
                    se = s.get("pi0_stderr") if k == "pi0" else None
                    lines.append(_csv_line(r, f"setting{i}:core_mhz={s.get('core_mhz')}:mem_mhz={s.get('mem_mhz')}",
                                           Coefficient(k, s[k], se, None, unit)))
        for k, v in r.quality.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                lines.append(",".join([r.platform, r.model, "true" if r.emulated else "false", "quality", k,
                                       repr(float(v)), "", "", "", "%" if k.endswith("_pct") else ""]))
    return "\n".join(lines) + "\n"


def _human(c: Coefficient) -> tuple[str, str, str, str]:
    factor, unit = HUMAN_UNITS.get(c.unit, (1.0, c.unit))
    v = c.value * factor
    se = "" if c.stderr is None or not math.isfinite(c.stderr) else f"±{c.stderr * factor:.3g}"
    ci = "" if c.ci95 is None else f"[{c.ci95[0] * factor:.4g}, {c.ci95[1] * factor:.4g}]"
    return f"{v:.4g}", se, ci, unit


def format_table(r: FitResult) -> str:
    """A plain-text table for people."""
    n_cfg = r.quality.get("n_configurations")
    head = f"{r.platform}  model={r.model}" + (f" ({r.extra['method']})" if r.model == "cache" else "") + \
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
    for name, why in r.omitted.items():
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
    out.append("quality: " + ", ".join(parts))
    for w in r.warnings:
        out.append(f"warning: {w}")
    return "\n".join(out)


def to_table(results: list[FitResult]) -> str:
    return "\n\n".join(format_table(r) for r in results) + "\n"


def group_filename(r: FitResult, ext: str) -> str:
    return f"{r.platform}{'-emulated' if r.emulated else ''}.costs.{ext}"


def write_costs(results: list[FitResult], out: str | Path | None, fmt: str = "json") -> list[Path]:
    """Write in ``fmt`` (json|csv|table). Several groups and a directory ``out``: one file per group.
    Atomic writes (temp file + rename). With ``out`` None nothing is written (the caller prints)."""
    if out is None:
        return []
    render = {"json": to_json, "csv": to_csv, "table": to_table}[fmt]
    ext = {"json": "json", "csv": "csv", "table": "txt"}[fmt]
    out = Path(out)
    targets: list[tuple[Path, str]] = []
    if out.is_dir() or (len(results) > 1 and fmt == "json" and out.suffix != ".json"):
        out.mkdir(parents=True, exist_ok=True)
        targets = [(out / group_filename(r, ext), render([r])) for r in results]
    else:
        targets = [(out, render(results))]
    written = []
    for path, text in targets:
        written.append(write_atomic(path, text))
    return written


def render(results: list[FitResult], fmt: str) -> str:
    return {"json": to_json, "csv": to_csv, "table": to_table}[fmt](results)


def write_points(results: list[FitResult], path: str | Path) -> Path:
    """Per-point signed relative errors of time, energy and power of every group, as one CSV."""
    import pandas as pd

    frames = []
    for r in results:
        if r.point_errors is not None:
            f = r.point_errors.copy()
            f.insert(0, "model", r.model)
            f.insert(0, "platform", r.platform)
            frames.append(f)
    path = Path(path)
    with atomic_path(path) as tmp:
        (pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()).to_csv(tmp, index=False)
    return path
