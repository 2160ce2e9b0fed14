"""Fakes for the on-board sensors (labelled emulated): a powercap sysfs tree in a directory, an NVML object."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def make_powercap_tree(root: str | Path, zones: dict[str, dict[str, Any]]) -> Path:
    """Write a fake powercap tree. ``zones``: directory name (``intel-rapl:0``, ``intel-rapl:0:0``) ->
    {"name": ..., "energy_uj": int, "max_energy_range_uj": int or None}."""
    r = Path(root)
    for d, spec in zones.items():
        p = r / d
        p.mkdir(parents=True, exist_ok=True)
        (p / "name").write_text(f"{spec['name']}\n")
        (p / "energy_uj").write_text(f"{int(spec.get('energy_uj', 0))}\n")
        if spec.get("max_energy_range_uj") is not None:
            (p / "max_energy_range_uj").write_text(f"{int(spec['max_energy_range_uj'])}\n")
    return r


def set_energy(root: str | Path, zone_dir: str, energy_uj: int) -> None:
    (Path(root) / zone_dir / "energy_uj").write_text(f"{int(energy_uj)}\n")


class NVMLError(Exception):
    pass


class NVMLErrorNotSupported(NVMLError):
    pass


class FakeNvml:
    """Enough of pynvml for NvmlMeter: power follows ``power_w(t_s)``; the energy counter (mJ) is its exact
    integral, on GPUs that have one."""

    def __init__(self, power_w: Callable[[float], float] = lambda t: 150.0, n_gpus: int = 1,
                 total_energy: bool = True, fail_init: bool = False, clock: Callable[[], float] = time.monotonic
                 ) -> None:
        self.power = power_w
        self.n = n_gpus
        self.total_energy = total_energy
        self.fail_init = fail_init
        self.clock = clock
        self.t0 = clock()
        self.initialised = False

    def nvmlInit(self) -> None:
        if self.fail_init:
            raise NVMLError("NVML Shared Library Not Found")
        self.initialised = True

    def nvmlShutdown(self) -> None:
        self.initialised = False

    def nvmlDeviceGetCount(self) -> int:
        return self.n

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlDeviceGetName(self, h: int) -> str:
        return "Fake GPU (emulated)"

    def nvmlDeviceGetPowerUsage(self, h: int) -> int:
        return round(self.power(self.clock() - self.t0) * 1000)

    def nvmlDeviceGetTotalEnergyConsumption(self, h: int) -> int:
        if not self.total_energy:
            raise NVMLErrorNotSupported("Not Supported")
        t = self.clock() - self.t0
        n = 2000
        dt = t / n if t > 0 else 0.0
        e = sum(self.power((k + 0.5) * dt) for k in range(n)) * dt
        return round(e * 1000)
