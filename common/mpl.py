"""matplotlib configured once, before anything imports it (``archline/__init__.py`` calls :func:`configure`).

matplotlib keeps its config and font cache in ``$MPLCONFIGDIR``, else ``~/.config/matplotlib``; where that cannot be
made (HOME unwritable, a regular file, or unset as under cron's ``env -i``) it prints two lines on stderr (which
cron mails) and creates ``matplotlib-*`` in the temp directory. archline gives it a directory of its own instead:
``$XDG_CACHE_HOME/archline/matplotlib`` (``~/.cache/...`` when the variable is unset or empty) where that cache
directory exists, or its parent does and is writable (a missing HOME, like ``/nonexistent`` of the system users, is
never made), else a private temporary directory that is removed when the process exits. A ``MPLCONFIGDIR`` the
user set is kept.
Nothing is created here: matplotlib makes the directory when it is first imported.
"""

from __future__ import annotations

import os
from pathlib import Path

#: the environment variable matplotlib reads its config and cache directory from
MPLCONFIGDIR = "MPLCONFIGDIR"

_DONE = {"dir": ""}


def cache_root() -> Path | None:
    """archline's own cache directory (``$XDG_CACHE_HOME/archline``, else ``~/.cache/archline``); None when there
    is no home to put it in."""
    base = os.environ.get("XDG_CACHE_HOME") or ""
    if not os.path.isabs(base):         # the XDG spec: a relative value is ignored
        try:
            base = str(Path.home() / ".cache")
        except (RuntimeError, KeyError, OSError):
            return None
    return Path(base) / "archline"


def _creatable(d: Path) -> bool:
    """Whether directory ``d`` is one, or can be made: its nearest existing ancestor is a writable directory."""
    p = d
    while True:
        try:
            if p.exists():
                return p.is_dir() and os.access(p, os.W_OK | os.X_OK)
        except OSError:
            return False
        if p.parent == p:
            return False
        p = p.parent


def _usable(base: Path, mine: Path) -> bool:
    """Whether ``mine`` (under the cache directory ``base``) may be used: ``base`` exists, or its parent (HOME, or
    the parent of ``$XDG_CACHE_HOME``) exists; and what is missing of ``mine`` can be made there. A missing HOME
    is never created (``/nonexistent`` is meant never to exist, and as root every missing path is "creatable")."""
    try:
        if not (base.is_dir() or base.parent.is_dir()):
            return False
    except OSError:
        return False
    return _creatable(mine)


def _private_dir() -> str:
    """A name for a temporary directory of this process only, removed at exit (matplotlib makes it if it runs)."""
    import atexit
    import shutil
    import tempfile

    d = os.path.join(tempfile.gettempdir(), f"archline-mpl-{os.getpid()}-{os.urandom(4).hex()}")
    atexit.register(shutil.rmtree, d, True)
    return d


def configure() -> str:
    """Point ``MPLCONFIGDIR`` at archline's directory for matplotlib (once per process); returns it. A value the
    user set (non-empty) is kept."""
    if _DONE["dir"]:
        return _DONE["dir"]
    given = os.environ.get(MPLCONFIGDIR)
    if given:
        _DONE["dir"] = given
        return given
    root = cache_root()
    mine = root / "matplotlib" if root is not None else None
    d = str(mine) if root is not None and mine is not None and _usable(root.parent, mine) else _private_dir()
    os.environ[MPLCONFIGDIR] = d
    _DONE["dir"] = d
    return d
