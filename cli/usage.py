"""Usage errors name the command they are about. Click's option parser raises "Option '--format' requires an
argument" without its context, so the one-line message (``cli.main._usage_line``) fell back to plain
``archline``; :func:`attach_context` gives such an error the context of the command whose arguments were being
parsed. Installed once, when ``archline.cli`` is imported."""

from __future__ import annotations

from typing import Any

import click

_INSTALLED = {"on": False}


def attach_context() -> None:
    """Wrap ``click.Command.parse_args`` (groups use it too) so that a usage error raised while parsing a
    command's arguments carries that command's context when it has none. Only errors with no context change."""
    if _INSTALLED["on"]:
        return
    _INSTALLED["on"] = True
    parse_args = click.Command.parse_args

    def _parse_args(self: click.Command, ctx: click.Context, args: list[str]) -> Any:
        try:
            return parse_args(self, ctx, args)
        except click.UsageError as e:
            if e.ctx is None:
                e.ctx = ctx
            raise

    click.Command.parse_args = _parse_args  # type: ignore[method-assign]
