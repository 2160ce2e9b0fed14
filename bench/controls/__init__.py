"""Power caps and clocks (model.md §5): NVML power limit and locked clocks, AMD SMI power cap and clock ranges, RAPL
constraints, Jetson sysfs override files and cpufreq. NVML, AMD SMI and RAPL are reached through their one powermon
device layer each (``powermon/counters/nvml.py``, ``amdsmi.py``, ``rapl.py``); the GPU vendors' controls are
declared in their back ends' folders (:class:`GpuVendor`: ``bench/cuda/vendor.py``, ``bench/hip/vendor.py``). Each
control is skipped with a reason when it is absent or not permitted, records the requested and the enforced value,
and always restores the previous setting, even after a crash:

* before a control changes anything, its previous state goes into a restore file (JSON, written atomically);
* a normal end restores it and removes the entry;
* after a crash (SIGKILL, power cut) the entry stays, and the next run applies it first
  (:func:`apply_pending_restore`, called by every non-emulated session).

Everything takes its roots (``powercap_root``, ``cpu_root``, the Jetson files) and the NVML and amdsmi modules as
arguments, so tests run on fake sysfs trees and fake NVML and amdsmi objects.
"""

from archline.bench.controls.base import DEFAULT_RESTORE, Control, ControlError, ControlRangeError, RestoreFile
from archline.bench.controls.devices import CpuFreq, JetsonOverride, RaplPowerLimit
from archline.bench.controls.gpu import GpuVendor
from archline.bench.controls.plan import ControlSet, apply_pending_restore, open_controls, restore_from_entry

__all__ = ["DEFAULT_RESTORE", "Control", "ControlError", "ControlRangeError", "ControlSet", "CpuFreq", "GpuVendor",
           "JetsonOverride", "RaplPowerLimit", "RestoreFile", "apply_pending_restore", "open_controls",
           "restore_from_entry"]
