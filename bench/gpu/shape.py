"""A GPU kernel's shape: :class:`KernelShape` (the fields, their rules, the name and the exact counts of a launch)
and the constants its source and its reference share. The source renderers (:mod:`.render`) and the numpy
references (:mod:`.reference`) read a shape; :class:`~archline.bench.gpu.desc.GpuKernelDesc` adds both to it."""

from __future__ import annotations

from dataclasses import dataclass
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


@dataclass(frozen=True)
class KernelShape:
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
