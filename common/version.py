"""Which source ``archline --version`` runs: the git commit of the checkout an editable install points at, with
``(dirty)`` when tracked files differ from it, or, for an installed wheel, the commit stamped at build time
(``archline/_commit.txt``, when the build wrote one)."""

from __future__ import annotations

import subprocess
from pathlib import Path

#: a build that knows its commit writes it here (one line); a wheel without it says so
STAMP_NAME = "_commit.txt"


def _git(here: Path, *args: str) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(["git", "-C", str(here), *args], capture_output=True, text=True, timeout=5,
                              check=False)
    except (OSError, subprocess.SubprocessError):
        return None


def source_commit(package_dir: str | Path | None = None) -> str:
    """``"4c0c112"``, ``"4c0c112 (dirty)"`` (tracked files modified, staged or not: the running code is not that
    commit's), ``"4c0c112 (built from)"`` for a stamped wheel, or why none is known."""
    if package_dir is None:
        from archline import _version  # the package's own directory (pkg/archline in a checkout)

        package_dir = Path(_version.__file__).resolve().parent
    here = Path(package_dir)
    stamp = here / STAMP_NAME
    if stamp.is_file():           # an installed build: the commit it was built from, whatever the cwd's repo is
        text = stamp.read_text(encoding="utf-8", errors="replace").strip()
        if text:
            return f"{text} (built from)"
    head = _git(here, "rev-parse", "--short", "HEAD")
    if head is None or head.returncode != 0 or not head.stdout.strip():
        return "unknown (not a git checkout, and no build stamp)"
    commit = head.stdout.strip()
    # the whole checkout, not only this package directory: an editable install runs cli/, fit/, ... beside it
    top = _git(here, "rev-parse", "--show-toplevel")
    root = top.stdout.strip() if top is not None and top.returncode == 0 and top.stdout.strip() else str(here)
    status = _git(Path(root), "status", "--porcelain", "--untracked-files=no")
    if status is None or status.returncode != 0:
        return f"{commit} (dirty state unknown)"
    return f"{commit} (dirty)" if status.stdout.strip() else commit
