"""The one owner of the cost table, ``archline.costs/1`` (docs/design.md §4): :class:`CostTable` reads it
(:meth:`CostTable.load`) and writes it (:meth:`CostTable.dump`), like pyperf's Benchmark with its format version.

Reading honours each coefficient's ``unit`` (``pJ/flop`` becomes J/flop; a unit of another dimension or one not
known is one line naming the file, the coefficient and the unit, :mod:`archline.formats.costs_units`) and refuses
what cannot be physical, naming the key:

* every number finite (JSON's ``NaN`` and ``Infinity``, which Python accepts, are refused);
* energies per operation (``eps_*``, ``c0_*``), ``pi0``, ``c1_*`` and ``pi_misc`` >= 0 (0 is a free operation or
  no constant power: allowed); ``delta_eps_dp`` and ``delta_c0_core_double`` are differences (any sign);
* ``tau_*`` and ``delta_pi`` > 0 (a free model leaves ``delta_pi`` out); a stderr >= 0 or null;
* DVFS ``settings``: clocks and voltages > 0, costs as above.

A profile (:mod:`archline.formats.platforms.profiles`) sees a table through :meth:`CostTable.load`; the CSV and the
table for people are written here too (:func:`to_csv`, :mod:`archline.formats.costs_table`).
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from archline.common.atomic import write_atomic
from archline.common.files import read_json
from archline.common.inputs import show_value, validate
from archline.common.outputs import show
from archline.formats.costs_table import format_table, to_table
from archline.formats.costs_types import Coefficient as Coefficient  # re-exported: the fits build them
from archline.formats.costs_types import FitResult
from archline.formats.costs_units import HUMAN_UNITS, UNITS, UnitError, implausible, si_factor
from archline.model.errors import PlatformNotFoundError, ProfileFormatError

__all__ = ["COSTS_SCHEMA", "FORMAT_VERSION", "HUMAN_UNITS", "UNITS", "Coefficient", "CostTable", "format_table",
           "names_cost_table", "render", "to_costs_dict", "to_csv", "to_json", "to_table"]

FORMAT_VERSION = 1
COSTS_SCHEMA = f"archline.costs/{FORMAT_VERSION}"


def names_cost_table(head: bytes) -> bool:
    """Whether the first bytes of a JSON file name this format's schema (a peek, for a reader refusing it)."""
    return f'"{COSTS_SCHEMA}"'.encode() in head


#: clock and voltage keys of a DVFS setting (must be > 0)
SETTING_CLOCKS = ("core_mhz", "mem_mhz", "core_v", "mem_v")


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


# --- the rules of physics, by coefficient name -------------------------------------------------------------------

def _rule(name: str) -> str:
    """'positive' (> 0), 'difference' (any finite sign) or 'cost' (>= 0)."""
    if name.startswith("tau_") or name == "delta_pi":
        return "positive"
    if name.startswith("delta_"):
        return "difference"
    return "cost"


def _check_number(v: Any, rule: str, where: str, error: type[Exception]) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise error(f"{where}: expected a number, got {show_value(v)}")
    try:
        v = float(v)
    except OverflowError:       # an integer of 400 digits
        v = math.inf
    if not math.isfinite(v):
        raise error(f"{where}: must be a finite number, got {show_value(v)}")
    if rule == "positive" and not v > 0:
        raise error(f"{where}: must be positive, got {show_value(v)}")
    if rule == "cost" and v < 0:
        raise error(f"{where}: must not be negative, got {show_value(v)}")
    return v


class _Entry(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)
    value: Any = None
    stderr: Any = None
    ci95: list[Any] | None = None
    unit: str | None = None
    method: str = ""


class _File(BaseModel):
    """The keys the owner reads; the rest is the fit's report (derived, quality, ...) and is kept as it is."""

    model_config = ConfigDict(extra="allow", strict=True)
    schema_: str = Field(alias="schema")
    platform: str | None = None
    model: str | None = None
    emulated: bool = False
    n_points: int | None = None
    coefficients: dict[str, Any] = Field(default_factory=dict)
    tau: dict[str, Any] = Field(default_factory=dict)
    settings: list[Any] = Field(default_factory=list)


