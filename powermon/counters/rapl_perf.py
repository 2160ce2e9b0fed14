"""RAPL through perf's ``power`` PMU (``/sys/bus/event_source/devices/power``): the second source of the RAPL meter.

Since the 2020 RAPL access change (CVE-2020-8694) powercap's ``energy_uj`` is root-only, while the same counters
as perf events (``power/energy-pkg/``, ``energy-cores``, ``energy-ram``, ``energy-psys``) need only
``kernel.perf_event_paranoid <= 0`` or CAP_PERFMON. The PMU directory holds ``type`` (the PMU's perf type),
``cpumask`` (one CPU per package: the event is opened there) and ``events/<name>`` (``event=0x02``) with
``<name>.scale`` (joules per count, 2**-32) and ``<name>.unit`` (``Joules``). The kernel keeps the count in 64
bits (it accumulates the 32-bit MSR on a timer), so a reading never wraps.

The events are read with the ``perf_event_open`` syscall through ctypes, as Zeus, likwid and perf itself do, not
through ``perf stat``: a read is one 8-byte ``read()`` at the instant the meter asks (a window's edge), where
``perf stat -I`` prints on its own timer (10 ms at the finest) from a child process whose output would have to be
parsed and its clock matched to ours. The reader is injectable (:class:`PerfReader`), so tests play counts on a
fake PMU tree (``$ARCHLINE_PERF_POWER_ROOT``, like ``$ARCHLINE_POWERCAP_ROOT``).
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from archline.powermon.errors import DeviceError, MeterError

PERF_POWER_ROOT = Path("/sys/bus/event_source/devices/power")
PARANOID_FILE = Path("/proc/sys/kernel/perf_event_paranoid")
#: the two commands that open the power events to a user (either one); exact and copy-pasteable
PARANOID_FIX = "sudo sysctl kernel.perf_event_paranoid=0"
CAPABILITY_FIX = "sudo setcap cap_perfmon+ep $(readlink -f $(which python3))"
PERMISSION_FIX = (f"perf's power events need kernel.perf_event_paranoid <= 0 or CAP_PERFMON: `{PARANOID_FIX}` "
                  f"(until reboot), or `{CAPABILITY_FIX}`")
#: perf event name -> the powercap zone name it counts (package k's sub-zones are ``package-k/<name>``)
ZONE_OF_EVENT = {"energy-pkg": "package", "energy-cores": "core", "energy-ram": "dram", "energy-gpu": "uncore",
                 "energy-psys": "psys"}
_SYSCALL = {"x86_64": 298, "aarch64": 241, "ppc64le": 319, "riscv64": 241, "i686": 336}
_PERF_FLAG_FD_CLOEXEC = 8


def default_root() -> Path:
    """The power PMU: ``$ARCHLINE_PERF_POWER_ROOT`` (tests, containers) or /sys/bus/event_source/devices/power."""
    return Path(os.environ.get("ARCHLINE_PERF_POWER_ROOT", str(PERF_POWER_ROOT)))


class PerfReader(Protocol):
    """Opens one counting event on one CPU and reads its 64-bit count (the syscall, or a test's fake)."""

    def open(self, pmu_type: int, config: int, cpu: int) -> int: ...

    def read(self, fd: int) -> int: ...

    def close(self, fd: int) -> None: ...


class _PerfEventAttr(ctypes.Structure):
    # PERF_ATTR_SIZE_VER0 (64 bytes): every field a counting event needs; the kernel zero-extends the rest
    _fields_ = [("type", ctypes.c_uint32), ("size", ctypes.c_uint32), ("config", ctypes.c_uint64),
                ("sample_period", ctypes.c_uint64), ("sample_type", ctypes.c_uint64),
                ("read_format", ctypes.c_uint64), ("flags", ctypes.c_uint64), ("wakeup_events", ctypes.c_uint32),
                ("bp_type", ctypes.c_uint32), ("config1", ctypes.c_uint64)]


class SyscallReader:
    """``perf_event_open(attr, pid=-1, cpu, group_fd=-1, FD_CLOEXEC)``: a system-wide count on ``cpu`` (the
    power PMU refuses per-task events), read as one native-endian u64."""

    def __init__(self) -> None:
        nr = _SYSCALL.get(platform.machine())
        if nr is None:
            raise DeviceError(f"perf_event_open: no syscall number known for {platform.machine()}")
        self._nr = nr
        self._libc = ctypes.CDLL(None, use_errno=True)

    def open(self, pmu_type: int, config: int, cpu: int) -> int:
        attr = _PerfEventAttr(type=pmu_type, size=ctypes.sizeof(_PerfEventAttr), config=config)
        fd = int(self._libc.syscall(self._nr, ctypes.byref(attr), -1, cpu, -1, _PERF_FLAG_FD_CLOEXEC))
        if fd < 0:
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e))
        return fd

    def read(self, fd: int) -> int:
        return int.from_bytes(os.read(fd, 8), sys.byteorder)

    def close(self, fd: int) -> None:
        os.close(fd)


