"""A GPU kernel as data: :class:`GpuKernelDesc`, a :class:`~archline.bench.gpu.shape.KernelShape` with its sources,
its input and its reference."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import numpy as np

from archline.bench.errors import BenchError
from archline.bench.gpu.reference import _cache_reference, _chase_reference, _shared_reference, _stream_reference
from archline.bench.gpu.render import OPENCL, _render
from archline.bench.gpu.shape import X_BOUND, KernelShape

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
class GpuKernelDesc(KernelShape):
    """A kernel variant with what a back end runs and checks: its source in each dialect, its input, its
    reference (its repr, which every source's first line holds, is the shape's fields)."""

    # -- sources ---------------------------------------------------------------------------------------------
    def source(self, lang: str) -> str:
        """The kernel in one dialect: ``opencl`` (OpenCL C), ``cuda`` (CUDA C) or ``hip`` (HIP C++)."""
        return _render(self, lang)

    def source_hash(self, lang: str = OPENCL) -> str:
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


