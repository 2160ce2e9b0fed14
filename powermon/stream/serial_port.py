"""Opening a meter's serial port (a device or a pyserial URL) with one-line errors, and registering the
emulators' URL handlers with pyserial."""

from __future__ import annotations

import errno
from typing import Any

import serial

from archline.powermon.errors import DeviceError, MeterError


def open_serial(port: str, label: str, baudrate: int, timeout_s: float,
                user_errors: tuple[str, ...] = ("bad ", "expected a URL", "no emulated"), **line: Any) -> Any:
    """Open ``port`` (device or URL) raw, with pyserial's ``line`` settings; one-line errors for the usual
    failures (``label`` names the device in them; a message starting with one of ``user_errors`` is the user's
    mistake, a :class:`MeterError`)."""
    try:
        kw: dict[str, Any] = {"baudrate": baudrate, "timeout": timeout_s, "write_timeout": timeout_s, **line}
        if "://" not in port:
            kw["exclusive"] = True
        return serial.serial_for_url(port, **kw)
    except ValueError as e:
        raise MeterError(f"cannot open {port}: {e}") from None
    except (serial.SerialException, OSError) as e:
        err, text = getattr(e, "errno", None), str(e)
        if text.startswith(user_errors):
            raise MeterError(text) from None
        if err == errno.EMFILE or "Too many open files" in text:    # the process's limit, not the meter's failure
            import resource

            soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
            raise MeterError(f"cannot open {port}: this process is at its open-files limit (ulimit -n {soft}); "
                             "raise it (ulimit -n 1024) and rerun") from None
        if err == errno.ENOTTY or "Inappropriate ioctl" in text:    # /dev/null, a regular file: the user's slip
            raise MeterError(f"{port} is not a serial device (it takes no serial settings): give the {label}'s "
                             "port, e.g. /dev/ttyACM0 (`archline meter list` shows the ports)") from None
        if err == errno.ENOENT or "No such file" in text:
            raise DeviceError(f"serial port {port} does not exist (is the {label} plugged in? "
                              "`archline meter list` shows the ports)") from None
        if err == errno.EBUSY or "lock" in text or "busy" in text.lower():
            raise DeviceError(f"serial port {port} is busy: another program has it open "
                              f"(find it with `fuser {port}`)") from None
        if err == errno.EACCES or "Permission denied" in text:
            raise DeviceError(f"no permission to open {port}: add yourself to its group "
                              "(sudo usermod -aG dialout $USER, then log in again)") from None
        raise DeviceError(f"cannot open {port}: {text}") from None


def register_handler(package: str) -> None:
    """Let pyserial find the emulator URL handler ``package.protocol_<scheme>`` (``pmd://``, ``powersensor3://``)."""
    if package not in serial.protocol_handler_packages:
        serial.protocol_handler_packages.append(package)
