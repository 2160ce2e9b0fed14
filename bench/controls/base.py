"""What every control shares: the Control interface, its errors, the restore file (read and written by its owner,
:mod:`archline.formats.restore_state`) and sysfs helpers."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Protocol

from archline.bench.errors import BenchError
from archline.formats import restore_state

DEFAULT_RESTORE = Path(os.environ.get("XDG_STATE_HOME", Path.home() / ".local" / "state")) / "archline" / \
    "restore.json"
#: a verified value may differ from the request by this much before the row says so
ENFORCE_TOL_REL = 0.02


class ControlError(BenchError):
    """A control was asked for something impossible (e.g. a cap outside the device's range)."""


class ControlRangeError(ControlError):
    pass


class Control(Protocol):
    @property
    def kind(self) -> str:
        """Restore-file key: nvml_power, nvml_core_clock, nvml_mem_clock, amdsmi_power, amdsmi_core_clock,
        amdsmi_mem_clock, rapl, jetson, cpufreq."""
        ...

    @property
    def target(self) -> str:
        """Which device, zone or file."""
        ...

    @property
    def unit(self) -> str: ...

    def available(self) -> tuple[bool, str]: ...

    def allowed_range(self) -> tuple[float, float] | None: ...

    def state(self) -> dict[str, Any]: ...

    def set(self, value: float) -> float:
        """Apply ``value`` and return the value read back (enforced)."""
        ...

    def restore(self, state: dict[str, Any]) -> None: ...


class RestoreFile(restore_state.RestoreFile):
    """The restore file (its format: :mod:`archline.formats.restore_state`), whose problems are control errors: a
    point that finds it damaged fails as any control's would, and the run goes on to the next."""

    def entries(self) -> list[dict[str, Any]]:
        try:
            return super().entries()
        except restore_state.RestoreStateError as e:
            raise ControlError(str(e)) from None


# --- sysfs helpers ------------------------------------------------------------------------------------------

def _read(path: Path) -> str:
    return path.read_text().strip()


def _write(path: Path, value: str) -> None:
    try:
        with open(path, "w") as f:
            f.write(value)
    except PermissionError:
        raise ControlError(f"not permitted to write {path} (run as root, or grant write access)") from None


def _probe_writable(path: Path) -> tuple[bool, str]:
    if not path.exists():
        return False, f"{path} does not exist"
    if not os.access(path, os.W_OK):
        return False, f"not permitted to write {path} (needs root)"
    return True, str(path)
