"""RAPL through powercap sysfs (``/sys/class/powercap/intel-rapl:*``): zones by ``name``, wraparound unrolled.

``energy_uj`` counts up to ``max_energy_range_uj`` and wraps to 0. A negative step between two reads is
corrected by adding the range; a gap between reads long enough for a second wrap (at ``max_power_w``) is an
error, never a silent under-count. Since Linux 5.10 ``energy_uj`` is readable by root only; the error says how
to open it up, and :class:`RaplMeter` then reads the same counters as perf's power events where the user may
(:mod:`~archline.powermon.counters.rapl_perf`): one meter kind, two sources.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from archline.powermon.counters import rapl_perf
from archline.powermon.counters.base import CounterMeter, read_int
from archline.powermon.counters.rapl_perf import PerfReader, PerfSource
from archline.powermon.errors import DeviceError, MeterError

POWERCAP_ROOT = Path("/sys/class/powercap")
#: Upper bound on a zone's power used to decide whether two reads are close enough to see every wrap.
DEFAULT_MAX_POWER_W = 1000.0
#: where a RAPL meter reads its counters (``auto``: powercap if readable, else perf)
SOURCES = ("auto", "powercap", "perf")

PERMISSION_FIX = ("energy_uj is readable by root only (Linux >= 5.10, CVE-2020-8694): run as root, or "
                  "`sudo chmod o+r /sys/class/powercap/intel-rapl:*/energy_uj "
                  "/sys/class/powercap/intel-rapl:*:*/energy_uj`"
                  " (again after each boot, or with a udev rule)")


def default_root() -> Path:
    """The powercap root: ``$ARCHLINE_POWERCAP_ROOT`` (tests, containers) or /sys/class/powercap."""
    return Path(os.environ.get("ARCHLINE_POWERCAP_ROOT", str(POWERCAP_ROOT)))


def _read_text(path: Path) -> str:
    return path.read_text()


def _read_int(path: Path) -> int:
    return read_int(path, PERMISSION_FIX, "RAPL zone gone?", _read_text)


@dataclass
class RaplZone:
    path: Path
    name: str                              #: unique: "package-0", "package-0/dram", ...
    max_energy_range_uj: int | None

    def read_uj(self) -> int:
        return _read_int(self.path / "energy_uj")


def constraint_file(zone_dir: str | Path, constraint: int, field: str) -> Path:
    """``constraint_<n>_<field>`` of a powercap zone (``power_limit_uw``, ``max_power_uw``, ``time_window_us``):
    the files bench's RAPL power cap reads and writes, named here beside the energy counters."""
    return Path(zone_dir) / f"constraint_{constraint}_{field}"


@dataclass(frozen=True)
class PowercapConstraint:
    """Constraint ``index`` of a powercap zone (0: long term, 1: short term): every read and write of a RAPL power
    limit goes through here (bench's RAPL cap holds one). Values in microwatts, as the files hold them."""

    zone_dir: Path
    index: int = 0

    @property
    def limit_file(self) -> Path:
        return constraint_file(self.zone_dir, self.index, "power_limit_uw")

    def limit_uw(self) -> int:
        return read_int(self.limit_file, "run as root", "RAPL zone gone?", _read_text)

    def max_uw(self) -> int | None:
        """``constraint_<n>_max_power_uw``; None where the zone has none or it reads 0 (no stated maximum)."""
        f = constraint_file(self.zone_dir, self.index, "max_power_uw")
        try:
            v = read_int(f, "run as root", "RAPL zone gone?", _read_text)
        except MeterError:
            return None
        return v if v > 0 else None

    def set_limit_uw(self, uw: int) -> int:
        """Write the limit; returns the limit read back (the kernel clamps it to what the package allows)."""
        try:
            with open(self.limit_file, "w") as f:
                f.write(str(int(uw)))
        except PermissionError:
            raise DeviceError(f"not permitted to write {self.limit_file} (run as root, or grant write access)"
                              ) from None
        except OSError as e:   # EINVAL: a value the zone refuses
            raise DeviceError(f"cannot write {uw} to {self.limit_file}: {e.strerror or e}") from None
        return self.limit_uw()


