"""A GPU kernel as data: :class:`GpuKernelDesc` (counts, input, reference dispatch) and its constants."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import numpy as np

from archline.bench.errors import BenchError
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


#: host arrays a CPU OpenCL device reads in place start on a page: PoCL's float8/double4 loads need 32-byte
#: alignment, and numpy's large arrays start 16 bytes into an mmap'd page
HOST_ALIGN_BYTES = 4096


def page_aligned_empty(n_elems: int, dtype: np.dtype[Any]) -> np.ndarray:
    """An uninitialised 1-D array of ``n_elems`` whose data starts on a HOST_ALIGN_BYTES boundary."""
    size = np.dtype(dtype).itemsize
    raw = np.empty(n_elems * size + HOST_ALIGN_BYTES, dtype=np.uint8)
    off = (-raw.ctypes.data) % HOST_ALIGN_BYTES
    return raw[off:off + n_elems * size].view(dtype)


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
    def source(self, lang: str) -> str:
        """The kernel in one dialect: ``opencl`` (OpenCL C), ``cuda`` (CUDA C) or ``hip`` (HIP C++)."""
        from archline.bench.gpu.render import _render

        return _render(self, lang)

    def source_hash(self, lang: str = "opencl") -> str:
        return hashlib.sha256(self.source(lang).encode()).hexdigest()[:12]

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
        x = rng.random(dtype=self.dtype.type, out=page_aligned_empty(n_elems, self.dtype))   # [0, 1), no float64
        x *= self.dtype.type(2 * X_BOUND)
        x -= self.dtype.type(X_BOUND)
        return x

    def reference(self, a: np.ndarray, global_size: int, rounds: int, local_size: int = 1) -> np.ndarray:
        """The expected output buffer (chains x global_size x lanes, as the kernel writes it)."""
        from archline.bench.gpu.reference import (
            _cache_reference,
            _chase_reference,
            _shared_reference,
            _stream_reference,
        )

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


def with_shape(d: GpuKernelDesc, **changes: Any) -> GpuKernelDesc:
    return replace(d, **changes)


