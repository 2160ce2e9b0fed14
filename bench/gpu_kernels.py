"""One kernel description -> OpenCL C and CUDA C source, exact counts, and a numpy reference.

Every GPU/OpenCL kernel of archline is a :class:`GpuKernelDesc` (kernels as data, likwid-bench style). The same
description renders OpenCL C (``opencl_source``) and CUDA C (``cuda_source``), declares its exact flop/byte counts
(``counts``), and computes the expected output from the input buffers (``reference``), so the two back ends mean
the same thing and the runner can compare their cost tables.

Kernels (model.md §7):

* ``intensity`` (sp, dp) and ``int`` (int32): stream ``n_elems`` elements once. Every group of ``elems`` loaded
  elements feeds ``fma_num`` multiply-adds into an accumulator, so I = 2 * fma_num / (elems * bytes_per_elem)
  (loads fixed, FMA count varied).  FMA j of a group multiplies by x[j % elems] and adds x[fma_num + j] while
  unused elements remain, else the constant ``c``; every element is used (needs 2 * fma_num >= elems).
  The x values lie in [-0.95, 0.95], so the recurrence acc = acc * x + a is contractive and the reference in
  float64 matches the device to a few ulps whatever the FMA rounding. Limitation of that choice: the final state
  forgets the early rounds, so the sp/dp checksum proves the declared FMA sequence over each lane's last rounds,
  not that every early element was read. The int32 kernel is bit-exact but forgets too (even multipliers shift
  early bits out). The cache kernels (exact sums) and the chase do depend on all of their data, and the CUDA
  PTX/SASS checks show the loads and FMAs of every loop trip.
* ``cache`` at level ``l1``/``l2``/``mem``: every work-item re-reads a global working set of ``working_set_bytes``
  and adds each element into its accumulator (1 add = 1 flop or int op per element read, counted).
* ``cache`` at level ``shared``: each work-group copies ``local_elems`` elements into local/shared memory, then
  re-reads them ``rounds`` times and adds them up.
* ``chase``: ``chains`` work-items follow k = next[k] through one random cycle (Sattolo) of ``n_elems`` uint32
  indices; every step is one dependent random access.

Counts are per launch (one repetition) and derive only from the parameters.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import numpy as np

from archline.bench.errors import BenchError, UnsupportedError
from archline.bench.kernels import Counts

# precision -> (OpenCL scalar, CUDA scalar, bytes per element, numpy dtype)
_TYPES: dict[str, tuple[str, str, int, str]] = {
    "sp": ("float", "float", 4, "float32"),
    "dp": ("double", "double", 8, "float64"),
    "int32": ("uint", "unsigned int", 4, "uint32"),
}
_CUDA_VEC: dict[tuple[str, int], str] = {
    ("sp", 2): "float2", ("sp", 4): "float4", ("dp", 2): "double2",
    ("int32", 2): "uint2", ("int32", 4): "uint4",
}
_LANES = ("x", "y", "z", "w")
CONST_C = 0.5            # the addend when a group has no unused element left
SEED = 0.25              # initial accumulator
INT_C = 0x9E3779B9       # odd constant for the int32 kernel
INT_SEED = 12345
X_BOUND = 0.95           # |x| <= X_BOUND keeps the intensity recurrence contractive


def fma_fraction(fma_per_elem: Any, max_den: int = 8) -> tuple[int, int]:
    """fma_per_elem (float, int, 'n/d' or Fraction) -> (fma_num, elems) with elems <= max_den, exact."""
    try:
        f = Fraction(str(fma_per_elem)) if not isinstance(fma_per_elem, Fraction) else fma_per_elem
    except (ValueError, ZeroDivisionError):
        raise BenchError(f"fma_per_elem must be a number like 4, 0.625 or '5/8', got {fma_per_elem!r}") from None
    g = f.limit_denominator(max_den)
    if g != f or g <= 0:
        raise BenchError(f"fma_per_elem={fma_per_elem} must be a positive multiple of 1/{max_den}")
    if 2 * g.numerator < g.denominator:
        raise BenchError(f"fma_per_elem={fma_per_elem} < 0.5: every loaded element must feed an FMA")
    return g.numerator, g.denominator


@dataclass(frozen=True)
class GpuKernelDesc:
    """One kernel variant: everything the source, the counts and the reference depend on."""

    kernel: str                 # intensity | int | cache | chase
    precision: str              # sp | dp | int32
    level: str = "mem"          # mem | l1 | l2 | shared
    fma_num: int = 1            # intensity/int: multiply-adds per group ...
    elems: int = 1              # ... of this many loaded elements (per lane)
    vector_width: int = 1       # lanes per load (OpenCL vector type / CUDA float2/float4)
    chains: int = 1             # independent accumulators per work-item (chase: number of walkers)
    # interleaved: neighbouring work-items load neighbouring vectors (coalesced, GPUs); blocked: one contiguous
    # range per work-item; streams (intensity/int): each of a work-item's chains x elems loads walks its own
    # contiguous range, so a CPU core keeps several prefetch streams in flight
    layout: str = "interleaved"
    local_elems: int = 0        # shared: vectors held in local memory per work-group (power of two)
    chase_unroll: int = 8       # chase: steps per loop trip

    def __post_init__(self) -> None:
        if self.kernel not in ("intensity", "int", "cache", "chase"):
            raise BenchError(f"unknown GPU kernel '{self.kernel}'")
        if self.precision not in _TYPES:
            raise BenchError(f"unknown precision '{self.precision}' (sp, dp, int32)")
        if (self.kernel == "int") != (self.precision == "int32") and self.kernel in ("int", "intensity"):
            raise BenchError("kernel 'int' runs at precision int32; 'intensity' at sp or dp")
        if self.kernel == "chase" and self.precision != "int32":
            raise BenchError("the pointer chase walks uint32 indices: precision int32")
        if self.vector_width not in (1, 2, 4, 8, 16):
            raise BenchError(f"vector_width must be 1, 2, 4, 8 or 16, got {self.vector_width}")
        if self.chains < 1 or self.elems < 1 or self.fma_num < 1 or 2 * self.fma_num < self.elems:
            raise BenchError(f"bad kernel shape {self}")
        if self.layout not in ("interleaved", "blocked", "streams"):
            raise BenchError(f"layout must be interleaved, blocked or streams, got {self.layout}")
        if self.layout == "streams" and self.kernel not in ("intensity", "int"):
            raise BenchError("layout 'streams' applies to the intensity and int kernels")
        if self.kernel == "cache" and self.level == "shared" and (
            self.local_elems <= 0 or self.local_elems & (self.local_elems - 1)
        ):
            raise BenchError("shared-memory kernel needs local_elems, a power of two")

    # -- naming ----------------------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        """A C identifier unique to the variant (so many variants can share one CUDA module)."""
        if self.kernel in ("intensity", "int"):
            shape = f"f{self.fma_num}e{self.elems}"
        elif self.kernel == "cache":
            shape = f"{self.level}" + (f"{self.local_elems}" if self.level == "shared" else "")
        else:
            shape = f"u{self.chase_unroll}"
        return f"al_{self.kernel}_{self.precision}_{shape}_w{self.vector_width}_c{self.chains}_{self.layout[0]}"

    @property
    def scalar_bytes(self) -> int:
        return _TYPES[self.precision][2]

    @property
    def dtype(self) -> np.dtype[Any]:
        return np.dtype(_TYPES[self.precision][3])

    @property
    def fma_per_elem(self) -> Fraction:
        return Fraction(self.fma_num, self.elems)

    @property
    def intensity_flop_per_byte(self) -> float:
        """Asymptotic intensity of the streaming kernels (loads only): 2 * FMAs per element / bytes per element."""
        return 2.0 * self.fma_num / (self.elems * self.scalar_bytes)

    @property
    def vectors_per_round(self) -> int:
        """Vectors one work-item loads per trip of its round loop."""
        if self.kernel in ("intensity", "int"):
            return self.chains * self.elems
        return self.chains

    def fma_per_trip(self) -> int:
        """Multiply-add instructions (per lane) in one trip of the round loop: what PTX/SASS must contain."""
        return self.fma_num * self.chains if self.kernel in ("intensity", "int") else 0

    # -- sizes -----------------------------------------------------------------------------------------------
    def elems_for(self, global_size: int, rounds: int) -> int:
        """Scalar elements of the input buffer a launch of (global_size, rounds) streams (intensity/int)."""
        return rounds * self.vectors_per_round * global_size * self.vector_width

    def counts(self, global_size: int, rounds: int, local_size: int = 1, n_elems: int = 0) -> Counts:
        """Exact useful work and traffic of one launch."""
        s = self.scalar_bytes
        w = self.vector_width
        out_bytes = global_size * self.chains * w * s if self.kernel != "chase" else global_size * self.chains * 4
        if self.kernel in ("intensity", "int"):
            n = self.elems_for(global_size, rounds)
            ops = 2 * self.fma_num * (n // self.elems)
            return Counts(
                flops_sp=ops if self.precision == "sp" else 0,
                flops_dp=ops if self.precision == "dp" else 0,
                int_ops=ops if self.precision == "int32" else 0,
                bytes_mem=n * s + out_bytes,
            )
        if self.kernel == "cache":
            reads = rounds * self.chains * global_size * w
            adds = {"flops_sp": 0, "flops_dp": 0, "int_ops": 0}
            adds[{"sp": "flops_sp", "dp": "flops_dp", "int32": "int_ops"}[self.precision]] = reads
            if self.level == "shared":
                groups = global_size // local_size
                fill = groups * self.local_elems * w * s
                return Counts(**adds, bytes_shared=reads * s + fill, bytes_mem=fill + out_bytes)
            lvl = {"mem": "bytes_mem", "l1": "bytes_l1", "l2": "bytes_l2", "l3": "bytes_l3"}[self.level]
            by: dict[str, int] = {"bytes_mem": out_bytes}
            by[lvl] = by.get(lvl, 0) + reads * s
            return Counts(**adds, **by)
        # chase: rounds = steps per walker
        return Counts(rand_accesses=global_size * self.chains * rounds, bytes_mem=out_bytes)

    # -- sources ---------------------------------------------------------------------------------------------
    def opencl_source(self) -> str:
        return _render(self, "opencl")

    def cuda_source(self) -> str:
        return _render(self, "cuda")

    def source_hash(self, lang: str = "opencl") -> str:
        return hashlib.sha256(_render(self, lang).encode()).hexdigest()[:12]

    # -- data and reference ----------------------------------------------------------------------------------
    def make_input(self, n_elems: int, rng: np.random.Generator) -> np.ndarray:
        """Random buffer contents (no compressible zeros): x in [-0.95, 0.95], random uint32, or a random cycle."""
        if self.kernel == "chase":
            order = rng.permutation(n_elems).astype(np.uint32)
            nxt = np.empty(n_elems, dtype=np.uint32)
            nxt[order] = np.roll(order, -1)
            return nxt
        if self.precision == "int32":
            return rng.integers(0, 2**32, size=n_elems, dtype=np.uint32)
        x = rng.random(n_elems, dtype=self.dtype.type)      # [0, 1) in the element type: no float64 detour
        x *= self.dtype.type(2 * X_BOUND)
        x -= self.dtype.type(X_BOUND)
        return x

    def reference(self, a: np.ndarray, global_size: int, rounds: int, local_size: int = 1) -> np.ndarray:
        """The expected output buffer (chains x global_size x lanes, as the kernel writes it)."""
        g, w, cc = global_size, self.vector_width, self.chains
        if self.kernel == "chase":
            return _chase_reference(a, g * cc, rounds)
        if self.kernel in ("intensity", "int"):
            v = self.vectors_per_round
            need = rounds * v * g * w
            if a.size < need:
                raise BenchError(f"input holds {a.size} elements, the launch needs {need}")
            if self.layout == "interleaved":
                x = a[:need].reshape(rounds, v, g, w)
            elif self.layout == "streams":
                x = a[:need].reshape(g, v, rounds, w).transpose(2, 1, 0, 3)
            else:
                x = a[:need].reshape(g, rounds, v, w).transpose(1, 2, 0, 3)
            return _stream_reference(self, x)
        if self.level == "shared":
            return _shared_reference(self, a, g, rounds, local_size)
        return _cache_reference(self, a, g, rounds)


def _stream_reference(d: GpuKernelDesc, x: np.ndarray) -> np.ndarray:
    """Each round applies an affine map acc -> M*acc + B per lane; build them for all rounds at once (fma_num
    vectorised passes), then compose them in order with a pairwise tree (log2(rounds) passes).

    int32: exact modulo 2**32 (numpy uint32 wraps). sp/dp: float64, within a few ulps of the device because the
    recurrence is contractive (|x| <= 0.95)."""
    rounds, _, g, w = x.shape
    n, e = d.fma_num, d.elems
    is_int = d.precision == "int32"
    ct = np.uint32 if is_int else np.float64
    if not is_int and rounds > 64:
        x = x[_first_round_that_matters(x.reshape(rounds, d.chains, e, g, w), n, e):]
        rounds = x.shape[0]
    xr: Any = x.reshape(rounds, d.chains, e, g, w).astype(ct, copy=False)
    m: Any
    b: Any
    pm: Any
    pb: Any
    c: Any = np.uint32(INT_C) if is_int else CONST_C
    one = ct(1)
    if n < e:   # every FMA is distinct: acc*x_j + x_{n+j}
        m, b = np.ones((rounds, d.chains, g, w), dtype=ct), np.zeros((rounds, d.chains, g, w), dtype=ct)
        for j in range(n):
            mult = xr[:, :, j]
            m, b = m * mult, b * mult + (xr[:, :, n + j] if n + j < e else c)
    else:       # n = q*e + r: the period (x_0..x_{e-1}, addend c) applied q times, then x_0..x_{r-1}
        q, rem = divmod(n, e)
        pm, pb = xr[:, :, 0].copy(), np.full(xr.shape[:2] + xr.shape[3:], c, dtype=ct)
        for j in range(1, e):
            mult = xr[:, :, j]
            pm, pb = pm * mult, pb * mult + c
        m, b = np.full_like(pm, one), np.zeros_like(pb)
        while q:    # powers of one map commute: plain square-and-multiply
            if q & 1:
                m, b = pm * m, pm * b + pb
            q >>= 1
            if q:
                pm, pb = pm * pm, pm * pb + pb
        for j in range(rem):
            mult = xr[:, :, j]
            m, b = m * mult, b * mult + c
    while m.shape[0] > 1:
        if m.shape[0] % 2:
            m = np.concatenate([m, np.ones_like(m[:1])])
            b = np.concatenate([b, np.zeros_like(b[:1])])
        m1, b1, m2, b2 = m[0::2], b[0::2], m[1::2], b[1::2]
        m, b = m2 * m1, m2 * b1 + b2
    seed = np.uint32(INT_SEED) if is_int else SEED
    acc = m[0] * seed + b[0]
    return acc.astype(d.dtype)


def _first_round_that_matters(x: np.ndarray, n: int, e: int) -> int:
    """The recurrence forgets: the state entering round r is multiplied by the product P_r of every later
    multiplier, and |state| <= 19 (= 0.95 / (1 - 0.95)), so starting from the seed at round r errs by at most
    38 * P_r. Return the latest round whose P_r < 1e-40 on every lane (0 if none): float64 cannot see the rest."""
    cnt = [(n // e + (1 if i < n % e else 0)) if n >= e else (1 if i < n else 0) for i in range(e)]
    with np.errstate(divide="ignore"):
        logm = sum(ci * np.log(np.abs(x[:, :, i].astype(np.float64))) for i, ci in enumerate(cnt) if ci)
    suffix = np.cumsum(np.asarray(logm)[::-1], axis=0)[::-1]        # suffix[r] = log P_{r-1}... of rounds r..end
    thr = np.log(1e-40 / 38.0)
    ok = suffix < thr                                                 # starting at round r-1 is safe if ok[r]
    rounds = x.shape[0]
    # latest r with ok[r] on every lane: state entering round r-1 ... use r itself (one round of margin)
    good = np.all(ok, axis=tuple(range(1, ok.ndim)))
    idx = np.nonzero(good)[0]
    return int(max(idx[-1] - 1, 0)) if idx.size and rounds > 1 else 0


def _sequential_sums(acc: np.ndarray, rounds: int, gather: Any, chunk_elems: int = 1 << 22) -> np.ndarray:
    """acc + x_0 + x_1 + ... in exactly the device's order and precision, where gather(r0, r1) returns the loads
    of rounds r0..r1-1 shaped (rounds, *acc.shape). Chunks of rounds; np.add.accumulate is strictly sequential."""
    per = max(1, chunk_elems // max(acc.size, 1))
    with np.errstate(over="ignore"):
        for r0 in range(0, rounds, per):
            x = np.array(gather(r0, min(rounds, r0 + per)), dtype=acc.dtype)
            x[0] = acc + x[0]
            acc = np.add.accumulate(x, axis=0, dtype=acc.dtype)[-1]
    return acc


def _cache_reference(d: GpuKernelDesc, a: np.ndarray, g: int, rounds: int) -> np.ndarray:
    w = d.vector_width
    nvec = a.size // w
    if nvec & (nvec - 1):
        raise BenchError("cache working set must hold a power-of-two number of vectors")
    av = a.reshape(nvec, w)
    s1, s2 = cache_strides(d, g, nvec)
    lane = (np.arange(d.chains, dtype=np.int64)[:, None] * s1 + np.arange(g, dtype=np.int64)[None, :] * s2)

    def gather(r0: int, r1: int) -> np.ndarray:
        r = np.arange(r0, r1, dtype=np.int64)[:, None, None] * (d.chains * s1)
        return av[(r + lane[None]) & (nvec - 1)]                       # (rounds, chains, g, w)

    return _sequential_sums(np.zeros((d.chains, g, w), dtype=d.dtype), rounds, gather)


def cache_strides(d: GpuKernelDesc, global_size: int, nvec: int) -> tuple[int, int]:
    """(s1, s2) of the global cache kernel: vector index = ((r*chains + k)*s1 + g*s2) & (nvec - 1).

    interleaved: neighbouring work-items read neighbouring vectors (coalesced); blocked: every work-item sweeps
    the whole working set sequentially from its own offset (whole cache lines per core on CPUs)."""
    if d.layout == "interleaved":
        return global_size, 1
    return 1, max(nvec // max(global_size, 1), 1)


def _shared_reference(d: GpuKernelDesc, a: np.ndarray, g: int, rounds: int, lsz: int) -> np.ndarray:
    w, le = d.vector_width, d.local_elems
    groups = g // lsz
    av = a[: groups * le * w].reshape(groups, le, w)
    lane = np.arange(d.chains, dtype=np.int64)[:, None] * lsz + np.arange(lsz, dtype=np.int64)[None, :]

    def gather(r0: int, r1: int) -> np.ndarray:
        r = np.arange(r0, r1, dtype=np.int64)[:, None, None] * (d.chains * lsz)
        idx = (r + lane[None]) & (le - 1)                               # (rounds, chains, lsz)
        x = av[:, idx]                                                  # (groups, rounds, chains, lsz, w)
        return np.moveaxis(x, 0, 2).reshape(r1 - r0, d.chains, groups * lsz, w)

    return _sequential_sums(np.zeros((d.chains, g, w), dtype=d.dtype), rounds, gather)


def chase_starts(n_elems: int, walkers: int) -> np.ndarray:
    return ((np.arange(walkers, dtype=np.uint64) * n_elems) // max(walkers, 1)).astype(np.uint32)


def _chase_reference(nxt: np.ndarray, walkers: int, steps: int) -> np.ndarray:
    """Where each walker stands after ``steps`` steps.

    Few steps or a big table: walk the walkers themselves (one small gather a step). Otherwise binary powers of the
    permutation (log2(steps) gathers of the whole table)."""
    k = chase_starts(nxt.size, walkers)
    if steps <= 4_000_000 or nxt.size > 16_000_000:
        for _ in range(steps):
            k = nxt[k]
        return k
    p = nxt
    s = steps
    while s:
        if s & 1:
            k = p[k]
        s >>= 1
        if s:
            p = p[p]
    return k


# ---------------------------------------------------------------------------------------------------------------
# rendering


def _vt(d: GpuKernelDesc, lang: str) -> str:
    cl, cu, _, _ = _TYPES[d.precision]
    if lang == "opencl":
        return cl if d.vector_width == 1 else f"{cl}{d.vector_width}"
    return cu


def _render(d: GpuKernelDesc, lang: str) -> str:
    if lang == "cuda" and d.vector_width > 1 and (d.precision, d.vector_width) not in _CUDA_VEC:
        raise UnsupportedError(
            f"CUDA has no {d.vector_width}-wide {d.precision} load type; use vector_width 1, 2 or 4 (dp: 1, 2)"
        )
    if d.kernel in ("intensity", "int"):
        return _render_stream(d, lang)
    if d.kernel == "cache":
        return _render_cache(d, lang)
    return _render_chase(d, lang)


def _header(d: GpuKernelDesc, lang: str) -> str:
    h = f"// archline generated kernel {d.name}: {d}\n"
    if lang == "opencl" and d.precision == "dp":
        h += "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    return h


def _sig(d: GpuKernelDesc, lang: str, args: list[str]) -> str:
    """args are (OpenCL) declarations; pointers are written 'global T*'."""
    if lang == "opencl":
        return f"__kernel void {d.name}({', '.join(args)})"
    cu = [a.replace("global const ", "const ").replace("global ", "") for a in args]
    cu = [a.replace("*", "* __restrict__") for a in cu]
    return f'extern "C" __global__ void __launch_bounds__(1024) {d.name}({", ".join(cu)})'


def _ids(lang: str) -> tuple[str, str, str, str]:
    if lang == "opencl":
        return ("(uint)get_global_id(0)", "(uint)get_global_size(0)", "(uint)get_local_id(0)",
                "(uint)get_local_size(0)")
    return ("blockIdx.x * blockDim.x + threadIdx.x", "gridDim.x * blockDim.x", "threadIdx.x", "blockDim.x")


def _lanes(d: GpuKernelDesc, lang: str) -> list[str]:
    """Per-lane suffixes: OpenCL works on whole vectors (one 'lane' ''), CUDA on each component."""
    if lang == "opencl" or d.vector_width == 1:
        return [""]
    return [f"_{i}" for i in range(d.vector_width)]


def _load(d: GpuKernelDesc, lang: str, dst: str, buf: str, idx: str) -> list[str]:
    """Load vector idx of buf into dst (OpenCL: one vector variable; CUDA: one scalar per component)."""
    if lang == "opencl" or d.vector_width == 1:
        return [f"{_vt(d, lang)} {dst} = {buf}[{idx}];"]
    vt = _CUDA_VEC[(d.precision, d.vector_width)]
    lines = [f"const {vt} {dst}_v = reinterpret_cast<const {vt}*>({buf})[{idx}];"]
    lines += [f"{_vt(d, lang)} {dst}_{i} = {dst}_v.{_LANES[i]};" for i in range(d.vector_width)]
    return lines


def _store(d: GpuKernelDesc, lang: str, buf: str, idx: str, src: str) -> list[str]:
    if lang == "opencl" or d.vector_width == 1:
        return [f"{buf}[{idx}] = {src};"]
    vt = _CUDA_VEC[(d.precision, d.vector_width)]
    comps = ", ".join(f"{src}_{i}" for i in range(d.vector_width))
    return [f"reinterpret_cast<{vt}*>({buf})[{idx}] = make_{vt}({comps});"]


def _mad(d: GpuKernelDesc, lang: str, acc: str, x: str, a: str) -> str:
    if d.precision == "int32":
        return f"{acc} = {acc} * {x} + {a};"
    if lang == "opencl":
        return f"{acc} = fma({acc}, {x}, {a});"
    return f"{acc} = {'fmaf' if d.precision == 'sp' else 'fma'}({acc}, {x}, {a});"


def _render_stream(d: GpuKernelDesc, lang: str) -> str:
    t = _TYPES[d.precision][0 if lang == "opencl" else 1]
    gid, gsz, _, _ = _ids(lang)
    vt = _vt(d, lang)
    lanes = _lanes(d, lang)
    v = d.vectors_per_round
    body = [_header(d, lang)]
    body.append(_sig(d, lang, [f"global const {vt if lang == 'opencl' else t}* a",
                               f"global {vt if lang == 'opencl' else t}* out",
                               f"const {t} c", f"const {t} seed", "const uint rounds"]).replace(
        "const uint rounds", "const unsigned int rounds" if lang == "cuda" else "const uint rounds"))
    body.append("{")
    body.append(f"  const unsigned int g = {gid};")
    body.append(f"  const unsigned int G = {gsz};")
    cvec = f"({vt})(c)" if lang == "opencl" and d.vector_width > 1 else "c"
    for k in range(d.chains):
        for ln in lanes:
            init = f"({vt})(seed)" if lang == "opencl" and d.vector_width > 1 else "seed"
            body.append(f"  {vt} acc{k}{ln} = {init};")
    if lang == "cuda":
        body.append("  #pragma unroll 1")
    body.append("  for (unsigned int r = 0; r < rounds; ++r) {")
    if d.layout == "interleaved":
        body.append(f"    const size_t base = (size_t)r * {v}u * G + g;")
        idx = [f"base + (size_t){j}u * G" for j in range(v)]
    elif d.layout == "streams":
        body.append(f"    const size_t base = (size_t)g * rounds * {v}u + r;")
        idx = [f"base + (size_t){j}u * rounds" for j in range(v)]
    else:
        body.append(f"    const size_t base = ((size_t)g * rounds + r) * {v}u;")
        idx = [f"base + {j}u" for j in range(v)]
    for k in range(d.chains):
        for e in range(d.elems):
            body += ["    " + s for s in _load(d, lang, f"x{k}_{e}", "a", idx[k * d.elems + e])]
    n, e_ = d.fma_num, d.elems
    for j in range(n):          # chains interleaved: C independent FMAs per step
        for k in range(d.chains):
            for ln in lanes:
                addend = f"x{k}_{n + j}{ln}" if n + j < e_ else cvec
                body.append("    " + _mad(d, lang, f"acc{k}{ln}", f"x{k}_{j % e_}{ln}", addend))
    return _close_with_stores(d, lang, body)


def _close_with_stores(d: GpuKernelDesc, lang: str, body: list[str]) -> str:
    """End the round loop, write every chain's accumulator to out[k*G + g] (the checksum), end the kernel."""
    body.append("  }")
    for k in range(d.chains):
        body += ["  " + s for s in _store(d, lang, "out", f"(size_t){k}u * G + g", f"acc{k}")]
    body.append("}")
    return "\n".join(body) + "\n"


