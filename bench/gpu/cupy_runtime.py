"""Buffers, launches and event timing through cupy: one runtime for the drivers whose kernels cupy loads.

cupy speaks CUDA on NVIDIA builds and HIP on ROCm builds with the same calls (``cupy.cuda.runtime``,
``RawModule``, ``Event``), so the cuda and hip drivers differ only in discovery and compile (nvcc -> cubin,
hipcc -> code object) and share this. Clocks and temperature come from the vendor's powermon device layer
(NVML, AMD SMI), read at the region's edges on the host monotonic clock: no sampling thread of its own.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from typing import Any

import numpy as np

from archline.bench.errors import BackendUnavailableError, BenchError
from archline.bench.gpu.catalogue import Offer
from archline.bench.gpu.core import Timing
from archline.bench.gpu.desc import GpuKernelDesc
from archline.bench.gpu.points import Geometry
from archline.bench.kernels import KernelSpec

Readings = Callable[[], dict[str, float]]


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
    n = device_count(cp, what)
    if n == 0:
        raise BackendUnavailableError(f"no {what} device found")
    if device is None:
        return 0
    if device.isdigit():
        if int(device) >= n:
            raise BackendUnavailableError(f"{what} device {device} absent (have {n})")
        return int(device)
    for i in range(n):
        if device.lower() in text(cp.cuda.runtime.getDeviceProperties(i)["name"]).lower():
            return i
    raise BackendUnavailableError(f"no {what} device matches '{device}'")


def text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def edge_summary(a: dict[str, float], b: dict[str, float]) -> dict[str, Any]:
    """The readings at the region's two edges as the row carries them (core_mhz is what rows.py reads)."""
    out: dict[str, Any] = {}
    for k in ("core_mhz", "mem_mhz"):
        if k in a and k in b:
            out[k] = 0.5 * (a[k] + b[k])
            out[f"{k}_min"], out[f"{k}_max"] = min(a[k], b[k]), max(a[k], b[k])
    if "core_mhz" in out:
        out["effective_clock_hz"] = out["core_mhz"] * 1e6
    if "temp_c" in a and "temp_c" in b:
        out["temp_c_max"] = max(a["temp_c"], b["temp_c"])
    return out


class CupyDevice:
    """What a cupy-loaded device does the same for both vendors; a driver subclasses it with its architecture
    name, its compiler and ``build``."""

    lang = ""                # "cuda", "hip": the catalogue's source language
    fp64 = True
    blocks_per_cu = 8        # resident work-groups per SM/CU the default launch fills
    local_size = 256
    vector_width = 2         # float2/double2 loads

    def __init__(self, cp: Any, index: int, readings: Readings | None) -> None:
        self.cp, self.index, self._readings = cp, index, readings
        self.reading_error = ""
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

    def geometry(self, kernel: str, precision: str) -> Geometry:
        """Occupancy defaults: local_size work-items a group, blocks_per_cu groups per SM/CU, 2-wide loads."""
        cus = int(self.info["compute_units"])
        chains = 4 if kernel in ("intensity", "int") else 2
        return Geometry(cus * self.blocks_per_cu * self.local_size, self.local_size, self.vector_width, chains,
                        "interleaved", cus, False)

    def working_set_bytes(self, kernel: str, level: str) -> int:
        l2 = int(self.info.get("l2_bytes") or (4 << 20))
        if level == "mem":
            return int(min(max(1 << 30, 16 * l2), (self.info.get("global_mem_bytes") or 8 << 30) // 4))
        if level == "l2":
            return 1 << max((l2 // 2).bit_length() - 1, 16)
        if level == "l1":
            return 16 << 10
        raise BenchError(f"no default working set for level {level} on {self.info['device']}")

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

    def _read(self) -> dict[str, float]:
        if self._readings is None or self.reading_error:
            return {}
        try:
            return self._readings()
        except Exception as e:       # keep the run; the row says why the clocks are missing
            self.reading_error = str(e)
            return {}

    def run(self, bound: Any, global_size: int, local_size: int, reps: int) -> Timing:
        fn, args = bound
        cp = self.cp
        with cp.cuda.Device(self.index):
            r0 = self._read()
            start, end = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            for _ in range(reps):
                fn((global_size // local_size,), (local_size,), args)
            end.record()
            end.synchronize()
            r1 = self._read()
            time_s = float(cp.cuda.get_elapsed_time(start, end)) * 1e-3
        extra = edge_summary(r0, r1) if r0 and r1 else {"clocks": self.reading_error or "no device readings"}
        return Timing(time_s, None, extra)

    def release(self, bufs: list[Any]) -> None:
        bufs.clear()


def layer_readings(open_layer: Callable[[int], Any], index: int) -> Readings | None:
    """Clocks and temperature from powermon's device layer of the vendor (``NvmlGpu.open``, ``AmdSmiGpu.open``);
    None when the layer is not there (the rows say so)."""
    from archline.powermon.errors import MeterError

    try:
        return open_layer(index).readings  # type: ignore[no-any-return]
    except MeterError:
        return None


class CupyDriver:
    """The driver of a cupy build: open the device ``--device`` names. A vendor's driver names itself, its cupy
    extra, its word for a device and its device class."""

    name: str = ""
    extra: str = ""              #: the pip extra with this vendor's cupy
    label: str = ""              #: "CUDA", "HIP"
    device_class: type[CupyDevice] = CupyDevice
    offer = Offer(cache_levels=("shared", "l2", "mem"), chase_walkers=(1, 1024))
    warmup_s = 0.5

    def open(self, device: str | None) -> CupyDevice:
        cp = import_cupy(self.extra)
        return self.device_class(cp, pick_index(cp, device, self.label))  # type: ignore[call-arg]
