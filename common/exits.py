"""Exit codes of every ``archline`` command, in one place, and the one way an error becomes one line.

``archline --help`` prints :data:`EXIT_CODES`; ``docs/errors.md`` and ``docs/cron.md`` list the same table (a test
checks that they agree). A user mistake or an environment failure (a bad file or value, an unwritable path, a full
disk, a missing device, a busy port, lost samples) is one line on stderr, ``archline: error: ...``, naming the
thing and what to do, and one of these codes; a traceback appears only with ``archline --debug`` or for a real bug
(code 1).
"""

from __future__ import annotations

import errno
import os

EXIT_OK = 0
EXIT_BUG = 1
EXIT_INPUT = 2
EXIT_POINTS_FAILED = 3
EXIT_DEVICE = 4
EXIT_MORE_TO_DO = 5
EXIT_SAMPLES_LOST = 6
EXIT_WRITE = 7
EXIT_LOCKED = 75
EXIT_INTERRUPTED = 130

#: (code, meaning, what to do): the documented table
EXIT_CODES: tuple[tuple[int, str, str], ...] = (
    (EXIT_OK, "success (a sweep: every point done, possibly by an earlier run)", "nothing"),
    (EXIT_BUG, "internal error, a bug (the traceback is printed, or in sweep.log)", "report it"),
    (EXIT_INPUT, "bad input: a flag, value or file (missing, binary, empty, truncated, malformed)",
     "fix what the message names"),
    (EXIT_POINTS_FAILED, "some points of a bench run or sweep failed; the others were written",
     "rerun: a sweep retries them"),
    (EXIT_DEVICE, "a meter or device is missing, busy, silent or not permitted",
     "plug it in, free the port, fix permissions"),
    (EXIT_MORE_TO_DO, "a sweep stopped at max_points with points left", "rerun: it resumes"),
    (EXIT_SAMPLES_LOST, "the meter lost more than the allowed share of a window's samples",
     "check the meter and its cable; rerun"),
    (EXIT_WRITE, "an output cannot be written (bad path, full disk, read-only); nothing half-written is left",
     "fix the path or free space; rerun"),
    (EXIT_LOCKED, "another sweep holds the lock; nothing was done", "try again later"),
    (EXIT_INTERRUPTED, "interrupted (Ctrl-C, SIGTERM); finished outputs are kept", "rerun (a sweep resumes)"),
)

#: the codes every command may end with: success, a bug, bad input, an output that cannot be written, interrupted
COMMON_CODES: frozenset[int] = frozenset({EXIT_OK, EXIT_BUG, EXIT_INPUT, EXIT_WRITE, EXIT_INTERRUPTED})
#: command -> the codes it may end with besides :data:`COMMON_CODES`; docs/errors.md's table of commands is this
#: (:func:`command_rows`), and the situation harness holds each command to its own codes
COMMAND_CODES: dict[str, frozenset[int]] = {
    "bench run": frozenset({EXIT_POINTS_FAILED, EXIT_DEVICE}),
    "bench sweep": frozenset({EXIT_POINTS_FAILED, EXIT_DEVICE, EXIT_MORE_TO_DO, EXIT_LOCKED}),
    "lab submit": frozenset({EXIT_POINTS_FAILED, EXIT_LOCKED}),
    "lab status": frozenset({EXIT_POINTS_FAILED, EXIT_LOCKED}),
    "meter record": frozenset({EXIT_DEVICE, EXIT_SAMPLES_LOST}),
    "meter integrate": frozenset({EXIT_SAMPLES_LOST}),
    "meter probe": frozenset({EXIT_DEVICE, EXIT_SAMPLES_LOST}),
    "meter calibrate": frozenset({EXIT_DEVICE, EXIT_SAMPLES_LOST}),
    "measure": frozenset({EXIT_DEVICE}),
}
#: commands that, once they have run a child, exit with the child's own code (any code)
CHILD_CODE_COMMANDS: dict[str, str] = {"measure": "once CMD has run: CMD's own exit code (128 + N for signal N)"}


def command_codes(command: str) -> frozenset[int] | None:
    """The codes ``command`` (``"meter record"``) may end with; None for any (a child's own code, measure)."""
    if command in CHILD_CODE_COMMANDS:
        return None
    return COMMON_CODES | COMMAND_CODES.get(command, frozenset())


