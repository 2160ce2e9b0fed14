"""Buffers, launches and event timing through cupy: one runtime for the drivers whose kernels cupy loads.

cupy speaks CUDA on NVIDIA builds and HIP on ROCm builds with the same calls (``cupy.cuda.runtime``,
``RawModule``, ``Event``), so the cuda and hip drivers differ only in discovery and compile (nvcc -> cubin,
hipcc -> code object) and share this. Clocks and temperature come from the vendor's powermon device layer
(NVML, AMD SMI), sampled by powermon's :class:`~archline.powermon.counters.base.ReadingsMeter` through a Recorder
window around the timed launches, on the host monotonic clock (the one clock of every meter): no sampling code of
its own.
"""

from __future__ import annotations

import tempfile
from typing import Any

import numpy as np

from archline.bench.errors import BackendUnavailableError, BenchError
from archline.bench.gpu.catalogue import Offer
from archline.bench.gpu.core import DeviceMissingError, Timing, parse_device
from archline.bench.gpu.desc import GpuKernelDesc
from archline.bench.gpu.points import Geometry
from archline.bench.gpu.working_set import DeviceCaches, default_working_set_bytes
from archline.bench.host_memory import mem_available_bytes
from archline.bench.kernels import KernelSpec
from archline.powermon.counters.base import ReadingsMeter
from archline.powermon.errors import MeterError
from archline.powermon.record.recorder import Recorder


def import_cupy(extra: str) -> Any:
    try:
        import cupy
    except ImportError:
        raise BackendUnavailableError(f"cupy is not installed (pip install 'archline[{extra}]')") from None
    return cupy


def device_count(cp: Any, what: str) -> int:
    try:
        return int(cp.cuda.runtime.getDeviceCount())
    except Exception as e:   # no device / insufficient driver / no libcuda or libamdhip64
        raise BackendUnavailableError(f"no {what} device: {e}") from None


def pick_index(cp: Any, device: str | None, what: str) -> int:
    """``--device``: an index, or a case-insensitive substring of the device name; the default is device 0."""
    device = parse_device(device)
    n = device_count(cp, what)
    if n == 0:
        raise BackendUnavailableError(f"no {what} device found")
    if device is None:
        return 0
    if device.isdigit():
        if int(device) >= n:
            raise DeviceMissingError(f"{what} device {device} absent (have {n})")
        return int(device)
    for i in range(n):
        if device.lower() in text(cp.cuda.runtime.getDeviceProperties(i)["name"]).lower():
            return i
    raise DeviceMissingError(f"no {what} device matches '{device}'")


def text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def window_extra(readings: dict[str, float]) -> dict[str, Any]:
    """A window's sampled readings as the row carries them: core_mhz (the mean; rows.py reads
    effective_clock_hz), its min and max, the same for mem_mhz, temp_c_max, and how many polls they come from."""
    out: dict[str, Any] = {k: readings[k] for k in ("core_mhz", "core_mhz_min", "core_mhz_max", "mem_mhz",
                                                    "mem_mhz_min", "mem_mhz_max", "temp_c_max") if k in readings}
    if "core_mhz" in out:
        out["effective_clock_hz"] = out["core_mhz"] * 1e6
    if out:
        out["readings_n"] = int(readings.get("n_readings", 0))
    return out


def readings_meter(layer: Any, index: int, lang: str, poll_s: float) -> ReadingsMeter | None:
    """The vendor layer's readings sampler for GPU ``index`` (``layer``: ``NvmlGpu``, ``AmdSmiGpu``); None when the
    layer is not there (the rows say so)."""
    try:
        return ReadingsMeter(layer.open(index), f"{lang}{index}-readings", poll_s)
    except MeterError:
        return None


