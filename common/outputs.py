"""The one output policy of every archline command.

* **Never an input.** Every input opened through :mod:`archline.common.files` (or named by an owner with
  :func:`note_input`) is remembered by its identity (device and inode, so links and ``./a.csv`` count too); an
  output that is one of them is refused before anything is written (:func:`check_output`).
* **Never inside an input directory.** An input that is a directory (a data set) is also remembered by its real
  path; an output inside it (``fit fleet --out fleet``: ``fleet/x.costs.json``) is refused too, since the next
  reader of the directory would read the output as data.
* **Links are written through.** An output that is a symlink replaces its *target* (atomically); the link stays.
  A symlink loop is an error.
* **Devices and pipes are streams.** An output that is a character device, a FIFO or a socket (``/dev/null``,
  ``/dev/stdout``, ``/dev/full``) is opened and written, never replaced by rename; ``/dev/full`` reports a full disk.
* **Names made from data are made safe** (:func:`safe_component`) and stay inside the directory the user named
  (:func:`inside`).

The registry of inputs is per command: ``archline.cli.main`` clears it (:func:`reset`) before each command.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import unicodedata
from pathlib import Path

from archline.common.errors import OutputError

#: (st_dev, st_ino) -> (st_ctime_ns, the input as the user named it). The change time tells a file that was
#: deleted, its inode reused by a new one, from the input itself (a library caller never calls reset()).
_INPUTS: dict[tuple[int, int], tuple[int, str]] = {}
#: real path of an input directory -> ((st_dev, st_ino), the directory as the user named it)
_INPUT_DIRS: dict[str, tuple[tuple[int, int], str]] = {}


#: the outputs this command named or wrote (as given and as their real target): an OSError on another path is
#: an input's, not an output's (:func:`is_output`)
_OUTPUTS: set[str] = set()


def reset() -> None:
    """Forget the inputs and outputs of the previous command."""
    _INPUTS.clear()
    _INPUT_DIRS.clear()
    _OUTPUTS.clear()


def note_output(path: str | os.PathLike[str]) -> None:
    """Remember ``path`` as an output of the running command (its name and, through links, its real target)."""
    for p in (os.fspath(path), os.path.abspath(path)):
        _OUTPUTS.add(p)
    try:
        _OUTPUTS.add(os.fspath(resolve_output(os.path.abspath(path))))
    except (OSError, ValueError):
        pass


def is_output(path: str | os.PathLike[str] | bytes) -> bool:
    """Whether ``path`` is an output this command named, lies under one (a results directory) or above it (a
    directory it must make), or sits beside one with a name made from it (a sidecar ``t.csv.json``, a capture
    ``t.raw.bin``, a temp ``.t.csv.PID.tmp``)."""
    p = os.path.abspath(os.fsdecode(path))
    for o in _OUTPUTS:
        o = os.path.abspath(o)
        if p == o or p.startswith(o.rstrip("/") + "/") or o.startswith(p.rstrip("/") + "/"):   # or its parent
            return True
        if os.path.dirname(p) == os.path.dirname(o):    # t.csv -> t.csv.json, .t.csv.PID.tmp, t.raw.bin
            named, name = os.path.basename(o), os.path.basename(p).lstrip(".")
            if named and name.startswith((named, named.split(".")[0] + ".raw.")):
                return True
    return False


def read_only(directory: str | os.PathLike[str]) -> bool:
    """Whether ``directory`` lies on a file system mounted read-only (root may write anywhere else, so its
    permission bits alone would say nothing)."""
    try:
        return bool(os.statvfs(directory).f_flag & os.ST_RDONLY)
    except (OSError, ValueError):
        return False


#: the longest file name most file systems take (bytes); os.pathconf tells the real one where it can
NAME_MAX = 255


def temp_name(final: str | os.PathLike[str], reserve: int = 0) -> Path:
    """The hidden temporary name beside ``final`` that a writer fills before renaming it onto ``final``:
    ``.NAME.PID.tmp``, shortened (with a hash of the name) where that would pass the file system's name limit and
    made UTF-8 where the name is not (pyarrow cannot open such a path): a name the user may give always has a
    temporary name that can be made. ``reserve``: bytes left free for a companion named after the temp (a
    capture's ``.NAME.PID.tmp.json`` sidecar: 5)."""
    f = Path(final)
    tail = f".{os.getpid()}.tmp"
    try:
        limit = os.pathconf(f.parent if os.fspath(f.parent) else ".", "PC_NAME_MAX")
    except (OSError, ValueError):
        limit = NAME_MAX
    raw = os.fsencode(f.name)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and len(raw) + 1 + len(tail) + reserve <= limit:
        return f.with_name(f".{text}{tail}")
    digest = hashlib.sha1(raw).hexdigest()[:8]
    room = max(1, limit - reserve - len(tail) - len(digest) - 2)
    short = raw.decode("utf-8", errors="ignore").encode()[:room].decode("utf-8", errors="ignore")
    return f.with_name(f".{short}-{digest}{tail}")


def note_input(path: str | os.PathLike[str], st: os.stat_result | None = None) -> None:
    """Remember ``path`` (or the file ``st`` describes) as an input of the running command."""
    try:
        st = st if st is not None else os.stat(path)
    except (OSError, ValueError):
        return
    if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode):
        key = (st.st_dev, st.st_ino)
        if key not in _INPUTS or _INPUTS[key][0] != st.st_ctime_ns:
            _INPUTS[key] = (st.st_ctime_ns, show(path))
        if stat.S_ISDIR(st.st_mode):
            try:
                _INPUT_DIRS[os.path.realpath(path)] = (key, show(path))
            except (OSError, ValueError):
                pass


