"""Meters on one clock: PowerMon 2 over serial, PCIe-interposer rail maps, RAPL, NVML, emulators, integration.

API for the bench runner (names are importable from ``archline.powermon``; submodules load on first use)::

    from archline.powermon import Recorder, meter_from_section, emulated_meter

    # a platform's meter section (TOML gives string channel keys; both work)
    section = {"type": "powermon2", "port": "/dev/ttyUSB0", "rate_hz": 128,
               "channels": {0: {"rail": "pcie_12v", "r_sense_ohm": 0.00422}, 1: {"rail": "pcie_3v3"},
                            2: {"rail": "aux_6pin"}, 3: {"rail": "aux_8pin"}},
               "devices": {"gpu": ["pcie_12v", "pcie_3v3", "aux_6pin", "aux_8pin"]}}
    meter = meter_from_section(section, name="powermon2", raw_path="results/run/trace-powermon2.raw.bin")
    # or, with no hardware: the same driver on a real pty talking to the emulator, which plays a power
    # function f(t_s) -> {channel: (volts, amps)} (t_s = emulated seconds since streaming began) or a Script;
    # speed > 1 compresses time (energy is then reported on the emulated timeline). Labelled emulated.
    meter = emulated_meter(section, power=lambda t_s: {0: (12.0, 5.0), 1: (3.3, 2.0)}, speed=1.0)

    with Recorder([meter]) as rec:                # starts every meter (own threads), stops them even on error
        rec.begin("point-17")                     # host time.monotonic()
        run_kernel()
        region = rec.end("point-17")              # waits until the meter has data past the end mark
    region.time_s                                 # host monotonic seconds
    region.energy_j(device="gpu"), region.energy_err_j(device="gpu")
    mr = region.meters["powermon2"]               # MeterRegion: channels {"0": ChannelResult(energy_j,
    mr.n_samples, mr.overflows, mr.gaps, mr.sample_hz, mr.emulated, mr.samples   # energy_err_j, mean_power_w,
    region.summary()                              # flat dict for a result row   # n_samples, rail)}, devices
    rec.write_traces("results/run", fmt="parquet")  # trace-<meter>.parquet (+ .json with marks), or "csv.gz"

Other meters: ``RaplMeter(zones=None, root="/sys/class/powercap", devices={"cpu": ["package-0"]})``,
``NvmlMeter(index=0)``; ``meter_from_section`` also accepts ``{"type": "rapl", ...}`` and ``{"type": "nvml"}``.
Counter meters are read at each ``begin``/``end`` mark and polled in between for wraps.

Sub-packages by job: ``powermon2/`` (``protocol`` record format, ``decode`` vectorised stream decoder,
``driver`` :class:`PowerMon2`, ``meter`` the recorder meter), ``counters/`` (RAPL and NVML counter meters),
``record/`` (``recorder`` the window API, ``meters`` window types, ``samples``, ``clock`` device -> host
monotonic, ``integrate``, ``traces`` csv / csv.gz / parquet), ``emulator/`` (device core, pty server,
``powermon://`` URL handler); ``rails`` (channel maps) and ``offline`` (what ``archline meter`` calls).
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Recorder": "archline.powermon.record.recorder",
    "Region": "archline.powermon.record.recorder",
    "MeterRegion": "archline.powermon.record.meters",
    "Meter": "archline.powermon.record.meters",
    "PowerMonMeter": "archline.powermon.powermon2.meter",
    "PowerMon2": "archline.powermon.powermon2.driver",
    "RailMap": "archline.powermon.rails",
    "RaplMeter": "archline.powermon.counters.rapl",
    "NvmlMeter": "archline.powermon.counters.nvml",
    "Script": "archline.powermon.emulator.power",
    "Faults": "archline.powermon.emulator.device",
    "Samples": "archline.powermon.record.samples",
    "integrate_samples": "archline.powermon.record.integrate",
    "MeterError": "archline.powermon.errors",
}


def meter_from_section(section: dict[str, Any], name: str | None = None, **kw: Any) -> Any:
    """A recorder meter from a platform's meter section (``type``: powermon2, rapl or nvml)."""
    kind = section.get("type", "powermon2")
    if kind == "powermon2":
        from archline.powermon.powermon2.meter import powermon_from_section
        return powermon_from_section(section, name=name or "powermon2", **kw)
    if kind == "rapl":
        from archline.powermon.counters.rapl import RaplMeter
        return RaplMeter(section.get("zones"), devices=section.get("devices"), name=name or "rapl", **kw)
    if kind == "nvml":
        from archline.powermon.counters.nvml import NvmlMeter
        return NvmlMeter(int(section.get("index", 0)), name=name, **kw)
    from archline.powermon.errors import MeterError
    raise MeterError(f"unknown meter type {kind!r} (powermon2, rapl, nvml)")


def emulated_meter(section: dict[str, Any], power: Any = None, speed: float = 1.0, **kw: Any) -> Any:
    """An emulated PowerMon 2 for ``section`` playing ``power``; see :func:`meters.emulated_powermon`."""
    from archline.powermon.powermon2.meter import emulated_powermon
    return emulated_powermon(section, power, speed=speed, **kw)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(name)


__all__ = [*_EXPORTS, "emulated_meter", "meter_from_section"]
