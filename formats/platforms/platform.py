"""The platform a model is drawn for, whatever it came from (a profile, a cost table, an ERT roofline.json or this
machine's last run): :class:`Platform` with its :class:`Constant` values, the rule every constant is read by
(:func:`check_value`), and where profiles are found (:func:`search_dirs`, :func:`find_profile`). The readers are
:mod:`archline.formats.platforms.profiles` (profiles and cost tables, and ``load_platform``, which picks one),
:mod:`~archline.formats.platforms.ert_file` and :mod:`~archline.formats.platforms.localhost`."""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archline.formats.costs_units import implausible
from archline.model.errors import MissingValueError, ProfileFormatError
from archline.model.machine import Machine

SHIPPED_DIR = Path(__file__).parent  # the shipped *.toml profiles live beside this module
LOCALHOST = "localhost"

#: Every constant a profile may hold, with its SI unit.
CONSTANT_UNITS: dict[str, str] = {
    "tau_flop_sp": "s/flop", "tau_flop_dp": "s/flop", "tau_mem": "s/byte", "tau_int": "s/op",
    "tau_l1": "s/byte", "tau_l2": "s/byte", "tau_l3": "s/byte", "tau_shared": "s/byte", "tau_rand": "s/access",
    "peak_flop_per_s_sp": "flop/s", "peak_flop_per_s_dp": "flop/s", "peak_byte_per_s": "byte/s",
    "eps_flop_sp": "J/flop", "eps_flop_dp": "J/flop", "eps_mem": "J/byte", "eps_l1": "J/byte",
    "eps_l2": "J/byte", "eps_l3": "J/byte", "eps_shared": "J/byte", "eps_rand": "J/access", "eps_int": "J/op",
    "pi0": "W", "delta_pi": "W", "tdp_w": "W", "idle_w": "W", "const_energy_per_byte": "J/byte",
}
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
    kind: str = "profile"            # "profile", "costs" or "measured" (localhost from its last run's peaks)
    emulated: bool = False
    device_kind: str = ""
    notes: str = ""
    dvfs: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict)
    not_trusted: list[str] = field(default_factory=list)   #: figures the source says are NOT TRUSTED (localhost)
    cautions: list[str] = field(default_factory=list)      #: one line each: what a reader should be told (localhost)

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
            if why and self.kind == "measured":    # an ERT file says what it lacks and what to give instead
                raise MissingValueError(f"platform '{self.name}' has no value for {key}{why}; {needed_for} needs it")
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

    def precisions_timed(self) -> list[str]:
        """The precisions the time roofline can be drawn at (tau_flop and tau_mem known; energy may be absent)."""
        return [p for p in PRECISIONS if self.value(f"tau_flop_{p}") is not None and self.value("tau_mem") is not None]

    def precisions_available(self) -> list[str]:
        need = ("tau_flop_{p}", "eps_flop_{p}")
        base = all(self.value(k) is not None for k in ("tau_mem", "eps_mem", "pi0"))
        return [p for p in PRECISIONS if base and all(self.value(k.format(p=p)) is not None for k in need)]


def check_value(key: str, v: float | None, where: str) -> float | None:
    """A constant's value as read (None: not given), or one line naming ``where`` when it cannot be physical:
    not finite (+inf is allowed: no cap), negative, a zero time or peak, or implausible for its unit."""
    if v is None:
        return None
    if not math.isfinite(v) and not (math.isinf(v) and v > 0):
        raise ProfileFormatError(f"{where}: expected a finite number, got {v!r}")
    if v < 0:
        raise ProfileFormatError(f"{where}: must not be negative, got {v}")
    if v == 0 and (key.startswith("tau") or key.startswith("peak")):
        raise ProfileFormatError(f"{where}: must be positive")
    why = implausible(v, CONSTANT_UNITS.get(key, "")) if math.isfinite(v) else None
    if why is not None:
        raise ProfileFormatError(f"{where}: {why}")
    return v


def search_dirs() -> list[Path]:
    """User profiles first ($ARCHLINE_PLATFORM_PATH, then ~/.config/archline/platforms), shipped ones last."""
    dirs = [Path(p) for p in os.environ.get("ARCHLINE_PLATFORM_PATH", "").split(os.pathsep) if p]
    config = Path(os.environ.get("XDG_CONFIG_HOME", Path.home() / ".config"))
    dirs.append(config / "archline" / "platforms")
    dirs.append(SHIPPED_DIR)
    return dirs


_WARNED_DIRS: set[str] = set()


def iter_profiles() -> Iterator[Path]:
    seen: set[str] = set()
    asked = {p for p in os.environ.get("ARCHLINE_PLATFORM_PATH", "").split(os.pathsep) if p}
    for d in search_dirs():
        if str(d) in asked and not d.is_dir():
            if str(d) not in _WARNED_DIRS:     # a stale path entry is said once, not silently skipped
                _WARNED_DIRS.add(str(d))
                logging.getLogger("archline.fit").warning(
                    f"archline: warning: ARCHLINE_PLATFORM_PATH names {d}, which is not a directory; "
                    "its profiles are skipped")
            continue
        if d.is_dir():
            for p in sorted(d.glob("*.toml")):
                if p.stem not in seen:
                    seen.add(p.stem)
                    yield p


def find_profile(name: str) -> Path | None:
    """The profile file named ``name`` (user profiles first, then shipped ones), or None."""
    return next((c for c in iter_profiles() if c.stem == name), None)
