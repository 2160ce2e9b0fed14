"""Linux hwmon (``/sys/class/hwmon/hwmonN``): archline's one hwmon module, energy and power inputs as a meter.

A chip directory holds ``name`` (the driver: ``amd_energy``, ``zenergy``, ``amdgpu``, ``xgene_hwmon`` ...),
``energyK_input`` (cumulative microjoules), ``powerK_average`` / ``powerK_input`` (microwatts) and their
``..._label``. :class:`HwmonMeter` reads the inputs a ``[[meters]]`` entry names (``sensors``: "hwmonN/energyK_input"
or "<chip name>/<label>"; default every energy input, else every power input) under a root given for tests and
containers (``$ARCHLINE_HWMON_ROOT``, like RAPL's powercap root). Energy inputs are unrolled across wraps (the ABI
documents no width: a step back is a wrap at 2**32 or 2**64, :func:`~archline.powermon.counters.base.unwrap`);
their resolution is the unit, 1 uJ, though drivers advance in steps of their own (amd_energy: 15.3 uJ). Power
inputs are integrated between polls (trapezoid), so their energy is only as good as the poll rate and the sensor's
own averaging.

Note: amd_energy lists each core and each socket; the socket includes its cores, so name the socket inputs
(``sensors = ["amd_energy/Esocket0"]``) rather than summing everything.

:func:`emulate_from_spec` builds an hwmon tree in a private temporary directory, updated by a thread through a
:class:`~archline.powermon.emulator.sensor.SensorModel` playing a power source, read by the real meter, labelled
emulated and removed on stop.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archline.powermon.counters.base import CounterMeter, read_int, unwrap
from archline.powermon.counters.emulated import SensorEnergy, Timeline, device_power
from archline.powermon.emulator.sensor import SensorModel
from archline.powermon.errors import DeviceError, MeterError

if TYPE_CHECKING:
    from archline.powermon.emulator.power import PowerCallable, PowerSource
    from archline.powermon.spec import MeterSpec

HWMON_ROOT = Path("/sys/class/hwmon")
_INPUT = re.compile(r"^(energy|power)(\d+)_(input|average)$")


def default_root() -> Path:
    """The hwmon root: ``$ARCHLINE_HWMON_ROOT`` (tests, containers) or /sys/class/hwmon."""
    return Path(os.environ.get("ARCHLINE_HWMON_ROOT", str(HWMON_ROOT)))


def _read_int(path: Path) -> int:
    return read_int(path, f"some drivers (amd_energy) make energy root-only: run as root or `sudo chmod o+r {path}`",
                    "hwmon chip gone? driver unloaded?")


@dataclass(frozen=True)
class HwmonInput:
    path: Path           #: the value file
    chip_dir: str        #: "hwmon3"
    chip: str            #: the chip's ``name``: "amd_energy"
    label: str           #: ``energyK_label`` or the file's own name
    kind: str            #: "energy" (uJ, cumulative) or "power" (uW)

    @property
    def id(self) -> str:
        return f"{self.chip_dir}/{self.path.name}"

    @property
    def display(self) -> str:
        return f"{self.chip}/{self.label}"

    def read(self) -> int:
        return _read_int(self.path)


def _chip_key(p: Path) -> tuple[int, str]:
    m = re.search(r"(\d+)$", p.name)
    return (int(m.group(1)) if m else 1 << 30, p.name)


def list_inputs(root: str | Path | None = None) -> list[HwmonInput]:
    """Every energy and power input under ``root`` (hwmon0, hwmon1 ... in number order)."""
    r = Path(root) if root is not None else default_root()
    if not r.is_dir():
        return []
    out: list[HwmonInput] = []
    for chip in sorted((p for p in r.iterdir() if p.name.startswith("hwmon")), key=_chip_key):
        try:
            name = (chip / "name").read_text().strip()
        except OSError:
            name = chip.name
        found = [(m.group(1), int(m.group(2)), f) for f in chip.iterdir() if (m := _INPUT.match(f.name))]
        for kind, k, f in sorted(found, key=lambda x: (x[0], x[1], x[2].name)):
            try:
                label = (chip / f"{kind}{k}_label").read_text().strip()
            except OSError:
                label = f.name
            out.append(HwmonInput(f, chip.name, name, label, kind))
    return out


def select_inputs(found: Sequence[HwmonInput], sensors: Sequence[str], root: str | Path) -> list[HwmonInput]:
    """The inputs ``sensors`` names (by id or by "<chip>/<label>"); none named: every energy input, else every
    power input (``powerK_average`` rather than ``powerK_input`` of the same sensor)."""
    if sensors:
        out = []
        for s in sensors:
            hit = [i for i in found if s in (i.id, i.display)]
            if not hit:
                have = ", ".join(f"{i.id} ({i.display})" for i in found) or "none"
                raise DeviceError(f"hwmon input '{s}' not found under {root} (have: {have})")
            out.append(hit[0])
        return out
    energy = [i for i in found if i.kind == "energy"]
    if energy:
        return energy
    power: dict[tuple[str, str], HwmonInput] = {}
    for i in found:
        key = (i.chip_dir, i.path.name.split("_")[0])
        if i.kind == "power" and (key not in power or i.path.name.endswith("_average")):
            power[key] = i
    if not power:
        raise DeviceError(f"no hwmon energy or power inputs under {root} (no driver exposes one on this host)")
    return list(power.values())


class HwmonMeter(CounterMeter):
    """hwmon energy inputs (wraps unrolled) or power inputs (integrated) as a counter meter, in joules."""

    resolution_j = 1e-6       # the ABI's unit; drivers step coarser
    update_hz = 1000.0        # energy inputs advance about every millisecond (power averages far slower)

    def __init__(self, sensors: Sequence[str] = (), root: str | Path | None = None,
                 devices: dict[str, list[str]] | None = None, poll_s: float = 0.05, name: str = "hwmon",
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.root = Path(root) if root is not None else default_root()
        self.inputs = select_inputs(list_inputs(self.root), sensors, self.root)
        names = [i.display if i.display not in [j.display for j in self.inputs if j is not i] else i.id
                 for i in self.inputs]
        super().__init__(names, devices or {"cpu": names}, poll_s, clock)
        self.name = name
        self._raw: list[int | None] = [None] * len(self.inputs)
        self._total_uj = [0] * len(self.inputs)
        self._last_power: list[tuple[float, float] | None] = [None] * len(self.inputs)
        self._energy_j = [0.0] * len(self.inputs)
        self.wraps = 0
        for i in self.inputs:    # fail now, with the fix, if an input cannot be read
            i.read()

    def _read(self) -> list[float]:
        t = self.clock()
        out = []
        for k, inp in enumerate(self.inputs):
            raw = inp.read()
            if inp.kind == "energy":
                prev = self._raw[k]
                if prev is not None:
                    self.wraps += raw < prev
                    self._total_uj[k] = unwrap(prev, raw, self._total_uj[k])
                self._raw[k] = raw
                out.append(self._total_uj[k] * 1e-6)
            else:
                p_w, last = raw * 1e-6, self._last_power[k]
                if last is not None:
                    self._energy_j[k] += 0.5 * (last[1] + p_w) * (t - last[0]) * self.speed   # device seconds
                self._last_power[k] = (t, p_w)
                out.append(self._energy_j[k])
        return out

    def info(self) -> dict[str, Any]:
        out = super().info()
        out.update({"type": "hwmon", "root": str(self.root), "wraps": self.wraps, "speed": self.speed,
                    "inputs": [{"id": i.id, "chip": i.chip, "label": i.label, "kind": i.kind,
                                "energy_source": "cumulative uJ" if i.kind == "energy" else "integrated uW"}
                               for i in self.inputs]})
        return out


# --- the kind dispatch (powermon/spec.py) and the emulator --------------------------------------------------------

#: an energy input that advances every 10 ms by the power at that instant (window 0: one evaluation a reading)
DEFAULT_SENSOR = SensorModel(update_period_s=0.01, window_s=0.0)
EMULATED_CHIP = "archline_emulated"


@dataclass(frozen=True)
class HwmonFaults:
    """What the emulated chip does wrong: its energy counter's width and start (near ``2**counter_bits`` to see a
    wrap early), and the device second after which its directory vanishes (the driver was unloaded)."""

    counter_bits: int = 64
    start_uj: int = 0
    vanish_after_s: float | None = None


class EmulatedHwmon:
    """An hwmon root in a private temporary directory with one chip (``name`` says emulated): ``energy1_input``
    (uJ, label "Esocket0") and ``power1_average`` (uW), rewritten atomically by a thread every sensor update.
    ``stop()`` (or garbage collection) removes the directory."""

    def __init__(self, energy: SensorEnergy, timeline: Timeline, faults: HwmonFaults | None = None) -> None:
        self.energy, self.timeline, self.faults = energy, timeline, faults or HwmonFaults()
        self.root = Path(tempfile.mkdtemp(prefix="archline-hwmon-"))
        self._remove = weakref.finalize(self, shutil.rmtree, str(self.root), True)
        self.chip = self.root / "hwmon0"
        self.chip.mkdir()
        (self.chip / "name").write_text(f"{EMULATED_CHIP}\n")
        (self.chip / "energy1_label").write_text("Esocket0\n")
        (self.chip / "power1_label").write_text("Psocket0\n")
        self.period_host_s = max(energy.model.update_period_s / timeline.speed, 0.001)
        self._stop = threading.Event()
        self._write_lock = threading.Lock()   # a refresh on read and the thread's write land in time order
        self._thread: threading.Thread | None = None
        self._last_write_s: float | None = None
        self.max_write_gap_s = 0.0      #: the longest host time between rewrites: how stale a read value may be
        self.update()

    def _write(self, name: str, value: int) -> None:
        tmp = self.chip / f".{name}.tmp"
        tmp.write_text(f"{value}\n")
        os.replace(tmp, self.chip / name)     # a reader sees the old value or the new one, never half of one

    def update(self) -> None:
        """Write the counter and the power as they stand now (the thread does it every update period; the meter
        before each read, as a driver computes its value when the file is read: a value the thread wrote up to a
        period ago, later still when the host is busy, made the emulated counter stale by as much again as its
        own update period)."""
        with self._write_lock:
            if self._stop.is_set() and not self.chip.exists():
                return
            t = self.timeline.emulated_time_s()
            if self.faults.vanish_after_s is not None and t > self.faults.vanish_after_s:
                shutil.rmtree(self.chip, ignore_errors=True)
                self._stop.set()
                return
            uj = (self.faults.start_uj + int(self.energy.energy_j(t) * 1e6)) % (1 << self.faults.counter_bits)
            self._write("energy1_input", uj)
            self._write("power1_average", round(self.energy.power_now_w(t) * 1e6))
            now = self.timeline.clock()
            if self._last_write_s is not None:
                self.max_write_gap_s = max(self.max_write_gap_s, now - self._last_write_s)
            self._last_write_s = now

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="emulated hwmon", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.period_host_s):
            self.update()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        with self._write_lock:
            self._remove()


class EmulatedHwmonMeter(HwmonMeter):
    """The real meter on an :class:`EmulatedHwmon` tree; starting it starts the tree, stopping it removes it."""

    emulated = True
    latched_at_read_start = True      # each read writes the counter at its own start (``_read``)

    def __init__(self, tree: EmulatedHwmon, sensor: SensorModel, **kw: Any) -> None:
        self.tree, self.sensor = tree, sensor
        self.speed = tree.timeline.speed
        self.update_hz = 1.0 / sensor.update_period_s
        try:
            super().__init__(root=tree.root, **kw)
        except BaseException:
            tree.stop()
            raise

    def start(self) -> None:
        self.tree.start()
        super().start()

    def _read(self) -> list[float]:
        self.tree.update()          # the driver's value at the read, not the thread's last write
        return super()._read()

    def stop(self) -> None:
        try:
            super().stop()
        finally:
            self.tree.stop()

    def info(self) -> dict[str, Any]:
        out = super().info()
        out["sensor_model"] = {k: getattr(self.sensor, k) for k in ("update_period_s", "window_s", "lag_s",
                                                                   "quantum_w", "gain", "offset_w")}
        return out


def _devices(spec: MeterSpec) -> str:
    return spec.channels[0].device if spec.channels else "cpu"


def open_from_spec(spec: MeterSpec, *, raw_dir: str | Path | None = None, root: str | Path | None = None,
                   **kw: Any) -> HwmonMeter:
    """The inputs ``spec.sensors`` names under ``root`` (default :func:`default_root`), summed into the spec's
    device; counter meters keep no raw capture (``raw_dir`` is unused)."""
    if spec.kind != "hwmon":
        raise MeterError(f"meter '{spec.name}' is a {spec.kind} meter, not an hwmon one")
    meter = HwmonMeter(spec.sensors, root=root, name=kw.pop("name", spec.name), **kw)
    meter.devices = {_devices(spec): list(meter.channel_names)}
    return meter


def emulate_from_spec(spec: MeterSpec, power: PowerSource | PowerCallable | None, *, speed: float = 1.0,
                      seed: int = 0, raw_dir: str | Path | None = None, faults: HwmonFaults | None = None,
                      sensor: SensorModel = DEFAULT_SENSOR, **kw: Any) -> EmulatedHwmonMeter:
    """An emulated hwmon chip playing ``power`` (summed over the spec's channels) through ``sensor``, read by the
    real meter; labelled emulated. ``speed``: device seconds per host second; ``seed`` is unused (deterministic).
    ``spec.sensors`` may name "hwmon0/energy1_input", "hwmon0/power1_average" or their labels."""
    if spec.kind != "hwmon":
        raise MeterError(f"meter '{spec.name}' is a {spec.kind} meter, not an hwmon one")
    timeline = Timeline(speed)
    energy = SensorEnergy(sensor, device_power(power, [c.id for c in spec.channels] or [0], timeline))
    tree = EmulatedHwmon(energy, timeline, faults)
    meter = EmulatedHwmonMeter(tree, sensor, sensors=spec.sensors, name=kw.pop("name", spec.name), **kw)
    meter.devices = {_devices(spec): list(meter.channel_names)}
    return meter


def list_meters(root: str | Path | None = None) -> list[dict[str, Any]]:
    """`archline meter list`'s rows for this kind: each hwmon energy or power input, or why there is none."""
    r = Path(root) if root is not None else default_root()
    rows: list[dict[str, Any]] = []
    for i in list_inputs(r):
        try:
            i.read()
            ok, why, fix = True, f"{i.display} ({'cumulative uJ' if i.kind == 'energy' else 'uW, integrated'})", ""
        except MeterError as e:
            ok, why = False, str(e)
            fix = f"sudo chmod o+r {i.path}" if "permission denied" in why else ""
        rows.append({"kind": "hwmon", "name": i.id, "available": ok, "detail": why, "fix": fix})
    return rows or [{"kind": "hwmon", "name": "-", "available": False,
                     "detail": f"no hwmon energy or power inputs under {r}"}]