class CupyDevice:
    """What a cupy-loaded device does the same for both vendors; a driver subclasses it with its names, its
    device layer, its architecture name and its compiler."""

    lang = ""                # the catalogue's source language: one of render.DIALECTS
    timer = ""               # "cuda-events", "hip-events"
    layer: Any = None        # powermon's device layer class of the vendor (open(index), readings())
    readings_poll_s = 0.01   # clocks and temperature sampled this often inside a window (and at both its edges)
    fp64 = True
    blocks_per_cu = 8        # resident work-groups per SM/CU the default launch fills
    local_size = 256
    vector_width = 2         # float2/double2 loads

    def __init__(self, cp: Any, index: int) -> None:
        self.check_runtime(cp)
        self.cp, self.index = cp, index
        self.readings = readings_meter(self.layer, index, self.lang, self.readings_poll_s)
        p = cp.cuda.runtime.getDeviceProperties(index)
        self.props = p
        self.info: dict[str, Any] = {
            "device": text(p["name"]), "device_index": index, "compute_units": int(p["multiProcessorCount"]),
            "l2_bytes": int(p.get("l2CacheSize", 0)),
            "shared_per_block_bytes": int(p.get("sharedMemPerBlock", 48 << 10)),
            "global_mem_bytes": int(p.get("totalGlobalMem", 0)),
            "driver_version": int(cp.cuda.runtime.driverGetVersion()),
            "runtime_version": int(cp.cuda.runtime.runtimeGetVersion()), "is_gpu": True,
        }
        self.local_mem_bytes = int(self.info["shared_per_block_bytes"])
        self.max_alloc_bytes = int(self.info["global_mem_bytes"]) or (1 << 62)
        self.info["arch"] = self.arch_name()
        self.check_compiler()

    def check_runtime(self, cp: Any) -> None:
        """Refuse a cupy build of the other vendor (BackendUnavailableError); the default accepts any."""

    def arch_name(self) -> str:
        """The architecture the compiler targets (``sm_90``, ``gfx90a``), from ``self.props``."""
        raise NotImplementedError

    def geometry(self, kernel: str, precision: str) -> Geometry:
        """Occupancy defaults: local_size work-items a group, blocks_per_cu groups per SM/CU, 2-wide loads."""
        cus = int(self.info["compute_units"])
        chains = 4 if kernel in ("intensity", "int") else 2
        return Geometry(cus * self.blocks_per_cu * self.local_size, self.local_size, self.vector_width, chains,
                        "interleaved", cus, False)

    @property
    def caches(self) -> DeviceCaches:
        """What the device reports that its default working sets come from: its L2 shared by its SMs/CUs."""
        return DeviceCaches(last_cache_bytes=int(self.info.get("l2_bytes") or 0),
                            compute_units=int(self.info["compute_units"]),
                            global_mem_bytes=int(self.info.get("global_mem_bytes") or 0),
                            max_alloc_bytes=int(self.info.get("global_mem_bytes") or 0))

    def working_set_bytes(self, kernel: str, level: str) -> int:
        return default_working_set_bytes(self.caches, kernel, level, host_available_bytes=mem_available_bytes())

    def load(self, path: str, name: str) -> Any:
        with self.cp.cuda.Device(self.index):
            return self.cp.RawModule(path=path).get_function(name)

    # --- the vendor's compiler: a driver's device class fills these in -------------------------------------
    compiler = ""                 #: "nvcc", "hipcc"
    unit_word = "SMs"             #: what a compute unit is called

    def find_compiler(self) -> str | None:
        raise NotImplementedError

    def check_arch(self, arch: str) -> str:
        raise NotImplementedError

    def compile(self, desc: GpuKernelDesc, spec: KernelSpec, arch: str, out_dir: str
                ) -> tuple[str, dict[str, Any], str]:
        """Build ``desc`` for ``arch`` in ``out_dir``: the loadable file, what the row records of the build, and
        why it cannot be used ("" when it can: a kernel that spills would measure the spills)."""
        raise NotImplementedError

    def check_compiler(self) -> None:
        """The device's architecture can be built here (called once the device's ``arch`` is known)."""
        if self.find_compiler() is None:
            raise BackendUnavailableError(f"{self.info['device']} found but {self.compiler} is missing (the "
                                          f"kernels are built with {self.compiler})")
        self.check_arch(self.info["arch"])
        self.summary = f"{self.info['device']} ({self.info['arch']}, {self.info['compute_units']} {self.unit_word})"

    def build(self, desc: GpuKernelDesc, spec: KernelSpec) -> tuple[Any, dict[str, Any]]:
        """Compile in a temporary directory, refuse a build that spills, load it (the files go with the directory
        once the module is loaded)."""
        arch = self.check_arch(str(spec.params.get("arch", self.info["arch"])))
        with tempfile.TemporaryDirectory(prefix=f"archline-{self.lang}-") as out_dir:
            path, info, unusable = self.compile(desc, spec, arch, out_dir)
            if unusable:
                raise BenchError(unusable)
            fn = self.load(path, desc.name)
        return fn, info

    def upload(self, host: np.ndarray) -> Any:
        with self.cp.cuda.Device(self.index):
            return self.cp.asarray(host)

    def alloc(self, like: np.ndarray) -> Any:
        with self.cp.cuda.Device(self.index):
            return self.cp.zeros(like.size, dtype=like.dtype)

    def download(self, buf: Any, host: np.ndarray) -> np.ndarray:
        with self.cp.cuda.Device(self.index):
            host[...] = self.cp.asnumpy(buf).reshape(host.shape)
        return host

    def bind(self, kernel: Any, args: list[Any]) -> Any:
        return kernel, tuple(args)

    def run(self, bound: Any, global_size: int, local_size: int, reps: int) -> Timing:
        fn, args = bound
        cp = self.cp
        rec = Recorder([self.readings] if self.readings is not None else [])
        with cp.cuda.Device(self.index), rec:
            rec.begin("launches")
            start, end = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            for _ in range(reps):
                fn((global_size // local_size,), (local_size,), args)
            end.record()
            end.synchronize()
            window = rec.end("launches")
            time_s = float(cp.cuda.get_elapsed_time(start, end)) * 1e-3
        m = window.meters.get(self.readings.name) if self.readings is not None else None
        extra = window_extra(m.readings) if m is not None else {}
        if not extra:
            why = (self.readings.readings_error if self.readings is not None else "") or "no device readings"
            extra = {"clocks": why}
        return Timing(time_s, None, extra)

    def release(self, bufs: list[Any]) -> None:
        bufs.clear()


class CupyDriver:
    """The driver of a cupy build: open the device ``--device`` names. ``name`` (the back end), ``extra`` (the pip
    extra with this vendor's cupy) and ``label`` (its word for a device: "CUDA", "HIP") with the device class."""

    offer = Offer(cache_levels=("shared", "l2", "mem"), chase_walkers=(1, 1024))
    warmup_s = 0.5

    def __init__(self, device_class: type[CupyDevice], name: str, extra: str, label: str) -> None:
        self.device_class, self.name, self.extra, self.label = device_class, name, extra, label

    def open(self, device: str | None) -> CupyDevice:
        cp = import_cupy(self.extra)
        return self.device_class(cp, pick_index(cp, device, self.label))
