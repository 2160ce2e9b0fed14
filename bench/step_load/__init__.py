"""Step loads from archline's own kernels, and the real set-up of ``meter probe`` / ``meter calibrate``: the
platform profile's sensor and reference meter opened, and the step load for the device the sensor measures
(:mod:`.load`: the loads; :mod:`.meters`: the set-up)."""

from archline.bench.step_load.load import (
    ON_BOARD_DEVICE,
    KernelStepLoad,
    StepLoadUnavailable,
    cpu_step_load,
    device_of,
    gpu_step_load,
    step_load_for,
)
from archline.bench.step_load.meters import (
    COUNTER_KINDS,
    REFERENCE_KINDS,
    ProbeMeterMissing,
    RealProbe,
    open_probe,
    pick_reference,
)

__all__ = ["COUNTER_KINDS", "ON_BOARD_DEVICE", "REFERENCE_KINDS", "KernelStepLoad",
           "ProbeMeterMissing", "RealProbe", "StepLoadUnavailable", "cpu_step_load", "device_of", "gpu_step_load",
           "open_probe", "pick_reference", "step_load_for"]
