"""What every emulated meter (labelled ``emulated`` everywhere) is made of: the power it plays, the faults it
injects, a pty server and the named devices its URLs open. Each kind's device core, and the pyserial URL handler
that opens it in-process (``powermon://NAME?speed=...``), is in the kind's own folder.

* :class:`PtyServer` serves a core on a real pseudo-terminal (``archline meter emulate``);
* :func:`register_device` names a device (its power, :class:`Faults`, speed) for ``SCHEME://NAME``.
"""

from archline.powermon.emulator.power import DEFAULT_SCRIPT, CallableSource, PowerSource, Script, as_power_source
from archline.powermon.emulator.pty_server import PtyServer
from archline.powermon.emulator.registry import Faults, get_device, register_device, unregister_device

__all__ = ["DEFAULT_SCRIPT", "CallableSource", "Faults", "PowerSource", "PtyServer", "Script", "as_power_source",
           "get_device", "register_device", "unregister_device"]
