"""OpenCL C and CUDA C source from a kernel's shape (:class:`~archline.bench.gpu.shape.KernelShape`): one renderer per
kernel family, two dialects. The dialects' names are spelled here only (a GPU back end gives its own as ``lang``)."""

from __future__ import annotations

import re

from archline.bench.errors import BenchError, UnsupportedError
from archline.bench.gpu.shape import _CUDA_VEC, _LANES, _TYPES, KernelShape

#: the dialects a kernel renders in; HIP C++ is CUDA C's dialect here (the same lines, compiled by hipcc/hiprtc)
OPENCL, CUDA, HIP = DIALECTS = ("opencl", "cuda", "hip")

# ---------------------------------------------------------------------------------------------------------------
# rendering


def _vt(d: KernelShape, lang: str) -> str:
    cl, cu, _, _ = _TYPES[d.precision]
    if lang == OPENCL:
        return cl if d.vector_width == 1 else f"{cl}{d.vector_width}"
    return cu


def check_dialect(d: KernelShape, lang: str) -> None:
    """An unknown dialect, or a vector load type CUDA/HIP lack, is refused before any line is rendered."""
    if lang not in DIALECTS:
        raise BenchError(f"unknown kernel dialect '{lang}' (known: {', '.join(DIALECTS)})")
    if lang != OPENCL and d.vector_width > 1 and (d.precision, d.vector_width) not in _CUDA_VEC:
        raise UnsupportedError(f"{lang.upper()} has no {d.vector_width}-wide {d.precision} load type; use "
                               "vector_width 1, 2 or 4 (dp: 1, 2)")


def _render(d: KernelShape, lang: str) -> str:
    check_dialect(d, lang)
    if d.kernel in ("intensity", "int"):
        return _render_stream(d, lang)
    if d.kernel == "cache":
        return _render_cache(d, lang)
    return _render_chase(d, lang)


def _header(d: KernelShape, lang: str) -> str:
    h = f"// archline generated kernel {d.name}: {d}\n"
    if lang == OPENCL and d.precision == "dp":
        h += "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    return h


def _sig(d: KernelShape, lang: str, args: list[str]) -> str:
    """args are (OpenCL) declarations; pointers are written 'global T*', unsigned ints 'uint'."""
    if lang == OPENCL:
        return f"__kernel void {d.name}({', '.join(args)})"
    cu = [re.sub(r"\buint\b", "unsigned int", a) for a in args]
    cu = [a.replace("global const ", "const ").replace("global ", "") for a in cu]
    cu = [a.replace("*", "* __restrict__") for a in cu]
    return f'extern "C" __global__ void __launch_bounds__(1024) {d.name}({", ".join(cu)})'


def _open(d: KernelShape, lang: str, args: list[str]) -> list[str]:
    """The kernel's first lines: header, signature, and g / G (global id and size) in the body."""
    gid, gsz, _, _ = _ids(lang)
    return [_header(d, lang), _sig(d, lang, args), "{", f"  const unsigned int g = {gid};",
            f"  const unsigned int G = {gsz};"]


def _ids(lang: str) -> tuple[str, str, str, str]:
    if lang == OPENCL:
        return ("(uint)get_global_id(0)", "(uint)get_global_size(0)", "(uint)get_local_id(0)",
                "(uint)get_local_size(0)")
    return ("blockIdx.x * blockDim.x + threadIdx.x", "gridDim.x * blockDim.x", "threadIdx.x", "blockDim.x")


def _lanes(d: KernelShape, lang: str) -> list[str]:
    """Per-lane suffixes: OpenCL works on whole vectors (one 'lane' ''), CUDA on each component."""
    if lang == OPENCL or d.vector_width == 1:
        return [""]
    return [f"_{i}" for i in range(d.vector_width)]


def _load(d: KernelShape, lang: str, dst: str, buf: str, idx: str) -> list[str]:
    """Load vector idx of buf into dst (OpenCL: one vector variable; CUDA: one scalar per component)."""
    if lang == OPENCL or d.vector_width == 1:
        return [f"{_vt(d, lang)} {dst} = {buf}[{idx}];"]
    vt = _CUDA_VEC[(d.precision, d.vector_width)]
    lines = [f"const {vt} {dst}_v = reinterpret_cast<const {vt}*>({buf})[{idx}];"]
    lines += [f"{_vt(d, lang)} {dst}_{i} = {dst}_v.{_LANES[i]};" for i in range(d.vector_width)]
    return lines


