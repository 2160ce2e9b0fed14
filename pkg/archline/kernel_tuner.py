"""A Kernel Tuner observer that reports the energy (J) and power (W) of each configuration through archline's
meters (docs/counters.md). Optional dependency: ``pip install archline[kernel-tuner]``.

    from kernel_tuner import tune_kernel
    from archline.kernel_tuner import ArchlineObserver

    # the gtx580 profile's PowerMon 2 emulated (no meter needed): results say archline_emulated: True
    with ArchlineObserver(platform="gtx580", emulate=True) as obs:
        tune_kernel(..., observers=[obs], metrics={"GFLOPS/J": lambda p: p["flops"] / 1e9 / p["archline_energy"]})

With the meter plugged in, ``ArchlineObserver(platform="gtx580")`` reads it (the profile's first meter; ``meter=``
names another); a meter that cannot be opened is an error when the observer is made, naming its port. Or pass
your own ``archline.Monitor`` as the first argument: ``ArchlineObserver(monitor)`` (a platform goes in
``platform=``, not both). The emulated GTX 580 draws 348.59 W inside windows and 39.6 W outside (its emulated
model's peak power and its idle power: docs/api.md).

``mode="auto"`` (the default) measures each iteration as a window and, for a kernel shorter than the meter
resolves (20 of its sample periods), Kernel Tuner's continuous loop as one window whose energy is divided over its
iterations, as Kernel Tuner's own NVML and PMT observers do; ``"iteration"`` or ``"continuous"`` force one. Kernel
Tuner sizes that loop by count (ceil(max(1 s, ``continuous_duration_s``) / its mean kernel time) launches), so it
lasts as long as those launches take: far more than 1 s for microsecond kernels (docs/counters.md).
``get_results`` returns ``archline_energy`` (J per iteration) and ``archline_power`` (W), optionally
``archline_energy_err`` (the bound), always ``archline_mode``, ``archline_samples`` and ``archline_lost_samples``
(totals, integers), ``archline_short_window``, ``archline_unresolved``, ``archline_emulated``, ``archline_note``
and ``archline_reason``. No value is NaN, never 0: no meter, or a window that lost more than ``max_lost`` (1%) of
its samples; a meter that fails stops the tuning at the next configuration, naming it. A wrong argument raises
ValueError or TypeError naming it. The logic is archline.bench.tuning_observer.EnergyObserver; this module only
makes it Kernel Tuner's BenchmarkObserver and its continuous observer Kernel Tuner's ContinuousObserver.
"""

from __future__ import annotations

from typing import Any

from archline.bench.tuning_observer import MODES, OBSERVABLES, ContinuousEnergy, EnergyObserver

try:
    from kernel_tuner.observers.observer import BenchmarkObserver, ContinuousObserver
except ImportError:                     # Kernel Tuner absent: the observer still runs in a hand-written loop
    BenchmarkObserver = ContinuousObserver = object

HAVE_KERNEL_TUNER = BenchmarkObserver is not object


class ArchlineContinuousObserver(ContinuousEnergy, ContinuousObserver):  # type: ignore[misc,valid-type]
    """The observer Kernel Tuner's continuous loop drives (its ``continuous_observer``)."""

    def __init__(self, parent: EnergyObserver, continuous_duration_s: float) -> None:
        # not ContinuousObserver.__init__: it would check archline's observables against its own names
        ContinuousEnergy.__init__(self, parent, continuous_duration_s)


class ArchlineObserver(EnergyObserver, BenchmarkObserver):  # type: ignore[misc,valid-type]
    """archline's energy/power observer for Kernel Tuner (see the module docstring)."""

    continuous_class = ArchlineContinuousObserver

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        EnergyObserver.__init__(self, *args, **kwargs)


__all__ = ["HAVE_KERNEL_TUNER", "MODES", "OBSERVABLES", "ArchlineContinuousObserver", "ArchlineObserver",
           "EnergyObserver"]
