"""Platform profiles (TOML) and cost tables (archline.costs/1 JSON, read by their owner
:mod:`archline.formats.costs`): one way to get a machine's constants.

A profile's ``[constants]`` table maps a symbol to ``{ value = …, source = "…" }``. A constant the papers do not
give has no ``value`` and says why in ``source``. Values are SI: J/flop, J/byte, J/access, J/op, W, s/flop, s/byte.
Peaks (``peak_flop_per_s_sp``…) may stand in for the tau they invert (tau = 1/peak, S1 §3.3.2).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from archline.common.files import parse_json, parse_toml, read_text
from archline.common.files import read_toml as common_read_toml
from archline.common.inputs import Strict, unknown_key_hint, validate
from archline.common.outputs import show
from archline.formats.costs import COSTS_SCHEMA as COSTS_SCHEMA  # the owner's; re-exported
from archline.formats.costs import CostTable
from archline.formats.ert_roofline import names_ert_roofline
from archline.formats.platforms.platform import CONSTANT_UNITS as CONSTANT_UNITS  # re-exported: one import for callers
from archline.formats.platforms.platform import LOCALHOST as LOCALHOST
from archline.formats.platforms.platform import PRECISIONS as PRECISIONS
from archline.formats.platforms.platform import SHIPPED_DIR as SHIPPED_DIR
from archline.formats.platforms.platform import Constant as Constant
from archline.formats.platforms.platform import Platform as Platform
from archline.formats.platforms.platform import check_value
from archline.formats.platforms.platform import find_profile as find_profile
from archline.formats.platforms.platform import iter_profiles as iter_profiles
from archline.formats.platforms.platform import search_dirs as search_dirs
from archline.model.errors import ArchlineFitError, PlatformNotFoundError, ProfileFormatError

PROFILE_SCHEMA = "archline.platform/1"

#: Top-level keys of a profile. The bench layer reads ``bench``, ``meters`` and ``emulate``; ``issue`` holds the
#: per-SM issue rules of the instruction-mix peak (fit/analyses/choi/mix_peak.py).
PROFILE_KEYS = {"schema", "name", "title", "device_kind", "notes", "sources", "constants", "dvfs", "bench",
                "meters", "emulate", "issue"}


# --- loading: pydantic models on the one input boundary (archline.common.inputs) --------------------------

class ConstantEntry(Strict):
    value: float | None = None
    source: str = ""
    stderr: float | None = None


class ProfileFile(Strict):
    """A profile's top level. The bench layer validates ``bench``, ``meters``, ``emulate`` and ``dvfs``."""

    schema_: Literal["archline.platform/1"] = Field(default="archline.platform/1", alias="schema")
    name: str
    title: str | None = None
    device_kind: str = ""
    notes: str = ""
    sources: Any = None
    constants: dict[str, ConstantEntry | float] = Field(default_factory=dict)
    dvfs: dict[str, Any] = Field(default_factory=dict)
    bench: dict[str, Any] = Field(default_factory=dict)
    meters: Any = ()
    emulate: dict[str, Any] = Field(default_factory=dict)
    issue: Any = None              #: per-SM issue rules of the instruction-mix peak (fit/analyses/choi/mix_peak.py)


def _parse_constants(table: dict[str, ConstantEntry | float], origin: str) -> dict[str, Constant]:
    out: dict[str, Constant] = {}
    for key, entry in table.items():
        where = f"{origin}: constants.{key}"
        if key not in CONSTANT_UNITS:
            raise ProfileFormatError(f"{where}: unknown constant '{key}'" + unknown_key_hint(key, CONSTANT_UNITS))
        e = entry if isinstance(entry, ConstantEntry) else ConstantEntry(value=float(entry))
        out[key] = Constant(check_value(key, e.value, where), e.source, check_value(key, e.stderr, where))
    return out


def read_toml(path: Path, known_keys: set[str], what: str,
              not_found: type[Exception] = PlatformNotFoundError) -> dict[str, Any]:
    """Parse a TOML file whose top-level keys must be among ``known_keys``; errors name the file and the key."""
    data = common_read_toml(path, error=ProfileFormatError, what=what, not_found=not_found)
    for k in data:
        if k not in known_keys:
            raise ProfileFormatError(f"{path}: unknown key '{k}'" + unknown_key_hint(k, known_keys))
    return data


def load_profile(path: Path) -> Platform:
    data = common_read_toml(path, error=ProfileFormatError, what="profile", not_found=PlatformNotFoundError)
    return _profile_of(data, path)


