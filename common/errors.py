"""Errors raised by ``common`` itself (the output policy, the input readers' bounds). ``archline.cli.main`` prints
each as one line with its ``exit_code`` (2: the user asked for something that cannot be done)."""

from __future__ import annotations


class CommonError(ValueError):
    exit_code = 2


class OutputError(CommonError):
    """An output the policy refuses: one of the command's inputs, or outside the path the user named."""


USER_ERRORS: tuple[type[Exception], ...] = (CommonError,)
