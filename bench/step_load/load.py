"""A step load from archline's own kernels, for ``meter probe`` and ``meter calibrate`` on real hardware.

powermon's probe drives any load with ``high()`` and ``low()`` (:class:`archline.powermon.sensor.probe.StepLoad`);
this module gives it one made of a bench back end's prepared kernel (the same :class:`PreparedKernel` the runner
measures): while high, a worker thread calls ``run(reps)`` back to back, each call sized to last about ``call_s``;
``low()`` returns once the call in flight has ended, so the device is idle when it returns. No new kernel: the CPU
load is the steady load the CPU back end's registry entry names (``step_load``: a compute-bound intensity kernel,
DP FMAs on an L1-resident working set, one thread per core or per ``--cpus``), a GPU load the catalogue's
highest-intensity SP kernel of the back end.

Threads, not processes: nothing can outlive the process (a SIGTERM or a crash ends the worker with it), and
:meth:`KernelStepLoad.close` (also the end of a ``with`` block, however it ends) stops the worker, joins it and frees
the kernel.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Sequence
from typing import Any

from archline.bench.errors import BenchError
from archline.bench.kernels import PreparedKernel
from archline.common.exits import EXIT_DEVICE
from archline.powermon import kinds

log = logging.getLogger("archline.bench")

#: the device a meter kind measures when it is on board (external meters say it in their channels' ``device``):
#: each kind's ``device`` (powermon/kinds.py)
ON_BOARD_DEVICE: dict[str, str] = {k.name: k.device for k in kinds.kinds() if k.device and not k.reference}


class StepLoadUnavailable(BenchError):
    """No step load can run here: the back end's library, driver or device is missing (exit 4, a device missing)."""

    exit_code = EXIT_DEVICE


class KernelStepLoad:
    """``high()``: a prepared kernel runs back to back on a worker thread; ``low()``: it stops (returns once the
    call in flight ended); ``close()``: stopped, joined, kernel freed. ``what`` names what ran (the probe's
    result records it); ``calls`` counts the calls made; a kernel that failed raises at the next switch."""

    def __init__(self, prepared: PreparedKernel, reps: int, what: dict[str, Any]) -> None:
        self._prepared = prepared
        self.reps = reps
        self.what = dict(what, reps_per_call=reps)
        self.calls = 0
        self._on = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._closed = False
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._loop, name="archline step load", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while True:
            self._on.wait()
            if self._closed:
                return
            self._idle.clear()
            try:
                while self._on.is_set() and not self._closed:
                    self._prepared.run(self.reps)
                    self.calls += 1
            except BaseException as e:   # surfaced by the next high()/low(): the load is not what was asked
                self._error = e
                self._on.clear()
            finally:
                self._idle.set()

    def _raise(self) -> None:
        if self._error is not None:
            e, self._error = self._error, None
            raise BenchError(f"step load {self.label}: the kernel failed: {e}") from e

    @property
    def label(self) -> str:
        return str(self.what.get("label", self.what.get("kernel", "kernel")))

    @property
    def running(self) -> bool:
        """Whether a kernel call is in flight now."""
        return not self._idle.is_set()

    def high(self) -> None:
        self._raise()
        if self._closed:
            raise BenchError("step load: high() after close()")
        self._on.set()

    def low(self, timeout_s: float = 30.0) -> None:
        self._on.clear()
        if not self._idle.wait(timeout_s):
            raise BenchError(f"step load {self.label}: the kernel call in flight did not end within {timeout_s:g} s")
        self._raise()

    def close(self) -> None:
        """Stop and free; safe to call twice. A call that does not end in time leaves the kernel allocated
        (freeing buffers in use would crash) and says so."""
        if self._closed:
            return
        self._closed = True
        self._on.set()                  # wakes an idle worker, which sees _closed and returns
        self._thread.join(timeout=30.0)
        if self._thread.is_alive():
            log.warning("step load %s: the worker did not stop within 30 s; its kernel is left allocated", self.label)
            return
        self._prepared.close()

    def __enter__(self) -> KernelStepLoad:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _sized(prepared: PreparedKernel, call_s: float) -> int:
    """Repetitions per call for about ``call_s`` of kernel time (a warm call's own timed region: the native CPU
    run adds about 4 ms of clock probing, itself busy, which this does not count)."""
    prepared.run(1)                      # first touch, JIT, clock ramp
    one_s = max(float(prepared.run(1).time_s), 1e-7)
    return max(1, math.floor(call_s / one_s))


def cpu_load_backend() -> str:
    """The back end of the CPU step load: the registry's first CPU back end with a ``step_load``."""
    from archline.bench.registry import backends, of_kind

    for name in of_kind("cpu"):
        if backends()[name].step_load is not None:
            return name
    raise StepLoadUnavailable("step load on the CPU: no back end offers one")


