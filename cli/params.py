"""Parameter types that refuse bad values where they are typed: numbers that must be finite (and positive), and
output paths that must be writable, so a command fails in one line before it does any work.

Click's FloatRange lets NaN through (every comparison with NaN is false) and accepts inf; these do not.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

import click

from archline.common.exits import EXIT_WRITE
from archline.common.outputs import is_stream, note_output, read_only, resolve_output

#: figure formats every matplotlib back end writes
FIGURE_SUFFIXES = (".png", ".pdf", ".svg", ".svgz", ".eps", ".ps", ".jpg", ".jpeg", ".tif", ".tiff", ".webp",
                   ".pgf")
#: trace and samples formats (formats.meters.traces)
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


def _target_name(p: Path) -> str:
    """The name of the file a symlink ``p`` finally points to (``p``'s own where it is none, or a loop)."""
    try:
        return resolve_output(p).name
    except OSError:
        return p.name


class OutPath(click.Path):
    """An output path that can be written: not an existing directory (for a file), its nearest existing parent a
    writable directory, and (for a file) one of ``suffixes`` when given. A device or FIFO (``/dev/null``,
    ``/dev/stdout``) is a stream: any name will do, and the writer uses its default format. Nothing is created
    here. ``follow_links``: a symlink whose final target has one of ``suffixes`` will do (where the writer takes
    its format from the target, as the samples writer does)."""

    follow_links = False

    def __init__(self, *, dir_okay: bool = False, file_okay: bool = True, suffixes: Sequence[str] = (),
                 path_type: Any = None) -> None:
        super().__init__(dir_okay=dir_okay, file_okay=file_okay, path_type=path_type)
        self.suffixes = tuple(suffixes)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, Path) or value is None:    # a default, or converted already
            value = os.fspath(value) if value is not None else value
        if value is not None and os.fsdecode(value) == "":
            # an unset variable in a cron line (--out "$OUT"): never taken as the current directory
            self.fail("an empty name is no output (an unset variable?); give a file or directory name", param, ctx)
        if os.fsdecode(value) == "-":
            # '-' is no stream here (stdout carries the command's report): refused rather than made into a file
            # literally named '-'; a stream output is named by its path (docs/errors.md)
            self.fail("'-' is not an output here; to write to standard output give /dev/stdout", param, ctx)
        p = Path(os.fsdecode(value))
        note_output(p)      # a path error on it is the output code (7), on any other path the input code (2)
        if is_stream(p):
            if self.file_okay:
                return super().convert(value, param, ctx)
            raise UnwritablePath(f"{p} is a device or pipe, not a directory; give a directory for the results",
                                 ctx, param)
        named = _target_name(p) if self.follow_links else p.name     # a link's target names the outputs
        if self.suffixes and not p.name.lower().endswith(self.suffixes) and not named.lower().endswith(self.suffixes):
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
        if read_only(parent):
            raise UnwritablePath(f"{p}: {parent} is on a read-only file system; write somewhere else", ctx, param)
        if not os.access(parent, os.W_OK | os.X_OK):
            raise UnwritablePath(f"{p}: cannot write in {parent} (permission denied)", ctx, param)
        return super().convert(value, param, ctx)


#: the largest byte size taken (1 EiB): more than any memory, so a larger one is a typo, not a machine
MAX_BYTES = 2**60


class ByteSize(click.ParamType):
    """A size in bytes as people write it (``65536``, ``512K``, ``8MiB``; binary multiples, common.sizes), as an
    int: positive, finite and at most :data:`MAX_BYTES`."""

    name = "bytes"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        from archline.common.sizes import parse_bytes

        text = str(value).strip()
        try:
            n = parse_bytes(text)
        except ValueError as e:
            try:  # why it was refused: a number that is not finite, or one too large once multiplied
                number = float(text.upper().rstrip("BI").rstrip("KMGT").strip())
            except ValueError:
                self.fail(str(e), param, ctx)
            if not math.isfinite(number):
                self.fail(f"must be a finite size in bytes, got {text}", param, ctx)
            if number > 0:
                self.fail(f"too large: {text} is more than 1 EiB (2^60 B)", param, ctx)
            self.fail(f"must be positive, got {text}", param, ctx)
        if n > MAX_BYTES:
            self.fail(f"too large: {text} is more than 1 EiB (2^60 B)", param, ctx)
        return n


