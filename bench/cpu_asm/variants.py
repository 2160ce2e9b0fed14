"""Kernels as data: every compiled variant declares its shape and its exact per-element counts here, next to the
native code (src/isa_*.cpp, src/kern.hpp), the way likwid-bench's ``.ptt`` headers do.

One *trip* of a streaming kernel loads ``G`` vectors of ``L`` lanes (``G*L`` elements).

* intensity: ``F`` vector FMAs per trip (``F >= G/2``); flops/element = 2F/G (FMA = 2 flops), bytes/element =
  sizeof(T); I = 2F / (G * sizeof(T)) flop/byte. F < G: "pairs" mode (G-F FMAs consume two loaded vectors each);
  F >= G: "chains" mode (each vector runs F//G (+1 for the first F%G vectors) FMAs: y = y - y*y ..., acc += y*y).
* intensity with ``store="nt"``: the same loads plus a non-temporal store stream of G/2 result vectors per trip
  (H = F - G/2 Horner steps spread over the G vectors, then G/2 FMAs out = y[2j]*y[2j+1] + y[2j], streamed);
  bytes/element = 1.5 sizeof(T) (read + written; no write-allocate, so bus bytes = counted), flops/element =
  2F/G, I = 4F / (3 G sizeof(T)). F = G/2 is stream's triad: 2 flops per 2 loads + 1 store.
* int: ``S`` steps of y[g] = y[g] OP y[(g+1)%G] then acc += y[g]: int ops/element = S+1, 4 bytes/element.
* cache: load = 8 bytes/element read (one vaddpd per vector), rmw = 8 read + 8 written, store = 8 written
  (write-allocate reads the line first below L1: bus bytes = 2x counted).
"""

from __future__ import annotations

from dataclasses import dataclass

from archline.bench.kernels import Counts

ELEM_BYTES = {"dp": 8, "sp": 4, "int32": 4}
#: Data generator period (elements): multiple of G*L for every variant, so the Python reference sums one period.
PERIOD = 3 * 2**18


@dataclass(frozen=True)
class IsaVariant:
    isa: str
    arch: str                      # x86_64 | aarch64
    requires: tuple[str, ...]      # cpu_features() flags that must all be true
    vec_bytes: int
    g_fp: int                      # intensity: vectors per trip (independent FMA chains)
    a_fp: int                      # intensity: accumulator registers
    g_int: int
    a_int: int
    g_ld: int                      # load kernel: vectors per trip
    a_ld: int                      # load kernel: accumulator chains
    g_st: int                      # rmw / store: vectors per trip
    int_mul: bool                  # has a 32-bit lane multiply
    fma_mnemonic: str              # the instruction one Horner step compiles to (checked by a test)
    note: str

    def lanes(self, precision: str) -> int:
        return self.vec_bytes // ELEM_BYTES[precision]


ISAS: dict[str, IsaVariant] = {
    "avx512": IsaVariant("avx512", "x86_64", ("avx512f",), 64, 16, 8, 16, 8, 16, 8, 16, True,
                         "vfnmadd", "AVX-512F, 32 zmm: 16 FMA chains + 8 accumulators"),
    "avx2": IsaVariant("avx2", "x86_64", ("avx2", "fma"), 32, 12, 4, 12, 4, 16, 8, 16, True,
                       "vfnmadd", "AVX2+FMA, 16 ymm: 12 FMA chains + 4 accumulators"),
    "sse2": IsaVariant("sse2", "x86_64", ("sse2",), 16, 8, 4, 8, 4, 16, 8, 16, False,
                       "mulpd", "SSE2 baseline, no FMA: mul+add counted as one FMA (2 flops); no int32 mul"),
    "neon": IsaVariant("neon", "aarch64", ("neon",), 16, 16, 8, 16, 8, 16, 8, 16, True,
                       "fmls", "AArch64 Advanced SIMD, 32 v regs: 16 FMA chains + 8 accumulators"),
}
X86_ORDER = ("avx512", "avx2", "sse2")


def trip_elems(v: IsaVariant, kernel: str, precision: str) -> int:
    if kernel == "intensity":
        return v.g_fp * v.lanes(precision)
    if kernel == "int":
        return v.g_int * v.lanes("int32")
    if kernel == "cache":
        return max(v.g_ld, v.g_st) * v.lanes("dp")
    raise ValueError(kernel)


def fma_per_trip_for(v: IsaVariant, precision: str, intensity_flop_per_byte: float) -> int:
    """The F whose exact intensity 2F/(G*sizeof) is nearest the target.

    Never below G/2: the floor where every FMA consumes two loaded vectors."""
    f = round(intensity_flop_per_byte * v.g_fp * ELEM_BYTES[precision] / 2)
    return max(f, (v.g_fp + 1) // 2)


def intensity_of(v: IsaVariant, precision: str, fma_per_trip: int) -> float:
    return 2 * fma_per_trip / (v.g_fp * ELEM_BYTES[precision])


#: intensity store modes: "none" = read-only stream (the default), "nt" = plus a non-temporal store stream
STORE_MODES = ("none", "nt")


def fma_per_trip_for_nt(v: IsaVariant, precision: str, intensity_flop_per_byte: float) -> int:
    """F for the nt variant: I = 4F / (3 G sizeof(T)), never below G/2."""
    f = round(intensity_flop_per_byte * 3 * v.g_fp * ELEM_BYTES[precision] / 4)
    return max(f, v.g_fp // 2)


def intensity_of_nt(v: IsaVariant, precision: str, fma_per_trip: int) -> float:
    return 4 * fma_per_trip / (3 * v.g_fp * ELEM_BYTES[precision])


def intensity_nt_counts(v: IsaVariant, precision: str, n_elems: int, fma_per_trip: int,
                        level: str = "mem") -> Counts:
    """n_elems loaded, n_elems/2 written with streaming stores (no write-allocate: bus bytes = counted bytes)."""
    g = v.g_fp
    assert n_elems % (g * v.lanes(precision)) == 0 and g % 2 == 0
    flops = n_elems * 2 * fma_per_trip // g
    nbytes = n_elems * ELEM_BYTES[precision] + n_elems // 2 * ELEM_BYTES[precision]
    kw = {"flops_sp" if precision == "sp" else "flops_dp": flops, f"bytes_{level}": nbytes, "bus_bytes": nbytes}
    return Counts(**kw)  # type: ignore[arg-type]


def intensity_counts(v: IsaVariant, precision: str, n_elems: int, fma_per_trip: int, level: str = "mem") -> Counts:
    g = v.g_fp
    assert n_elems % (g * v.lanes(precision)) == 0
    flops = n_elems * 2 * fma_per_trip // g
    nbytes = n_elems * ELEM_BYTES[precision]
    kw = {"flops_sp" if precision == "sp" else "flops_dp": flops, f"bytes_{level}": nbytes}
    return Counts(**kw)  # type: ignore[arg-type]


def int_counts(n_elems: int, steps: int, level: str = "mem") -> Counts:
    return Counts(int_ops=n_elems * (steps + 1), **{f"bytes_{level}": n_elems * 4})  # type: ignore[arg-type]


def cache_counts(mode: str, n_elems: int, level: str) -> Counts:
    counted = {"load": 8, "rmw": 16, "store": 8}[mode] * n_elems
    bus = 16 * n_elems if (mode == "store" and level != "l1") else counted
    return Counts(**{f"bytes_{level}": counted}, bus_bytes=bus)  # type: ignore[arg-type]


def chase_counts(nodes: int) -> Counts:
    return Counts(rand_accesses=nodes)