def cpu_step_load(*, threads: int | None = None, cpus: Sequence[int] | None = None, isa: str | None = None,
                  call_s: float = 0.002) -> KernelStepLoad:
    """The CPU back end's steady load (its intensity kernel, DP, 64 flop/B, L1-resident) on ``threads`` cores or
    exactly ``cpus``."""
    from archline.bench.registry import info_of

    info = info_of(cpu_load_backend())
    be = info.open(**({} if isa is None else {"isa": isa}))
    ok, why = be.availability()
    if not ok:
        raise StepLoadUnavailable(f"step load on the CPU (backend {be.name}): {why}")
    prepared, what = info.steady_load(be, threads=threads, cpus=cpus)
    try:
        reps = _sized(prepared, call_s)
    except BaseException:
        prepared.close()
        raise
    return KernelStepLoad(prepared, reps, what)


def gpu_step_load(backend: str, *, device: str | None = None, call_s: float = 0.02) -> KernelStepLoad:
    """The back end's highest-intensity SP kernel of its catalogue, launched back to back on ``device``."""
    from archline.bench.errors import BackendUnavailableError
    from archline.bench.registry import get_backend

    try:
        be = get_backend(backend)
    except BackendUnavailableError as e:
        raise StepLoadUnavailable(f"step load on the GPU: {e}") from None
    ok, why = be.availability()
    if not ok:
        raise StepLoadUnavailable(f"step load on the GPU (backend {backend}): {why}")
    specs = be.sweep("intensity", "sp", quick=True)
    if not specs:
        raise StepLoadUnavailable(f"step load on the GPU: backend {backend} offers no intensity kernel")
    spec = max(specs, key=lambda s: float(s.params.get("fma_per_elem", 0)))
    prepared = be.prepare(spec, device)
    try:
        reps = _sized(prepared, call_s)
    except BaseException:
        prepared.close()
        raise
    info = getattr(prepared, "info", {})
    label = f"{backend} intensity/sp (fma_per_elem {spec.params.get('fma_per_elem')}) on {info.get('device', 'GPU')}"
    return KernelStepLoad(prepared, reps, {"label": label, "backend": backend, "kernel": "intensity",
                                           "precision": "sp", "device": info.get("device", device),
                                           "fma_per_elem": spec.params.get("fma_per_elem")})


def device_of(spec: Any) -> str:
    """The device a meter measures: its kind's (on-board sensors), else its channels' ``device`` (one of cpu, gpu,
    node...), else "device" (unknown)."""
    if spec.kind in ON_BOARD_DEVICE:
        return ON_BOARD_DEVICE[spec.kind]
    devs = {c.device for c in spec.channels}
    if "gpu" in devs:
        return "gpu"
    if devs & {"cpu", "node"}:
        return "cpu"
    return "device"


def step_load_for(spec: Any, *, backend: str | None = None, profile_backend: str | None = None,
                  threads: int | None = None, cpus: Sequence[int] | None = None, device: str | None = None,
                  isa: str | None = None) -> KernelStepLoad:
    """The step load for the device that meter ``spec`` measures: the CPU kernel for a CPU or node meter, the GPU
    back end (``backend``, else the profile's when it is a GPU one) for a GPU meter; refused in one line when the
    back end cannot run here or none is named."""
    from archline.bench.registry import of_kind

    gpus, cpu = tuple(sorted(of_kind("gpu"))), cpu_load_backend()
    dev = device_of(spec)
    name = backend
    if name is None:
        if dev == "gpu":
            name = profile_backend if profile_backend in gpus else None
            if name is None:
                raise BenchError(f"meter '{spec.name}' ({spec.kind}) measures a GPU: give --backend "
                                 f"({'|'.join(gpus)}) for its step load")
        elif dev == "cpu":
            name = cpu
        else:
            name = profile_backend or cpu
    if name == cpu:
        if dev == "gpu":
            raise BenchError(f"meter '{spec.name}' ({spec.kind}) measures a GPU; a CPU step load would not move it "
                             f"(give --backend {'|'.join(gpus)})")
        if device is not None:
            raise BenchError("--device picks a GPU back end's device; the CPU step load takes --threads or --cpus")
        return cpu_step_load(threads=threads, cpus=cpus, isa=isa)
    if name in gpus:
        if threads is not None or cpus is not None:
            raise BenchError("--threads and --cpus pin the CPU step load, not a GPU back end's")
        return gpu_step_load(name, device=device)
    raise BenchError(f"backend '{name}' has no step load ({cpu}, {', '.join(gpus)} do)")


__all__ = ["ON_BOARD_DEVICE", "KernelStepLoad", "StepLoadUnavailable", "cpu_step_load", "device_of",
           "gpu_step_load", "step_load_for"]
