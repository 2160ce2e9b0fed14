"""The one GPU back end: a driver opens a device and compiles, launches and times kernels; this module does the rest.

BabelStream's shape: :class:`GpuDevice` is the driver's whole job (discovery, compile, buffers, launch and its
timer, like ``Stream<T>``), and :class:`GpuBackend` / :class:`GpuPrepared` own everything else: the catalogue
(:mod:`archline.bench.gpu.catalogue`), arguments, warm-up, repetition, verification against the numpy references
and the point -> :class:`RunResult` contract. Adding a back end is one driver module and one registry line.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import numpy as np

from archline.bench.config.options import parse_device  # noqa: F401  (the drivers' one device rule)
from archline.bench.errors import BackendUnavailableError, BenchError, UnsupportedError
from archline.bench.gpu import catalogue
from archline.bench.gpu.desc import GpuKernelDesc
from archline.bench.gpu.points import Geometry
from archline.bench.kernels import BackendBase, Counts, KernelSpec, RunResult
from archline.common.exits import EXIT_DEVICE


@dataclass
class Timing:
    """What a driver's timer reports for ``reps`` back-to-back launches."""

    time_s: float                       # device time from the first launch's start to the last one's end
    min_launch_s: float | None = None   # the shortest launch, where the timer sees each one
    extra: dict[str, Any] = field(default_factory=dict)   # readings at the region's edges (clocks, temperature)


class GpuDevice(Protocol):
    """One opened device: all a driver implements."""

    lang: str                    # the dialect the catalogue renders for it: opencl | cuda | hip
    timer: str                   # recorded in every row, e.g. "opencl-profiling-events"
    info: dict[str, Any]         # device, driver, compiler, compute_units, is_gpu ... recorded in every row
    summary: str                 # `bench list`: the device, named
    fp64: bool
    local_mem_bytes: int
    max_alloc_bytes: int

    def geometry(self, kernel: str, precision: str) -> Geometry: ...

    def working_set_bytes(self, kernel: str, level: str) -> int: ...

    def build(self, desc: GpuKernelDesc, spec: KernelSpec) -> tuple[Any, dict[str, Any]]:
        """Compile and load ``desc``: (kernel handle, what the row records of the build)."""
        ...

    def upload(self, host: np.ndarray) -> Any: ...

    def alloc(self, like: np.ndarray) -> Any: ...

    def download(self, buf: Any, host: np.ndarray) -> np.ndarray: ...

    def bind(self, kernel: Any, args: list[Any]) -> Any:
        """Attach the argument list (device buffers and numpy scalars) once: a handle for ``run``."""
        ...

    def run(self, bound: Any, global_size: int, local_size: int, reps: int) -> Timing: ...

    def release(self, bufs: list[Any]) -> None: ...


class Driver(Protocol):
    name: str
    offer: catalogue.Offer
    warmup_s: float

    def open(self, device: str | None) -> GpuDevice:
        """The device ``--device`` names (None: the default); BenchError subclasses say why not."""
        ...


#: kernels whose input is the seed's plain stream in their precision (GpuKernelDesc.make_input; ceil_mem calls it)
SEED_STREAM_KERNELS = ("intensity", "int", "cache", "ceil_mem")


class InputCache:
    """The last random input made, reused by the next point of a sweep that needs no more of it: a sweep's memory
    points all read the same seed's stream, and making 1 GiB of it took longer than measuring a point. A prefix of
    the stream is the stream of a shorter input (numpy's generators draw in order; tests/gpu_kernels check it), so
    a point's input is exactly ``make_input(n, default_rng(seed))`` either way. The chase's cycle and ceil_flop's
    seeds depend on their size: those are made afresh."""

    def __init__(self) -> None:
        self._key: tuple[str, int] | None = None
        self._data: np.ndarray | None = None

    def get(self, d: GpuKernelDesc, n_elems: int, seed: int) -> np.ndarray:
        if d.kernel not in SEED_STREAM_KERNELS:
            return d.make_input(n_elems, np.random.default_rng(seed))
        key = (d.precision, seed)
        if self._key != key or self._data is None or self._data.size < n_elems:
            self._key, self._data = None, None      # let the old one go before making the new one
            self._data = d.make_input(n_elems, np.random.default_rng(seed))
            self._key = key
        return self._data[:n_elems]


