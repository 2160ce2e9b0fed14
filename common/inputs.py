"""The one input boundary for TOML and JSON files (profiles, sweep configs, machine files, cost tables) and for a
command's options: read the file, validate it against a pydantic model, and turn the first problem into one line
that names the file and the key, with a "did you mean" hint for a misspelt key.

Each room passes its own error type, so a profile mistake stays a fit ProfileFormatError, a sweep-config mistake
a bench SweepConfigError and a meter mistake a powermon MeterError::

    cfg = validate(SweepTable, read_toml(path, error=SweepConfigError)["sweep"], f"{path}: [sweep]",
                   error=SweepConfigError)
"""

from __future__ import annotations

import difflib
import json
import sys
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

M = TypeVar("M", bound=BaseModel)


class Strict(BaseModel):
    """Base of every input model: unknown keys are errors, no type coercion (TOML lists become tuples)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _lists_to_tuples(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
        return data


def _read_text(p: Path, what: str, error: type[Exception], not_found: type[Exception] | None) -> str:
    """The file's text; absence, unreadability or binary content raise the caller's error types."""
    try:
        return p.read_text()
    except FileNotFoundError:
        raise (not_found or error)(f"{what} {p} does not exist") from None
    except OSError as e:
        raise (not_found or error)(f"cannot read {what} {p}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise error(f"{p}: not a text file") from None


def read_toml(path: str | Path, *, error: type[Exception], what: str = "file",
              not_found: type[Exception] | None = None) -> dict[str, Any]:
    """Parse a TOML file; a missing/unreadable file or bad TOML raises ``error`` (``not_found`` for absence)."""
    p = Path(path)
    text = _read_text(p, what, error, not_found)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise error(f"{p}: not valid TOML: {e}") from None


def read_json(path: str | Path, *, error: type[Exception], what: str = "file",
              not_found: type[Exception] | None = None) -> Any:
    """Parse a JSON file, with the same errors as :func:`read_toml`."""
    p = Path(path)
    text = _read_text(p, what, error, not_found)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise error(f"{p}: not valid JSON: {e.msg} at line {e.lineno}") from None


def unknown_key_hint(key: str, known: typing.Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the nearest known key, else the list of known keys."""
    known = sorted(known)
    near = difflib.get_close_matches(key, known, n=1)
    return f" (did you mean '{near[0]}'?)" if near else f" (known: {', '.join(known)})"


def validate(model: type[M], data: Any, where: str, *, error: type[Exception],
             key: Callable[[str], str] = str) -> M:
    """``model`` from ``data``; the first problem raises ``error("<where> <key>: <what>")``. ``key`` spells a
    field name the way the user wrote it (e.g. ``--min-time`` for ``min_time_s``)."""
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise error(f"{where}{describe(e, model, key)}") from None


def describe(e: ValidationError, model: type[BaseModel], key: Callable[[str], str] = str) -> str:
    err = e.errors(include_url=False)[0]
    loc = tuple(err["loc"])
    typ, msg, got = err["type"], str(err["msg"]), err.get("input")
    parent = _fmt_loc(loc[:-1], key)
    at = f" {parent}" if parent else ""
    if typ == "extra_forbidden" and loc:
        fields = _fields_at(model, loc[:-1])
        return f"{at}: unknown key '{loc[-1]}'" + unknown_key_hint(str(loc[-1]), fields)
    if typ == "missing" and loc:
        return f"{at}: missing '{key(str(loc[-1]))}'"
    path = _fmt_loc(loc, key)
    at = f" {path}" if path else ""
    if msg.startswith("Value error, "):
        return f"{at}: {msg.removeprefix('Value error, ')}"
    if msg.startswith("Assertion failed, "):
        return f"{at}: {msg.removeprefix('Assertion failed, ')}"
    if typ == "literal_error":
        allowed = msg.removeprefix("Input should be ").replace("'", "")
        return f"{at} must be one of {allowed.replace(' or ', ', ')}, got {got!r}"
    text = msg[0].lower() + msg[1:] if msg else typ
    return f"{at}: {text.replace('input should be', 'expected').replace('input should', 'expected')}, got {got!r}"


def _fmt_loc(loc: tuple[Any, ...], key: Callable[[str], str]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not str(part).startswith(("function-", "tuple[", "list[", "union[", "literal[")):
            out += ("." if out else "") + key(str(part))
    return out


def _fields_at(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    tp: Any = model
    for part in loc:
        tp = _unwrap(tp)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            f = tp.model_fields.get(str(part))
            tp = f.annotation if f is not None else None
        elif typing.get_origin(tp) is dict:
            tp = typing.get_args(tp)[1]
        elif typing.get_origin(tp) in (list, tuple):
            tp = typing.get_args(tp)[0]
        else:
            return []
    tp = _unwrap(tp)
    if typing.get_origin(tp) in (list, tuple):
        tp = _unwrap(typing.get_args(tp)[0])
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return [f.alias or n for n, f in tp.model_fields.items()]
    return []


def _unwrap(tp: Any) -> Any:
    """``X | None`` -> X; Annotated[X, ...] -> X."""
    while True:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            tp = typing.get_args(tp)[0]
        elif origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            tp = args[0] if len(args) == 1 else tp
            if len(args) != 1:
                return tp
        else:
            return tp