def command_rows() -> list[str]:
    """docs/errors.md's table of which command ends with which code (a test compares the two)."""
    def codes(c: frozenset[int]) -> str:
        return ", ".join(str(x) for x in sorted(c))

    rows = ["| command | exit codes |", "|---|---|", f"| every command | {codes(COMMON_CODES)} |"]
    for cmd in sorted(COMMAND_CODES):
        also = f"; {CHILD_CODE_COMMANDS[cmd]}" if cmd in CHILD_CODE_COMMANDS else ""
        rows.append(f"| `{cmd}` | also {codes(COMMAND_CODES[cmd])}{also} |")
    return rows


_EXPLAIN = {
    errno.ENOSPC: "no space left on the device: free some space and rerun",
    errno.EDQUOT: "disk quota exceeded: free some space and rerun",
    errno.EROFS: "read-only file system: write somewhere else",
    errno.EACCES: "permission denied: write somewhere you may, or fix the permissions",
    errno.EPERM: "operation not permitted: write somewhere you may, or fix the permissions",
    errno.ENOTDIR: "a part of this path is a file, not a directory",
    errno.EISDIR: "this is a directory: give a file name",
    errno.ENOENT: "no such file or directory (and its parent cannot be created here)",
    errno.ENAMETOOLONG: "file name too long",
    errno.EFBIG: "file too large for this file system",
    errno.EIO: "input/output error on the device",
}


def _fsize_limit() -> int | None:
    """The soft RLIMIT_FSIZE in bytes (``ulimit -f``), or None when there is none."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    except (ImportError, OSError, ValueError):
        return None
    return None if soft == resource.RLIM_INFINITY else int(soft)


def os_error_line(e: OSError) -> str:
    """One line for a file-system failure: the path and what to do (never Python's repr of the error)."""
    what = _EXPLAIN.get(e.errno or -1, e.strerror or str(e))
    if e.errno == errno.EFBIG and _fsize_limit() is not None:     # the process's limit, not the file system's
        what = f"file too large: the file-size limit (ulimit -f) of this process is {_fsize_limit()} bytes; " \
               "raise it or write less"
    names = [n for n in (e.filename, e.filename2) if n]
    where = " -> ".join(os.fsdecode(n) for n in names)
    return f"{where}: {what}" if where else f"file system error: {what}"


#: what a path that cannot be found says (a name too long, missing, a file as a directory, a link loop): the
#: output's code when the path is an output of the command, else the input's
_NOT_FOUND = frozenset({errno.ENAMETOOLONG, errno.ENOENT, errno.ENOTDIR, errno.ELOOP})


def _an_input(e: OSError) -> bool:
    """An OSError about a path that is not one of the command's outputs (:func:`archline.common.outputs.is_output`)
    and cannot be found: a missing input (a 300-character name is exit 2, not the output code 7)."""
    from archline.common.outputs import is_output

    names = [n for n in (e.filename, e.filename2) if n]
    return e.errno in _NOT_FOUND and bool(names) and not any(is_output(n) for n in names)


def classify(e: BaseException, user_errors: tuple[type[BaseException], ...]) -> tuple[str, int] | None:
    """(one-line message, exit code) for a user mistake or an environment failure; None for a bug."""
    if isinstance(e, user_errors):
        return str(e), int(getattr(e, "exit_code", EXIT_INPUT))
    if isinstance(e, OSError):
        return os_error_line(e), EXIT_INPUT if _an_input(e) else EXIT_WRITE
    if isinstance(e, RuntimeError) and str(e).startswith("Symlink loop from "):   # pathlib's resolve() (3.11)
        where = str(e)[len("Symlink loop from "):].strip("'")
        return f"{where}: a symbolic link loop; remove the link or name another path", EXIT_WRITE
    if isinstance(e, MemoryError):
        return "out of memory: give the command less data at once, or run it on a bigger machine", EXIT_WRITE
    return None


def epilog() -> str:
    """The exit-code table for ``archline --help``."""
    lines = ["\b", "Exit codes (docs/errors.md):"]
    lines += [f"  {code:>3}  {meaning}" for code, meaning, _ in EXIT_CODES]
    return "\n".join(lines)