class GpuPrepared:
    """One kernel variant compiled, its buffers allocated and filled with random data on one device."""

    def __init__(self, spec: KernelSpec, dev: GpuDevice, plan: catalogue.Plan, seed: int, warmup_s: float,
                 inputs: InputCache | None = None) -> None:
        self.spec, self.dev, self.plan = spec, dev, plan
        self.desc = d = plan.desc
        self.global_size, self.local_size, self.rounds = plan.global_size, plan.local_size, plan.rounds
        self._host = (inputs or InputCache()).get(d, plan.n_elems, seed)
        if self._host.nbytes > dev.max_alloc_bytes:
            raise BenchError(f"buffer of {self._host.nbytes} B exceeds the device's max allocation "
                             f"{dev.max_alloc_bytes} B")
        self.counts_per_rep: Counts = d.counts(plan.global_size, plan.rounds, plan.local_size, self._host.size)
        self._warmup_s = warmup_s
        self._warm = False
        self._expected: np.ndarray | None = None
        kernel, built = dev.build(d, spec)
        self._out_host = catalogue.output_like(plan)
        args = catalogue.kernel_args(plan)
        # the reference before the upload: a CPU device may read (and a test overwrite) the host array in place
        self.expected()
        self._bufs = [dev.upload(self._host), dev.alloc(self._out_host)]
        self._bufs += [dev.upload(a) for a in args if isinstance(a, np.ndarray)]
        it = iter(self._bufs[2:])
        self._bound = dev.bind(kernel, self._bufs[:2] + [next(it) if isinstance(a, np.ndarray) else a for a in args])
        self.info = {**dev.info, **built}
        self.info.update(
            global_size=plan.global_size, local_size=plan.local_size, rounds=plan.rounds,
            vector_width=d.vector_width, chains=d.chains, layout=d.layout, kernel_name=d.name,
            source_sha=d.source_hash(dev.lang), input_bytes=int(self._host.nbytes), rng_seed=seed,
            working_set_bytes=int(plan.n_elems * d.scalar_bytes))
        if "working_set_bytes" in spec.params and spec.kernel in ("cache", "chase") and spec.level != "shared":
            self.info["notes"] = [f"working set {self.info['working_set_bytes']} B from --working-set: level "
                                  f"'{spec.level}' is the sweep's label, not where the data was found to live"]
        if d.kernel in ("intensity", "int"):
            self.info["fma_per_elem"] = str(d.fma_per_elem)
            self.info["intensity_flop_per_byte"] = d.intensity_flop_per_byte

    def _timed(self, reps: int) -> Timing:
        return self.dev.run(self._bound, self.global_size, self.local_size, reps)

    def warm_up(self) -> float:
        """Launch until warmup_s has passed (clock ramps, first touch, JIT); returns one launch's device time."""
        t_end = time.monotonic() + self._warmup_s
        last = self._timed(1).time_s
        while time.monotonic() < t_end:
            last = self._timed(1).time_s
        self._warm = True
        self.info["launch_time_s"] = last
        return last

    def reps_for(self, min_time_s: float) -> int:
        """Repetitions needed for a timed region of at least min_time_s."""
        t = self.info.get("launch_time_s") or self.warm_up()
        return max(1, int(np.ceil(min_time_s / max(t, 1e-9))))

    def expected(self) -> np.ndarray:
        if self._expected is None:
            self._expected = self.desc.reference(self._host, self.global_size, self.rounds,
                                                 self.local_size).reshape(-1)
        return self._expected

    def check(self) -> tuple[bool, dict[str, Any]]:
        got = self.dev.download(self._bufs[1], self._out_host)
        return catalogue.check(self.desc, got, self.expected())

    def run(self, reps: int) -> RunResult:
        if reps < 1:
            raise BenchError(f"reps must be >= 1, got {reps}")
        if not self._warm:
            self.warm_up()
        t0 = time.monotonic()
        tm = self._timed(reps)
        host_s = time.monotonic() - t0
        ok, chk = self.check()
        extra = {**self.info, **chk, **tm.extra, "host_time_s": host_s, "timer": self.dev.timer}
        if tm.min_launch_s is not None:
            extra["min_launch_time_s"] = tm.min_launch_s
        if self.desc.kernel == "chase":   # every walker's steps are dependent: time per step = latency
            extra["ns_per_access"] = tm.time_s / (reps * self.rounds) * 1e9
        return RunResult(time_s=float(tm.time_s), reps=reps, counts=self.counts_per_rep.scaled(reps),
                         checksum_ok=ok, extra=extra)

    def close(self) -> None:
        self.dev.release(self._bufs)
        self._bufs = []
        # the runner prepares the next point before this object goes: drop the input now, not with it
        self._host = np.empty(0, self._host.dtype)     # not a view: a view keeps the whole input alive
        self._expected = None
        self._bound = None       # a bound kernel holds its buffers, and a CPU device's buffer holds the host array


