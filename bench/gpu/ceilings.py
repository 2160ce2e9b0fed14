"""S4's optimisation-ceiling kernels: one description -> OpenCL C and CUDA C, exact counts and exact checksums.

The power / energy-efficiency roofline of S4 (§III; docs/model.md, "Power and energy-efficiency rooflines") draws one
ceiling per optimisation. These kernels measure them, in the one-generator style of :mod:`archline.bench.gpu`
(the same description renders both languages, declares its counts and computes the expected output):

* ``ceil_flop``: every work-item runs ``chains`` independent chains (ILP) of ``steps x rounds`` dependent
  multiply-adds ``acc = acc*m + b`` with m = 1 passed at run time, fused (``fma``) or as a separate multiply and add
  that the compiler may not contract (OpenCL ``FP_CONTRACT OFF``; CUDA ``__fmul_rn``/``__fadd_rn``; HIP, whose
  ``__fmul_rn`` is a plain multiply clang contracts, ``#pragma clang fp contract(off)``). Seeds and
  addends are small random integers per work-item and chain, so every intermediate is exact in sp and dp and the
  result is seed + steps*rounds*b: the checksum proves the number of multiply-adds exactly. The ceilings are S4's
  thread/block configuration "t×b" (work-group size and number of work-groups, as fractions of the device's full
  configuration), FMA, ILP and FMA+ILP. Limitation: multiplying by 1.0 toggles fewer bits than random operands,
  so the power drawn may sit below that of a dense random-data kernel.
* ``ceil_mem``: STREAM-like read of N elements (random values in [-0.95, 0.95]) summed into ``chains`` accumulators
  per work-item, every element read once. ``normal``: neighbouring work-items read neighbouring elements;
  ``strided``: neighbouring work-items are ``stride`` elements apart (the element index is a bit rotation of the
  normal one, so every element is still read once); ``subset``: only 1/``active_div`` of the work-items read (the
  others write their empty sums). The reference repeats the device's additions in the same order and precision,
  so the checksum is bit-exact.

Counts per launch derive only from the parameters: ceil_flop does 2*steps*rounds*chains flops per work-item and
reads 2 and writes 1 element per chain; ceil_mem does one add per element read plus one written sum per chain.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from archline.bench.errors import BenchError

# the generator's own pieces: one style for every GPU kernel
from archline.bench.gpu.desc import GpuKernelDesc
from archline.bench.gpu.points import Geometry, min_bytes
from archline.bench.gpu.reference import _sequential_sums  # the device's order of additions (cache kernels)
from archline.bench.gpu.render import (
    CUDA,
    HIP,
    OPENCL,
    _header,
    _ids,
    _lanes,
    _load,
    _sig,
    _store,
    _vt,
    check_dialect,
)
from archline.bench.gpu.shape import _TYPES
from archline.bench.gpu.working_set import pow2_floor as _pow2_floor
from archline.bench.kernels import Counts, KernelSpec

CEILING_KERNELS = ("ceil_flop", "ceil_mem")
#: names `archline bench run --kernel` accepts for this family; "ceilings" runs both
CEILING_SWEEPS = ("ceilings", *CEILING_KERNELS)
ACCESS = ("normal", "strided", "subset")
SEED_MAX = 1024           # |seed| <= 1024, addend in 1..3: ceil_flop stays exact while 1024 + 3n < 2^mantissa
ADDEND_MAX = 3
FLOPS_PER_CHAIN = 1 << 20  # default multiply-adds per chain (steps x rounds): exact in sp (3 * 2^20 << 2^24)
ILP_CHAINS = 8
MEM_CHAINS = 4
STRIDE = 32               # strided: elements between neighbouring work-items (128 B in sp: one line each)
SUBSET_DIV = 8
_MANTISSA_BITS = {"sp": 24, "dp": 53}


@dataclass(frozen=True)
class CeilingKernelDesc(GpuKernelDesc):
    """One ceiling variant. Inherits the generic fields (kernel, precision, chains...) of GpuKernelDesc so that the
    OpenCL and CUDA back ends prepare and launch it as any other generated kernel."""

    exact_checksum: ClassVar[bool] = True
    fma: bool = True          # ceil_flop: fused multiply-add, else a multiply and an add
    steps: int = 16           # ceil_flop: dependent multiply-adds per chain per loop trip
    access: str = "normal"    # ceil_mem: normal | strided | subset
    stride: int = STRIDE      # ceil_mem strided: a power of two
    active_div: int = 1       # ceil_mem subset: 1/active_div of the work-items read

    def __post_init__(self) -> None:
        if self.kernel not in CEILING_KERNELS:
            raise BenchError(f"unknown ceiling kernel '{self.kernel}' (known: {', '.join(CEILING_KERNELS)})")
        if self.precision not in ("sp", "dp"):
            raise BenchError(f"the ceiling kernels run at sp or dp, not '{self.precision}'")
        if self.vector_width not in (1, 2, 4, 8, 16):
            raise BenchError(f"vector_width must be 1, 2, 4, 8 or 16, got {self.vector_width}")
        if self.chains < 1 or self.steps < 1:
            raise BenchError(f"bad ceiling kernel shape {self}")
        if self.access not in ACCESS or self.layout not in ("interleaved", "blocked"):
            raise BenchError(f"access must be one of {', '.join(ACCESS)} and layout interleaved or blocked, got "
                             f"'{self.access}', '{self.layout}'")
        for what, v in (("stride", self.stride), ("active_div", self.active_div), ("chains", self.chains)):
            if self.kernel == "ceil_mem" and (v < 1 or v & (v - 1)):
                raise BenchError(f"ceil_mem needs {what} a power of two, got {v}")

    @property
    def name(self) -> str:
        if self.kernel == "ceil_flop":
            shape = f"{'fma' if self.fma else 'mul_add'}_s{self.steps}"
        else:
            shape = {"normal": "normal", "strided": f"stride{self.stride}", "subset": f"sub{self.active_div}"}[
                self.access] + f"_{self.layout[0]}"
        return f"al_{self.kernel}_{self.precision}_{shape}_w{self.vector_width}_c{self.chains}"

    def fma_per_trip(self) -> int:
        return self.steps * self.chains if self.kernel == "ceil_flop" else 0

    def active(self, global_size: int) -> int:
        """Work-items that read memory (ceil_mem subset: a fraction; otherwise all)."""
        return global_size // (self.active_div if self.access == "subset" else 1)

    def counts(self, global_size: int, rounds: int, local_size: int = 1, n_elems: int = 0) -> Counts:
        s, w, c = self.scalar_bytes, self.vector_width, self.chains
        lanes = c * global_size * w                       # accumulators (one per chain, work-item and lane)
        key = "flops_sp" if self.precision == "sp" else "flops_dp"
        if self.kernel == "ceil_flop":                   # seed and addend read, the result written
            return Counts(**{key: 2 * self.steps * rounds * lanes}, bytes_mem=3 * lanes * s)
        n = rounds * c * self.active(global_size) * w     # every element read once, one add each
        return Counts(**{key: n}, bytes_mem=n * s + lanes * s)

    def source(self, lang: str) -> str:
        return _render_ceiling(self, lang)

    def make_input(self, n_elems: int, rng: np.random.Generator) -> np.ndarray:
        if self.kernel == "ceil_mem":
            return super().make_input(n_elems, rng)
        # vector 2k*G + g holds chain k's seeds of work-item g, vector (2k+1)*G + g its addends
        per = n_elems // (2 * self.chains)
        seeds = rng.integers(-SEED_MAX, SEED_MAX + 1, size=(self.chains, 1, per))
        adds = rng.integers(1, ADDEND_MAX + 1, size=(self.chains, 1, per))
        return np.concatenate([seeds, adds], axis=1).reshape(-1).astype(self.dtype)

    def scalar_args(self, global_size: int, rounds: int, n_elems: int) -> list[Any]:
        """The kernel's arguments after (input, output); n_elems counts scalars."""
        if self.kernel == "ceil_flop":
            return [self.dtype.type(1.0), np.uint32(rounds)]
        nvec = n_elems // self.vector_width
        nbits = max(nvec.bit_length() - 1, 0)
        shift = self.stride.bit_length() - 1 if self.access == "strided" else 0
        return [np.uint32(rounds), np.uint32(self.active(global_size)), np.uint32(nvec - 1),
                np.uint32(shift), np.uint32(nbits - shift)]

    def reference(self, a: np.ndarray, global_size: int, rounds: int, local_size: int = 1) -> np.ndarray:
        """The output buffer as the kernel writes it: (chains, global_size, lanes), flattened."""
        g, c, w = global_size, self.chains, self.vector_width
        if self.kernel == "ceil_flop":      # exact: seed + steps*rounds*addend
            sa = a[: 2 * c * g * w].astype(np.float64).reshape(c, 2, g * w)
            return (sa[:, 0] + self.steps * rounds * sa[:, 1]).astype(self.dtype).reshape(-1)
        ga = self.active(g)
        nvec = rounds * c * ga
        x = a[: nvec * w].reshape(nvec, w)
        if self.layout == "interleaved":     # i = (r*chains + k)*active + g
            xr = x.reshape(rounds, c, ga, w)
        else:                                # i = (g*rounds + r)*chains + k
            xr = x.reshape(ga, rounds, c, w).transpose(1, 2, 0, 3)
        gather: Any = lambda r0, r1: xr[r0:r1]                               # noqa: E731
        if self.access == "strided":         # vector i of the normal order sits at rotl(i, log2 stride)
            def gather(r0: int, r1: int) -> np.ndarray:     # per chunk: a whole-buffer transpose copied 1 GiB
                r, k, gi = np.ogrid[r0:r1, 0:c, 0:ga]
                i = (r * c + k) * ga + gi if self.layout == "interleaved" else (gi * rounds + r) * c + k
                per = nvec // self.stride
                return x[(i % per) * self.stride + i // per]
        acc = _sequential_sums(np.zeros((c, ga, w), dtype=self.dtype), rounds, gather)
        out = np.zeros((c, g, w), dtype=self.dtype)
        out[:, :ga] = acc
        return out.reshape(-1)


# ---------------------------------------------------------------------------------------------------------------
# rendering (OpenCL C and CUDA C from the same lines)

def _mul_add(d: CeilingKernelDesc, lang: str, acc: str, b: str) -> str:
    m = "mv" if lang == OPENCL else "m"
    if d.fma:
        fn = "fma" if lang == OPENCL or d.precision == "dp" else "fmaf"
        return f"{acc} = {fn}({acc}, {m}, {b});"
    if lang != CUDA:        # two statements under FP_CONTRACT OFF / clang fp contract(off): never fused
        return f"{acc} = {acc} * {m}; {acc} = {acc} + {b};"
    mul, add = ("__fmul_rn", "__fadd_rn") if d.precision == "sp" else ("__dmul_rn", "__dadd_rn")
    return f"{acc} = {add}({mul}({acc}, m), {b});"


def _render_ceiling(d: CeilingKernelDesc, lang: str) -> str:
    check_dialect(d, lang)
    t = _TYPES[d.precision][0 if lang == OPENCL else 1]
    vt = _vt(d, lang)
    pt = vt if lang == OPENCL else t
    u = "uint" if lang == OPENCL else "unsigned int"
    lanes = _lanes(d, lang)
    gid, gsz, _, _ = _ids(lang)
    c = d.chains
    body = [_header(d, lang)]
    if lang == OPENCL and d.kernel == "ceil_flop" and not d.fma:
        body.append("#pragma OPENCL FP_CONTRACT OFF")
    if d.kernel == "ceil_flop":
        args = [f"global const {pt}* a", f"global {pt}* out", f"const {t} m", f"const {u} rounds"]
    else:
        args = [f"global const {pt}* a", f"global {pt}* out"] + [f"const {u} {n}" for n in
                                                                ("rounds", "active", "mask", "sl", "sr")]
    body += [_sig(d, lang, args), "{"]
    if lang == HIP and d.kernel == "ceil_flop" and not d.fma:
        body.append("  #pragma clang fp contract(off)")        # at the start of the body, as clang requires
    body += [f"  const {u} g = {gid};", f"  const {u} G = {gsz};"]
    if d.kernel == "ceil_flop":
        if lang == OPENCL:
            body.append(f"  const {vt} mv = ({vt})(m);")
        for k in range(c):
            body += ["  " + x for x in _load(d, lang, f"acc{k}", "a", f"{2 * k}u * G + g")]
            body += ["  " + x for x in _load(d, lang, f"b{k}", "a", f"{2 * k + 1}u * G + g")]
    else:
        body += [f"  {vt} acc{k}{ln} = ({vt})(0);" for k in range(c) for ln in lanes]
        body.append("  if (g < active) {")
    if lang != OPENCL:
        body.append("  #pragma unroll 1")
    body.append(f"  for ({u} r = 0; r < rounds; ++r) {{")
    if d.kernel == "ceil_flop":
        for _ in range(d.steps):           # chains interleaved: `chains` independent multiply-adds per step
            body += ["    " + _mul_add(d, lang, f"acc{k}{ln}", f"b{k}{ln}") for k in range(c) for ln in lanes]
    else:
        for k in range(c):                 # i: the vector's index in the normal order
            i = (f"(r * {c}u + {k}u) * active + g" if d.layout == "interleaved"
                 else f"(g * rounds + r) * {c}u + {k}u")
            body.append(f"    const {u} i{k} = {i};")
            addr = f"((i{k} << sl) & mask) | (i{k} >> sr)" if d.access == "strided" else f"i{k}"
            body += ["    " + x for x in _load(d, lang, f"x{k}", "a", addr)]
            body += [f"    acc{k}{ln} += x{k}{ln};" for ln in lanes]
        body.append("  }")
    body.append("  }")
    for k in range(c):
        body += ["  " + x for x in _store(d, lang, "out", f"{k}u * G + g", f"acc{k}")]
    body.append("}")
    return "\n".join(body) + "\n"


# ---------------------------------------------------------------------------------------------------------------
# sweep points and spec -> (description, launch geometry), shared by the OpenCL and CUDA back ends

#: S4 §III: thread/block configurations first (no FMA, no ILP), then FMA, ILP and both at the full configuration
FLOPS_CEILINGS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("t×b 1/4×1/4", {"fma": 0, "chains": 1, "t_frac": "1/4", "b_frac": "1/4"}),
    ("t×b 1/4×1", {"fma": 0, "chains": 1, "t_frac": "1/4", "b_frac": "1"}),
    ("t×b 1×1/4", {"fma": 0, "chains": 1, "t_frac": "1", "b_frac": "1/4"}),
    ("t×b 1×1", {"fma": 0, "chains": 1}),
    ("FMA", {"fma": 1, "chains": 1}),
    ("ILP", {"fma": 0, "chains": ILP_CHAINS}),
    ("FMA+ILP", {"fma": 1, "chains": ILP_CHAINS}),
)
MEM_CEILINGS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("normal", {"access": "normal"}),
    (f"strided {STRIDE}", {"access": "strided", "stride": STRIDE}),
    (f"subset 1/{SUBSET_DIV}", {"access": "subset", "active_div": SUBSET_DIV}),
)


