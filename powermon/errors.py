"""User-facing errors of the meter layer (the CLI prints each as one line with its exit code)."""

from archline.common.exits import EXIT_DEVICE, EXIT_SAMPLES_LOST
from archline.formats.meters.errors import MeterError as MeterError  # the base: the file owners raise it too


class DeviceError(MeterError):
    """The meter itself is missing, busy, silent, not permitted, or vanished while streaming."""

    exit_code = EXIT_DEVICE


class MeterOpenError(DeviceError):
    """A meter that cannot be opened here, whatever the driver said (no library, no device, no answer, a TLS
    handshake with a plain-HTTP server): exit 4 wherever it is opened (:func:`archline.powermon.spec.open_meter`)."""


def reworded(e: MeterError, message: str) -> MeterError:
    """``message`` (``e`` with where it happened) as an error of ``e``'s exit code: a wrapper that names the
    platform must not turn a missing device (4) into a bad input (2)."""
    new = MeterOpenError(message) if isinstance(e, DeviceError) else MeterError(message)
    new.exit_code = e.exit_code
    return new


#: the share of a window's samples a meter may lose before the window fails (``--max-lost``, sweep key ``max_lost``)
MAX_LOST_SHARE = 0.01


class SamplesLostError(MeterError):
    """A window lost more than the allowed share of its samples (disconnect, stall, overflow, dropped bytes)."""

    exit_code = EXIT_SAMPLES_LOST


USER_ERRORS: tuple[type[BaseException], ...] = (MeterError,)
