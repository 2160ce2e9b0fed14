"""A vendor's compiler on this machine: on PATH, else in its toolkit's home (``CUDA_HOME``, ``ROCM_PATH``)."""

from __future__ import annotations

import os
import shutil

from archline.bench.errors import BackendUnavailableError


def executable(path: str | None) -> bool:
    return bool(path) and os.path.isfile(str(path)) and os.access(str(path), os.X_OK)


def find_compiler(exe: str, home_env: str, default_home: str) -> str | None:
    """``exe`` on PATH, else ``$home_env/bin/exe`` (``default_home`` when the variable is unset); None if neither."""
    for cand in (shutil.which(exe), os.path.join(os.environ.get(home_env, default_home), "bin", exe)):
        if cand and executable(cand):
            return cand
    return None


def require_compiler(found: str | None, exe: str, how: str) -> str:
    """``found`` (a find_compiler result), or BackendUnavailableError saying how to install ``exe``."""
    if found is None:
        raise BackendUnavailableError(f"{exe} not found ({how})")
    return found