def ceiling_points(backend: str, kernel: str, precision: str, quick: bool = False) -> list[KernelSpec]:
    """The ceilings of S4 as sweep points; each spec's params carry the ceiling's label as ``ceiling``."""
    if kernel not in CEILING_SWEEPS:
        raise BenchError(f"unknown ceiling kernel '{kernel}' (known: {', '.join(CEILING_SWEEPS)})")
    if precision not in ("sp", "dp"):
        raise BenchError(f"the ceiling kernels run at sp or dp, not '{precision}'")
    out: list[KernelSpec] = []
    if kernel in ("ceilings", "ceil_flop"):
        pts = [p for p in FLOPS_CEILINGS if not quick or p[0] not in ("t×b 1/4×1", "t×b 1×1/4")]
        out += [KernelSpec(backend, "ceil_flop", precision, "mem", {"ceiling": lab, **p}) for lab, p in pts]
    if kernel in ("ceilings", "ceil_mem"):
        out += [KernelSpec(backend, "ceil_mem", precision, "mem", {"ceiling": lab, "chains": MEM_CHAINS, **p})
                for lab, p in MEM_CEILINGS]
    return out


def ceiling_describe(backend: str, ok: bool, why: str, fp64: bool = True) -> list[dict[str, Any]]:
    """`archline bench list` rows for the family."""
    rows = []
    for kernel, prec in ((k, p) for k in CEILING_KERNELS for p in ("sp", "dp")):
        avail, reason = ok, why
        if ok and prec == "dp" and not fp64:
            avail, reason = False, "unsupported: the device has no fp64"
        counts = ({"flops_per_elem": "2 per multiply-add", "bytes_per_elem": "0"}
                  if kernel == "ceil_flop" else {"flops_per_elem": "1 add", "bytes_per_elem": f"{_bytes(prec)} (mem)"})
        rows.append({"name": kernel, "precision": prec, "level": "mem", "available": avail, "reason": reason,
                     "backend": backend, **counts})
    return rows


