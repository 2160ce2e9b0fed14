"""Input files read whole, or one line naming what is wrong: missing, a directory, unreadable, binary, empty, cut
off mid-line, or not valid TOML or JSON. Each room passes its own error type. No pydantic here: a command that only
reads files (``meter decode``) should not pay for its import; validation is in :mod:`archline.common.inputs`."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

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
        raise (not_found or error)(f"{what} {p} does not exist") from None
    except IsADirectoryError:
        raise error(f"{what} {p} is a directory; give {give}") from None
    except OSError as e:
        raise (not_found or error)(f"cannot read {what} {p}: {e.strerror}") from None


def read_bytes(path: str | Path, *, error: type[Exception], what: str = "file",
               not_found: type[Exception] | None = None, give: str = "a file") -> bytes:
    """The bytes of an input file, or one line naming it: missing, a directory (``give`` says what to give
    instead) or unreadable (``not_found`` for absence)."""
    p = Path(path)
    with _reading(p, error, what, not_found, give):
        return p.read_bytes()


def read_text(path: str | Path, *, error: type[Exception], what: str = "file",
              not_found: type[Exception] | None = None, lines: bool = False) -> str:
    """The text of an input file, or one line naming it: missing, a directory, unreadable, binary (not UTF-8, or
    holding NUL bytes) or empty (``not_found`` for absence). ``lines``: a line-oriented file (CSV, PTX) must end
    with a newline, else its last line was cut off."""
    p = Path(path)
    data = read_bytes(p, error=error, what=what, not_found=not_found)
    if b"\x00" in data:
        raise error(f"{what} {p} is a binary file, not text")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise error(f"{what} {p} is not a text file (not UTF-8 at byte {e.start})") from None
    if not text.strip():
        raise error(f"{what} {p} is empty")
    if lines and not text.endswith(("\n", "\r")):
        n = text.count("\n") + 1
        raise error(f"{what} {p} ends in the middle of line {n} (no newline after it): the file was cut off; "
                    "if that line is complete, end it with a newline")
    return text


def check_text_file(path: str | Path, *, error: type[Exception], what: str = "file", lines: bool = True) -> None:
    """The cheap checks of :func:`read_text` for a file another parser reads (pandas, pyarrow): it exists, is a
    file, is not empty, is not binary (a NUL byte in its first 4 KiB) and, for ``lines``, ends with a newline.
    Reads 4 KiB and the last byte, whatever the size."""
    p = Path(path)
    with _reading(p, error, what):
        size = p.stat().st_size
        with open(p, "rb") as f:
            head = f.read(4096)
            f.seek(max(size - 1, 0))
            last = f.read(1)
    if size == 0 or not head.strip():
        raise error(f"{what} {p} is empty")
    if b"\x00" in head:
        raise error(f"{what} {p} is a binary file, not text")
    if lines and last not in (b"\n", b"\r"):
        raise error(f"{what} {p} ends in the middle of a line (no newline after its last row): the file was cut "
                    "off; if the last row is complete, end it with a newline")


def read_toml(path: str | Path, *, error: type[Exception], what: str = "file",
              not_found: type[Exception] | None = None) -> dict[str, Any]:
    """Parse a TOML file; a missing/unreadable/binary/empty file or bad TOML raises ``error`` (``not_found`` for
    absence)."""
    p = Path(path)
    text = read_text(p, error=error, what=what, not_found=not_found)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise error(f"{p}: not valid TOML: {e}") from None


def read_json(path: str | Path, *, error: type[Exception], what: str = "file",
              not_found: type[Exception] | None = None) -> Any:
    """Parse a JSON file, with the same errors as :func:`read_toml`."""
    p = Path(path)
    text = read_text(p, error=error, what=what, not_found=not_found)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise error(f"{p}: not valid JSON: {e.msg} at line {e.lineno}") from None
    except RecursionError:
        raise error(f"{p}: not valid JSON: nested too deeply") from None