def list_zones(root: str | Path = POWERCAP_ROOT) -> list[RaplZone]:
    """RAPL zones under a powercap root (sub-zones such as dram named ``<parent>/<name>``)."""
    r = Path(root)
    if not r.is_dir():
        return []
    zones: list[RaplZone] = []
    dirs = sorted(p for p in r.iterdir() if p.name.startswith("intel-rapl:") and (p / "name").exists())
    names: dict[str, str] = {}
    for d in dirs:
        try:
            nm = _read_text(d / "name").strip()
        except OSError:
            nm = d.name
        names[d.name] = nm
    for d in dirs:
        parts = d.name.split(":")
        nm = names[d.name]
        if len(parts) > 2:
            nm = f"{names.get(':'.join(parts[:2]), parts[0] + ':' + parts[1])}/{nm}"
        rng_path = d / "max_energy_range_uj"
        rng = _read_int(rng_path) if rng_path.exists() else None
        zones.append(RaplZone(d, nm, rng))
    return zones


def readable_zones(root: str | Path | None = None, perf_root: str | Path | None = None,
                   perf_reader: PerfReader | None = None) -> tuple[list[str], str]:
    """(names of the zones this user can read, reason): powercap's where readable, else perf's power events'
    (the RAPL meter's two sources); the reason says why there is no RAPL when none is, with the fix."""
    r = Path(root) if root is not None else default_root()
    names, why = _readable_powercap(r)
    if names:
        return names, why
    perf_names, perf_why = rapl_perf.readable(perf_root, perf_reader)
    if perf_names:
        return perf_names, perf_why
    return [], f"{why}; and {perf_why}"


def _readable_powercap(r: Path) -> tuple[list[str], str]:
    if not r.is_dir():
        return [], f"no RAPL: {r} does not exist (not an Intel/AMD Linux host, or a container without it)"
    zones = [z for z in list_zones(r) if "/" not in z.name]
    if not zones:
        return [], f"no RAPL: {r} has no intel-rapl zones"
    names = []
    for z in zones:
        try:
            z.read_uj()
            names.append(z.name)
        except MeterError:
            continue
    if not names:
        return [], f"no RAPL: {r}/intel-rapl:*/energy_uj is not readable by this user ({PERMISSION_FIX})"
    return names, f"RAPL zones: {', '.join(names)}"


class EnergyCounter:
    """Unrolls one wrapping microjoule counter into cumulative joules."""

    def __init__(self, name: str, range_uj: int | None, max_power_w: float = DEFAULT_MAX_POWER_W) -> None:
        self.name = name
        self.range_uj = range_uj
        self.max_power_w = max_power_w
        self._last_raw: int | None = None
        self._last_t: float | None = None
        self.total_uj = 0
        self.wraps = 0

    @property
    def safe_interval_s(self) -> float:
        """Longest time between reads that cannot hide a second wrap."""
        return float("inf") if self.range_uj is None else self.range_uj * 1e-6 / self.max_power_w

    def update(self, t_s: float, raw_uj: int) -> float:
        if self._last_raw is not None and self._last_t is not None:
            d = raw_uj - self._last_raw
            dt = t_s - self._last_t
            if d < 0:
                if self.range_uj is None:
                    raise MeterError(f"RAPL zone {self.name}: the counter went back from {self._last_raw} to "
                                     f"{raw_uj} uJ and max_energy_range_uj is missing, so the wrap cannot be "
                                     "corrected")
                d += self.range_uj
                self.wraps += 1
            if self.range_uj is not None and dt > self.safe_interval_s:
                raise MeterError(f"RAPL zone {self.name}: {dt:.1f} s between reads; at up to "
                                 f"{self.max_power_w:g} W the counter (range {self.range_uj} uJ) may have wrapped "
                                 f"more than once. Poll at least every {self.safe_interval_s:.1f} s")
            self.total_uj += d
        self._last_raw = raw_uj
        self._last_t = t_s
        return self.total_uj * 1e-6