def _coefficient(name: str, entry: Any, where: str, error: type[Exception]) -> Coefficient:
    e = validate(_Entry, entry, f"{where}:", error=error)
    if e.value is None:
        raise error(f"{where}: missing 'value' (a number)")
    try:
        factor = si_factor(name, e.unit)
    except UnitError as u:
        raise error(f"{where}: {u}") from None
    rule = _rule(name) if name in UNITS else "difference"
    value = _check_number(e.value, rule, f"{where}.value", error) * factor
    why = implausible(value, UNITS.get(name, ""))
    if why is not None:
        raise error(f"{where}.value: {why}")
    stderr = None if e.stderr is None else _check_number(e.stderr, "cost", f"{where}.stderr", error) * factor
    ci95 = None
    if e.ci95 is not None and len(e.ci95) != 2:
        raise error(f"{where}.ci95: expected [low, high], got {show_value(e.ci95)}")
    if e.ci95 is not None and None not in e.ci95:
        lo, hi = (_check_number(x, "difference", f"{where}.ci95", error) * factor for x in e.ci95)
        ci95 = (lo, hi)
    return Coefficient(name, value, stderr, ci95, UNITS.get(name, e.unit or ""), e.method)


def _setting(k: int, s: Any, where: str, error: type[Exception]) -> dict[str, Any]:
    if not isinstance(s, dict):
        raise error(f"{where}: settings[{k}]: expected an object, got {show_value(s)}")
    out: dict[str, Any] = {}
    for key, v in s.items():
        at = f"{where}: settings[{k}].{key}"
        if v is None or isinstance(v, str):
            out[key] = v
        elif key in SETTING_CLOCKS:
            out[key] = _check_number(v, "positive", at, error)
        else:
            out[key] = _check_number(v, _rule(key) if key in UNITS else "difference", at, error)
    return out