def _bytes(precision: str) -> int:
    return _TYPES[precision][2]


def _frac(params: dict[str, Any], key: str) -> Fraction:
    try:
        f = Fraction(str(params.get(key, 1)))
    except (ValueError, ZeroDivisionError):
        raise BenchError(f"{key} must be a fraction like 1/4, got {params.get(key)!r}") from None
    if not 0 < f <= 1:
        raise BenchError(f"{key} must lie in (0, 1], got {f}")
    return f


def parse_ceiling_spec(kernel: str, precision: str, params: dict[str, Any], geo: Geometry,
                       default_ws_bytes: Any) -> tuple[CeilingKernelDesc, int, int, int, int]:
    """-> (description, global_size, local_size, rounds, n_elems of the input buffer).

    The full configuration ("t×b 1×1"): on GPUs the back end's work-group size t times its number of work-groups
    b, one scalar per work-item; on CPUs (where PoCL does not vectorise across work-items that loop) t is the
    native vector width of each work-item and b the work-items, 4 per core. t_frac and b_frac scale t and b."""
    known = {"ceiling", "fma", "chains", "steps", "rounds", "t_frac", "b_frac", "global_size", "local_size",
             "vector_width", "layout", "access", "stride", "active_div", "working_set_bytes", "seed", "warmup_s",
             "arch"}
    unknown = set(params) - known
    if unknown:
        raise BenchError(f"unknown ceiling kernel parameter(s) {sorted(unknown)} (known: {sorted(known)})")
    t, b = _frac(params, "t_frac"), _frac(params, "b_frac")
    if geo.is_cpu:
        w, lsz, groups = _pow2_floor(max(1, int(geo.vector_width * t))), 1, geo.compute_units * 4
    else:
        w, lsz, groups = 1, max(1, int(geo.local_size * t)), max(geo.global_size // geo.local_size, 1)
    w = int(params.get("vector_width", w))
    lsz = int(params.get("local_size", lsz))
    gsz = int(params.get("global_size", max(1, int(groups * b)) * lsz))
    if lsz < 1 or gsz < 1 or gsz % lsz:
        raise BenchError(f"global_size {gsz} must be a positive multiple of local_size {lsz}")
    s = _bytes(precision)
    if kernel == "ceil_flop":
        steps = int(params.get("steps", 16))
        desc = CeilingKernelDesc("ceil_flop", precision, vector_width=w, chains=int(params.get("chains", 1)),
                                 fma=bool(int(params.get("fma", 1))), steps=steps)
        rounds = int(params.get("rounds", max(1, FLOPS_PER_CHAIN // steps)))
        if rounds < 1 or SEED_MAX + ADDEND_MAX * steps * rounds >= 2 ** _MANTISSA_BITS[precision]:
            most = (2 ** _MANTISSA_BITS[precision] - SEED_MAX - 1) // (ADDEND_MAX * steps)
            raise BenchError(f"rounds={rounds}: ceil_flop at {precision} stays exact for 1..{most} rounds "
                             f"of {steps} steps")
        return desc, gsz, lsz, rounds, 2 * desc.chains * gsz * w
    if kernel != "ceil_mem":
        raise BenchError(f"unknown ceiling kernel '{kernel}'")
    if "global_size" not in params:          # powers of two: the strided index is a bit rotation
        gsz = _pow2_floor(gsz)
        lsz = _pow2_floor(min(lsz, gsz))
    access = str(params.get("access", "normal"))
    desc = CeilingKernelDesc("ceil_mem", precision, vector_width=w, chains=int(params.get("chains", MEM_CHAINS)),
                             layout=str(params.get("layout", geo.layout)), access=access,
                             stride=int(params.get("stride", STRIDE)),
                             active_div=int(params.get("active_div", SUBSET_DIV if access == "subset" else 1)))
    if gsz & (gsz - 1) or desc.active(gsz) < 1:
        raise BenchError(f"ceil_mem needs global_size a power of two of at least active_div, got {gsz}")
    per_round = desc.chains * desc.active(gsz)
    if "rounds" in params:
        rounds = int(params["rounds"])
    else:
        ws = int(params.get("working_set_bytes", default_ws_bytes("mem")))
        min_bytes("ceil_mem", ws, per_round * s * w, "one round of every active work-item's chains")
        rounds = _pow2_floor(max(ws // (s * w) // per_round, 1))
    nvec = rounds * per_round
    if rounds < 1 or rounds & (rounds - 1) or nvec >= 2**32 or (access == "strided" and nvec < 2 * desc.stride):
        raise BenchError(f"ceil_mem: rounds={rounds} must be a power of two with 2*stride <= {per_round}*rounds "
                         "< 2^32 vectors")
    return desc, gsz, lsz, rounds, nvec * w
