"""Where ``archline fit`` writes, under the one output policy (:mod:`archline.common.outputs`): every output of the
command (the cost tables, the points CSV, the figures) is planned and checked before the first byte is written,
each is written to its temporary file, and the temporary files are renamed only when all are written. An output
that is an input, two outputs on one file, or a writer that fails: nothing is left under any output's name.

A file name made from a platform goes through :func:`~archline.common.outputs.safe_component` and must lie inside
the directory the user named (:func:`~archline.common.outputs.inside`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

from archline.common.atomic import atomic_path
from archline.common.errors import OutputError
from archline.common.outputs import check_output, inside, is_stream, safe_component, show
from archline.formats.costs import EXTENSIONS, RENDERERS

if TYPE_CHECKING:  # pragma: no cover
    from archline.formats.costs_types import FitResult

#: an output: its path, and what writes it given the path to write (a temporary file, or the stream itself)
Job = tuple[Path, Callable[[Path], None]]


def group_filename(r: FitResult, ext: str) -> str:
    """``<platform>[-emulated].costs.<ext>``, the platform made one safe file-name component."""
    return f"{safe_component(r.platform)}{'-emulated' if r.emulated else ''}.costs.{ext}"


def write_text_to(tmp: Path, text: str, path: Path) -> None:
    """``text`` into ``tmp``; a stream output (``/dev/stdout``) is appended to, never truncated."""
    stream = tmp == path and is_stream(path)
    fd = os.open(tmp, os.O_WRONLY | (os.O_APPEND if stream else os.O_CREAT | os.O_TRUNC), 0o644)
    try:
        view = memoryview(text.encode())
        while view:
            view = view[os.write(fd, view):]
    except OSError as e:
        raise OSError(e.errno, e.strerror, show(path)) from None
    finally:
        os.close(fd)


def text_job(path: Path, text: str) -> Job:
    return path, lambda tmp: write_text_to(tmp, text, path)


def costs_jobs(results: list[FitResult], out: str | Path, fmt: str = "json") -> list[Job]:
    """The cost-table outputs in ``fmt`` (json|csv|table): one file, or with a directory ``out`` (or several
    groups in json and a name without .json) one file per group inside it."""
    render, ext, out = RENDERERS[fmt], EXTENSIONS[fmt], Path(out)
    if out.is_dir() or (len(results) > 1 and fmt == "json" and out.suffix != ".json"):
        return [text_job(inside(out, out / group_filename(r, ext)), render([r])) for r in results]
    return [text_job(out, render(results))]


def points_csv(results: list[FitResult]) -> str:
    """Per-point signed relative errors of time, energy and power of every group, as one CSV."""
    import pandas as pd

    frames = []
    for r in results:
        if r.point_errors is not None:
            f = r.point_errors.copy()
            f.insert(0, "emulated", "true" if r.emulated else "false")   # the label travels with the points
            f.insert(0, "model", r.model)
            f.insert(0, "platform", r.platform)
            frames.append(f)
    return str((pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()).to_csv(index=False))


def points_job(results: list[FitResult], path: str | Path) -> Job:
    p = Path(path)
    return p, lambda tmp: write_text_to(tmp, points_csv(results), p)


def _missing_dirs(path: Path) -> list[Path]:
    out = []
    d = path.parent
    while not d.exists() and d != d.parent:
        out.append(d)
        d = d.parent
    return out


def write_all(jobs: list[Job]) -> list[Path]:
    """Check every output (an input of the command, or two outputs on one file: OutputError), then write each
    to its temporary file and rename them all only once every one is written. Returns the paths."""
    seen: dict[Path, Path] = {}
    for path, _ in jobs:
        real = check_output(path)
        key = Path(os.path.abspath(real))
        if key in seen and not is_stream(real):
            raise OutputError(f"outputs {show(seen[key])} and {show(path)} are the same file; give each its own name")
        seen[key] = path
    made = sorted({d for path, _ in jobs for d in _missing_dirs(check_output(path))}, key=lambda d: -len(d.parts))
    try:
        with ExitStack() as stack:
            for path, write in jobs:
                write(stack.enter_context(atomic_path(path)))
    except BaseException:
        for d in made:          # directories made for outputs that never came: removed when left empty
            try:
                d.rmdir()
            except OSError:
                pass
        raise
    return [path for path, _ in jobs]


def write_costs(results: list[FitResult], out: str | Path | None, fmt: str = "json") -> list[Path]:
    """Write the cost tables in ``fmt`` (see :func:`costs_jobs`); with ``out`` None nothing is written."""
    return [] if out is None else write_all(costs_jobs(results, out, fmt))
