"""User-facing errors of the model and fit layer: the CLI prints them as one line, no traceback."""


class ArchlineFitError(Exception):
    """Bad input to the model or the fit: a bad profile, a missing value, malformed data."""


class PlatformNotFoundError(ArchlineFitError):
    pass


class ProfileFormatError(ArchlineFitError):
    pass


class MissingValueError(ArchlineFitError):
    """A coefficient the requested output needs is not known for this platform."""


USER_ERRORS: tuple[type[BaseException], ...] = (ArchlineFitError,)