@dataclass(frozen=True)
class PerfEvent:
    name: str            #: "energy-pkg"
    config: int          #: the event code from ``events/<name>`` ("event=0x02")
    scale_j: float       #: joules per count (``<name>.scale`` when its unit is Joules)


@dataclass(frozen=True)
class PerfPmu:
    root: Path
    pmu_type: int
    cpus: tuple[int, ...]      #: one CPU per package (``cpumask``)
    events: tuple[PerfEvent, ...]


def _cpulist(text: str) -> tuple[int, ...]:
    out: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        a, _, b = part.partition("-")
        out += range(int(a), int(b or a) + 1)
    return tuple(out)


def read_pmu(root: str | Path | None = None) -> PerfPmu | None:
    """The power PMU's type, CPUs and energy events; None when there is no such PMU (MeterError when its files
    do not parse)."""
    r = default_root() if root is None else Path(root)
    if not (r / "type").is_file() or not (r / "events").is_dir():
        return None
    try:
        pmu_type = int((r / "type").read_text().strip())
        cpus = _cpulist((r / "cpumask").read_text()) if (r / "cpumask").is_file() else (0,)
        events = []
        for f in sorted((r / "events").iterdir()):
            if not f.name.startswith("energy-") or "." in f.name:
                continue
            m = re.search(r"event=(0x[0-9a-fA-F]+|\d+)", f.read_text())
            if m is None:
                continue
            unit_f, scale_f = f.with_name(f.name + ".unit"), f.with_name(f.name + ".scale")
            unit = unit_f.read_text().strip() if unit_f.is_file() else "Joules"
            if unit != "Joules":        # a unit we do not know: leave the event out rather than guess
                continue
            scale = float(scale_f.read_text().strip()) if scale_f.is_file() else 2.0 ** -32
            events.append(PerfEvent(f.name, int(m.group(1), 0), scale))
    except (OSError, ValueError) as e:
        raise MeterError(f"cannot read perf's power PMU under {r}: {e}") from None
    return PerfPmu(r, pmu_type, cpus or (0,), tuple(events))


def paranoid_level(path: Path = PARANOID_FILE) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


@dataclass
class PerfZone:
    """One energy event on one package's CPU, named as powercap names the zone."""

    name: str
    event: PerfEvent
    cpu: int
    fd: int = -1


