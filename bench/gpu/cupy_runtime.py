"""Buffers, launches and event timing through cupy: one runtime for the drivers whose kernels cupy loads.

cupy speaks CUDA on NVIDIA builds and HIP on ROCm builds with the same calls (``cupy.cuda.runtime``,
``RawModule``, ``Event``), so the cuda and hip drivers differ only in discovery and compile (nvcc -> cubin,
hipcc -> code object) and share this. Clocks and temperature come from the vendor's powermon device layer
(NVML, AMD SMI), read at the region's edges on the host monotonic clock: no sampling thread of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from archline.bench.errors import BackendUnavailableError
from archline.bench.gpu.core import Timing

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
    """What a cupy-loaded device does the same for both vendors; a driver subclasses it with discovery and build."""

    info: dict[str, Any]

    def __init__(self, cp: Any, index: int, readings: Readings | None) -> None:
        self.cp, self.index, self._readings = cp, index, readings
        self.reading_error = ""

    def load(self, path: str, name: str) -> Any:
        with self.cp.cuda.Device(self.index):
            return self.cp.RawModule(path=path).get_function(name)

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
