"""Units of the cost table (``archline.costs/1``): the SI unit of every coefficient, and the reading of a ``unit``
field written by a person (``pJ/flop``, ``nJ/B``, ``mW``, ``ps/flop``) as a factor to SI, or a refusal.

The JSON is SI throughout (docs/design.md §4); :func:`si_factor` lets a hand-written table say ``"unit": "pJ/flop"`` and
still be read right, and refuses a unit of another dimension (``"W"`` on ``eps_mem``) or one it does not know.
"""

from __future__ import annotations

import re

#: SI unit of every coefficient a cost table may hold (archline.costs/1); the tau section's too.
UNITS: dict[str, str] = {
    "eps_flop_sp": "J/flop", "eps_flop_dp": "J/flop", "delta_eps_dp": "J/flop", "eps_mem": "J/byte",
    "eps_l1": "J/byte", "eps_l2": "J/byte", "eps_l3": "J/byte", "eps_shared": "J/byte", "eps_rand": "J/access",
    "eps_int": "J/op", "pi0": "W", "delta_pi": "W",
    "tau_flop_sp": "s/flop", "tau_flop_dp": "s/flop", "tau_mem": "s/byte", "tau_int": "s/op",
    "tau_l1": "s/byte", "tau_l2": "s/byte", "tau_l3": "s/byte", "tau_shared": "s/byte", "tau_rand": "s/access",
    "c0_core_single": "J/(flop*V^2)", "delta_c0_core_double": "J/(flop*V^2)", "c0_mem": "J/(byte*V^2)",
    "c0_core_integer": "J/(op*V^2)", "c0_core_sm": "J/(byte*V^2)", "c0_core_l2": "J/(byte*V^2)",
    "c1_core": "W/V", "c1_mem": "W/V", "pi_misc": "W",
}

#: SI unit -> (factor, unit shown to people).
HUMAN_UNITS: dict[str, tuple[float, str]] = {
    "J/flop": (1e12, "pJ/flop"), "J/byte": (1e12, "pJ/B"), "J/access": (1e12, "pJ/access"), "J/op": (1e12, "pJ/op"),
    "W": (1.0, "W"), "W/V": (1.0, "W/V"), "s/flop": (1e12, "ps/flop"), "s/byte": (1e12, "ps/B"),
    "s/op": (1e12, "ps/op"), "s/access": (1e9, "ns/access"),
    "J/(flop*V^2)": (1e12, "pJ/(flop V^2)"), "J/(byte*V^2)": (1e12, "pJ/(B V^2)"), "J/(op*V^2)": (1e12, "pJ/(op V^2)"),
}

_PREFIX: dict[str, float] = {"a": 1e-18, "f": 1e-15, "p": 1e-12, "n": 1e-9, "u": 1e-6, "µ": 1e-6, "μ": 1e-6,
                             "m": 1e-3, "": 1.0, "k": 1e3, "M": 1e6, "G": 1e9}
_QUANTITY = {"J": "an energy", "s": "a time", "W": "a power"}
#: what a unit may be "per", in the spellings people use
_PER: dict[str, str] = {"flop": "flop", "flops": "flop", "FLOP": "flop", "byte": "byte", "bytes": "byte",
                        "B": "byte", "access": "access", "accesses": "access", "op": "op", "ops": "op",
                        "V^2": "V^2", "V2": "V^2", "V²": "V^2", "V": "V"}
_HEAD = re.compile(r"([afpnuµμmkMG]?)([JsW])")


class UnitError(ValueError):
    """A unit this module cannot read, or one of the wrong dimension (the message says which)."""


def parse_unit(unit: str) -> tuple[float, tuple[str, tuple[str, ...]]]:
    """(factor to SI, dimension) of ``unit``: ``pJ/flop`` -> (1e-12, ("J", ("flop",))). UnitError if unknown."""
    text = unit.strip().replace("**", "^").replace(" ", "*").replace("·", "*")
    num, _, den = text.partition("/")
    m = _HEAD.fullmatch(num.strip("*"))
    if m is None or "/" in den:
        raise UnitError(f"unknown unit '{unit}'")
    per: list[str] = []
    if den:
        inner = den[1:-1] if den.startswith("(") and den.endswith(")") else den
        for part in (p for p in inner.split("*") if p):
            if part not in _PER:
                raise UnitError(f"unknown unit '{unit}'")
            per.append(_PER[part])
        if not per:
            raise UnitError(f"unknown unit '{unit}'")
    return _PREFIX[m.group(1)], (m.group(2), tuple(sorted(per)))


def si_factor(name: str, unit: str | None) -> float:
    """The factor that turns a value of coefficient ``name`` given in ``unit`` into its SI unit (:data:`UNITS`);
    1 when ``unit`` is absent or ``name`` has no known unit. UnitError names the unit and what was expected."""
    si = UNITS.get(name)
    if unit is None or si is None:
        return 1.0
    try:
        factor, dim = parse_unit(unit)
    except UnitError:
        raise UnitError(f"unknown unit '{unit}' (expected {si} or a multiple such as "
                        f"{HUMAN_UNITS.get(si, (1.0, si))[1]})") from None
    want = parse_unit(si)[1]
    if dim != want:
        raise UnitError(f"unit '{unit}' is not {_QUANTITY[want[0]]}{' per ' + '*'.join(want[1]) if want[1] else ''}"
                        f" (expected {si} or a multiple such as {HUMAN_UNITS.get(si, (1.0, si))[1]})")
    return factor


#: The largest magnitude a value in SI may have and still be a real machine's (a value 10^12 times too large is a
#: cost written in pJ without its unit): 1 µJ per flop, byte, access or op (a DRAM random access costs tens of nJ),
#: 1 MW of power, 1 ms per flop or byte, 10^18 flop/s or byte/s.
PLAUSIBLE_MAX_SI: dict[str, float] = {
    "J/flop": 1e-6, "J/byte": 1e-6, "J/access": 1e-6, "J/op": 1e-6,
    "J/(flop*V^2)": 1e-6, "J/(byte*V^2)": 1e-6, "J/(op*V^2)": 1e-6,
    "W": 1e6, "W/V": 1e6, "s/flop": 1e-3, "s/byte": 1e-3, "s/op": 1e-3, "s/access": 1e-3, "flop/s": 1e18,
    "byte/s": 1e18,
}


def implausible(value_si: float, unit_si: str) -> str | None:
    """Why ``value_si`` (in ``unit_si``) cannot be a real machine's, or None."""
    top = PLAUSIBLE_MAX_SI.get(unit_si)
    if top is None or not abs(value_si) > top:
        return None
    return (f"{value_si:g} {unit_si} is not a real machine's (at most {top:g} {unit_si}): a value in pJ, ns or mW "
            f"needs its unit (e.g. \"unit\": \"p{unit_si}\"), or SI")