def platform_of_costs(t: CostTable) -> Platform:
    """A cost table seen as a platform: its model constants (SI, checked by the owner) and, for a DVFS table, its
    settings and eq.48 coefficients."""
    name = Path(t.origin).name
    constants = {k: Constant(c.value, f"fitted ({t.model} model, {name})", c.stderr)
                 for k, c in {**t.coefficients, **t.tau}.items() if k in CONSTANT_UNITS}
    omitted = t.report.get("omitted")
    for k, why in (omitted.items() if isinstance(omitted, dict) else ()):
        if k in CONSTANT_UNITS and k not in constants:      # absent, and why (a time-only table: no meter)
            constants[k] = Constant(None, f"absent from {name}: {why}")
    n = t.n_points
    title = (f"cost table fitted with the {t.model} model"
             + (f" from {n} {'emulated' if t.emulated else 'measured'} points" if n is not None else "")
             + (" (time only, no energy)" if t.model == "time" else "") + f" ({name})")
    return Platform(name=t.platform, title=title, constants=constants, origin=t.origin, kind="costs",
                    emulated=t.emulated,
                    dvfs={"settings": t.settings, "coefficients": {k: c.as_json() for k, c in t.coefficients.items()}}
                    if t.model == "dvfs" else {},
                    raw=t.to_dict())


def load_costs(path: Path) -> Platform:
    """A cost table written by ``archline fit --format json``, usable wherever a profile is (read and checked by
    its owner, :class:`archline.formats.costs.CostTable`)."""
    return platform_of_costs(CostTable.load(path, error=ProfileFormatError, not_found=PlatformNotFoundError))


def _profile_of(data: dict[str, Any], path: Path) -> Platform:
    f = validate(ProfileFile, data, f"{show(path)}:", error=ProfileFormatError)
    return Platform(name=f.name, title=f.title or f.name, constants=_parse_constants(f.constants, str(path)),
                    origin=str(path), device_kind=f.device_kind, notes=f.notes, dvfs=dict(f.dvfs), raw=data)


def load_any(path: Path) -> Platform:
    """A file whose name does not say what it holds (``<(cat costs.json)``, ``/dev/fd/3``): read once, a cost
    table when it is a JSON object, else a TOML profile."""
    text = read_text(path, error=ProfileFormatError, what="profile or cost table", not_found=PlatformNotFoundError)
    if text.lstrip().startswith("{"):
        data = parse_json(text, path, error=ProfileFormatError)
        if names_ert_roofline(text[:4096].encode()):      # an ERT user's roofline.json (formats/platforms/ert_file.py)
            from archline.formats.ert_roofline import ErtRoofline

            return _ert_platform(path, ErtRoofline.from_doc(data, show(path)))
        return platform_of_costs(CostTable.from_doc(data, show(path), error=ProfileFormatError))
    return _profile_of(parse_toml(text, path, error=ProfileFormatError), path)


def _is_ert(p: Path) -> bool:
    """A peek at a regular .json file's head: an ERT roofline.json rather than a cost table."""
    if not p.is_file():
        return False
    with p.open("rb") as fh:
        return names_ert_roofline(fh.read(4096))


def _ert_platform(p: Path, roof: Any = None) -> Platform:
    from archline.formats.platforms.ert_file import ert_platform

    return ert_platform(p, roof)


def load_all_profiles() -> tuple[list[tuple[Path, Platform]], list[str]]:
    """Every profile found, and one line for each that cannot be read (it is skipped, the others are listed)."""
    found: list[tuple[Path, Platform]] = []
    problems: list[str] = []
    for path in iter_profiles():
        try:
            found.append((path, load_profile(path)))
        except ArchlineFitError as e:
            problems.append(f"skipped {path}: {e}")
    return found, problems


def load_platform(name_or_path: str) -> Platform:
    """A profile by name, a profile .toml path, a cost-table .json path or an ERT roofline.json (an ERT user's
    measured ceilings, :func:`archline.formats.platforms.ert_file.ert_platform`); ``localhost`` (unless a user's
    localhost.toml shadows it) is this host as its last measured run found it (:func:`localhost_platform`)."""
    p = Path(name_or_path)
    if p.suffix == ".json":
        return _ert_platform(p) if _is_ert(p) else load_costs(p)
    if p.suffix == ".toml":
        return load_profile(p)
    if p.suffix.lower() in (".csv", ".parquet", ".gz", ".png", ".pdf", ".svg"):
        raise ProfileFormatError(f"{name_or_path} is not a cost table: --costs takes a platform name, a profile "
                                 "(.toml) or a cost table (.json from `archline fit ROWS.csv --format json --out "
                                 "COSTS.json`)")
    if os.sep in name_or_path:
        return load_any(p)
    found = find_profile(name_or_path)
    if found is not None:
        return load_profile(found)
    if name_or_path == LOCALHOST:
        from archline.formats.platforms.localhost import localhost_platform

        return localhost_platform()
    known = ", ".join([*(p.stem for p in iter_profiles()), LOCALHOST])
    raise PlatformNotFoundError(f"unknown platform '{name_or_path}' (known: {known}; or give a .toml or .json path)")
