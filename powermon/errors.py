"""User-facing errors of the meter layer."""


class MeterError(Exception):
    """A meter problem the user can act on: busy or missing port, silent device, bad capture, bad channel map."""

    exit_code = 2


USER_ERRORS: tuple[type[BaseException], ...] = (MeterError,)
