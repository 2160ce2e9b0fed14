"""The arguments of archline's Kernel Tuner observer (bench/tuning_observer.py), each checked and the wrong one
named: ValueError for a bad value, TypeError for a wrong type, as Kernel Tuner's own observers raise."""

from __future__ import annotations

import math
import re

from archline.powermon.monitor import Monitor

#: what ``get_results`` can report (Kernel Tuner result keys, prefixed): mean J, mean W, mean bound (J), lost samples
#: (the total over the configuration's windows, as ``<prefix>_samples``)
OBSERVABLES = ("energy", "power", "energy_err", "lost_samples")
MODES = ("auto", "iteration", "continuous")
#: Kernel Tuner runs its continuous loop for max(1 s, every continuous observer's ``continuous_duration``)
KERNEL_TUNER_MIN_CONTINUOUS_S = 1.0
#: a prefix names result keys ``<prefix>_energy``: letters, digits and inner underscores
PREFIX_RE = re.compile(r"[A-Za-z][A-Za-z0-9]*(_[A-Za-z0-9]+)*")


def check_args(monitor: object, platform: object, emulate: object, meter: object, observables: object,
                prefix: object, mode: object, continuous_duration_s: object, max_lost: object) -> list[str]:
    """Each argument of EnergyObserver checked; returns the observables without the prefix, each once."""
    if isinstance(monitor, str):
        raise TypeError(f"the first argument is an archline Monitor, not {monitor!r}: for a platform's meter write "
                        f"ArchlineObserver(platform={monitor!r}) (emulate=True to emulate it)")
    if monitor is not None and not isinstance(monitor, Monitor):
        raise TypeError(f"monitor must be an archline Monitor (archline.open_monitor(...)), got "
                        f"{type(monitor).__name__}")
    if monitor is not None and (platform is not None or emulate or meter is not None):
        raise ValueError("pass either a monitor or platform=/emulate=/meter= (the observer opens that platform's "
                         "meter), not both: the monitor would be measured and the others ignored")
    if monitor is not None and monitor.stopped:
        raise ValueError("monitor is stopped (its meters are closed): pass a running monitor or open a new one")
    if not isinstance(prefix, str) or not PREFIX_RE.fullmatch(prefix):
        raise ValueError(f"prefix must be letters and digits with inner underscores (results are named "
                         f"'<prefix>_energy'), got {prefix!r}")
    if isinstance(observables, (str, bytes)) or not (observables is None or isinstance(observables, (list, tuple))):
        raise TypeError(f"observables must be a list of names, e.g. ['energy', 'power'], got {observables!r}")
    wanted = list(observables) if observables is not None else ["energy", "power"]
    for o in wanted:
        if not isinstance(o, str) or o.removeprefix(f"{prefix}_") not in OBSERVABLES:
            raise ValueError(f"observable {o!r} is not one archline reports (known: {', '.join(OBSERVABLES)})")
    if mode not in MODES:
        raise ValueError(f"mode {mode!r} is not one of {', '.join(MODES)}")
    for name, v in (("continuous_duration_s", continuous_duration_s), ("max_lost", max_lost)):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise TypeError(f"{name} must be a number, got {v!r}")
    assert isinstance(continuous_duration_s, (int, float)) and isinstance(max_lost, (int, float))
    if not (math.isfinite(continuous_duration_s) and continuous_duration_s >= KERNEL_TUNER_MIN_CONTINUOUS_S):
        raise ValueError(f"continuous_duration_s must be at least {KERNEL_TUNER_MIN_CONTINUOUS_S:g} s (Kernel Tuner "
                         f"runs its continuous loop for max(1 s, continuous_duration_s)), got {continuous_duration_s}")
    if not 0 <= max_lost <= 1:
        raise ValueError(f"max_lost must be a share of the samples between 0 and 1, got {max_lost}")
    return list(dict.fromkeys(o.removeprefix(f"{prefix}_") for o in wanted))
