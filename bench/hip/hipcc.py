"""Build the generated HIP kernels with hipcc for AMD GPUs and read back the AMDGCN assembly (no GPU needed).

* ``compile_module(descs, target)``: one .hip holding every variant -> the AMDGCN assembly (``--cuda-device-only
  -S``) and, when asked, the code object cupy loads (``--genco``).
* ``inspect_module``: per kernel, in the round loop (the backward branch with the most loads): FMA instructions
  (``v_fma``/``v_fmac``, ``v_pk_fma_f32`` counted twice: it does two lanes), bytes loaded (global/buffer/flat/LDS
  loads by their width), integer multiplies, VGPRs and scratch (spills).

``HIP_PLATFORM=amd`` is always set: otherwise hipcc finds nvcc and targets NVIDIA. Debian's hipcc (ROCm 5.2) builds
gfx908 (MI100), gfx90a (MI200) and gfx1030 (RDNA2); gfx942 (MI300) and gfx1100 (RDNA3) need a newer ROCm.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from archline.bench.errors import BenchError, UnsupportedError
from archline.bench.gpu import toolchain
from archline.bench.gpu.desc import GpuKernelDesc

#: AMD targets the lab's cards need, and the ROCm that first builds each
TARGETS: dict[str, str] = {
    "gfx908": "CDNA1 (MI100)", "gfx90a": "CDNA2 (MI210, MI250)", "gfx942": "CDNA3 (MI300), ROCm >= 5.7",
    "gfx1030": "RDNA2 (Radeon RX 6800/6900, PRO W6800)", "gfx1100": "RDNA3 (Radeon RX 7900), ROCm >= 5.5",
}
HEADER = "#include <hip/hip_runtime.h>\n"


def find_hipcc() -> str | None:
    return toolchain.find_compiler("hipcc", "ROCM_PATH", "/opt/rocm")


def require_hipcc() -> str:
    return toolchain.require_compiler(find_hipcc(), "hipcc", "Debian: apt install hipcc; or install ROCm")


def _env() -> dict[str, str]:
    return {**os.environ, "HIP_PLATFORM": "amd"}


def _hipcc(args: list[str]) -> subprocess.CompletedProcess[str]:
    """hipcc with its own temporaries (clang leaves an empty ``kernels-XXXXXX`` directory in $TMPDIR) kept in the
    build's directory, which is removed after."""
    env = _env()
    if "-o" in args:
        env["TMPDIR"] = str(Path(args[args.index("-o") + 1]).parent)
    return subprocess.run([require_hipcc(), *args], capture_output=True, text=True, env=env)


@lru_cache(maxsize=16)
def check_target(target: str) -> str:
    """'gfx90a:sramecc+:xnack-' -> 'gfx90a', refused in one line when this hipcc cannot build it."""
    name = target.split(":")[0].strip()
    if not re.fullmatch(r"gfx[0-9a-f]{3,4}", name):
        raise BenchError(f"bad AMD GPU target '{target}' (expected e.g. gfx90a)")
    with tempfile.TemporaryDirectory(prefix="archline-hip-") as d:
        src = Path(d) / "probe.hip"
        src.write_text(HEADER + 'extern "C" __global__ void probe(float* a) { a[threadIdx.x] += 1.0f; }\n')
        r = _hipcc([f"--offload-arch={name}", "--cuda-device-only", "-S", str(src), "-o", str(Path(d) / "p.s")])
    if r.returncode:
        what = f" {TARGETS[name]}" if name in TARGETS else ""
        raise UnsupportedError(f"this hipcc cannot build {name}{what}: {r.stderr.strip().splitlines()[-1:]}")
    return name


def module_source(descs: list[GpuKernelDesc]) -> str:
    seen: dict[str, str] = {}
    for d in descs:
        seen.setdefault(d.name, d.source("hip"))
    return HEADER + "\n".join(seen.values())


@dataclass
class Build:
    target: str
    asm: str
    code_object_path: str = ""


def compile_module(descs: list[GpuKernelDesc], target: str, *, out_dir: str | None = None,
                   code_object: bool = False) -> Build:
    """hipcc -O3 --offload-arch=target: AMDGCN assembly always, the loadable code object when asked."""
    tgt = check_target(target)
    if out_dir is None:
        with tempfile.TemporaryDirectory(prefix="archline-hip-") as d:
            b = compile_module(descs, target, out_dir=d, code_object=False)
        return b
    src = Path(out_dir) / "kernels.hip"
    src.write_text(module_source(descs))
    flags = ["-O3", f"--offload-arch={tgt}", "-std=c++17"]
    asm_p = Path(out_dir) / f"kernels.{tgt}.s"
    r = _hipcc([*flags, "--cuda-device-only", "-S", str(src), "-o", str(asm_p)])
    if r.returncode:
        raise BenchError(f"hipcc -S failed for {tgt}: {r.stderr.strip()[-2000:]}")
    b = Build(tgt, asm_p.read_text())
    if code_object:
        co = Path(out_dir) / f"kernels.{tgt}.hsaco"
        r = _hipcc([*flags, "--genco", str(src), "-o", str(co)])
        if r.returncode:
            raise BenchError(f"hipcc --genco failed for {tgt}: {r.stderr.strip()[-2000:]}")
        b.code_object_path = str(co)
    return b