def _render_cache(d: GpuKernelDesc, lang: str) -> str:
    t = _TYPES[d.precision][0 if lang == "opencl" else 1]
    gid, gsz, lid, lsz = _ids(lang)
    vt = _vt(d, lang)
    pt = vt if lang == "opencl" else t
    lanes = _lanes(d, lang)
    body = [_header(d, lang)]
    args = [f"global const {pt}* a", f"global {pt}* out", "const uint mask", "const uint rounds",
            "const uint s1", "const uint s2"]
    if lang == "cuda":
        args = [s.replace("uint", "unsigned int") for s in args]
    body.append(_sig(d, lang, args))
    body.append("{")
    body.append(f"  const unsigned int g = {gid};")
    body.append(f"  const unsigned int G = {gsz};")
    zero = f"({vt})(0)" if lang == "opencl" and d.vector_width > 1 else f"({t})0"
    for k in range(d.chains):
        for ln in lanes:
            body.append(f"  {vt} acc{k}{ln} = {zero};")
    src = "a"
    stride = "s1"
    pos = "g * s2"
    if d.level == "shared":
        le = d.local_elems
        body.append(f"  const unsigned int l = {lid};")
        body.append(f"  const unsigned int L = {lsz};")
        if lang == "opencl":
            body.append(f"  __local {vt} lm[{le}];")
        else:
            vtype = _CUDA_VEC.get((d.precision, d.vector_width), t)
            body.append(f"  __shared__ {vtype} lm_v[{le}];")
        body.append(f"  const size_t gbase = (size_t)(g / L) * {le}u;")
        body.append(f"  for (unsigned int i = l; i < {le}u; i += L) {{")
        if lang == "opencl" or d.vector_width == 1:
            nm = "lm" if lang == "opencl" else "lm_v"
            body.append(f"    {nm}[i] = a[gbase + i];")
        else:
            vtype = _CUDA_VEC[(d.precision, d.vector_width)]
            body.append(f"    lm_v[i] = reinterpret_cast<const {vtype}*>(a)[gbase + i];")
        body.append("  }")
        body.append("  barrier(CLK_LOCAL_MEM_FENCE);" if lang == "opencl" else "  __syncthreads();")
        src = "lm" if lang == "opencl" else "lm_v"
        stride, pos = "L", "l"
    if lang == "cuda":
        body.append("  #pragma unroll 1")
    body.append("  for (unsigned int r = 0; r < rounds; ++r) {")
    body.append(f"    const unsigned int base = r * {d.chains}u * {stride} + {pos};")
    for k in range(d.chains):
        idx = f"(base + {k}u * {stride}) & mask"
        if lang == "cuda" and d.level == "shared":
            if d.vector_width == 1:
                body.append(f"    const {t} x{k} = lm_v[{idx}];")
            else:
                body.append(f"    const {_CUDA_VEC[(d.precision, d.vector_width)]} x{k}_v = lm_v[{idx}];")
                body += [f"    const {t} x{k}_{i} = x{k}_v.{_LANES[i]};" for i in range(d.vector_width)]
        else:
            body += ["    " + s for s in _load(d, lang, f"x{k}", src, idx)]
        for ln in lanes:
            body.append(f"    acc{k}{ln} += x{k}{ln};")
    return _close_with_stores(d, lang, body)


