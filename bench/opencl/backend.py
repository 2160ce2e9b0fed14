"""OpenCL back end through pyopencl: any ICD (PoCL in CI), the kernels of archline.bench.gpu_kernels.

``--device`` picks a device as ``P:D`` (platform and device index, as ``clinfo -l`` lists them) or as a
case-insensitive substring of the device name; the default is the first GPU, else the first device.
Kernels are timed with OpenCL profiling events (device time from the first launch's start to the last one's end).
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np

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
        raise BackendUnavailableError(f"no OpenCL device matches '{device}' (have: {names})")
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


def _pow2_floor(x: int) -> int:
    return 1 << max(int(x).bit_length() - 1, 0)


def default_working_set_bytes(dev: Any, kernel: str, level: str) -> int:
    cache = int(dev.global_mem_cache_size) or (4 << 20)
    max_alloc = int(dev.max_mem_alloc_size)
    cap = min(max_alloc, int(dev.global_mem_size) // 4)
    if level == "mem" and kernel == "chase":   # 2x the last cache: misses everywhere, a table built in seconds
        return min(max(64 << 20, 2 * cache), cap)
    if level == "mem":
        return min(max(256 << 20, 8 * cache), cap)
    is_cpu = bool(dev.type & _cl().device_type.CPU)
    if level == "l1":
        return 16 << 10
    if level == "l2":
        return (256 << 10) if is_cpu else _pow2_floor(max(cache // 2, 64 << 10))
    if level == "l3":
        return _pow2_floor(max(cache // 2, 1 << 20))
    raise BenchError(f"no default working set for level {level}")


class OpenCLPrepared:
    """One kernel variant compiled, its buffers allocated and filled with random data on one device."""

    def __init__(self, spec: KernelSpec, desc: GpuKernelDesc, ctx: Any, queue: Any, platform: Any, dev: Any,
                 global_size: int, local_size: int, rounds: int, host_input: np.ndarray,
                 extra_args: list[Any], info: dict[str, Any], warmup_s: float, seed: int) -> None:
        cl = _cl()
        self.spec = spec
        self.desc = desc
        self._cl = cl
        self._ctx, self._queue = ctx, queue
        self.global_size, self.local_size, self.rounds = global_size, local_size, rounds
        self.counts_per_rep: Counts = desc.counts(global_size, rounds, local_size, host_input.size)
        self._host_input = host_input
        self._warmup_s = warmup_s
        self._warm = False
        self._expected: np.ndarray | None = None
        mf = cl.mem_flags
        self._in = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=host_input)
        out_elems = desc.chains * global_size * (1 if desc.kernel == "chase" else desc.vector_width)
        self._out_host = np.zeros(out_elems, dtype=np.uint32 if desc.kernel == "chase" else desc.dtype)
        self._out = cl.Buffer(ctx, mf.WRITE_ONLY, size=self._out_host.nbytes)
        src = desc.opencl_source()
        try:
            with warnings.catch_warnings():     # PoCL's notes on wide-vector ABIs are not the user's business
                warnings.simplefilter("ignore")
                self._prg = cl.Program(ctx, src).build(options=["-cl-std=CL1.2", "-w"])
        except cl.Error as e:
            raise BenchError(f"OpenCL build of {desc.name} failed on {dev.name}: {e}") from None
        self._kernel = getattr(self._prg, desc.name)
        self._args: list[Any] = [self._in, self._out, *extra_args]
        self._keep: list[Any] = []
        self.info = dict(info)
        self.info.update(
            global_size=global_size, local_size=local_size, rounds=rounds, vector_width=desc.vector_width,
            chains=desc.chains, layout=desc.layout, kernel_name=desc.name, source_sha=desc.source_hash(),
            build_options="-cl-std=CL1.2 -w", input_bytes=int(host_input.nbytes), rng_seed=seed,
        )
        if desc.kernel in ("intensity", "int"):
            self.info["fma_per_elem"] = str(desc.fma_per_elem)
            self.info["intensity_flop_per_byte"] = desc.intensity_flop_per_byte
        for i, a in enumerate(self._args):
            self._kernel.set_arg(i, a)

    # -- running ---------------------------------------------------------------------------------------------
    def _launch(self) -> Any:
        return self._cl.enqueue_nd_range_kernel(
            self._queue, self._kernel, (self.global_size,), (self.local_size,)
        )

    def warm_up(self) -> float:
        """Launch until warmup_s has passed (clock ramps, first-touch, JIT); returns one launch's device time."""
        t_end = time.perf_counter() + self._warmup_s
        last = 0.0
        while True:
            ev = self._launch()
            ev.wait()
            last = (ev.profile.end - ev.profile.start) * 1e-9
            if time.perf_counter() >= t_end:
                break
        self._warm = True
        self.info["launch_time_s"] = last
        return last

    def reps_for(self, min_time_s: float) -> int:
        """Repetitions needed for a timed region of at least min_time_s."""
        t = self.info.get("launch_time_s") or self.warm_up()
        return max(1, int(np.ceil(min_time_s / max(t, 1e-9))))

    def expected(self) -> np.ndarray:
        if self._expected is None:
            self._expected = self.desc.reference(
                self._host_input, self.global_size, self.rounds, self.local_size
            ).reshape(-1)
        return self._expected

    def check(self) -> tuple[bool, dict[str, Any]]:
        self._cl.enqueue_copy(self._queue, self._out_host, self._out).wait()
        exp = self.expected()
        got = self._out_host
        if getattr(self.desc, "exact_checksum", False):
            return exact_check(got, exp)
        if self.desc.precision == "int32" or self.desc.kernel == "chase":
            ok = bool(np.array_equal(got, exp))
            return ok, {"checksum": int(got.astype(np.uint64).sum()), "checksum_ref": int(exp.astype(np.uint64).sum()),
                        "mismatches": int(np.count_nonzero(got != exp))}
        g64, e64 = got.astype(np.float64), exp.astype(np.float64)
        if self.desc.kernel == "intensity":
            # contractive recurrence: rounding differences stay within a few ulps of the bound 1/(1-0.95)
            tol = 64 * float(np.finfo(self.desc.dtype).eps) * 20.0
            err = np.abs(g64 - e64)
            ok = bool(np.all(err <= tol * (1.0 + np.abs(e64))))
        else:
            # same order of additions as the device: bit-exact unless a denormal was flushed
            err = np.abs(g64 - e64)
            ok = bool(np.all(err <= 4 * float(np.finfo(self.desc.dtype).eps) * (1.0 + np.abs(e64))))
        return ok, {"checksum": float(g64.sum()), "checksum_ref": float(e64.sum()),
                    "max_abs_err": float(err.max()) if err.size else 0.0}

    def run(self, reps: int) -> RunResult:
        if reps < 1:
            raise BenchError(f"reps must be >= 1, got {reps}")
        if not self._warm:
            self.warm_up()
        t0 = time.perf_counter()
        evs = [self._launch() for _ in range(reps)]
        evs[-1].wait()
        self._queue.finish()
        host_s = time.perf_counter() - t0
        dev_s = (evs[-1].profile.end - evs[0].profile.start) * 1e-9
        launches = [(e.profile.end - e.profile.start) * 1e-9 for e in evs]
        ok, chk = self.check()
        extra = dict(self.info)
        extra.update(chk)
        extra.update(host_time_s=host_s, min_launch_time_s=min(launches), timer="opencl-profiling-events")
        if self.desc.kernel == "chase":   # every walker's steps are dependent: time per step = latency
            extra["ns_per_access"] = dev_s / (reps * self.rounds) * 1e9
        return RunResult(time_s=dev_s, reps=reps, counts=self.counts_per_rep.scaled(reps), checksum_ok=ok,
                         extra=extra)

    def close(self) -> None:
        for b in (self._in, self._out):
            try:
                b.release()
            except Exception:
                pass


