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


#: perf's power PMU as Linux publishes it on a one-package Intel CPU (scale: 2**-32 J per count)
PERF_POWER_EVENTS = {"energy-pkg": 0x02, "energy-cores": 0x01, "energy-ram": 0x03, "energy-psys": 0x05}


def make_perf_power_tree(root: str | Path, cpumask: str = "0", pmu_type: int = 23,
                         events: dict[str, int] | None = None) -> Path:
    """A fake ``/sys/bus/event_source/devices/power``: ``type``, ``cpumask``, ``events/<name>`` and their
    ``.scale`` / ``.unit``."""
    r = Path(root)
    (r / "events").mkdir(parents=True, exist_ok=True)
    (r / "type").write_text(f"{pmu_type}\n")
    (r / "cpumask").write_text(f"{cpumask}\n")
    for name, code in (PERF_POWER_EVENTS if events is None else events).items():
        (r / "events" / name).write_text(f"event=0x{code:02x}\n")
        (r / "events" / f"{name}.scale").write_text("2.3283064365386962890625e-10\n")
        (r / "events" / f"{name}.unit").write_text("Joules\n")
    return r


class FakePerfReader:
    """``perf_event_open`` played: each (type, config, cpu) opened gets an fd whose count is ``energy_j(config,
    cpu, t)`` (cumulative joules at ``clock()``) in 2**-32 J units from an arbitrary start; ``deny`` raises that
    errno on open (EACCES: perf_event_paranoid too high)."""

    def __init__(self, energy_j: Any, clock: Any, deny: int | None = None) -> None:
        self.energy_j, self.clock, self.deny = energy_j, clock, deny
        self.opened: dict[int, tuple[int, int, int]] = {}
        self.closed: list[int] = []

    def open(self, pmu_type: int, config: int, cpu: int) -> int:
        if self.deny is not None:
            import os as _os

            raise OSError(self.deny, _os.strerror(self.deny))
        fd = 100 + len(self.opened)
        self.opened[fd] = (pmu_type, config, cpu)
        return fd

    def read(self, fd: int) -> int:
        _, config, cpu = self.opened[fd]
        return 12345 + round(self.energy_j(config, cpu, self.clock()) * 2 ** 32)

    def close(self, fd: int) -> None:
        self.closed.append(fd)


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


class StartFailsMeter:
    """A recorder meter (the null meter's interface) that cannot start: what a serial meter whose port is gone
    raises when its recorder starts it. ``stopped`` counts the stops it got."""

    kind = "none"
    emulated = False

    def __init__(self, name: str, why: str = "its port is gone") -> None:
        from archline.powermon.record.null import NullMeter

        self.name, self.why, self.stopped = name, why, 0
        self._null = NullMeter(why, name)
        self.reason = why

    def start(self) -> None:
        from archline.powermon.errors import DeviceError

        raise DeviceError(self.why)

    def stop(self) -> None:
        self.stopped += 1

    def __getattr__(self, attr: str) -> Any:     # mark, wait_until, region, samples, info: the null meter's
        return getattr(self.__dict__["_null"], attr)