def zone_names(pmu: PerfPmu) -> list[PerfZone]:
    """The events as zones: energy-pkg on package k is ``package-k``, its cores/ram ``package-k/core``,
    ``package-k/dram``; psys (one per machine) ``psys``."""
    out: list[PerfZone] = []
    order = list(ZONE_OF_EVENT)      # package first, then its parts, as powercap lists them
    events = sorted(pmu.events, key=lambda ev: order.index(ev.name) if ev.name in order else len(order))
    for k, cpu in enumerate(pmu.cpus):
        for ev in events:
            zone = ZONE_OF_EVENT.get(ev.name, ev.name.removeprefix("energy-"))
            if zone == "psys":
                if k == 0:
                    out.append(PerfZone("psys", ev, cpu))
            elif zone == "package":
                out.append(PerfZone(f"package-{k}", ev, cpu))
            else:
                out.append(PerfZone(f"package-{k}/{zone}", ev, cpu))
    return out


def open_error(e: OSError, root: Path) -> DeviceError:
    """What a failed ``perf_event_open`` means, with the command that fixes it."""
    if e.errno in (errno.EACCES, errno.EPERM):
        lvl = paranoid_level()
        now = f" (it is {lvl})" if lvl is not None else ""
        return DeviceError(f"perf power events under {root} are not permitted{now}: {PERMISSION_FIX}")
    if e.errno in (errno.ENOENT, errno.ENODEV, errno.EOPNOTSUPP, errno.EINVAL):
        return DeviceError(f"perf power events under {root} are not supported by this kernel or CPU ({e.strerror})")
    return DeviceError(f"cannot open perf power events under {root}: {e.strerror or e}")


class PerfSource:
    """The chosen zones' events opened (each on its package's CPU); :meth:`read_j` their cumulative joules."""

    def __init__(self, zones: Sequence[str] | None = None, root: str | Path | None = None,
                 reader: PerfReader | None = None) -> None:
        self.root = default_root() if root is None else Path(root)
        pmu = read_pmu(self.root)
        if pmu is None or not pmu.events:
            raise DeviceError(f"no perf power events under {self.root} (not an Intel/AMD CPU, the rapl perf "
                              "module not loaded, or a VM)")
        found = zone_names(pmu)
        by_name = {z.name: z for z in found}
        if zones:
            missing = [z for z in zones if z not in by_name]
            if missing:
                raise DeviceError(f"RAPL zone(s) {missing} not found among perf's power events "
                                  f"(have {sorted(by_name)})")
            self.zones = [by_name[z] for z in zones]
        else:
            self.zones = found
        self.reader: PerfReader = reader if reader is not None else SyscallReader()
        self._base: list[int] = []
        try:
            for z in self.zones:
                z.fd = self.reader.open(pmu.pmu_type, z.event.config, z.cpu)
        except OSError as e:
            self.close()
            raise open_error(e, self.root) from None
        self._base = [self._count(z) for z in self.zones]

    def _count(self, z: PerfZone) -> int:
        try:
            return self.reader.read(z.fd)
        except OSError as e:
            raise MeterError(f"perf power event {z.event.name} on CPU {z.cpu}: read failed: {e.strerror or e}"
                             ) from None

    def read_j(self) -> list[float]:
        """Joules counted by each zone since it was opened (the kernel's 64-bit count: no wrap to unroll)."""
        return [(self._count(z) - b) * z.event.scale_j for z, b in zip(self.zones, self._base, strict=True)]

    def close(self) -> None:
        for z in self.zones:
            if z.fd >= 0:
                try:
                    self.reader.close(z.fd)
                except OSError:
                    pass
                z.fd = -1


def readable(root: str | Path | None = None, reader: PerfReader | None = None,
             open_zones: Callable[..., PerfSource] = PerfSource) -> tuple[list[str], str]:
    """(package zones this user can read through perf, reason): the reason says why none when there are none."""
    r = default_root() if root is None else Path(root)
    try:
        src = open_zones(None, r, reader)
    except (DeviceError, MeterError) as e:
        return [], str(e)
    names = [z.name for z in src.zones if "/" not in z.name and z.name != "psys"]
    src.close()
    if not names:
        return [], f"perf's power PMU under {r} has no package energy event"
    return names, f"RAPL zones through perf's power events: {', '.join(names)}"
