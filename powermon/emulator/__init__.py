"""The emulated PowerMon 2 (labelled ``emulated`` everywhere): a device core, a pty server and a URL handler.

* :class:`PowerMon2Core` speaks the whole protocol and plays the power function it is given;
* :class:`PtyServer` serves it on a real pseudo-terminal (``archline meter emulate``);
* ``powermon://NAME?speed=...`` opens it in-process through pyserial (:mod:`.protocol_powermon`).
"""

from archline.powermon.emulator.device import Faults, PowerMon2Core, Truth
from archline.powermon.emulator.power import DEFAULT_SCRIPT, CallableSource, PowerSource, Script, as_power_source
from archline.powermon.emulator.pty_server import PtyServer
from archline.powermon.emulator.registry import get_device, register_device, unregister_device

__all__ = ["DEFAULT_SCRIPT", "CallableSource", "Faults", "PowerMon2Core", "PowerSource", "PtyServer", "Script",
           "Truth", "as_power_source", "get_device", "register_device", "unregister_device"]
