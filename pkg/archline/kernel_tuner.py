"""A Kernel Tuner observer that reports the energy (J) and power (W) of each configuration through archline's
meters (docs/api.md). Optional dependency: ``pip install archline[kernel-tuner]``.

    from kernel_tuner import tune_kernel
    from archline.kernel_tuner import ArchlineObserver

    with ArchlineObserver(platform="gtx580") as obs:      # or ArchlineObserver(monitor) with your own Monitor
        tune_kernel(..., observers=[obs], metrics={"GFLOPS/J": lambda p: p["flops"] / 1e9 / p["archline_energy"]})

Each iteration of each configuration is one archline window (after_start to after_finish); ``get_results``
returns ``archline_energy`` and ``archline_power`` (means over the iterations), optionally ``archline_energy_err``
(the meters' bound) and ``archline_lost_samples``. The logic is archline.bench.tuning_observer.EnergyObserver;
this module only makes it a Kernel Tuner BenchmarkObserver, which Kernel Tuner requires of an observer.
"""

from __future__ import annotations

from typing import Any

from archline.bench.tuning_observer import OBSERVABLES, EnergyObserver

try:
    from kernel_tuner.observers.observer import BenchmarkObserver
except ImportError:                     # Kernel Tuner absent: the observer still runs in a hand-written loop
    BenchmarkObserver = object

HAVE_KERNEL_TUNER = BenchmarkObserver is not object


class ArchlineObserver(EnergyObserver, BenchmarkObserver):  # type: ignore[misc,valid-type]
    """archline's energy/power observer for Kernel Tuner (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        EnergyObserver.__init__(self, *args, **kwargs)


__all__ = ["HAVE_KERNEL_TUNER", "OBSERVABLES", "ArchlineObserver", "EnergyObserver"]