class OpenCLBackend:
    name = NAME

    def availability(self) -> tuple[bool, str]:
        try:
            key, p, d = pick_device(None)
        except BenchError as e:
            return False, str(e)
        return True, f"{d.name.strip()} [{key}] ({p.version.strip()}; driver {d.driver_version.strip()})"

    def describe(self) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        try:
            _, _, dev = pick_device(None)
            ok, why = True, ""
            fp64 = has_fp64(dev)
        except BenchError as e:
            ok, why, fp64 = False, str(e), False
        variants = [("intensity", "sp", "mem"), ("intensity", "dp", "mem"), ("int", "int32", "mem")]
        variants += [("cache", p, lv) for p in ("sp", "dp") for lv in ("shared", "l1", "l2", "mem")]
        variants += [("chase", "int32", lv) for lv in ("l2", "mem")]
        for kernel, prec, level in variants:
            avail, reason = ok, why
            if ok and prec == "dp" and not fp64:
                avail, reason = False, "unsupported: the device has no fp64 (cl_khr_fp64)"
            rows.append({"name": kernel, "precision": prec, "level": level, "available": avail,
                         "reason": reason, "backend": NAME, **describe_counts(kernel, prec, level)})
        return rows + ceiling_describe(NAME, ok, why, fp64)

    def sweep(self, kernel: str, precision: str, *, quick: bool = False) -> list[KernelSpec]:
        if kernel in CEILING_SWEEPS:
            return ceiling_points(NAME, kernel, precision, quick)
        if kernel in ("intensity", "int"):
            return [KernelSpec(NAME, kernel, precision, "mem", p) for p in intensity_points(precision, quick)]
        if kernel == "cache":
            return [KernelSpec(NAME, "cache", precision, lv, p) for lv, p in cache_points(quick)]
        if kernel == "chase":
            return [KernelSpec(NAME, "chase", "int32", lv, {"chains": c})
                    for lv in ("l2", "mem") for c in ((1,) if quick else (1, 32))]
        raise BenchError(f"unknown kernel '{kernel}' for backend opencl")

    def prepare(self, spec: KernelSpec, device: str | None = None) -> OpenCLPrepared:
        cl = _cl()
        key, platform, dev = pick_device(device)
        if spec.precision == "dp" and not has_fp64(dev):
            raise UnsupportedError(f"unsupported: {dev.name.strip()} has no fp64 (cl_khr_fp64); dp kernels cannot run")
        params = dict(spec.params)
        ws = tuned_work_size(dev, spec.kernel, spec.precision, spec.level)
        ws_bytes = lambda lv: default_working_set_bytes(dev, spec.kernel, lv)  # noqa: E731
        if spec.kernel in CEILING_KERNELS:
            desc, gsz, lsz, rounds, n_elems = parse_ceiling_spec(spec.kernel, spec.precision, params, ws, ws_bytes)
        else:
            desc, gsz, lsz, rounds, n_elems = parse_spec(spec.kernel, spec.precision, spec.level, params, ws,
                                                         ws_bytes, int(dev.local_mem_size))
        seed = int(params.get("seed", 0x5EED))
        rng = np.random.default_rng(seed)
        host = desc.make_input(n_elems, rng)
        if host.nbytes > int(dev.max_mem_alloc_size):
            raise BenchError(
                f"buffer of {host.nbytes} B exceeds the device's max allocation {dev.max_mem_alloc_size} B"
            )
        extra_args: list[Any] = []
        if isinstance(desc, CeilingKernelDesc):
            extra_args = desc.scalar_args(gsz, rounds, n_elems)
        elif desc.kernel in ("intensity", "int"):
            if desc.precision == "int32":
                extra_args = [np.uint32(INT_C), np.uint32(INT_SEED)]
            else:
                extra_args = [desc.dtype.type(CONST_C), desc.dtype.type(SEED)]
            extra_args.append(np.uint32(rounds))
        elif desc.kernel == "cache":
            if desc.level == "shared":
                extra_args = [np.uint32(desc.local_elems - 1), np.uint32(rounds), np.uint32(0), np.uint32(0)]
            else:
                nvec = n_elems // desc.vector_width
                s1, s2 = cache_strides(desc, gsz, nvec)
                extra_args = [np.uint32(nvec - 1), np.uint32(rounds), np.uint32(s1), np.uint32(s2)]
        ctx = cl.Context([dev])
        queue = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
        if desc.kernel == "chase":
            starts = chase_starts(n_elems, gsz * desc.chains)
            sbuf = cl.Buffer(ctx, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR, hostbuf=starts)
            extra_args = [sbuf, np.uint32(rounds)]
        info = device_info(platform, dev)
        info["device_key"] = key
        info["working_set_bytes"] = int(n_elems * desc.scalar_bytes)
        warmup_s = float(params.get("warmup_s", 0.2))
        pk = OpenCLPrepared(spec, desc, ctx, queue, platform, dev, gsz, lsz, rounds, host, extra_args, info,
                            warmup_s, seed)
        if desc.kernel == "chase":
            pk._keep.append(extra_args[0])
        return pk
