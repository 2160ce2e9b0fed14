"""Printing helpers shared by the commands: JSON to stdout, aligned tables for people."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import click


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
    click.echo(json.dumps(_clean(obj), indent=2))


def echo_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], *, err: bool = False) -> None:
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    for n, r in enumerate(cells):
        click.echo("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip(), err=err)
        if n == 0:
            click.echo("  ".join("-" * w for w in widths), err=err)


format_option = click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table",
                             show_default=True, help="table for people, json (SI units) for programs")
