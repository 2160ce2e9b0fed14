"""The error of a meter's file (and the base of every meter error, :mod:`archline.powermon.errors`): the format
owners here raise it and powermon catches it, so it lives below both."""

from archline.common.exits import EXIT_INPUT


class MeterError(Exception):
    """A meter problem the user can act on: bad capture, bad channel map, bad value, a window with no data."""

    exit_code = EXIT_INPUT
