"""What every control shares: the Control interface, its errors, the restore file and sysfs helpers."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Protocol

from archline.bench.errors import BenchError
from archline.common.atomic import write_atomic

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


class RestoreFile:
    """``{"entries": [{"kind", "target", "state"}]}``: the settings to put back. The first state recorded for a
    (kind, target) is the original and is never overwritten."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def entries(self) -> list[dict[str, Any]]:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return []
        except (OSError, json.JSONDecodeError) as e:
            raise ControlError(f"restore file {self.path} is unreadable ({e}); fix or remove it after checking "
                               "the device settings by hand") from None
        return list(data.get("entries", []))

    def _save(self, entries: list[dict[str, Any]]) -> None:
        if entries:
            write_atomic(self.path, json.dumps({"entries": entries}, indent=1))
        elif self.path.exists():
            self.path.unlink()

    def record(self, kind: str, target: str, state: dict[str, Any]) -> None:
        entries = self.entries()
        if not any(e["kind"] == kind and e["target"] == target for e in entries):
            entries.append({"kind": kind, "target": target, "state": state})
            self._save(entries)

    def done(self, kind: str, target: str) -> None:
        self._save([e for e in self.entries() if not (e["kind"] == kind and e["target"] == target)])


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