class RaplMeter(CounterMeter):
    """RAPL zones as a counter meter. ``zones``: names to use (default all); ``devices``: e.g.
    {"cpu": ["package-0"]}. Two sources of the same counters: powercap sysfs (``source="powercap"``) or perf's
    power events (``"perf"``, :mod:`~archline.powermon.counters.rapl_perf`); ``"auto"`` takes powercap where this
    user can read it and perf where not (the common case without root since Linux 5.10)."""

    resolution_j = 61e-6      # one energy unit is 15.3-61 uJ depending on the CPU (perf counts the same units)
    update_hz = 1000.0        # the counters advance about every millisecond

    def __init__(self, zones: Sequence[str] | None = None, root: str | Path | None = None,
                 devices: dict[str, list[str]] | None = None, poll_s: float | None = None,
                 max_power_w: float = DEFAULT_MAX_POWER_W, name: str = "rapl",
                 clock: Callable[[], float] = time.monotonic, source: str = "auto",
                 perf_root: str | Path | None = None, perf_reader: PerfReader | None = None) -> None:
        if source not in SOURCES:
            raise MeterError(f"RAPL source {source!r} is not one of {', '.join(SOURCES)}")
        root = default_root() if root is None else root
        self.perf: PerfSource | None = None
        self.zones: list[RaplZone] = []
        self.counters: list[EnergyCounter] = []
        powercap_why = ""
        if source != "perf":
            try:
                self._open_powercap(zones, root, max_power_w)
            except DeviceError as e:
                if source == "powercap":
                    raise
                powercap_why = str(e)
        if not self.zones:
            try:
                self.perf = PerfSource(zones, perf_root, perf_reader)
            except DeviceError as e:
                if source == "perf":
                    raise
                raise DeviceError(f"{powercap_why}; and {e}") from None
        self.source = "perf" if self.perf is not None else "powercap"
        if self.perf is not None:
            names = [z.name for z in self.perf.zones]
            poll = 0.1 if poll_s is None else poll_s       # a 64-bit count: any interval sees every joule
        else:
            names = [z.name for z in self.zones]
            safe = min(c.safe_interval_s for c in self.counters)
            poll = poll_s if poll_s is not None else min(0.1, safe / 4)
            if poll >= safe:
                raise MeterError(f"RAPL poll interval {poll} s is too long to see every wrap (< {safe:.2f} s "
                                 "needed)")
        super().__init__(names, devices or {}, poll, clock)
        self.name = name

    def _open_powercap(self, zones: Sequence[str] | None, root: str | Path, max_power_w: float) -> None:
        found = list_zones(root)
        if not found:
            raise DeviceError(f"no RAPL zones under {root} (not an Intel/AMD CPU with powercap, or a VM)")
        by_name = {z.name: z for z in found}
        if zones:
            missing = [z for z in zones if z not in by_name]
            if missing:
                raise DeviceError(f"RAPL zone(s) {missing} not found (have {sorted(by_name)})")
            chosen = [by_name[z] for z in zones]
        else:
            chosen = found
        for z in chosen:      # fail now, with the fix, if the counters cannot be read
            z.read_uj()
        self.zones = chosen
        self.counters = [EnergyCounter(z.name, z.max_energy_range_uj, max_power_w) for z in chosen]

    def _read(self) -> list[float]:
        if self.perf is not None:
            return self.perf.read_j()
        t = self.clock()
        return [c.update(t, z.read_uj()) for c, z in zip(self.counters, self.zones, strict=True)]

    def stop(self) -> None:
        super().stop()
        if self.perf is not None:
            self.perf.close()

    def info(self) -> dict[str, Any]:
        return {**super().info(), "source": self.source}
