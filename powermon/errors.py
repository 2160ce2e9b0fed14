"""User-facing errors of the meter layer (the CLI prints each as one line with its exit code)."""

from archline.common.exits import EXIT_DEVICE, EXIT_INPUT, EXIT_SAMPLES_LOST


class MeterError(Exception):
    """A meter problem the user can act on: bad capture, bad channel map, bad value, a window with no data."""

    exit_code = EXIT_INPUT


class DeviceError(MeterError):
    """The meter itself is missing, busy, silent, not permitted, or vanished while streaming."""

    exit_code = EXIT_DEVICE


#: the share of a window's samples a meter may lose before the window fails (``--max-lost``, sweep key ``max_lost``)
MAX_LOST_SHARE = 0.01


class SamplesLostError(MeterError):
    """A window lost more than the allowed share of its samples (disconnect, stall, overflow, dropped bytes)."""

    exit_code = EXIT_SAMPLES_LOST


USER_ERRORS: tuple[type[BaseException], ...] = (MeterError,)
