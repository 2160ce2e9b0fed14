"""OpenCL driver through pyopencl: any ICD (PoCL in CI). Discovery, compile, launch and the timer; the kernels,
arguments, warm-up, verification and rows are the GPU core's (:mod:`archline.bench.gpu.core`).

``--device`` picks a device as ``P:D`` (platform and device index, as ``clinfo -l`` lists them) or as a
case-insensitive substring of the device name; the default is the first GPU, else the first device.
Kernels are timed with OpenCL profiling events (device time from the first launch's start to the last one's end).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from archline.bench.errors import BackendUnavailableError, BenchError
from archline.bench.gpu.catalogue import Offer
from archline.bench.gpu.core import DeviceMissingError, GpuBackend, GpuDevice, Timing, parse_device
from archline.bench.gpu.desc import GpuKernelDesc
from archline.bench.gpu.points import Geometry
from archline.bench.gpu.working_set import DeviceCaches, default_working_set_bytes
from archline.bench.host_memory import mem_available_bytes
from archline.bench.kernels import KernelSpec

NAME = "opencl"


def _cl() -> Any:
    try:
        import pyopencl as cl
    except ImportError:
        raise BackendUnavailableError(
            "pyopencl is not installed (pip install 'archline[opencl]')"
        ) from None
    return cl


def list_devices() -> list[tuple[str, Any, Any]]:
    """[('P:D', platform, device)] for every OpenCL device; raises BackendUnavailableError if there is none."""
    cl = _cl()
    try:
        platforms = cl.get_platforms()
    except cl.Error as e:  # PLATFORM_NOT_FOUND_KHR when no ICD is installed
        raise BackendUnavailableError(
            f"no OpenCL platform found ({e}); install an ICD such as pocl-opencl-icd"
        ) from None
    out = []
    for pi, p in enumerate(platforms):
        try:
            devs = p.get_devices()
        except cl.Error:
            continue
        out += [(f"{pi}:{di}", p, d) for di, d in enumerate(devs)]
    if not out:
        raise BackendUnavailableError("no OpenCL platform with a device found (is an ICD installed? see clinfo -l)")
    return out


def pick_device(device: str | None) -> tuple[str, Any, Any]:
    device = parse_device(device)
    devs = list_devices()
    cl = _cl()
    if device is None:
        gpus = [x for x in devs if x[2].type & cl.device_type.GPU]
        return (gpus or devs)[0]
    for x in devs:
        if device == x[0]:
            return x
    hits = [x for x in devs if device.lower() in x[2].name.lower()]
    if not hits:
        names = "; ".join(f"{i} {d.name}" for i, _, d in devs)
        raise DeviceMissingError(f"no OpenCL device matches '{device}' (have: {names})")
    return hits[0]


def device_info(platform: Any, dev: Any) -> dict[str, Any]:
    """What every result records: device, driver and compiler."""
    return {
        "device": dev.name.strip(),
        "device_vendor": dev.vendor.strip(),
        "device_version": dev.version.strip(),
        "driver_version": dev.driver_version.strip(),
        "opencl_c_version": getattr(dev, "opencl_c_version", "").strip(),
        "platform": platform.name.strip(),
        "platform_version": platform.version.strip(),   # PoCL names its LLVM here: the compiler
        "compiler": f"{platform.name.strip()} online compiler ({platform.version.strip()}), -cl-std=CL1.2 -w",
        "compute_units": int(dev.max_compute_units),
        "max_clock_mhz": int(dev.max_clock_frequency),
        "is_gpu": bool(dev.type & _cl().device_type.GPU),
    }


def has_fp64(dev: Any) -> bool:
    try:
        if int(dev.double_fp_config) != 0:
            return True
    except Exception:
        pass
    return "cl_khr_fp64" in dev.extensions


def tuned_work_size(dev: Any, kernel: str, precision: str, level: str) -> Geometry:
    """Per-device defaults (measured on PoCL/Zen 3 with benchmarks/opencl_vs_clpeak.py; GPUs: occupancy rules)."""
    cl = _cl()
    cus = int(dev.max_compute_units)
    is_cpu = bool(dev.type & cl.device_type.CPU)
    if is_cpu:
        # PoCL on Zen 3 (benchmarks/opencl_vs_clpeak.py, 4 alternating runs against clpeak): one native vector
        # (AVX2: float8/double4) per chain and 6 chains = 6 independent FMAs in flight in 12 of the 16 ymm
        # registers (8 chains spill; float16 x 3 chains was no better), one work-item per work-group, 4 per core;
        # streaming kernels give every chain its own prefetch stream
        pref = int(dev.preferred_vector_width_double if precision == "dp" else dev.preferred_vector_width_float)
        streaming = kernel in ("intensity", "int")
        w = max(min(max(pref, 1), 16), 2 if precision == "dp" else 4)
        chains = 6 if streaming else 4
        return Geometry(cus * 4, 1, w, chains, "streams" if streaming else "blocked", cus, True)
    lsz = min(256, int(dev.max_work_group_size))
    w = 2 if precision == "dp" else 4
    if kernel in ("intensity", "int"):
        w, chains = 1, 4
    else:
        chains = 2
    return Geometry(cus * 8 * lsz, lsz, w, chains, "interleaved", cus, False)


def device_caches(dev: Any) -> DeviceCaches:
    """What ``dev`` reports that its default working sets come from, read once (PoCL takes the cache from hwloc:
    a VM's device may report its host's whole L3)."""
    return DeviceCaches(last_cache_bytes=int(dev.global_mem_cache_size), compute_units=int(dev.max_compute_units),
                        global_mem_bytes=int(dev.global_mem_size), max_alloc_bytes=int(dev.max_mem_alloc_size),
                        is_cpu=bool(dev.type & _cl().device_type.CPU))


BUILD_OPTIONS = ["-cl-std=CL1.2", "-w"]


class OpenCLDevice:
    """One OpenCL device: a context and a profiling queue (made on first use), programs, buffers, events."""

    lang = "opencl"
    timer = "opencl-profiling-events"

    def __init__(self, key: str, platform: Any, dev: Any) -> None:
        self._clm = _cl()
        self.key, self.platform, self.dev = key, platform, dev
        self.info = {**device_info(platform, dev), "device_key": key}
        self.summary = f"{dev.name.strip()} [{key}] ({platform.version.strip()}; driver {dev.driver_version.strip()})"
        self.fp64 = has_fp64(dev)
        self.local_mem_bytes = int(dev.local_mem_size)
        self.max_alloc_bytes = int(dev.max_mem_alloc_size)
        self.caches = device_caches(dev)
        self._queue: Any = None

    @property
    def queue(self) -> Any:
        if self._queue is None:
            cl = self._clm
            self.ctx = cl.Context([self.dev])
            self._queue = cl.CommandQueue(self.ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
        return self._queue

    def geometry(self, kernel: str, precision: str) -> Geometry:
        return tuned_work_size(self.dev, kernel, precision, "mem")

    def working_set_bytes(self, kernel: str, level: str) -> int:
        return default_working_set_bytes(self.caches, kernel, level, host_available_bytes=mem_available_bytes())

    def build(self, desc: GpuKernelDesc, spec: KernelSpec) -> tuple[Any, dict[str, Any]]:
        cl, _ = self._clm, self.queue
        try:
            with warnings.catch_warnings():     # PoCL's notes on wide-vector ABIs are not the user's business
                warnings.simplefilter("ignore")
                prg = cl.Program(self.ctx, desc.source("opencl")).build(options=BUILD_OPTIONS)
        except cl.Error as e:
            raise BenchError(f"OpenCL build of {desc.name} failed on {self.dev.name}: {e}") from None
        return getattr(prg, desc.name), {"build_options": " ".join(BUILD_OPTIONS)}

    def upload(self, host: np.ndarray) -> Any:
        mf = self._clm.mem_flags
        # a CPU device reads an aligned host array in place (kept alive by GpuPrepared): no second copy in the
        # same memory, which doubled a 1 GiB working set's footprint on PoCL (unaligned: its vector loads fault)
        aligned = host.ctypes.data % max(int(self.dev.mem_base_addr_align) // 8, 128) == 0
        where = mf.USE_HOST_PTR if self.caches.is_cpu and aligned else mf.COPY_HOST_PTR
        return self._clm.Buffer(self.queue.context, mf.READ_ONLY | where, hostbuf=host)

    def alloc(self, like: np.ndarray) -> Any:
        return self._clm.Buffer(self.queue.context, self._clm.mem_flags.WRITE_ONLY, size=like.nbytes)

    def download(self, buf: Any, host: np.ndarray) -> np.ndarray:
        self._clm.enqueue_copy(self.queue, host, buf).wait()
        return host

    def bind(self, kernel: Any, args: list[Any]) -> Any:
        for i, a in enumerate(args):
            kernel.set_arg(i, a)
        return kernel

    def run(self, bound: Any, global_size: int, local_size: int, reps: int) -> Timing:
        q, enqueue = self.queue, self._clm.enqueue_nd_range_kernel
        evs = [enqueue(q, bound, (global_size,), (local_size,)) for _ in range(reps)]
        evs[-1].wait()
        q.finish()
        launches = [(e.profile.end - e.profile.start) * 1e-9 for e in evs]
        return Timing((evs[-1].profile.end - evs[0].profile.start) * 1e-9, min(launches))

    def release(self, bufs: list[Any]) -> None:
        for b in bufs:
            try:
                b.release()
            except Exception:
                pass


class OpenCLDriver:
    name = NAME
    offer = Offer(cache_levels=("shared", "l1", "l2", "mem"), chase_walkers=(1, 32))
    warmup_s = 0.2

    def open(self, device: str | None) -> GpuDevice:
        return OpenCLDevice(*pick_device(device))


class OpenCLBackend(GpuBackend):
    driver = OpenCLDriver()