def _render_chase(d: GpuKernelDesc, lang: str) -> str:
    gid, gsz, _, _ = _ids(lang)
    u = "uint" if lang == "opencl" else "unsigned int"
    body = [_header(d, lang)]
    args = ["global const uint* nxt", "global uint* out", "global const uint* starts", "const uint steps"]
    if lang == "cuda":
        args = [s.replace("uint", "unsigned int") for s in args]
    body.append(_sig(d, lang, args))
    body.append("{")
    body.append(f"  const {u} g = {gid};")
    body.append(f"  const {u} G = {gsz};")
    for k in range(d.chains):
        body.append(f"  {u} k{k} = starts[{k}u * G + g];")
    body.append(f"  const {u} trips = steps / {d.chase_unroll}u;")
    if lang == "cuda":
        body.append("  #pragma unroll 1")
    body.append(f"  for ({u} s = 0; s < trips; ++s) {{")
    for _ in range(d.chase_unroll):
        for k in range(d.chains):
            body.append(f"    k{k} = nxt[k{k}];")
    body.append("  }")
    body.append(f"  for ({u} s = trips * {d.chase_unroll}u; s < steps; ++s) {{")
    for k in range(d.chains):
        body.append(f"    k{k} = nxt[k{k}];")
    body.append("  }")
    for k in range(d.chains):
        body.append(f"  out[{k}u * G + g] = k{k};")
    body.append("}")
    return "\n".join(body) + "\n"


def with_shape(d: GpuKernelDesc, **changes: Any) -> GpuKernelDesc:
    return replace(d, **changes)


# ---------------------------------------------------------------------------------------------------------------
# sweep points and spec -> (description, launch geometry): shared by the OpenCL and CUDA back ends

INTENSITY_MIN_FLOP_PER_BYTE = 0.25
INTENSITY_MAX_FLOP_PER_BYTE = 64.0
CACHE_TARGET_BYTES = 256 << 20     # bytes read per launch of a cache kernel (a few ms even at 100 GB/s)
CHASE_DEFAULT_STEPS = 1 << 20


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
    levels = ("shared", "l2", "mem") if quick else ("shared", "l1", "l2", "mem")
    return [(lv, {}) for lv in levels]


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
        nvec = 1 << max((ws // (w * s)).bit_length() - 1, 0)
        n = nvec * w
    rounds = int(params.get("rounds", max(1, CACHE_TARGET_BYTES // (chains * gsz * w * s))))
    return desc, gsz, lsz, rounds, n