class DeviceMissingError(BackendUnavailableError):
    """No device matches what ``--device`` (or the profile's [bench] device) names: exit 4, a device missing."""

    exit_code = EXIT_DEVICE


class GpuBackend(BackendBase):
    """The back end every GPU driver gets: a subclass names its driver (``driver = OpenCLDriver()``)."""

    driver: ClassVar[Driver]

    @property
    def name(self) -> str:
        return self.driver.name

    def availability(self) -> tuple[bool, str]:
        try:
            return True, self.driver.open(None).summary
        except BenchError as e:
            return False, str(e)

    def describe(self) -> list[dict[str, Any]]:
        try:
            dev = self.driver.open(None)
            ok, why, fp64 = True, "", dev.fp64
        except BenchError as e:
            ok, why, fp64 = False, str(e), False
        return catalogue.describe(self.name, self.driver.offer, ok, why, fp64)

    def kernel_precisions(self, kernel: str) -> tuple[str, ...] | None:
        """The precisions ``kernel`` runs at (None: a kernel the catalogue does not know; sweep says so)."""
        return catalogue.PRECISIONS.get(kernel)

    def check_device(self, device: str | None) -> str:
        """Open the device ``--device`` (or the profile) names once, before any work: DeviceMissingError (exit 4)
        when none matches, BenchError (exit 2) for a value no device could match; its summary."""
        return self.driver.open(device).summary

    def check_plans(self, specs: list[KernelSpec], device: str | None) -> None:
        """Resolve every point's launch plan on the device before any work (nothing allocated): a parameter the
        device cannot honour (a working set below a kernel's minimum) is one line, exit 2, not a failed point."""
        dev = self.driver.open(device)
        for spec in specs:
            if spec.precision == "dp" and not dev.fp64:
                continue    # left to prepare(), which says 'unsupported' for that point
            geo = dev.geometry(spec.kernel, spec.precision)
            p = catalogue.plan(spec, geo, lambda lv, k=spec.kernel: dev.working_set_bytes(k, lv),
                               dev.local_mem_bytes)
            need = p.n_elems * p.desc.scalar_bytes
            if need > dev.max_alloc_bytes:
                name = dev.info.get("device", "the device")
                raise BenchError(f"{spec.label}: a working set of {need} B exceeds {name}'s largest allocation, "
                                 f"{dev.max_alloc_bytes} B; give a smaller --working-set")

    def sweep(self, kernel: str, precision: str, *, quick: bool = False) -> list[KernelSpec]:
        return catalogue.sweep(self.name, self.driver.offer, kernel, precision, quick)

    def prepare(self, spec: KernelSpec, device: str | None = None) -> GpuPrepared:
        dev = self.driver.open(device)
        if spec.precision == "dp" and not dev.fp64:
            raise UnsupportedError(f"unsupported: {dev.info.get('device', '?')} has no fp64; dp kernels cannot run")
        geo = dev.geometry(spec.kernel, spec.precision)
        p = catalogue.plan(spec, geo, lambda lv: dev.working_set_bytes(spec.kernel, lv), dev.local_mem_bytes)
        return GpuPrepared(spec, dev, p, int(spec.params.get("seed", 0x5EED)),
                           float(spec.params.get("warmup_s", self.driver.warmup_s)), self._inputs())

    def _inputs(self) -> InputCache:
        """This back end's input cache (one per back end object: a sweep's points share it)."""
        cache = self.__dict__.get("_input_cache")
        if cache is None:
            cache = self.__dict__["_input_cache"] = InputCache()
        return cache
