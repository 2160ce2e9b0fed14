"""What every emulated meter (labelled ``emulated`` everywhere) is made of: the power it plays, the faults it
injects, a pty server and the named devices its URLs open. Each kind's device core is in its own folder (the
PowerMon 2's: :mod:`archline.powermon.powermon2.emulator`, served in-process by its ``powermon://NAME?speed=...``
URL handler, :mod:`archline.powermon.powermon2.protocol_powermon`).

* :class:`PtyServer` serves a core on a real pseudo-terminal (``archline meter emulate``);
* :func:`register_device` names a device (its power, :class:`Faults`, speed) for ``SCHEME://NAME``.
"""

from archline.powermon.emulator.power import DEFAULT_SCRIPT, CallableSource, PowerSource, Script, as_power_source
from archline.powermon.emulator.pty_server import PtyServer
from archline.powermon.emulator.registry import Faults, get_device, register_device, unregister_device

__all__ = ["DEFAULT_SCRIPT", "CallableSource", "Faults", "PowerSource", "PtyServer", "Script", "as_power_source",
           "get_device", "register_device", "unregister_device"]
