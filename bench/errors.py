"""User-facing errors of the bench layer."""

from archline.common.exits import EXIT_DEVICE, EXIT_INPUT, EXIT_POINTS_FAILED


class BenchError(Exception):
    """Bad input to a benchmark or an unusable back end: the CLI prints it as one line."""

    exit_code = EXIT_INPUT


class BackendUnavailableError(BenchError):
    """The back end, device or ISA asked for is not usable here; the message says why."""


class BackendFaultError(BackendUnavailableError):
    """A plugin back end that cannot be loaded or opened, or whose code failed or answered out of its contract
    outside a point (bench/guarded.py): it is not usable here, exit 4 as a missing device."""

    exit_code = EXIT_DEVICE


class ToolUnavailableError(BenchError):
    """A measuring tool this machine does not give access to (perf or likwid without a PMU): exit 4, as a missing
    device or meter."""

    exit_code = EXIT_DEVICE


class UnsupportedError(BenchError):
    """The device cannot run this kernel variant (e.g. no fp64): reported as 'unsupported', never as 0 or inf."""


class PointsFailedError(BenchError):
    """Some points of a run failed (their rows are missing); the others were written."""

    exit_code = EXIT_POINTS_FAILED


USER_ERRORS: tuple[type[BaseException], ...] = (BenchError,)
