"""archline: time, energy and power per operation, and the energy-roofline model fitted to them.

The package top level holds the version and the public Python API (docs/api.md), loaded on first use so that
``import archline`` stays fast::

    import archline
    with archline.open_monitor("gtx580", emulate=True) as mon:   # a platform's meters (or the null meter)
        with mon.window("solve") as w:
            solve()
    print(w.time_s, w.energy_j, w.energy_err_j)

The rooms below it are ``archline.cli``, ``archline.bench``, ``archline.powermon``, ``archline.fit`` and
``archline.common``.
"""

from __future__ import annotations

import importlib
import sys as _sys
from typing import Any

if _sys.argv and _sys.argv[0].rsplit("/", 1)[-1] == "archline":   # the console script: stop signals first thing
    from archline.common.sigwatch import early as _early

    _early()

from archline._version import __version__
from archline.common.mpl import configure as _configure_matplotlib

_configure_matplotlib()     # before anything imports matplotlib: no warnings, no matplotlib-* in the temp dir

_EXPORTS = {
    "Monitor": "archline.powermon.monitor",
    "Measurement": "archline.powermon.record.windows",
    "Window": "archline.powermon.record.windows",
    "MARKS_ENV": "archline.powermon.marks",
    "open_monitor": "archline.bench.monitor",
    "PhasePower": "archline.bench.monitor",
    "NullMeter": "archline.powermon.record.null",
    "MeterError": "archline.powermon.errors",
}


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'archline' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


__all__ = ["__version__", *_EXPORTS]
