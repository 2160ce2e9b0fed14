"""Input files read whole, or one line naming what is wrong: missing, a directory, unreadable, binary, empty, cut
off mid-line, or not valid TOML or JSON. Each room passes its own error type. No pydantic here: a command that only
reads files (``meter decode``) should not pay for its import; validation is in :mod:`archline.common.inputs`."""

from __future__ import annotations

import errno
import json
import os
import stat
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

from archline.common.outputs import note_input, show

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@contextmanager
def _reading(p: Path, error: type[Exception], what: str, not_found: type[Exception] | None = None,
             give: str = "a file") -> Iterator[None]:
    """Turn an OSError raised while reading ``p`` into one line naming it (``not_found`` for absence)."""
    try:
        yield
    except FileNotFoundError:
        raise (not_found or error)(f"{what} {show(p)} does not exist") from None
    except IsADirectoryError:
        raise error(f"{what} {show(p)} is a directory; give {give}") from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise error(f"{what} {show(p)} is a symlink loop") from None
        raise (not_found or error)(f"cannot read {what} {show(p)}: {e.strerror}") from None


#: the most an input that is not a regular file (a pipe, process substitution) may hold
MAX_STREAM_BYTES = 4 << 30


@contextmanager
def open_input(path: str | Path, *, error: type[Exception], what: str = "file",
               not_found: type[Exception] | None = None, give: str = "a file") -> Iterator[BinaryIO]:
    """The one way an input file is opened: once, as a stream (so a pipe, a FIFO or ``<(...)`` works), noted as
    an input of the command (an output may never replace it, :mod:`archline.common.outputs`). A directory or a
    device (``/dev/zero`` never ends) is one line naming it."""
    p = Path(path)
    with _reading(p, error, what, not_found, give):
        f = open(p, "rb")
    try:
        st = os.fstat(f.fileno())
        if stat.S_ISDIR(st.st_mode):
            raise error(f"{what} {show(p)} is a directory; give {give}")
        if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) or stat.S_ISSOCK(st.st_mode):
            raise error(f"{what} {show(p)} is a device, not a file; give a file or a pipe")
        note_input(p, st)
        with _reading(p, error, what, not_found, give):
            yield f
    finally:
        f.close()


def read_stream(f: BinaryIO, p: Path, *, error: type[Exception], what: str = "file",
                limit_bytes: int | None = None) -> bytes:
    """Every byte of an open input, at most ``limit_bytes`` (a pipe: :data:`MAX_STREAM_BYTES`); more is one line
    naming the input."""
    st = os.fstat(f.fileno())
    limit = limit_bytes if limit_bytes is not None else (None if stat.S_ISREG(st.st_mode) else MAX_STREAM_BYTES)
    if limit is None:
        return f.read()
    data = f.read(limit + 1)
    if len(data) > limit:
        raise error(f"{what} {show(p)} holds more than {limit} bytes; give a smaller file (or split it)")
    return data


def read_bytes(path: str | Path, *, error: type[Exception], what: str = "file",
               not_found: type[Exception] | None = None, give: str = "a file",
               limit_bytes: int | None = None) -> bytes:
    """The bytes of an input file, read once (see :func:`open_input`), or one line naming it: missing, a
    directory (``give`` says what to give instead), a device, unreadable, or longer than ``limit_bytes``
    (``not_found`` for absence)."""
    p = Path(path)
    with open_input(p, error=error, what=what, not_found=not_found, give=give) as f:
        return read_stream(f, p, error=error, what=what, limit_bytes=limit_bytes)


def unique_inputs(paths: Iterable[str | Path], warn: Callable[[str], None] | None = None) -> list[Path]:
    """``paths`` with a file named twice (the same path, a link to it, ``./a`` and ``a``) kept once, at its first
    place, with a warning through ``warn``. Paths that do not exist are kept (their reader names them)."""
    seen: dict[tuple[int, int], str | Path] = {}      # -> the path as given (``./a``, which Path makes ``a``)
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        try:
            st = os.stat(p)
        except (OSError, ValueError):
            out.append(p)
            continue
        key = (st.st_dev, st.st_ino)
        if stat.S_ISREG(st.st_mode) and key in seen:
            if warn is not None:
                warn(f"{show(raw)} is the same file as {show(seen[key])}; it is read once")
            continue
        seen.setdefault(key, raw)
        out.append(p)
    return out


def read_text(path: str | Path, *, error: type[Exception], what: str = "file",
              not_found: type[Exception] | None = None, lines: bool = False) -> str:
    """The text of an input file, or one line naming it: missing, a directory, unreadable, binary (not UTF-8, or
    holding NUL bytes) or empty (``not_found`` for absence). ``lines``: a line-oriented file (CSV, PTX) must end
    with a newline, else its last line was cut off."""
    p = Path(path)
    data = read_bytes(p, error=error, what=what, not_found=not_found)
    if b"\x00" in data:
        raise error(f"{what} {show(p)} is a binary file, not text")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise error(f"{what} {show(p)} is not a text file (not UTF-8 at byte {e.start})") from None
    if not text.strip():
        raise error(f"{what} {show(p)} is empty")
    if lines and not text.endswith(("\n", "\r")):
        n = text.count("\n") + 1
        raise error(f"{what} {show(p)} ends in the middle of line {n} (no newline after it): the file was cut off; "
                    "if that line is complete, end it with a newline")
    return text


def check_text_bytes(data: bytes, p: Path, *, error: type[Exception], what: str = "file", lines: bool = True) -> None:
    """The cheap checks of :func:`read_text` on bytes already read (a parser such as pandas or pyarrow reads them
    next): not empty, not binary (a NUL byte in the first 4 KiB) and, for ``lines``, ending with a newline."""
    head = data[:4096]
    if not data or not head.strip():
        raise error(f"{what} {show(p)} is empty")
    if b"\x00" in head:
        raise error(f"{what} {show(p)} is a binary file, not text")
    if lines and data[-1:] not in (b"\n", b"\r"):
        raise error(f"{what} {show(p)} ends in the middle of a line (no newline after its last row): the file was "
                    "cut off; if the last row is complete, end it with a newline")


def parse_toml(text: str, p: str | Path, *, error: type[Exception]) -> dict[str, Any]:
    """TOML text already read from ``p``, or one line naming ``p``."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise error(f"{show(p)}: not valid TOML: {e}") from None


def parse_json(text: str, p: str | Path, *, error: type[Exception]) -> Any:
    """JSON text already read from ``p``, or one line naming ``p``."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise error(f"{show(p)}: not valid JSON: {e.msg} at line {e.lineno}") from None
    except RecursionError:
        raise error(f"{show(p)}: not valid JSON: nested too deeply") from None


def read_toml(path: str | Path, *, error: type[Exception], what: str = "file",
              not_found: type[Exception] | None = None) -> dict[str, Any]:
    """Parse a TOML file; a missing/unreadable/binary/empty file or bad TOML raises ``error`` (``not_found`` for
    absence)."""
    return parse_toml(read_text(path, error=error, what=what, not_found=not_found), path, error=error)


def read_json(path: str | Path, *, error: type[Exception], what: str = "file",
              not_found: type[Exception] | None = None) -> Any:
    """Parse a JSON file, with the same errors as :func:`read_toml`."""
    return parse_json(read_text(path, error=error, what=what, not_found=not_found), path, error=error)
