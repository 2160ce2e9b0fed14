"""Platform profiles (TOML) and cost tables (archline.costs/1 JSON): one way to get a machine's constants.

A profile's ``[constants]`` table maps a symbol to ``{ value = …, source = "…" }``. A constant the papers do not
give has no ``value`` and says why in ``source``. Values are SI: J/flop, J/byte, J/access, J/op, W, s/flop, s/byte.
Peaks (``peak_flop_per_s_sp``…) may stand in for the tau they invert (tau = 1/peak, S1 §3.3.2).
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archline.fit.errors import MissingValueError, PlatformNotFoundError, ProfileFormatError
from archline.fit.model.machine import Machine

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PROFILE_SCHEMA = "archline.platform/1"
COSTS_SCHEMA = "archline.costs/1"
SHIPPED_DIR = Path(__file__).parent  # the shipped *.toml profiles live beside this module

#: Every constant a profile may hold, with its SI unit.
CONSTANT_UNITS: dict[str, str] = {
    "tau_flop_sp": "s/flop", "tau_flop_dp": "s/flop", "tau_mem": "s/byte", "tau_int": "s/op",
    "peak_flop_per_s_sp": "flop/s", "peak_flop_per_s_dp": "flop/s", "peak_byte_per_s": "byte/s",
    "eps_flop_sp": "J/flop", "eps_flop_dp": "J/flop", "eps_mem": "J/byte", "eps_l1": "J/byte",
    "eps_l2": "J/byte", "eps_l3": "J/byte", "eps_shared": "J/byte", "eps_rand": "J/access", "eps_int": "J/op",
    "pi0": "W", "delta_pi": "W", "tdp_w": "W", "idle_w": "W", "const_energy_per_byte": "J/byte",
}
#: Top-level keys of a profile. The bench layer reads ``bench``, ``meters`` and ``emulate``; ``issue`` holds the
#: per-SM issue rules of the instruction-mix peak (fit/analyses/mix_peak.py).
PROFILE_KEYS = {"schema", "name", "title", "device_kind", "notes", "sources", "constants", "dvfs", "bench",
                "meters", "emulate", "issue"}
PRECISIONS = ("sp", "dp")


@dataclass(frozen=True)
class Constant:
    value: float | None
    source: str
    stderr: float | None = None


@dataclass
class Platform:
    """A platform profile or a fitted cost table, seen through the same interface."""

    name: str
    title: str
    constants: dict[str, Constant]
    origin: str                      # file it came from
    kind: str = "profile"            # "profile" or "costs"
    emulated: bool = False
    device_kind: str = ""
    notes: str = ""
    dvfs: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict)

    def value(self, key: str) -> float | None:
        c = self.constants.get(key)
        if c is not None and c.value is not None:
            return c.value
        inverse = {"tau_flop_sp": "peak_flop_per_s_sp", "tau_flop_dp": "peak_flop_per_s_dp",
                   "tau_mem": "peak_byte_per_s"}
        if key in inverse:
            peak = self.constants.get(inverse[key])
            if peak is not None and peak.value:
                return 1.0 / peak.value
        return None

    def require(self, key: str, needed_for: str) -> float:
        v = self.value(key)
        if v is None:
            c = self.constants.get(key)
            why = f" ({c.source})" if c is not None and c.source else ""
            raise MissingValueError(f"platform '{self.name}' has no value for {key}{why}; {needed_for} needs it "
                                    "(measure it with `archline bench run` and `archline fit`, and give the cost "
                                    "table instead)")
        return v

    def source(self, key: str) -> str:
        c = self.constants.get(key)
        return c.source if c is not None else ""

    def machine(self, precision: str, needed_for: str = "the model") -> Machine:
        """The model's constants at one precision; delta_pi is inf (free model) when unknown."""
        if precision not in PRECISIONS:
            raise ProfileFormatError(f"precision must be one of {', '.join(PRECISIONS)}, got '{precision}'")
        delta_pi = self.value("delta_pi")
        return Machine(
            tau_flop_s=self.require(f"tau_flop_{precision}", needed_for),
            tau_mem_s_per_byte=self.require("tau_mem", needed_for),
            eps_flop_j=self.require(f"eps_flop_{precision}", needed_for),
            eps_mem_j_per_byte=self.require("eps_mem", needed_for),
            pi0_w=self.require("pi0", needed_for),
            delta_pi_w=math.inf if delta_pi is None else delta_pi,
        )

    def precisions_available(self) -> list[str]:
        need = ("tau_flop_{p}", "eps_flop_{p}")
        base = all(self.value(k) is not None for k in ("tau_mem", "eps_mem", "pi0"))
        return [p for p in PRECISIONS if base and all(self.value(k.format(p=p)) is not None for k in need)]


# --- loading ----------------------------------------------------------------------------------------------

def _number(x: Any, where: str) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise ProfileFormatError(f"{where}: expected a number, got {x!r}")
    v = float(x)
    if not math.isfinite(v) and not (math.isinf(v) and v > 0):
        raise ProfileFormatError(f"{where}: expected a finite number, got {x!r}")
    return v