BYTES = ByteSize()


def intensities(text: str, flag: str = "--intensity") -> list[float]:
    """The intensities (flop/B) of ``--intensity`` (``fit.summary.parse_intensities``: '0.25,1,4' or a
    range of powers of two '0.25:64'), refusing one so small that it underflows (a subnormal number: the model's
    rates round to 0 and its power to NaN)."""
    from archline.fit.summary import parse_intensities

    values = parse_intensities(text)
    tiny = [v for v in values if v < sys.float_info.min]
    if tiny:
        raise click.BadParameter(f"{tiny[0]:g} flop/B is too small (it underflows: below {sys.float_info.min:.3g})",
                                 ctx=click.get_current_context(silent=True), param_hint=f"'{flag}'")
    return values


def check_finite(rows: Sequence[dict[str, Any]], keys: Sequence[str], flag: str = "--intensity") -> None:
    """Refuse (exit 2, naming the intensity) a prediction that is not a finite number: the model has no answer
    there, and a printed nan or JSON null would pass for one."""
    for r in rows:
        bad = [k for k in keys if not math.isfinite(r[k])]
        if bad:
            raise click.BadParameter(f"the model gives no finite {', '.join(bad)} at {r['intensity']:g} flop/B",
                                     ctx=click.get_current_context(silent=True), param_hint=f"'{flag}'")


class BackendOption(click.Option):
    """An option whose help names the registered back ends where it says ``{backends}``, and those declaring the
    ceilings kernel where it says ``{ceilings}``, read when the help is shown (plugins included), so that
    ``archline --help`` loads no back end."""

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        saved = self.help
        try:
            from archline.bench.registry import backends, names

            ceilings = "/".join(n for n, i in backends().items() if "ceilings" in i.kernels)
            self.help = (saved or "").replace("{backends}", ", ".join(names(emulated=False))).replace(
                "{ceilings}", ceilings or "no back end")
            return super().get_help_record(ctx)
        finally:
            self.help = saved


class RegistryChoice(click.Choice):
    """A choice among names a registry gives, read when first needed (help, parsing, completion), so that importing
    a command loads nothing; the first name is the option's default (:class:`RegistryChoiceOption`)."""

    def __init__(self, read: Callable[[], Sequence[str]]) -> None:
        self._read = read
        self._names: tuple[str, ...] | None = None
        super().__init__((), case_sensitive=True)

    @property  # type: ignore[override]
    def choices(self) -> tuple[str, ...]:
        if self._names is None:
            self._names = tuple(self._read())
        return self._names

    @choices.setter
    def choices(self, _: Sequence[str]) -> None:   # click.Choice's constructor sets it; the registry gives it
        pass


class MoreHelpOption(click.Option):
    """An option whose help ends with what ``more()`` says, read only when the help is shown (a registry's plugins:
    ``meter record --meter``'s plugin kinds); where it says nothing the help is the static one."""

    def __init__(self, *args: Any, more: Callable[[], str], **kw: Any) -> None:
        super().__init__(*args, **kw)
        self._more = more

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        extra, static = self._more(), self.help
        if extra:
            self.help = f"{static}; {extra}"
        try:
            return super().get_help_record(ctx)
        finally:
            self.help = static


class RegistryChoiceOption(click.Option):
    """An option choosing among the names ``registry()`` gives (a :class:`RegistryChoice`), read when first needed;
    its default is the first (shown by ``--help``)."""

    def __init__(self, *args: Any, registry: Callable[[], Sequence[str]], **kw: Any) -> None:
        kw["type"] = RegistryChoice(registry)
        super().__init__(*args, **kw)

    def get_default(self, ctx: click.Context, call: bool = True) -> Any:
        return cast(RegistryChoice, self.type).choices[0]
