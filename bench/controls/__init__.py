"""Power caps and clocks (model.md §5): NVML power limit and locked clocks, RAPL constraints, Jetson sysfs override
files and cpufreq. Each control is skipped with a reason when it is absent or not permitted, records the requested
and the enforced value, and always restores the previous setting, even after a crash:

* before a control changes anything, its previous state goes into a restore file (JSON, written atomically);
* a normal end restores it and removes the entry;
* after a crash (SIGKILL, power cut) the entry stays, and the next run applies it first
  (:func:`apply_pending_restore`, called by every non-emulated session).

Everything takes its roots (``powercap_root``, ``cpu_root``, the Jetson files) and the NVML module as arguments,
so tests run on fake sysfs trees and a fake NVML object.
"""

from archline.bench.controls.base import DEFAULT_RESTORE, Control, ControlError, ControlRangeError, RestoreFile
from archline.bench.controls.devices import CpuFreq, JetsonOverride, NvmlLockedClocks, NvmlPowerLimit, RaplPowerLimit
from archline.bench.controls.plan import ControlSet, apply_pending_restore, open_controls, restore_from_entry

__all__ = ["DEFAULT_RESTORE", "Control", "ControlError", "ControlRangeError", "ControlSet", "CpuFreq",
           "JetsonOverride", "NvmlLockedClocks", "NvmlPowerLimit", "RaplPowerLimit", "RestoreFile",
           "apply_pending_restore", "open_controls", "restore_from_entry"]
