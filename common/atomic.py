"""Atomic file writes under the one output policy (:mod:`archline.common.outputs`): a temp file in the target's
directory, fsync, rename. A reader (or a crash) never sees a half-written file under its final name; the temp file
of a killed writer is a dot-file ending in ``.tmp``.

* an output that is one of the command's inputs is refused before anything is written;
* a symlink is written through: its target is replaced, the link stays;
* a character device, FIFO or socket (``/dev/null``, ``/dev/stdout``, ``/dev/full``) is written as a stream, never
  replaced (``/dev/full`` then reports a full disk, exit 7).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from archline.common.outputs import check_output, is_stream, make_dirs, show, temp_name

#: temp files being written now: a process ended from outside Python's stack (common/sigwatch.py) removes them
PENDING: set[Path] = set()


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


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def commit_temp(tmp: Path, final: Path) -> None:
    """The last step of every atomic write: the finished temp file (fsynced by its writer) renamed onto ``final``,
    then the directory fsynced. :func:`atomic_path` ends with it, and so does a raw capture written over a whole
    recording (:class:`archline.formats.meters.capture.RawCapture`)."""
    os.replace(tmp, final)
    _fsync_dir(final.parent)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temp path beside ``path``'s real target; on a clean exit fsync it and rename it onto the target,
    else remove it. For a stream output (a device or FIFO) the path itself is yielded and written in place.

    For writers that want a file name (pyarrow, pandas, gzip)::

        with atomic_path(out) as tmp:
            frame.to_csv(tmp)
    """
    final = check_output(path)
    if is_stream(path) or is_stream(final):
        try:
            yield Path(path)
        except OSError as e:
            if e.filename is None:
                raise OSError(e.errno, e.strerror, show(path)) from None
            raise
        return
    if final != Path(path) and not final.parent.is_dir():   # a link: written through, never a tree made for it
        raise OSError(None, f"a link to {final}, whose directory does not exist; create it or name another "
                      "output", show(path))
    make_dirs(final.parent)
    tmp = temp_name(final)        # shortened past the name limit, UTF-8 where the name is not
    PENDING.add(tmp)
    dfd, given = _text_path(tmp)     # a directory not UTF-8: /proc/self/fd/N/NAME, which pyarrow can open
    try:
        yield given
        _fsync_file(tmp)
        commit_temp(tmp, final)
    except OSError as e:     # a full disk, an unwritable directory: name the file the user asked for, not the temp
        if e.filename is None or str(e.filename) in (str(tmp), str(given)):
            raise OSError(e.errno, e.strerror, show(path)) from None
        raise
    finally:
        PENDING.discard(tmp)
        if tmp.exists():
            tmp.unlink()
        if dfd is not None:
            os.close(dfd)


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A directory of files written as one. A new one (``path`` missing, or an empty directory) is made whole:
    the block fills a hidden ``.NAME.PID.tmp`` beside ``path`` (yielded), renamed to ``path`` on a clean exit;
    on any failure it is removed, ``path`` untouched, and an OSError names the file under ``path`` the user asked
    for, not the hidden one. An existing one is yielded as it is, and on a failure the directories the block made
    in it are removed again when empty (files it holds are the writer's to replace whole, one by one)."""
    import shutil

    final = Path(path)
    if final.is_symlink() or (final.exists() and (not final.is_dir() or any(final.iterdir()))):
        before = {Path(d) for d, _, _ in os.walk(final)}
        try:
            yield final
        except BaseException:
            for d in sorted({Path(d) for d, _, _ in os.walk(final)} - before, key=lambda x: -len(x.parts)):
                with contextlib.suppress(OSError):
                    d.rmdir()
            raise
        return
    make_dirs(final.parent)
    stage = final.parent / f".{final.name}.{os.getpid()}.tmp"
    shutil.rmtree(stage, ignore_errors=True)
    try:
        stage.mkdir()
        yield stage
        os.replace(stage, final)
        _fsync_dir(final.parent)
    except BaseException as e:
        shutil.rmtree(stage, ignore_errors=True)
        if isinstance(e, OSError) and isinstance(e.filename, str) and e.filename.startswith(str(stage)):
            e.filename = str(final) + e.filename[len(str(stage)):]
        raise


def _text_path(tmp: Path) -> tuple[int | None, Path]:
    """``tmp`` as a path every writer can open: itself, or where its directory's name is not UTF-8 (pyarrow
    cannot encode it: a traceback) the same file through an open descriptor of that directory,
    ``/proc/self/fd/N/NAME`` (its name is UTF-8, :func:`~archline.common.outputs.temp_name`)."""
    try:
        os.fspath(tmp).encode("utf-8")
        return None, tmp
    except UnicodeEncodeError:
        pass
    try:
        dfd = os.open(tmp.parent, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None, tmp
    via = Path(f"/proc/self/fd/{dfd}") / tmp.name
    if not via.parent.is_dir():         # no /proc: the plain path (and the writer's own error)
        os.close(dfd)
        return None, tmp
    return dfd, via


def write_atomic(path: str | os.PathLike[str], data: bytes | str) -> Path:
    """Write ``data`` (text is UTF-8) to ``path`` atomically (a stream output in place); returns the path."""
    blob = data.encode() if isinstance(data, str) else data
    with atomic_path(path) as tmp:
        stream = tmp == Path(path) and is_stream(path)
        flags = os.O_WRONLY | (os.O_APPEND if stream else os.O_CREAT | os.O_TRUNC)
        try:
            fd = os.open(tmp, flags, 0o644)
        except OSError as e:
            raise OSError(e.errno, e.strerror, show(path)) from None
        try:
            view = memoryview(blob)
            while view:
                view = view[os.write(fd, view):]
        except OSError as e:
            raise OSError(e.errno, e.strerror, show(path)) from None
        finally:
            os.close(fd)
    return Path(path)


@contextlib.contextmanager
def transient_file(path: str | os.PathLike[str], data: str) -> Iterator[Path]:
    """Write ``data`` to ``path`` (atomically) for as long as the ``with`` lasts, and remove it when it ends,
    whatever ends it (Ctrl-C, SIGTERM, an error): a file that names something alive, such as the pty of
    ``meter emulate --port-file F``, must not outlive it (the next terminal reuses the pts number). A stream
    output is written and left; a file someone replaced meanwhile is left alone."""
    write_atomic(path, data)
    try:
        yield Path(path)
    finally:
        if not is_stream(path):
            with contextlib.suppress(OSError):
                target = check_output(path)
                if target.read_text() == data:
                    target.unlink()
