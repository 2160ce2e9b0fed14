"""The files ``archline meter record`` writes, as files: checked writable before the meter starts, standard output
recognised, what this run made removed when a write fails, and signals held while the finished recording is
written."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import stat
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from archline.common.outputs import check_output, is_stream, resolve_output, show, temp_name

#: the names under which the trace goes to this process's standard output whatever stdout is
_STDOUT_NAMES = ("/dev/stdout", "/dev/fd/1", "/proc/self/fd/1")


def check_writable(path: str | os.PathLike[str]) -> Path:
    """Check, before any work is done, that an output can be written where the user named it (the output policy
    first, :func:`archline.common.outputs.check_output`): its real target is not a directory, a link's target lies
    in a directory that exists, the directory it goes in takes a new file (tried: a hidden ``.NAME.PID.probe`` made
    and removed at once, since ``os.access`` says yes to root in ``/proc``), and a device is not ``/dev/full``.
    Raises OSError naming ``path`` (exit 7); returns the real target."""
    p = Path(path)
    target = check_output(p)
    where = show(p)
    if is_stream(p) or is_stream(target):
        try:
            st = os.stat(p)
        except OSError as e:
            raise OSError(e.errno, e.strerror, where) from None
        if stat.S_ISCHR(st.st_mode) and (os.major(st.st_rdev), os.minor(st.st_rdev)) == (1, 7):   # /dev/full
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), where)
        return target
    if target.is_dir():
        raise OSError(errno.EISDIR, os.strerror(errno.EISDIR), where)
    if target != p and not target.parent.is_dir():     # a link is written through, never a tree made for it
        raise OSError(None, f"a link to {show(target)}, whose directory does not exist; create it or name another "
                      "output", where)
    d = target.parent
    while not os.path.lexists(d) and d != d.parent:     # archline makes the directories of a plain name
        d = d.parent
    if not d.is_dir():
        raise OSError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), where)
    if d != target.parent:
        if not os.access(d, os.W_OK | os.X_OK):
            raise OSError(errno.EACCES, os.strerror(errno.EACCES), where)
        return target
    probe = temp_name(target)      # the writer's own temp name (shortened past the name limit)
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass
    except OSError as e:
        raise OSError(e.errno, e.strerror, where) from None
    else:
        probe.unlink(missing_ok=True)
    return target


def writes_stdout(path: str | os.PathLike[str]) -> bool:
    """True when an output named ``path`` is this process's standard output (``/dev/stdout``, ``/dev/fd/1``, or the
    very file or pipe fd 1 is: ``--out x.csv > x.csv``), so nothing else may be printed there. ``/dev/null`` is
    not: nothing written there is kept."""
    p = os.fspath(path)
    if p in _STDOUT_NAMES:
        return True
    try:
        here, there = os.fstat(1), os.stat(p)
        null = os.stat(os.devnull)
    except (OSError, ValueError):
        return False
    if (there.st_dev, there.st_ino) == (null.st_dev, null.st_ino):
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


class Made:
    """The files a recording writes, as they were before it started, so that a failure at the end removes every
    file this run created or replaced (trace, sidecars, capture) and leaves the others as they were."""

    def __init__(self, paths: Sequence[Path]) -> None:
        self.before: dict[Path, tuple[int, int, int] | None] = {}
        for p in paths:
            if is_stream(p):
                continue
            try:
                target = resolve_output(p)
            except OSError:
                continue
            self.before[target] = self._id(target)

    @staticmethod
    def _id(p: Path) -> tuple[int, int, int] | None:
        try:
            st = os.lstat(p)
        except OSError:
            return None
        return st.st_dev, st.st_ino, st.st_mtime_ns

    def __enter__(self) -> Made:
        return self

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        if kind is not None and issubclass(kind, OSError):   # a write failed (full disk): nothing half-written
            self.remove()

    def remove(self) -> None:
        for target, was in self.before.items():
            now = self._id(target)
            if now is not None and now != was and not target.is_dir():
                with contextlib.suppress(OSError):
                    target.unlink()


class Late:
    hit = False


@contextlib.contextmanager
def deferred_interrupts() -> Iterator[Late]:
    """Hold Ctrl-C and SIGTERM while the finished recording is written (a second signal would otherwise leave a
    half-written trace or the capture's temp file); one that arrived is reported in ``late.hit``."""
    late = Late()
    if threading.current_thread() is not threading.main_thread():
        yield late
        return

    def hold(signum: int, frame: Any) -> None:
        late.hit = True

    old = {sig: signal.signal(sig, hold) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield late
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
