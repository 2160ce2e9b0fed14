"""The GPU sweeps' points and the one parser from a sweep point's parameters to a launch shape."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from archline.bench.errors import BenchError
from archline.bench.gpu.desc import GpuKernelDesc, fma_fraction
from archline.bench.gpu.shape import _TYPES

# ---------------------------------------------------------------------------------------------------------------
# sweep points and spec -> (description, launch geometry): shared by the OpenCL and CUDA back ends

INTENSITY_MIN_FLOP_PER_BYTE = 0.25
INTENSITY_MAX_FLOP_PER_BYTE = 64.0
CACHE_TARGET_BYTES = 256 << 20     # bytes read per launch of a cache kernel (a few ms even at 100 GB/s)
CHASE_DEFAULT_STEPS = 1 << 20
CHASE_LINE_BYTES = 64              # a chase walks cache lines: at least one per walker


def min_bytes(kernel: str, ws: int, least: int, what: str) -> None:
    """A working set below what ``kernel`` moves at the least (``what``) is refused naming that minimum: the kernel
    would move more than it says (or chase one line), and its row would record a size it did not use."""
    if ws < least:
        raise BenchError(f"--working-set {ws} B is below the {kernel} kernel's minimum on this device, {least} B "
                         f"({what}); give at least {least}")


def fma_per_elem_points(precision: str, quick: bool = False) -> list[Fraction]:
    """FMAs per element for I = 0.25 .. 64 flop/B (int32: int op/B), 4 points per doubling (quick: 1)."""
    s = _TYPES[precision][2]
    lo = Fraction(INTENSITY_MIN_FLOP_PER_BYTE) * s / 2
    hi = Fraction(int(INTENSITY_MAX_FLOP_PER_BYTE)) * s / 2
    steps = (Fraction(1),) if quick else (Fraction(1), Fraction(5, 4), Fraction(3, 2), Fraction(7, 4))
    out: list[Fraction] = []
    base = lo
    while base <= hi:
        out += [base * m for m in steps if base * m <= hi]
        base *= 2
    return out


def intensity_points(precision: str, quick: bool = False) -> list[dict[str, Any]]:
    return [{"fma_per_elem": float(f)} for f in fma_per_elem_points(precision, quick)]


def describe_counts(kernel: str, precision: str, level: str) -> dict[str, str]:
    """Declared work per element, as `archline bench list` prints it (likwid-bench style)."""
    s = 8 if precision == "dp" else 4
    if kernel in ("intensity", "int"):
        return {"flops_per_elem": "2F", "bytes_per_elem": f"{s}"}
    if kernel == "cache":
        return {"flops_per_elem": "1 add", "bytes_per_elem": f"{s} ({level})"}
    return {"flops_per_elem": "0", "bytes_per_elem": "1 random access (4)"}


def cache_points(quick: bool = False) -> list[tuple[str, dict[str, Any]]]:
    """Every level, also with --quick (what `archline bench list` shows runnable is what a quick run measures;
    a point is a few launches of CACHE_TARGET_BYTES)."""
    return [(lv, {}) for lv in ("shared", "l1", "l2", "mem")]


@dataclass(frozen=True)
class Geometry:
    """Device-tuned defaults a back end passes to parse_spec (the spec's params override each)."""

    global_size: int
    local_size: int
    vector_width: int
    chains: int
    layout: str
    compute_units: int
    is_cpu: bool


def parse_spec(kernel: str, precision: str, level: str, params: dict[str, Any], geo: Geometry,
               default_ws_bytes: Any, local_mem_bytes: int) -> tuple[GpuKernelDesc, int, int, int, int]:
    """-> (description, global_size, local_size, rounds, n_elems of the input buffer).

    params (all optional): fma_per_elem, working_set_bytes, vector_width, chains, layout, global_size, local_size,
    rounds (chase: steps), local_bytes (shared)."""
    known = {"fma_per_elem", "working_set_bytes", "vector_width", "chains", "layout", "global_size", "local_size",
             "rounds", "steps", "local_bytes", "seed", "warmup_s", "arch"}
    unknown = set(params) - known
    if unknown:
        raise BenchError(f"unknown kernel parameter(s) {sorted(unknown)} (known: {sorted(known)})")
    w = int(params.get("vector_width", geo.vector_width))
    lsz = int(params.get("local_size", geo.local_size))
    gsz = int(params.get("global_size", geo.global_size))
    layout = str(params.get("layout", geo.layout))
    if lsz < 1 or gsz < 1 or gsz % lsz:
        raise BenchError(f"global_size {gsz} must be a positive multiple of local_size {lsz}")
    s = _TYPES[precision][2]
    if kernel == "chase":
        walkers = int(params.get("chains", 1))
        if walkers < 1:
            raise BenchError("chase needs chains >= 1")
        if "global_size" in params:
            if walkers % gsz:
                raise BenchError(f"chains={walkers} must be a multiple of global_size={gsz}")
            per = walkers // gsz
        elif geo.is_cpu and walkers % geo.compute_units == 0:
            # walkers share a core: memory-level parallelism
            gsz, per = geo.compute_units, walkers // geo.compute_units
        elif geo.is_cpu:
            gsz, per = 1, walkers
        else:
            gsz, per = walkers, 1                                       # one walker per GPU thread
        if "local_size" not in params:   # GPUs: whole warps of walkers where the count allows; CPUs: 1
            lsz = 1 if geo.is_cpu else max(x for x in (1, 32, 64, 128, 256) if x <= geo.local_size and gsz % x == 0)
        if gsz % lsz:
            lsz = 1
        desc = GpuKernelDesc("chase", "int32", level, chains=per)
        ws = int(params.get("working_set_bytes", default_ws_bytes(level)))
        min_bytes("chase", ws, CHASE_LINE_BYTES * gsz * per, f"one {CHASE_LINE_BYTES}-byte line per walker")
        n = max(ws // 4, gsz * per)
        steps = int(params.get("steps", params.get("rounds", CHASE_DEFAULT_STEPS)))
        if steps < 1:
            raise BenchError("chase needs steps >= 1")
        return desc, gsz, lsz, steps, n
    chains = int(params.get("chains", geo.chains))
    if kernel in ("intensity", "int"):
        if level != "mem":
            raise BenchError(f"the {kernel} kernel streams from memory: level 'mem', not '{level}'")
        fn, fd = fma_fraction(params.get("fma_per_elem", 1))
        desc = GpuKernelDesc(kernel, precision, "mem", fma_num=fn, elems=fd, vector_width=w, chains=chains,
                             layout=layout)
        ws = int(params.get("working_set_bytes", default_ws_bytes("mem")))
        per_round = desc.vectors_per_round * gsz * w
        min_bytes(kernel, ws, per_round * s, "one round of every work-item's vectors")
        rounds = int(params.get("rounds", max(1, ws // s // per_round)))
        return desc, gsz, lsz, rounds, rounds * per_round
    if kernel != "cache":
        raise BenchError(f"unknown kernel '{kernel}'")
    if level == "shared":
        lb = int(params.get("local_bytes", min(16 << 10, local_mem_bytes // 2)))
        le = 1 << max((lb // (w * s)).bit_length() - 1, 0)
        if le * w * s > local_mem_bytes:
            raise BenchError(f"local_bytes {lb} exceeds the device's local memory ({local_mem_bytes} B)")
        desc = GpuKernelDesc("cache", precision, "shared", vector_width=w, chains=chains, layout=layout,
                             local_elems=le)
        n = (gsz // lsz) * le * w
    else:
        desc = GpuKernelDesc("cache", precision, level, vector_width=w, chains=chains, layout=layout)
        ws = int(params.get("working_set_bytes", default_ws_bytes(level)))
        min_bytes("cache", ws, w * s, "one vector")
        nvec = 1 << max((ws // (w * s)).bit_length() - 1, 0)
        n = nvec * w
    rounds = int(params.get("rounds", max(1, CACHE_TARGET_BYTES // (chains * gsz * w * s))))
    return desc, gsz, lsz, rounds, n
