"""archline: time, energy and power per operation, and the energy-roofline model fitted to them.

The package top level holds the version and the public Python API (see docs/api.md); the rooms below it are
``archline.cli``, ``archline.bench``, ``archline.powermon``, ``archline.fit`` and ``archline.common``.
"""

from __future__ import annotations

from archline._version import __version__

__all__ = ["__version__"]
