"""Third parties' entry points (``archline.meters``, ``archline.backends``), loaded without trusting them: a fault
of a plugin's code, SystemExit too, is caught and named, and whatever it prints while loading is kept off
archline's stdout (``--format json`` stays JSON). What each registry makes of a loaded plugin, and the words it
warns with, stay with that registry (powermon/kinds.py, bench/registry.py)."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: what a plugin's code may raise that is its own fault (SystemExit too: sys.exit in a hook must not end archline)
FAULTS = (Exception, SystemExit)


@dataclass(frozen=True)
class LoadedPlugin:
    name: str                       #: the entry point's name
    value: str                      #: its ``module:attr``
    dist: str                       #: the distribution that declares it ("?" when unknown)
    obj: Any                        #: what it loaded (``convert``'s result); None when ``error`` is set
    error: BaseException | None     #: the plugin's fault while loading, if any
    printed: str                    #: what it wrote on stdout while loading (dropped)


def load_plugins(group: str, convert: Callable[[Any], Any] = lambda obj: obj, *,
                 by_name: bool = False) -> list[LoadedPlugin]:
    """Every entry point of ``group`` loaded, and ``convert``-ed, with stdout redirected (``by_name``: in the
    order of their names, else as importlib.metadata lists them)."""
    from importlib.metadata import entry_points

    eps = list(entry_points(group=group))
    if by_name:
        eps.sort(key=lambda e: e.name)
    out = []
    for ep in eps:
        printed = io.StringIO()
        obj, error = None, None
        try:
            with contextlib.redirect_stdout(printed):
                obj = convert(ep.load())
        except FAULTS as e:
            error = e
        dist = getattr(getattr(ep, "dist", None), "name", None) or "?"
        out.append(LoadedPlugin(ep.name, ep.value, dist, obj, error, printed.getvalue()))
    return out


def one_line(e: BaseException) -> str:
    """An exception's text on one line, cut at 300 characters (a plugin's message may hold anything)."""
    return " ".join(str(e).split())[:300]


def short_repr(obj: Any) -> str:
    """What a plugin gave, for a one-line message: its repr on one line, cut at 60 characters."""
    text = " ".join(repr(obj).split())
    return text if len(text) <= 60 else text[:57] + "..."