def _parse_constants(table: Any, origin: str) -> dict[str, Constant]:
    if not isinstance(table, dict):
        raise ProfileFormatError(f"{origin}: [constants] must be a table")
    out: dict[str, Constant] = {}
    for key, entry in table.items():
        where = f"{origin}: constants.{key}"
        if key not in CONSTANT_UNITS:
            raise ProfileFormatError(f"{where}: unknown constant '{key}' (known: {', '.join(sorted(CONSTANT_UNITS))})")
        if isinstance(entry, dict):
            unknown = set(entry) - {"value", "source", "stderr"}
            if unknown:
                raise ProfileFormatError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
            value = _number(entry["value"], where) if "value" in entry else None
            stderr = _number(entry["stderr"], where) if "stderr" in entry else None
            source = str(entry.get("source", ""))
        else:
            value, stderr, source = _number(entry, where), None, ""
        if value is not None and value < 0:
            raise ProfileFormatError(f"{where}: must not be negative, got {value}")
        if value is not None and value == 0 and (key.startswith("tau") or key.startswith("peak")):
            raise ProfileFormatError(f"{where}: must be positive")
        out[key] = Constant(value, source, stderr)
    return out


def read_toml(path: Path, known_keys: set[str], what: str,
              not_found: type[Exception] = PlatformNotFoundError) -> dict[str, Any]:
    """Parse a TOML file whose top-level keys must be among ``known_keys``; errors name the file and the key."""
    try:
        data = tomllib.loads(path.read_text())
    except OSError as e:
        raise not_found(f"cannot read {what} {path}: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise ProfileFormatError(f"{path}: not valid TOML: {e}") from None
    unknown = set(data) - known_keys
    if unknown:
        raise ProfileFormatError(f"{path}: unknown key(s) {', '.join(sorted(unknown))} "
                                 f"(known: {', '.join(sorted(known_keys))})")
    return data


def load_profile(path: Path) -> Platform:
    data = read_toml(path, PROFILE_KEYS, "profile")
    if data.get("schema", PROFILE_SCHEMA) != PROFILE_SCHEMA:
        raise ProfileFormatError(f"{path}: schema must be '{PROFILE_SCHEMA}', got '{data.get('schema')}'")
    if "name" not in data:
        raise ProfileFormatError(f"{path}: missing 'name'")
    return Platform(
        name=str(data["name"]), title=str(data.get("title", data["name"])),
        constants=_parse_constants(data.get("constants", {}), str(path)), origin=str(path),
        device_kind=str(data.get("device_kind", "")), notes=str(data.get("notes", "")),
        dvfs=dict(data.get("dvfs", {})), raw=data,
    )


def load_costs(path: Path) -> Platform:
    """A cost table written by ``archline fit --format json``, usable wherever a profile is."""
    try:
        data = json.loads(path.read_text())
    except OSError as e:
        raise PlatformNotFoundError(f"cannot read cost table {path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise ProfileFormatError(f"{path}: not valid JSON: {e.msg} at line {e.lineno}") from None
    if not isinstance(data, dict) or data.get("schema") != COSTS_SCHEMA:
        raise ProfileFormatError(f"{path}: not an {COSTS_SCHEMA} cost table (schema key missing or different)")
    constants: dict[str, Constant] = {}
    for section in ("coefficients", "tau"):
        sec = data.get(section, {})
        if not isinstance(sec, dict):
            raise ProfileFormatError(f"{path}: '{section}' must be an object")
        for key, entry in sec.items():
            if key not in CONSTANT_UNITS:
                continue  # dvfs coefficients and future terms: not model constants
            if not isinstance(entry, dict) or "value" not in entry:
                raise ProfileFormatError(f"{path}: {section}.{key} must be an object with a 'value'")
            v = _number(entry["value"], f"{path}: {section}.{key}")
            se = entry.get("stderr")
            constants[key] = Constant(v, f"fitted ({data.get('model', '?')} model, {path.name})",
                                      None if se is None else _number(se, f"{path}: {section}.{key}.stderr"))
    n = data.get("n_points")
    title = (f"cost table fitted with the {data.get('model', '?')} model"
             + (f" from {n} measured points" if isinstance(n, int) else "") + f" ({path.name})")
    return Platform(name=str(data.get("platform", path.stem)), title=title,
                    constants=constants, origin=str(path), kind="costs", emulated=bool(data.get("emulated", False)),
                    dvfs={"settings": data.get("settings", []), "coefficients": data.get("coefficients", {})}
                    if data.get("model") == "dvfs" else {}, raw=data)


def search_dirs() -> list[Path]:
    """User profiles first ($ARCHLINE_PLATFORM_PATH, then ~/.config/archline/platforms), shipped ones last."""
    dirs = [Path(p) for p in os.environ.get("ARCHLINE_PLATFORM_PATH", "").split(os.pathsep) if p]
    config = Path(os.environ.get("XDG_CONFIG_HOME", Path.home() / ".config"))
    dirs.append(config / "archline" / "platforms")
    dirs.append(SHIPPED_DIR)
    return dirs


def iter_profiles() -> Iterator[Path]:
    seen: set[str] = set()
    for d in search_dirs():
        if d.is_dir():
            for p in sorted(d.glob("*.toml")):
                if p.stem not in seen:
                    seen.add(p.stem)
                    yield p


def load_platform(name_or_path: str) -> Platform:
    """A profile by name, a profile .toml path, or a cost-table .json path."""
    p = Path(name_or_path)
    if p.suffix == ".json":
        return load_costs(p)
    if p.suffix == ".toml" or os.sep in name_or_path:
        return load_profile(p)
    for candidate in iter_profiles():
        if candidate.stem == name_or_path:
            return load_profile(candidate)
    known = ", ".join(p.stem for p in iter_profiles())
    raise PlatformNotFoundError(f"unknown platform '{name_or_path}' (known: {known}; or give a .toml or .json path)")


def as_si_dict(platform: Platform) -> Mapping[str, float]:
    return {k: v for k in platform.constants if (v := platform.value(k)) is not None}  # type: ignore[misc]
