"""Parameter types that refuse bad values where they are typed: numbers that must be finite (and positive), and
output paths that must be writable, so a command fails in one line before it does any work.

Click's FloatRange lets NaN through (every comparison with NaN is false) and accepts inf; these do not.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from archline.common.exits import EXIT_WRITE
from archline.common.outputs import is_stream

#: figure formats every matplotlib back end writes
FIGURE_SUFFIXES = (".png", ".pdf", ".svg", ".svgz", ".eps", ".ps", ".jpg", ".jpeg", ".tif", ".tiff", ".webp",
                   ".pgf")
#: trace and samples formats (powermon.record.traces)
SAMPLES_SUFFIXES = (".csv", ".csv.gz", ".parquet")


class FiniteFloat(click.types.FloatParamType):
    """A finite float, optionally bounded: ``FiniteFloat(gt=0)`` is a positive number."""

    def __init__(self, *, gt: float | None = None, ge: float | None = None, le: float | None = None) -> None:
        self.gt, self.ge, self.le = gt, ge, le

    def _rule(self) -> str:
        gt = "positive" if self.gt == 0 else f"> {self.gt:g}" if self.gt is not None else ""
        ge = "not negative" if self.ge == 0 else f">= {self.ge:g}" if self.ge is not None else ""
        parts = [gt, ge, f"<= {self.le:g}" if self.le is not None else ""]
        return " and ".join(p for p in parts if p)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, float) and math.isfinite(value):
            v = value
        else:
            try:
                v = float(value)
            except (TypeError, ValueError):
                self.fail(f"{value!r} is not a number", param, ctx)
        rule = self._rule()
        if not math.isfinite(v):
            self.fail(f"must be a finite number{' (' + rule + ')' if rule else ''}, got {value}", param, ctx)
        if (self.gt is not None and not v > self.gt) or (self.ge is not None and not v >= self.ge) or \
                (self.le is not None and not v <= self.le):
            self.fail(f"must be {rule}, got {value}", param, ctx)
        return v


POSITIVE = FiniteFloat(gt=0)
#: a duration in seconds: positive, at most a week
DURATION = FiniteFloat(gt=0, le=7 * 24 * 3600)
NON_NEGATIVE = FiniteFloat(ge=0)
FINITE = FiniteFloat()


class UnwritablePath(click.BadParameter):
    exit_code = EXIT_WRITE


class OutPath(click.Path):
    """An output path that can be written: not an existing directory (for a file), its nearest existing parent a
    writable directory, and (for a file) one of ``suffixes`` when given. A device or FIFO (``/dev/null``,
    ``/dev/stdout``) is a stream: any name will do, and the writer uses its default format. Nothing is created
    here."""

    def __init__(self, *, dir_okay: bool = False, file_okay: bool = True, suffixes: Sequence[str] = (),
                 path_type: Any = None) -> None:
        super().__init__(dir_okay=dir_okay, file_okay=file_okay, path_type=path_type)
        self.suffixes = tuple(suffixes)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        p = Path(os.fsdecode(value))
        if self.file_okay and is_stream(p):
            return super().convert(value, param, ctx)
        if self.suffixes and not p.name.lower().endswith(self.suffixes):
            self.fail(f"{p}: unknown format {''.join(p.suffixes) or '(no suffix)'}; use "
                      f"{', '.join(self.suffixes)}", param, ctx)
        if p.is_dir() and not self.dir_okay:
            raise UnwritablePath(f"{p} is a directory; give a file name", ctx, param)
        if p.exists() and not p.is_dir() and not self.file_okay:
            raise UnwritablePath(f"{p} is a file; give a directory", ctx, param)
        parent = p.parent if not p.is_dir() else p
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
        if not parent.is_dir():
            raise UnwritablePath(f"{p}: {parent} is a file, not a directory", ctx, param)
        if not os.access(parent, os.W_OK | os.X_OK):
            raise UnwritablePath(f"{p}: cannot write in {parent} (permission denied)", ctx, param)
        return super().convert(value, param, ctx)