def _store(d: KernelShape, lang: str, buf: str, idx: str, src: str) -> list[str]:
    if lang == OPENCL or d.vector_width == 1:
        return [f"{buf}[{idx}] = {src};"]
    vt = _CUDA_VEC[(d.precision, d.vector_width)]
    comps = ", ".join(f"{src}_{i}" for i in range(d.vector_width))
    return [f"reinterpret_cast<{vt}*>({buf})[{idx}] = make_{vt}({comps});"]


def _mad(d: KernelShape, lang: str, acc: str, x: str, a: str) -> str:
    if d.precision == "int32":
        return f"{acc} = {acc} * {x} + {a};"
    if lang == OPENCL:
        return f"{acc} = fma({acc}, {x}, {a});"
    return f"{acc} = {'fmaf' if d.precision == 'sp' else 'fma'}({acc}, {x}, {a});"


def _render_stream(d: KernelShape, lang: str) -> str:
    t = _TYPES[d.precision][0 if lang == OPENCL else 1]
    vt = _vt(d, lang)
    lanes = _lanes(d, lang)
    v = d.vectors_per_round
    pt = vt if lang == OPENCL else t
    body = _open(d, lang, [f"global const {pt}* a", f"global {pt}* out", f"const {t} c", f"const {t} seed",
                           "const uint rounds"])
    cvec = f"({vt})(c)" if lang == OPENCL and d.vector_width > 1 else "c"
    for k in range(d.chains):
        for ln in lanes:
            init = f"({vt})(seed)" if lang == OPENCL and d.vector_width > 1 else "seed"
            body.append(f"  {vt} acc{k}{ln} = {init};")
    if lang != OPENCL:
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


def _close_with_stores(d: KernelShape, lang: str, body: list[str]) -> str:
    """End the round loop, write every chain's accumulator to out[k*G + g] (the checksum), end the kernel."""
    body.append("  }")
    for k in range(d.chains):
        body += ["  " + s for s in _store(d, lang, "out", f"(size_t){k}u * G + g", f"acc{k}")]
    body.append("}")
    return "\n".join(body) + "\n"


def _render_cache(d: KernelShape, lang: str) -> str:
    t = _TYPES[d.precision][0 if lang == OPENCL else 1]
    _, _, lid, lsz = _ids(lang)
    vt = _vt(d, lang)
    pt = vt if lang == OPENCL else t
    lanes = _lanes(d, lang)
    body = _open(d, lang, [f"global const {pt}* a", f"global {pt}* out", "const uint mask", "const uint rounds",
                           "const uint s1", "const uint s2"])
    zero = f"({vt})(0)" if lang == OPENCL and d.vector_width > 1 else f"({t})0"
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
        if lang == OPENCL:
            body.append(f"  __local {vt} lm[{le}];")
        else:
            vtype = _CUDA_VEC.get((d.precision, d.vector_width), t)
            body.append(f"  __shared__ {vtype} lm_v[{le}];")
        body.append(f"  const size_t gbase = (size_t)(g / L) * {le}u;")
        body.append(f"  for (unsigned int i = l; i < {le}u; i += L) {{")
        if lang == OPENCL or d.vector_width == 1:
            nm = "lm" if lang == OPENCL else "lm_v"
            body.append(f"    {nm}[i] = a[gbase + i];")
        else:
            vtype = _CUDA_VEC[(d.precision, d.vector_width)]
            body.append(f"    lm_v[i] = reinterpret_cast<const {vtype}*>(a)[gbase + i];")
        body.append("  }")
        body.append("  barrier(CLK_LOCAL_MEM_FENCE);" if lang == OPENCL else "  __syncthreads();")
        src = "lm" if lang == OPENCL else "lm_v"
        stride, pos = "L", "l"
    if lang != OPENCL:
        body.append("  #pragma unroll 1")
    body.append("  for (unsigned int r = 0; r < rounds; ++r) {")
    body.append(f"    const unsigned int base = r * {d.chains}u * {stride} + {pos};")
    for k in range(d.chains):
        idx = f"(base + {k}u * {stride}) & mask"
        if lang != OPENCL and d.level == "shared":
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


def _render_chase(d: KernelShape, lang: str) -> str:
    u = "uint" if lang == OPENCL else "unsigned int"
    body = _open(d, lang, ["global const uint* nxt", "global uint* out", "global const uint* starts",
                           "const uint steps"])
    for k in range(d.chains):
        body.append(f"  {u} k{k} = starts[{k}u * G + g];")
    body.append(f"  const {u} trips = steps / {d.chase_unroll}u;")
    if lang != OPENCL:
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