@dataclass
class CostTable:
    """An ``archline.costs/1`` table, every value in SI. ``report`` keeps the fit's other keys (derived,
    quality, omitted, warnings, method, cap ...) in their order."""

    platform: str
    model: str
    emulated: bool = False
    n_points: int | None = None
    coefficients: dict[str, Coefficient] = field(default_factory=dict)
    tau: dict[str, Coefficient] = field(default_factory=dict)
    settings: list[dict[str, Any]] = field(default_factory=list)
    report: dict[str, Any] = field(default_factory=dict)
    origin: str = ""
    schema: str = COSTS_SCHEMA

    # --- reading ---
    @classmethod
    def load(cls, path: str | Path, *, error: type[Exception] = ProfileFormatError,
             not_found: type[Exception] | None = PlatformNotFoundError) -> CostTable:
        """Read ``path`` once (a pipe works) and check it; the first problem is ``error`` naming file and key."""
        p = Path(path)
        return cls.from_doc(read_json(p, error=error, what="cost table", not_found=not_found), show(p),
                            error=error)

    @classmethod
    def from_doc(cls, data: Any, origin: str, *, error: type[Exception] = ProfileFormatError) -> CostTable:
        if isinstance(data, list) and data and all(isinstance(d, dict) for d in data):
            names = ", ".join(f"{d.get('platform') or '?'}{' (emulated)' if d.get('emulated') else ''}" for d in data)
            raise error(f"{origin}: holds {len(data)} cost tables (one per platform and source, real or emulated: "
                        f"{names}); a profile is one table: write them with `archline fit ... --format json --out "
                        "DIR/` (one file each), or fit one table (--platform NAME; --exclude-emulated for the real "
                        "rows only)")
        if not isinstance(data, dict) or data.get("schema") != COSTS_SCHEMA:
            got = data.get("schema") if isinstance(data, dict) else None
            newer = isinstance(got, str) and got.startswith("archline.costs/")
            raise error(f"{origin}: not an {COSTS_SCHEMA} cost table ("
                        + (f"schema '{got}' is not one this archline reads)" if newer
                           else "schema key missing or different)"))
        f = validate(_File, data, f"{origin}:", error=error)
        coefficients = {k: _coefficient(k, v, f"{origin}: coefficients.{k}", error)
                        for k, v in f.coefficients.items()}
        tau = {k: _coefficient(k, v, f"{origin}: tau.{k}", error) for k, v in f.tau.items()}
        settings = [_setting(k, s, origin, error) for k, s in enumerate(f.settings)]
        if f.n_points is not None and f.n_points < 0:
            raise error(f"{origin}: n_points: must not be negative, got {f.n_points}")
        known = {"schema", "platform", "model", "emulated", "n_points", "coefficients", "tau", "settings"}
        report = {k: v for k, v in data.items() if k not in known}
        return cls(platform=f.platform or Path(origin).stem, model=f.model or "?",
                   emulated=f.emulated, n_points=f.n_points, coefficients=coefficients, tau=tau,
                   settings=settings, report=report, origin=origin)

    # --- writing ---
    @classmethod
    def from_fit(cls, r: FitResult) -> CostTable:
        report: dict[str, Any] = {"derived": r.derived, "quality": r.quality, "omitted": r.omitted,
                                  "warnings": r.warnings}
        if "method" in r.extra:
            report["method"] = r.extra["method"]
        if r.model == "capped":
            report["cap"] = r.extra.get("cap", {})
            report["ks_free_vs_capped"] = r.extra.get("ks_free_vs_capped", {})
        for k in ("auto", "files", "outliers", "energy_absent", "time_terms"):   # issue 34: time-only rows
            if k in r.extra:
                report[k] = r.extra[k]
        return cls(platform=r.platform, model=r.model, emulated=bool(r.emulated), n_points=int(r.n_points),
                   coefficients=dict(r.coefficients), tau=dict(r.tau),
                   settings=list(r.extra.get("settings", [])) if r.model == "dvfs" else [], report=report)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"schema": self.schema, "platform": self.platform, "model": self.model,
                             "emulated": bool(self.emulated), "n_points": self.n_points,
                             "coefficients": {k: c.as_json() for k, c in self.coefficients.items()},
                             "tau": {k: c.as_json() for k, c in self.tau.items()}}
        d.update(self.report)
        if self.settings or self.model == "dvfs":
            d["settings"] = self.settings
        return _clean(d)  # type: ignore[no-any-return]

    def dumps(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def dump(self, path: str | Path) -> Path:
        return write_atomic(path, self.dumps())

    def value(self, name: str) -> float | None:
        c = self.coefficients.get(name) or self.tau.get(name)
        return None if c is None else c.value


def to_costs_dict(r: FitResult) -> dict[str, Any]:
    return CostTable.from_fit(r).to_dict()


def to_json(results: list[FitResult]) -> str:
    docs = [to_costs_dict(r) for r in results]
    return json.dumps(docs[0] if len(docs) == 1 else docs, indent=2)


CSV_COLUMNS = ("platform", "model", "emulated", "section", "name", "value", "stderr", "ci95_low", "ci95_high", "unit")
CSV_HEADER = ",".join(CSV_COLUMNS)


def _num(v: float | None) -> str:
    return "" if v is None or not math.isfinite(v) else repr(float(v))


def _csv_row(r: FitResult, section: str, c: Coefficient) -> list[str]:
    lo, hi = c.ci95 if c.ci95 else (None, None)
    return [r.platform, r.model, "true" if r.emulated else "false", section, c.name, _num(c.value),
            _num(c.stderr), _num(lo), _num(hi), c.unit]


def _setting_unit(k: str) -> str:
    return "W" if k == "pi0" else ("J/flop" if "flop" in k else "J/op" if k == "eps_int" else "J/byte")


def to_csv(results: list[FitResult]) -> str:
    """One line per coefficient (SI units), tau, dvfs per-setting costs, and quality figure; quoted by the csv
    module, so a platform name holding a comma, a quote or a newline reads back as it was."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for r in results:
        for c in r.coefficients.values():
            w.writerow(_csv_row(r, "coefficients", c))
        for c in r.tau.values():
            w.writerow(_csv_row(r, "tau", c))
        for i, s in enumerate(r.extra.get("settings", []) if r.model == "dvfs" else []):
            for k in ("eps_flop_sp", "eps_flop_dp", "eps_mem", "eps_int", "eps_shared", "eps_l2", "pi0"):
                if k in s:
                    se = s.get("pi0_stderr") if k == "pi0" else None
                    w.writerow(_csv_row(r, f"setting{i}:core_mhz={s.get('core_mhz')}:mem_mhz={s.get('mem_mhz')}",
                                        Coefficient(k, s[k], se, None, _setting_unit(k))))
        for k, v in r.quality.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                w.writerow([r.platform, r.model, "true" if r.emulated else "false", "quality", k, repr(float(v)),
                            "", "", "", "%" if k.endswith("_pct") else ""])
    return buf.getvalue()


RENDERERS = {"json": to_json, "csv": to_csv, "table": to_table}
EXTENSIONS = {"json": "json", "csv": "csv", "table": "txt"}


def render(results: list[FitResult], fmt: str) -> str:
    return RENDERERS[fmt](results)
