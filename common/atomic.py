"""Atomic file writes: a temp file in the same directory, fsync, rename. A reader (or a crash) never sees a
half-written file under its final name; the temp file of a killed writer is a dot-file ending in ``.tmp``."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temp path beside ``path``; on a clean exit fsync it and rename it onto ``path``, else remove it.

    For writers that want a file name (pyarrow, pandas, gzip)::

        with atomic_path(out) as tmp:
            frame.to_csv(tmp)
    """
    final = Path(path)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name(f".{final.name}.{os.getpid()}.tmp")
    try:
        yield tmp
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, final)
        _fsync_dir(final.parent)
    finally:
        if tmp.exists():
            tmp.unlink()


def write_atomic(path: str | os.PathLike[str], data: bytes | str) -> Path:
    """Write ``data`` (text is UTF-8) to ``path`` atomically; returns the path."""
    blob = data.encode() if isinstance(data, str) else data
    with atomic_path(path) as tmp:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(blob)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
    return Path(path)
