"""A platform profile's text with one ``[[meters]]`` entry's ``calibration`` set (``archline meter calibrate --out``).

The profile's own text is kept (comments, order, every other key): the one line ``calibration = {...}`` goes
right under the entry's ``[[meters]]`` header (an older ``calibration`` line of that entry is replaced), and the
result is parsed back and compared with the original: it must be the same profile with only that key changed, or
nothing is written and the message says what to add by hand. The caller writes it to a new file (the input
profile is never overwritten: the output policy refuses it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import tomllib

from archline.powermon.errors import MeterError

_HEADER = re.compile(r"^\s*\[\[\s*meters\s*\]\]\s*(#.*)?$")
_TABLE = re.compile(r"^\s*\[")
_CAL_LINE = re.compile(r"^\s*calibration\s*=\s*\{[^\n]*\}\s*(#.*)?$")


def toml_inline(values: Mapping[str, float | bool]) -> str:
    return "{ " + ", ".join(f"{k} = {str(v).lower() if isinstance(v, bool) else repr(float(v))}"
                            for k, v in values.items()) + " }"


def with_calibration(text: str, meter: str, calibration: Mapping[str, float | bool], origin: str) -> str:
    """``text`` (a profile) with ``calibration`` in the ``[[meters]]`` entry named ``meter``."""
    try:
        before = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise MeterError(f"{origin}: not valid TOML ({e})") from None
    meters = before.get("meters")
    if isinstance(meters, dict):
        meters = [meters]
    names = [m.get("name") for m in meters] if isinstance(meters, list) else []
    if meter not in names:
        known = ", ".join(map(str, names)) or "none"
        known = ", ".join(map(str, names)) or "none"
        raise MeterError(f"{origin}: no [[meters]] entry named '{meter}' (entries: {known})")
    index = names.index(meter)
    line = f"calibration = {toml_inline(calibration)}"
    lines = text.splitlines(keepends=True)
    headers = [i for i, s in enumerate(lines) if _HEADER.match(s)]
    out: str | None = None
    if len(headers) == len(names):
        start = headers[index]
        end = next((i for i in range(start + 1, len(lines)) if _TABLE.match(lines[i])), len(lines))
        body = [s for s in lines[start + 1:end] if not _CAL_LINE.match(s)]
        nl = "\n" if not lines[start].endswith("\r\n") else "\r\n"
        head = lines[start] if lines[start].endswith(("\n", "\r")) else lines[start] + nl
        out = "".join([*lines[:start], head, line + nl, *body, *lines[end:]])
        if not _same_but_calibration(before, out, index, calibration):
            out = None
    if out is None:
        raise MeterError(f"{origin}: cannot set the calibration of meter '{meter}' automatically (its [[meters]] "
                         f"entry is not a plain table); add this line to it by hand: {line}")
    return out


def _same_but_calibration(before: dict[str, Any], text: str, index: int,
                          calibration: Mapping[str, float | bool]) -> bool:
    try:
        after = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return False
    want = {k: v for k, v in before.items() if k != "meters"}
    if {k: v for k, v in after.items() if k != "meters"} != want:
        return False
    old = list(before["meters"]) if isinstance(before["meters"], list) else [before["meters"]]
    new = after.get("meters")
    if not isinstance(new, list) or len(new) != len(old):
        return False
    expect = [dict(m) for m in old]
    expect[index] = {**expect[index], "calibration": {k: float(v) for k, v in calibration.items()}}
    return bool(new == expect)