def inputs() -> list[str]:
    """The inputs noted so far, as the user named them."""
    return [name for _, name in _INPUTS.values()]


def show(path: str | os.PathLike[str] | bytes) -> str:
    """A path as a message shows it: never raises on a name that is not valid UTF-8 (bytes shown as ``\\xNN``), and
    stays on one line (a newline or other control character in a name is shown escaped, ``\\n``)."""
    raw = os.fsencode(path)
    text = raw.decode("utf-8", errors="backslashreplace")
    if any(c < " " or c == "\x7f" for c in text):
        text = "".join(c.encode("unicode_escape").decode() if c < " " or c == "\x7f" else c for c in text)
    return text


def is_stream(path: str | os.PathLike[str]) -> bool:
    """True for an output that must be written as a stream: a character device, FIFO or socket, or anything
    under ``/dev`` or ``/proc`` (``/dev/stdout`` may resolve to the regular file the shell redirected to: it is
    still written through, never replaced)."""
    p = os.fspath(path)
    if p.startswith(("/dev/", "/proc/")) and os.path.lexists(p):   # a new name there is a file, not a stream
        return True
    try:
        mode = os.stat(p).st_mode
    except OSError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISBLK(mode)


def resolve_output(path: str | os.PathLike[str]) -> Path:
    """The file an output named ``path`` really writes: a symlink's final target (which may not exist yet).
    Raises OSError(ELOOP) for a symlink loop."""
    p = Path(path)
    for _ in range(40):
        try:
            if not p.is_symlink():
                return p
        except OSError:
            return p
        target = Path(os.readlink(p))
        p = target if target.is_absolute() else p.parent / target
    raise OSError(errno.ELOOP, "too many levels of symbolic links", os.fspath(path))


def make_dirs(path: str | os.PathLike[str]) -> Path:
    """Create directory ``path`` and its parents; a symlink on the way is followed, and its target created when the
    target's parent exists: an output directory named through a link is written through it."""
    target = Path(os.path.realpath(path))
    if Path(path).is_symlink() and not target.parent.is_dir():     # a link is followed, never a tree made for it
        raise OSError(None, f"a link to {target}, whose directory does not exist; create it or name another "
                      "output", show(path))
    target.mkdir(parents=True, exist_ok=True)
    return Path(path)


def prune_dirs(d: Path, levels: int) -> None:
    """Remove directory ``d`` and up to ``levels - 1`` of its parents, while they are empty."""
    for x in [d, *d.parents][:levels]:
        try:
            x.rmdir()
        except OSError:
            return


def check_output(path: str | os.PathLike[str], extra_inputs: tuple[str | os.PathLike[str], ...] = ()) -> Path:
    """The real file an output writes (symlinks followed), or OutputError when it is an input of this command
    (one noted, or one of ``extra_inputs``)."""
    target = resolve_output(path)
    note_output(path)
    try:
        st = os.stat(target)
    except OSError:
        _check_not_inside_input(path, target)
        return target  # does not exist yet: it cannot be an input
    key = (st.st_dev, st.st_ino)
    seen = _INPUTS.get(key)
    named = seen[1] if seen is not None and seen[0] == st.st_ctime_ns else None
    if named is None:
        for other in extra_inputs:
            try:
                o = os.stat(other)
            except OSError:
                continue
            if (o.st_dev, o.st_ino) == key:
                named = show(other)
                break
    if named is not None and (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        same = "" if show(path) == named else f" (the same file as input {named})"
        raise OutputError(f"output {show(path)} is an input of this command{same}: it would be overwritten; "
                          "write the output somewhere else")
    _check_not_inside_input(path, target)
    return target


def _check_not_inside_input(path: str | os.PathLike[str], target: Path) -> None:
    """OutputError when the output's real path lies inside a directory this command reads (one still there)."""
    if not _INPUT_DIRS:
        return
    try:
        real = Path(os.path.realpath(target))
    except (OSError, ValueError):
        return
    for d in [real, *real.parents]:
        seen = _INPUT_DIRS.get(os.fspath(d))
        if seen is None or d == real:
            continue
        try:
            st = os.stat(d)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) == seen[0]:
            raise OutputError(f"output {show(path)} is inside {seen[1]}, an input directory of this command: the "
                              f"next reader of {seen[1]} would take it for data; write the output somewhere else")


_UNSAFE = set('/\\\x00:*?"<>|')


def safe_component(text: str, *, max_len: int = 120) -> str:
    """``text`` as one safe file-name component: no path separators, no ``.``/``..``, no leading dot or dash,
    no control characters; unchanged when it already is safe, else the cleaned name plus a short hash of the
    original, so two different values never share a file."""
    norm = unicodedata.normalize("NFC", str(text))
    clean = "".join("_" if (c in _UNSAFE or unicodedata.category(c).startswith("C") or (c.isspace() and c != " "))
                    else c for c in norm).strip()
    clean = clean.lstrip(".-") or "_"
    if len(clean.encode()) > max_len:
        clean = clean.encode()[:max_len].decode(errors="ignore")
    if clean == text:
        return clean
    digest = hashlib.sha1(os.fsencode(text) if isinstance(text, str) else text).hexdigest()[:8]
    return f"{clean}-{digest}"


def inside(root: str | os.PathLike[str], path: str | os.PathLike[str]) -> Path:
    """``path`` when it lies inside directory ``root`` (after resolving ``..`` and links), else OutputError."""
    r = Path(os.path.realpath(root))        # realpath: a symlink loop is a path that fails at open (exit 7), not a
    p = Path(os.path.realpath(path))        # RuntimeError from Path.resolve()
    if p != r and r not in p.parents:
        raise OutputError(f"{show(path)} would be written outside {show(root)}; refusing")
    return Path(path)
