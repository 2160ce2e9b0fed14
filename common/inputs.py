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
import types
import typing
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

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


def show_value(v: Any) -> str:
    """A value as a message shows it: numpy scalars as plain numbers (``-1``, not ``np.float64(-1.0)``), text
    quoted, long values cut."""
    if hasattr(v, "item") and not isinstance(v, (str, bytes)) and getattr(v, "ndim", 0) == 0:
        v = v.item()
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        text = str(int(v))
    elif isinstance(v, (int, float)) and not isinstance(v, bool):
        text = f"{v:g}" if isinstance(v, float) else str(v)
    else:
        text = repr(v)
    return text if len(text) <= 80 else text[:77] + "..."


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
        return f"{at} must be one of {allowed.replace(' or ', ', ')}, got {show_value(got)}"
    text = msg[0].lower() + msg[1:] if msg else typ
    text = text.replace("input should be", "expected").replace("input should", "expected")
    return f"{at}: {text}, got {show_value(got)}"


def _fmt_loc(loc: tuple[Any, ...], key: Callable[[str], str]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            if not out.startswith("--"):    # a repeatable option's values have no index the user wrote
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