# -- reading the assembly -----------------------------------------------------------------------------------------

#: a multiply-add: fused float (v_fma/v_fmac), the integer one a v_mad_u64_u32 (its low half) or mul_lo + add
FMA = {"sp": r"\bv_(?:fma|fmac)_f32", "dp": r"\bv_(?:fma|fmac)_f64",
       "int32": r"\bv_(?:mad_u64_u32|mad_u32_u24|mul_lo_u32)"}
MUL = {"sp": r"\bv_mul_f32", "dp": r"\bv_mul_f64", "int32": r"(?!)"}
ADD = {"sp": r"\bv_add_f32", "dp": r"\bv_add_f64", "int32": r"(?!)"}
#: gfx90a's packed fp32 instructions do two lanes each
PACKED = {"fma": r"\bv_pk_fma_f32", "mul": r"\bv_pk_mul_f32", "add": r"\bv_pk_add_f32"}
#: load mnemonic -> bytes it moves (global/buffer/flat dwordxN; LDS read/load widths; read2 = two of them)
LOAD = re.compile(r"\b(global_load|buffer_load|flat_load|ds_read2?|ds_load2?)_(dword(?:x([234]))?|b(32|64|96|128))\b")


@dataclass
class KernelReport:
    name: str
    loop_fma: int = -1         # FMA lanes in the round loop (packed instructions count 2)
    loop_add: int = -1         # float adds (cache kernels: the accumulation; ceilings' unfused multiply-add)
    loop_mul: int = -1
    loop_load_bytes: int = -1  # bytes the loop's load instructions move
    loop_loads: int = -1       # load instructions in the loop
    vgprs: int = -1
    scratch_bytes: int = -1    # > 0: spills (or a stack)


def _functions(asm: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for m in re.finditer(r"^(\w+):[^\n]*\n(.*?)^\.Lfunc_end\d+:", asm, re.M | re.S):
        out[m.group(1)] = m.group(2)
    return out


def _load_bytes(m: re.Match[str]) -> int:
    if m.group(2).startswith("dword"):
        size = 4 * int(m.group(3) or 1)
    else:
        size = int(m.group(4)) // 8
    return size * (2 if m.group(1).endswith("2") else 1)


def _loop_body(fn: str) -> str:
    """The backward branch with the most loads: the generated round loop (not a fill or remainder loop)."""
    best, most = "", -1
    for lab in re.findall(r"^(\.LBB\d+_\d+):", fn, re.M):
        start = fn.index(lab + ":")
        m = re.search(rf"s_(?:c?branch\w*)\s+{re.escape(lab)}\b", fn[start:])
        if m:
            body = fn[start:start + m.end()]
            n = len(LOAD.findall(body))
            if n > most:
                best, most = body, n
    return best


def inspect_module(build: Build, descs: list[GpuKernelDesc]) -> dict[str, KernelReport]:
    fns = _functions(build.asm)
    out: dict[str, KernelReport] = {}
    for d in descs:
        rep = KernelReport(d.name)
        fn = fns.get(d.name, "")
        body = _loop_body(fn)
        if body:
            p = d.precision
            packed = {k: 2 * len(re.findall(v, body)) if p == "sp" else 0 for k, v in PACKED.items()}
            rep.loop_fma = len(re.findall(FMA[p], body)) + packed["fma"]
            rep.loop_mul = len(re.findall(MUL[p], body)) + packed["mul"]
            rep.loop_add = len(re.findall(ADD[p], body)) + packed["add"]
            loads = list(LOAD.finditer(body))
            rep.loop_loads, rep.loop_load_bytes = len(loads), sum(_load_bytes(m) for m in loads)
        meta = build.asm[build.asm.find(f".amdhsa_kernel {d.name}"):]
        m = re.search(r"\.amdhsa_next_free_vgpr\s+(\d+)", meta)
        if m:
            rep.vgprs = int(m.group(1))
        m = re.search(r"\.amdhsa_private_segment_fixed_size\s+(\d+)", meta)
        if m:
            rep.scratch_bytes = int(m.group(1))
        out[d.name] = rep
    return out
