"""Meters on one clock: PowerMon 2 over serial, RAPL, NVML, emulators, and one window API to measure a region.

API for the bench runner (names are importable from ``archline.powermon``; submodules load on first use)::

    from archline.powermon import MeterSpec, NullMeter, Recorder, emulated_powermon, open_meter, parse_meters

    (spec,) = parse_meters(profile["meters"], "gtx580.toml")   # the one [[meters]] schema (powermon.spec)
    meter = open_meter(spec, raw_dir="results/run-1")          # PowerMon 2 on its port, RAPL zones or an NVML GPU
    # or, with no hardware: the same driver on a real pty talking to the emulator, which plays a power
    # function f(t_s) -> {channel: (volts, amps)} (t_s = emulated seconds since streaming began) or a Script;
    # speed > 1 compresses time (energy is then reported on the emulated timeline). Labelled emulated.
    meter = emulated_powermon(spec, power=lambda t_s: {0: (12.0, 5.0), 1: (3.3, 2.0)}, speed=1.0)
    # or no meter at all: windows with time only, and the reason stated
    meter = NullMeter("time only: this platform configures no meter")

    with Recorder([meter]) as rec:                # starts every meter (own threads), stops them even on error
        rec.begin("point-17")                     # host time.monotonic()
        run_kernel()
        region = rec.end("point-17")              # waits until the meter has data past the end mark
    region.time_s                                 # host monotonic seconds
    region.energy_j(device="gpu"), region.energy_err_j(device="gpu")
    mr = region.meters["powermon"]                # MeterRegion: channels {"0": ChannelResult(energy_j,
    mr.n_samples, mr.overflows, mr.gaps, mr.sample_hz, mr.emulated, mr.samples   # energy_err_j, mean_power_w,
    mr.duration_s                                 # the window on the device's timeline # n_samples, rail)}
    rec.write_traces("results/run", fmt="parquet")  # trace-<meter>.parquet (+ .json with marks), or "csv.gz"

Windows are named, may overlap or nest; ``end(name, t0_s=, t1_s=)`` takes the work's own edges when it timed
itself, ``strict=True`` makes a meter without data an error, ``segment()`` restarts PowerMon streams between
points. Counter meters (RAPL, NVML) are read at each mark and polled in between for wraps.

Sub-packages by job: ``powermon2/`` (``protocol`` record format, ``decode`` vectorised stream decoder,
``driver`` :class:`PowerMon2`, ``meter`` the recorder meter), ``counters/`` (RAPL and NVML counter meters;
RAPL discovery and NVML initialisation live here only), ``record/`` (``recorder`` the window API, ``meters``
window types, ``null`` the time-only meter, ``samples``, ``clock`` device -> host monotonic, ``integrate``,
``traces`` csv / csv.gz / parquet), ``emulator/`` (device core, pty server, ``powermon://`` URL handler);
``spec`` (the ``[[meters]]`` schema and :func:`open_meter`) and ``offline`` (what ``archline meter`` calls).
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Recorder": "archline.powermon.record.recorder",
    "Region": "archline.powermon.record.recorder",
    "MeterRegion": "archline.powermon.record.meters",
    "Meter": "archline.powermon.record.meters",
    "NullMeter": "archline.powermon.record.null",
    "PowerMonMeter": "archline.powermon.powermon2.meter",
    "emulated_powermon": "archline.powermon.powermon2.meter",
    "PowerMon2": "archline.powermon.powermon2.driver",
    "MeterSpec": "archline.powermon.spec",
    "ChannelSpec": "archline.powermon.spec",
    "parse_meters": "archline.powermon.spec",
    "open_meter": "archline.powermon.spec",
    "emulate_meter": "archline.powermon.spec",
    "RaplMeter": "archline.powermon.counters.rapl",
    "NvmlMeter": "archline.powermon.counters.nvml",
    "Script": "archline.powermon.emulator.power",
    "Faults": "archline.powermon.emulator.registry",
    "Samples": "archline.formats.meters.samples",
    "integrate_samples": "archline.powermon.record.integrate",
    "MeterError": "archline.powermon.errors",
}


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(name)


__all__ = list(_EXPORTS)
