"""Printing helpers shared by the commands: the --format option, JSON to stdout, rich tables for people, and the
list of files a command wrote."""

from __future__ import annotations

import io
import json
import math
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

#: what --format json promises, said once for every command's --help
JSON_HELP = ("table for people, json for programs (each key names its unit: SI unless the key says otherwise): "
             "one JSON document alone on stdout")


def _clean(obj: Any) -> Any:
    # JSON has no inf/nan: print them as null so every parser reads the output.
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


def echo_json(obj: Any) -> None:
    """One JSON document on stdout (NaN and infinities as null; paths and other objects as their text)."""
    click.echo(json.dumps(_clean(obj), indent=2, default=str))


def format_options(*extra: str, default: str = "table", help: str = JSON_HELP) -> Callable[[F], F]:
    """The --format option (``fmt``): table and json, and any ``extra`` choices a command has (fit's csv)."""
    return click.option("--format", "fmt", type=click.Choice(["table", "json", *extra]), default=default,
                        show_default=True, help=help)


format_option = format_options()


def _is_tty(err: bool) -> bool:
    stream = sys.stderr if err else sys.stdout
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _no_color() -> bool:
    """NO_COLOR set and not empty (no-color.org): no colour and no other escape (bold) either."""
    return bool(os.environ.get("NO_COLOR"))


def _cell(value: Any) -> str:
    # one line per row, whatever the data holds: a tab, newline or other control character is shown escaped (\\t),
    # as common.outputs.show shows names
    text = str(value)
    if any(c < " " or c == "\x7f" for c in text):
        text = "".join(c.encode("unicode_escape").decode() if c < " " or c == "\x7f" else c for c in text)
    return text


def echo_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], *, err: bool = False) -> None:
    """A rich table: on a terminal with a bold header and rules; piped, plain aligned columns (a header line, a
    line of dashes, two spaces between columns, no colour, never wrapped) that a script can split."""
    from rich.cells import cell_len
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    cells = [[_cell(c) for c in r] for r in rows]
    if _is_tty(err):
        from rich import box
        from rich.measure import Measurement

        # NO_COLOR (no-color.org) means no escapes at all: rich drops colours for it but would keep the bold
        table = Table(box=box.SIMPLE_HEAD, header_style="" if _no_color() else "bold", pad_edge=False,
                      show_edge=False)
        for i, h in enumerate(headers):
            # a value is never cut ("…"): a cell wraps between words, and a column is never narrower than its
            # longest word, so a narrow terminal gets long lines (which it wraps itself) rather than lost data
            words = [w for text in [_cell(h), *(r[i] for r in cells)] for w in text.split()]
            table.add_column(Text(_cell(h)), overflow="fold", min_width=max((cell_len(w) for w in words),
                                                                                default=0))
        for r in cells:
            table.add_row(*(Text(c) for c in r))   # Text: a "[emulated]" in a cell is not rich markup
        stream = sys.stderr if err else sys.stdout
        console = Console(file=stream, highlight=False)
        need = Measurement.get(console, console.options.update(max_width=1_000_000), table).minimum
        if need > console.width:
            console = Console(file=stream, highlight=False, width=need)
        console.print(table, crop=False)   # a line the measure got wrong is long, never cut
        return
    table = Table(box=None, padding=(0, 1), pad_edge=False, show_edge=False)
    for i, h in enumerate(headers):
        width = max(cell_len(r[i]) for r in [[_cell(x) for x in headers], *cells])
        table.add_column(Text(f"{_cell(h)}\n{'-' * width}"), no_wrap=True, overflow="ignore", header_style="")
    for r in cells:
        table.add_row(*(Text(c) for c in r))
    buf = io.StringIO()
    Console(file=buf, width=1_000_000, color_system=None, force_terminal=False, highlight=False, markup=False,
            emoji=False).print(table)
    for line in buf.getvalue().splitlines():
        click.echo(line.rstrip(), err=err)


def echo_files(fmt: str, files: Sequence[tuple[str | os.PathLike[str], str]], **report: Any) -> None:
    """What a command wrote: a ``wrote PATH`` line each for people; for programs one JSON document with ``files``,
    each file's path and what it shows, beside the rest of the ``report``."""
    from archline.common.outputs import show

    if fmt == "json":
        echo_json({**report, "files": [{"path": os.fsdecode(p), "shows": s} for p, s in files]})
        return
    for p, _ in files:
        click.echo(f"wrote {show(p)}")


_PANELS = {"roofline": "roofline", "archline": "arch line", "powerline": "power line"}


def panels(kinds: Sequence[str]) -> str:
    """The panels of a model figure in words: "roofline, arch line and power line"."""
    names = [_PANELS.get(k, k) for k in kinds]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def files_json(path: str | os.PathLike[str] | None, shows: str) -> dict[str, Any]:
    """``{"files": [{"path", "shows"}]}`` for a figure a command drew on request (``--plot``), ``{}`` when none: a
    command's JSON report lists what it wrote the way :func:`echo_files` does."""
    return {} if path is None else {"files": [{"path": os.fsdecode(path), "shows": shows}]}
