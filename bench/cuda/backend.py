"""CUDA back end: the kernels of archline.bench.gpu_kernels built by nvcc, launched through cupy (optional extra).

Timing uses CUDA events around the ``reps`` launches; a thread samples the SM and memory clocks (and power,
temperature) through NVML while they run.

NOT YET RUN ON A GPU: this path was written on a machine without an NVIDIA GPU or cupy. What is verified here
(tests/gpu_kernels/test_cuda_*.py) is that every kernel builds with nvcc for each supported architecture and that
its PTX/SASS holds the declared FMAs and loads per loop trip with no spills. The launch, event timing, NVML
sampling and checksum code below has not executed yet: treat its first GPU run as a test.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from typing import Any

import numpy as np

from archline.bench.cuda import nvcc
from archline.bench.errors import BackendUnavailableError, BenchError, UnsupportedError
from archline.bench.gpu_ceiling_kernels import (
    CEILING_KERNELS,
    CEILING_SWEEPS,
    CeilingKernelDesc,
    ceiling_describe,
    ceiling_points,
    exact_check,
    parse_ceiling_spec,
)
from archline.bench.gpu_kernels import (
    CONST_C,
    INT_C,
    INT_SEED,
    SEED,
    Geometry,
    GpuKernelDesc,
    cache_points,
    cache_strides,
    chase_starts,
    describe_counts,
    intensity_points,
    parse_spec,
)
from archline.bench.kernels import Counts, KernelSpec, RunResult

NAME = "cuda"


def _cupy() -> Any:
    try:
        import cupy
    except ImportError:
        raise BackendUnavailableError("cupy is not installed (pip install 'archline[cuda]')") from None
    return cupy


def device_count() -> int:
    cp = _cupy()
    try:
        return int(cp.cuda.runtime.getDeviceCount())
    except Exception as e:   # cudaErrorNoDevice / InsufficientDriver / no libcuda
        raise BackendUnavailableError(f"no CUDA device: {e}") from None


def pick_device(device: str | None) -> int:
    n = device_count()
    if n == 0:
        raise BackendUnavailableError("no CUDA device found")
    if device is None:
        return 0
    cp = _cupy()
    if device.isdigit():
        if int(device) >= n:
            raise BackendUnavailableError(f"CUDA device {device} absent (have {n})")
        return int(device)
    for i in range(n):
        name = cp.cuda.runtime.getDeviceProperties(i)["name"]
        name = name.decode() if isinstance(name, bytes) else str(name)
        if device.lower() in name.lower():
            return i
    raise BackendUnavailableError(f"no CUDA device matches '{device}'")


def device_info(index: int) -> dict[str, Any]:
    cp = _cupy()
    p = cp.cuda.runtime.getDeviceProperties(index)
    name = p["name"].decode() if isinstance(p["name"], bytes) else str(p["name"])
    return {
        "device": name,
        "device_index": index,
        "arch": f"sm_{p['major']}{p['minor']}",
        "compute_units": int(p["multiProcessorCount"]),
        "l2_bytes": int(p.get("l2CacheSize", 0)),
        "shared_per_block_bytes": int(p.get("sharedMemPerBlock", 48 << 10)),
        "global_mem_bytes": int(p.get("totalGlobalMem", 0)),
        "driver_version": int(cp.cuda.runtime.driverGetVersion()),
        "runtime_version": int(cp.cuda.runtime.runtimeGetVersion()),
        "is_gpu": True,
    }


class NvmlSampler:
    """Samples SM/memory clocks, power and temperature every period_s in a thread while a region runs."""

    def __init__(self, index: int, period_s: float = 0.01) -> None:
        self.period_s = period_s
        self.samples: list[tuple[float, float, float, float, float]] = []
        self.reason = ""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        from archline.powermon.counters.nvml import load_nvml  # NVML is initialised in one place

        try:
            self._nv = load_nvml()
            self._h = self._nv.nvmlDeviceGetHandleByIndex(index)
        except Exception as e:
            self._nv = None
            self.reason = str(e) if str(e).startswith("NVML") else f"NVML unavailable: {e}"

    def _loop(self) -> None:
        nv = self._nv
        while not self._stop.is_set():
            try:
                sm = nv.nvmlDeviceGetClockInfo(self._h, nv.NVML_CLOCK_SM)
                mem = nv.nvmlDeviceGetClockInfo(self._h, nv.NVML_CLOCK_MEM)
                pw = nv.nvmlDeviceGetPowerUsage(self._h) / 1000.0
                tc = nv.nvmlDeviceGetTemperature(self._h, nv.NVML_TEMPERATURE_GPU)
                self.samples.append((time.perf_counter(), float(sm), float(mem), float(pw), float(tc)))
            except Exception as e:  # keep the run; say why the clocks are missing
                self.reason = f"NVML read failed: {e}"
                return
            self._stop.wait(self.period_s)

    def __enter__(self) -> NvmlSampler:
        if self._nv is not None:
            self._thread = threading.Thread(target=self._loop, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join()

    def summary(self) -> dict[str, Any]:
        if not self.samples:
            return {"nvml": self.reason or "no samples"}
        a = np.array(self.samples)
        return {
            "core_mhz": float(np.median(a[:, 1])), "core_mhz_min": float(a[:, 1].min()),
            "core_mhz_max": float(a[:, 1].max()), "mem_mhz": float(np.median(a[:, 2])),
            "power_w_mean": float(a[:, 3].mean()), "temp_c_max": float(a[:, 4].max()),
            "nvml_samples": len(self.samples),
        }


def gpu_geometry(info: dict[str, Any], kernel: str, precision: str) -> Geometry:
    """Occupancy defaults for NVIDIA GPUs: 256 threads a block, 8 blocks per SM resident, 2-wide vector loads."""
    sms = int(info["compute_units"])
    lsz = 256
    w = 2
    chains = 4 if kernel in ("intensity", "int") else 2
    return Geometry(sms * 8 * lsz, lsz, w, chains, "interleaved", sms, False)


def default_working_set_bytes(info: dict[str, Any], level: str) -> int:
    l2 = int(info.get("l2_bytes") or (4 << 20))
    if level == "mem":
        return int(min(max(1 << 30, 16 * l2), info.get("global_mem_bytes", 8 << 30) // 4))
    if level == "l2":
        return 1 << max((l2 // 2).bit_length() - 1, 16)
    if level == "l1":
        return 16 << 10
    raise BenchError(f"no default working set for level {level} on CUDA")


class CudaPrepared:
    def __init__(self, spec: KernelSpec, desc: GpuKernelDesc, index: int, info: dict[str, Any], gsz: int,
                 lsz: int, rounds: int, host: np.ndarray, args: list[Any], cubin_path: str, warmup_s: float) -> None:
        cp = _cupy()
        self._cp = cp
        self.spec, self.desc = spec, desc
        self.index = index
        self.global_size, self.local_size, self.rounds = gsz, lsz, rounds
        self.counts_per_rep: Counts = desc.counts(gsz, rounds, lsz, host.size)
        self._host = host
        self._warmup_s = warmup_s
        self._warm = False
        self._expected: np.ndarray | None = None
        with cp.cuda.Device(index):
            self._in = cp.asarray(host)
            out_n = desc.chains * gsz * (1 if desc.kernel == "chase" else desc.vector_width)
            self._out = cp.zeros(out_n, dtype=np.uint32 if desc.kernel == "chase" else desc.dtype)
            self._mod = cp.RawModule(path=cubin_path)
            self._fn = self._mod.get_function(desc.name)
            self._args = tuple([self._in, self._out, *[cp.asarray(a) if isinstance(a, np.ndarray) else a
                                                        for a in args]])
        self.info = dict(info)
        self.info.update(global_size=gsz, local_size=lsz, rounds=rounds, vector_width=desc.vector_width,
                         chains=desc.chains, layout=desc.layout, kernel_name=desc.name,
                         source_sha=desc.source_hash("cuda"), input_bytes=int(host.nbytes))

    def _launch(self) -> None:
        self._fn((self.global_size // self.local_size,), (self.local_size,), self._args)

    def warm_up(self) -> float:
        cp = self._cp
        t_end = time.perf_counter() + self._warmup_s
        with cp.cuda.Device(self.index):
            while True:
                s, e = cp.cuda.Event(), cp.cuda.Event()
                s.record()
                self._launch()
                e.record()
                e.synchronize()
                last = cp.cuda.get_elapsed_time(s, e) * 1e-3
                if time.perf_counter() >= t_end:
                    break
        self._warm = True
        self.info["launch_time_s"] = last
        return float(last)

    def reps_for(self, min_time_s: float) -> int:
        t = self.info.get("launch_time_s") or self.warm_up()
        return max(1, int(np.ceil(min_time_s / max(t, 1e-9))))

    def run(self, reps: int) -> RunResult:
        if reps < 1:
            raise BenchError(f"reps must be >= 1, got {reps}")
        cp = self._cp
        if not self._warm:
            self.warm_up()
        with cp.cuda.Device(self.index), NvmlSampler(self.index) as nv:
            start, end = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            for _ in range(reps):
                self._launch()
            end.record()
            end.synchronize()
            time_s = cp.cuda.get_elapsed_time(start, end) * 1e-3
            got = cp.asnumpy(self._out)
        if self._expected is None:
            self._expected = self.desc.reference(self._host, self.global_size, self.rounds,
                                                 self.local_size).reshape(-1)
        exp = self._expected
        if getattr(self.desc, "exact_checksum", False):
            ok = exact_check(got, exp)[0]
        elif self.desc.precision == "int32" or self.desc.kernel == "chase":
            ok = bool(np.array_equal(got, exp))
        else:
            tol = (64 * 20.0 if self.desc.kernel == "intensity" else 4.0) * float(np.finfo(self.desc.dtype).eps)
            ok = bool(np.all(np.abs(got.astype(np.float64) - exp) <= tol * (1.0 + np.abs(exp.astype(np.float64)))))
        extra = dict(self.info)
        extra.update(nv.summary())
        if "core_mhz" in extra:     # the runner's rows carry it as core_mhz
            extra["effective_clock_hz"] = extra["core_mhz"] * 1e6
        extra.update(timer="cuda-events", checksum=float(got.astype(np.float64).sum()),
                     checksum_ref=float(exp.astype(np.float64).sum()))
        if self.desc.kernel == "chase":   # every walker's steps are dependent: time per step = latency
            extra["ns_per_access"] = time_s / (reps * self.rounds) * 1e9
        return RunResult(time_s=float(time_s), reps=reps, counts=self.counts_per_rep.scaled(reps), checksum_ok=ok,
                         extra=extra)

    def close(self) -> None:
        self._in = self._out = None


class CudaBackend:
    name = NAME

    def availability(self) -> tuple[bool, str]:
        try:
            n = device_count()
        except BenchError as e:
            return False, str(e)
        if n == 0:
            return False, "no CUDA device found"
        info = device_info(0)
        if nvcc.find_nvcc() is None:
            return False, f"{info['device']} found but nvcc is missing (the kernels are built with nvcc)"
        try:
            nvcc.check_arch(info["arch"])
        except UnsupportedError as e:
            return False, str(e)
        return True, f"{info['device']} ({info['arch']}, {info['compute_units']} SMs)"

    def describe(self) -> list[dict[str, Any]]:
        ok, why = self.availability()
        variants = [("intensity", "sp", "mem"), ("intensity", "dp", "mem"), ("int", "int32", "mem")]
        variants += [("cache", p, lv) for p in ("sp", "dp") for lv in ("shared", "l2", "mem")]
        variants += [("chase", "int32", lv) for lv in ("l2", "mem")]
        return [{"name": k, "precision": p, "level": lv, "available": ok, "reason": "" if ok else why,
                 "backend": NAME, **describe_counts(k, p, lv)} for k, p, lv in variants] + \
            ceiling_describe(NAME, ok, why)

    def sweep(self, kernel: str, precision: str, *, quick: bool = False) -> list[KernelSpec]:
        if kernel in CEILING_SWEEPS:
            return ceiling_points(NAME, kernel, precision, quick)
        if kernel in ("intensity", "int"):
            return [KernelSpec(NAME, kernel, precision, "mem", p) for p in intensity_points(precision, quick)]
        if kernel == "cache":
            return [KernelSpec(NAME, "cache", precision, lv, p) for lv, p in cache_points(quick) if lv != "l1"]
        if kernel == "chase":
            return [KernelSpec(NAME, "chase", "int32", lv, {"chains": c})
                    for lv in ("l2", "mem") for c in ((1,) if quick else (1, 1024))]
        raise BenchError(f"unknown kernel '{kernel}' for backend cuda")

    def prepare(self, spec: KernelSpec, device: str | None = None) -> CudaPrepared:
        index = pick_device(device)
        info = device_info(index)
        params = dict(spec.params)
        arch = nvcc.check_arch(str(params.get("arch", info["arch"])))
        geo = gpu_geometry(info, spec.kernel, spec.precision)
        ws_bytes = lambda lv: default_working_set_bytes(info, lv)  # noqa: E731
        if spec.kernel in CEILING_KERNELS:
            desc, gsz, lsz, rounds, n = parse_ceiling_spec(spec.kernel, spec.precision, params, geo, ws_bytes)
        else:
            desc, gsz, lsz, rounds, n = parse_spec(spec.kernel, spec.precision, spec.level, params, geo, ws_bytes,
                                                   int(info["shared_per_block_bytes"]))
        rng = np.random.default_rng(int(params.get("seed", 0x5EED)))
        host = desc.make_input(n, rng)
        args: list[Any]
        if isinstance(desc, CeilingKernelDesc):
            args = desc.scalar_args(gsz, rounds, n)
        elif desc.kernel in ("intensity", "int"):
            if desc.precision == "int32":
                args = [np.uint32(INT_C), np.uint32(INT_SEED), np.uint32(rounds)]
            else:
                args = [desc.dtype.type(CONST_C), desc.dtype.type(SEED), np.uint32(rounds)]
        elif desc.kernel == "cache":
            if desc.level == "shared":
                args = [np.uint32(desc.local_elems - 1), np.uint32(rounds), np.uint32(0), np.uint32(0)]
            else:
                nvec = n // desc.vector_width
                s1, s2 = cache_strides(desc, gsz, nvec)
                args = [np.uint32(nvec - 1), np.uint32(rounds), np.uint32(s1), np.uint32(s2)]
        else:
            args = [chase_starts(n, gsz * desc.chains), np.uint32(rounds)]
        # L2 kernels bypass L1 as in the thesis (-Xptxas -dlcm=cg); others use the default caching
        flags = ["-Xptxas", "-dlcm=cg"] if spec.level == "l2" else []
        out_dir = tempfile.mkdtemp(prefix="archline-cuda-")
        build = nvcc.compile_module([desc], arch, out_dir=out_dir, extra_flags=flags, sass=False)
        rep = nvcc.inspect_module(build, [desc])[desc.name]
        if rep.spill_stores > 0:
            raise BenchError(f"{desc.name} spills {rep.spill_stores} B on {arch}: lower chains or vector_width")
        major, minor = nvcc.nvcc_version()
        info.update(nvcc=f"{major}.{minor}", nvcc_flags=" ".join(flags), registers=rep.registers,
                    ptx_loop_fma=rep.ptx_loop_fma, working_set_bytes=int(n * desc.scalar_bytes),
                    compiler=f"nvcc {major}.{minor} -arch={arch}")
        if desc.kernel in ("intensity", "int"):
            info["fma_per_elem"] = str(desc.fma_per_elem)
            info["intensity_flop_per_byte"] = desc.intensity_flop_per_byte
        pk = CudaPrepared(spec, desc, index, info, gsz, lsz, rounds, host, args, build.cubin_path,
                          float(params.get("warmup_s", 0.5)))
        try:
            os.remove(os.path.join(out_dir, "kernels.cu"))
        except OSError:
            pass
        return pk
