"""User-facing errors of the bench layer."""


class BenchError(Exception):
    """Bad input to a benchmark or an unusable back end: the CLI prints it as one line."""

    exit_code = 2


class BackendUnavailableError(BenchError):
    """The back end, device or ISA asked for is not usable here; the message says why."""


class UnsupportedError(BenchError):
    """The device cannot run this kernel variant (e.g. no fp64): reported as 'unsupported', never as 0 or inf."""


USER_ERRORS: tuple[type[BaseException], ...] = (BenchError,)
