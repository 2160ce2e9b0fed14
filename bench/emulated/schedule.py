"""``archline bench run --emulate`` on a platform with no power model (no pi0: ``localhost`` before a fit).

There is no device to emulate (the model needs constants such a platform does not have yet) and no energy to fit
them from: the way out is this machine's real kernels (the profile's back end, cpu_asm on localhost), timed as
always, with an emulated meter playing a power *schedule*: ``busy_w`` inside each timed region, ``idle_w``
otherwise (the idle windows). The energy of a row is then that schedule times the measured time, not the
program's; every output says so (:data:`NOTE`, the same words as ``measure --emulate``'s), and the rows keep
``emulated=true``.

The schedule's power is given as ``measure`` spells it (``--busy-w``, ``--idle-w``) or as a TDP (``--tdp-w``):
busy = TDP, idle = :data:`TDP_IDLE_SHARE` of it.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

from archline.bench.config.profile import BenchProfile
from archline.bench.errors import BenchError
from archline.bench.measure.schedule import NOTE, needs_schedule

__all__ = ["NOTE", "TDP_IDLE_SHARE", "needs_schedule", "open_schedule_meter", "schedule_w"]

#: idle as a share of TDP when only ``--tdp-w`` is given. A convention, not a measurement: a desktop or server
#: package idles at roughly 10-30% of its TDP (C-states, uncore awake); 0.25 sits in that range. Give --idle-w
#: (with --busy-w) where the machine's idle power is known.
TDP_IDLE_SHARE = 0.25
#: the emulated PowerMon 2's per-channel rate when the profile has none to play (its fastest, 1024/1 Hz)
SCHEDULE_RATE_HZ = 1024.0


def schedule_w(platform: str, busy_w: float | None, idle_w: float | None,
               tdp_w: float | None) -> tuple[float, float]:
    """(busy_w, idle_w) of the schedule: both given, or from a TDP; BenchError (exit 2) saying which to give."""
    if tdp_w is not None:
        if busy_w is not None or idle_w is not None:
            raise BenchError("--tdp-w sets both powers of the schedule (busy = TDP, idle = "
                             f"{TDP_IDLE_SHARE:g} x TDP): give --tdp-w alone, or --busy-w and --idle-w")
        busy_w, idle_w = tdp_w, TDP_IDLE_SHARE * tdp_w
    if busy_w is None or idle_w is None:
        raise BenchError(f"platform '{platform}' has no power model to emulate (no pi0; fit one with `archline "
                         "fit`): give --busy-w W and --idle-w W (or --tdp-w W), and the energy is that schedule x "
                         "the measured time")
    for what, w in (("--busy-w", busy_w), ("--idle-w", idle_w)):
        if not (math.isfinite(w) and w >= 0):
            raise BenchError(f"{what}: a finite number of watts >= 0, got {w!r}")
    return float(busy_w), float(idle_w)


def describe(busy_w: float, idle_w: float, tdp_w: float | None = None) -> str:
    """The rows' note and the session's description: the schedule, where it came from, and what it means."""
    src = f" (--tdp-w {tdp_w:g}: idle {TDP_IDLE_SHARE:g} x TDP)" if tdp_w is not None else ""
    return f"{NOTE}: {busy_w:g} W inside each timed region, {idle_w:g} W otherwise{src}"


def _busy_in_regions(schedule: Any) -> Any:
    """The window hook: the schedule goes busy for the kernel's timed regions only, not for the runner's idle
    windows (``idle-*``), which measure the idle power the schedule plays."""
    def hook(kind: str, name: str) -> float | None:
        return None if name.startswith("idle-") else float(schedule.edge(kind, name))
    return hook


def open_schedule_meter(prof: BenchProfile, busy_w: float, idle_w: float, *, seed: int = 0,
                        raw_dir: str | Path | None = None) -> tuple[Any, Any, Any, list[str]]:
    """(meter, window hook, schedule, notes): the emulated meter ``measure --emulate`` builds
    (bench/monitor.py: the profile's PowerMon 2 or other meter with an emulator) playing the busy/idle schedule in
    real time; a profile with none (localhost: no meter, or RAPL, which has no emulator) plays a one-channel
    PowerMon 2 at 1024 Hz, and a RAPL left aside is said in a note."""
    from archline.bench.emulated.device import default_meter
    from archline.bench.emulated.meters import choose
    from archline.bench.emulated.model import EmulationError
    from archline.bench.monitor import PhasePower, _emulated_meter

    notes: list[str] = []
    try:
        spec, _ = choose(prof, None)
    except EmulationError:
        notes.append(f"platform '{prof.name}' meters ({', '.join(s.name for s in prof.meters)}) have no emulator: "
                     "the schedule plays an emulated PowerMon 2")
        spec = None
    if spec is None:       # PowerMon 2's fastest rate: a region needs its min_samples (0.2 s here, 1.6 s at 128 Hz)
        spec = default_meter(max(busy_w, idle_w)).model_copy(update={"rate_hz": SCHEDULE_RATE_HZ})
        prof = dataclasses.replace(prof, meters=(spec,))
    schedule = PhasePower(idle_w, busy_w)
    meter = _emulated_meter(prof, schedule, meter=None, speed=1.0, seed=seed, raw_dir=raw_dir, notes=notes)
    return meter, _busy_in_regions(schedule), schedule, notes


def session_meter(prof: BenchProfile, opts: Any, raw_dir: Path | None) -> tuple[Any, Any, str, list[str]]:
    """bench run's schedule path (``opts``: its RunOptions): (meter, window hook, the rows' note, notes)."""
    busy_w, idle_w = schedule_w(prof.name, opts.busy_w, opts.idle_w, opts.tdp_w)
    meter, hook, _, notes = open_schedule_meter(prof, busy_w, idle_w, seed=opts.seed, raw_dir=raw_dir)
    return meter, hook, describe(busy_w, idle_w, opts.tdp_w), notes
