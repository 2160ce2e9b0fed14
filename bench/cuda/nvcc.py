"""Build the generated CUDA kernels with nvcc and read back what the compiler made of them (no GPU needed).

* ``compile_module(descs, arch)``: one .cu holding every variant -> PTX text, cubin bytes and the ptxas report.
* ``inspect_module``: per kernel, the FMA instructions in PTX (``fma.rn.f32/f64``, ``mad.lo``) and SASS
  (``FFMA``/``DFMA``/``IMAD``, through cuobjdump + nvdisasm when installed), registers and spill bytes.
  The generated round loop is not unrolled (``#pragma unroll 1``), so a loop body must hold exactly
  fma_num x chains x lanes FMAs: proof that the compiler neither folded nor dropped work.

Architectures: the papers' cards span Fermi (sm_20, GTX 580) to Hopper (sm_90). ``check_arch`` says plainly when the
installed nvcc is too new (Fermi/Kepler/Maxwell/... were dropped) or too old for one of them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from archline.bench.errors import BenchError, UnsupportedError
from archline.bench.gpu import toolchain
from archline.bench.gpu.desc import GpuKernelDesc

# the architectures the papers' platforms and today's cards need (issue 6: "Fermi-era names up to Hopper")
PAPER_ARCHS: dict[str, str] = {
    "sm_20": "Fermi (GTX 580)",
    "sm_30": "Kepler (GTX 680)",
    "sm_35": "Kepler (GTX Titan)",
    "sm_50": "Maxwell",
    "sm_52": "Maxwell (GTX 980)",
    "sm_60": "Pascal (P100)",
    "sm_61": "Pascal (GTX 1080)",
    "sm_70": "Volta (V100)",
    "sm_75": "Turing",
    "sm_80": "Ampere (A100)",
    "sm_86": "Ampere (RTX 30)",
    "sm_89": "Ada (RTX 40, L4)",
    "sm_90": "Hopper (H100)",
}


def find_nvcc() -> str | None:
    return toolchain.find_compiler("nvcc", "CUDA_HOME", "/usr/local/cuda")


def require_nvcc() -> str:
    return toolchain.require_compiler(find_nvcc(), "nvcc", "install the CUDA toolkit or set CUDA_HOME")


def _tool_dirs() -> list[str]:
    dirs = []
    nv = find_nvcc()
    if nv:
        dirs.append(os.path.dirname(nv))
    try:  # pip wheels nvidia-cuda-cuobjdump / nvidia-cuda-nvdisasm put their binaries here
        import nvidia

        for base in getattr(nvidia, "__path__", []):
            dirs += [str(p) for p in Path(base).glob("cu*/bin")] + [str(p) for p in Path(base).glob("*/bin")]
    except ImportError:
        pass
    return dirs


def find_tool(name: str) -> str | None:
    """cuobjdump / nvdisasm: on PATH, next to nvcc, or from the nvidia-cuda-* pip wheels."""
    hit = shutil.which(name)
    if hit:
        return hit
    for d in _tool_dirs():
        p = os.path.join(d, name)
        if toolchain.executable(p):
            return p
    return None


@lru_cache(maxsize=4)
def nvcc_version(nvcc: str | None = None) -> tuple[int, int]:
    out = subprocess.run([nvcc or require_nvcc(), "--version"], capture_output=True, text=True, check=True).stdout
    m = re.search(r"release (\d+)\.(\d+)", out)
    if not m:
        raise BenchError(f"cannot read the nvcc version from: {out.strip()[-200:]}")
    return int(m.group(1)), int(m.group(2))


@lru_cache(maxsize=4)
def supported_archs(nvcc: str | None = None) -> tuple[str, ...]:
    """sm_XX the installed nvcc can build SASS for (nvcc --list-gpu-arch lists compute_XX)."""
    out = subprocess.run([nvcc or require_nvcc(), "--list-gpu-arch"], capture_output=True, text=True).stdout
    nums = sorted({int(m) for m in re.findall(r"compute_(\d+)", out)})
    return tuple(f"sm_{n}" for n in nums)


def _arch_num(arch: str) -> int:
    m = re.fullmatch(r"(?:sm_|compute_)?(\d+)[af]?", arch.strip())
    if not m:
        raise BenchError(f"bad CUDA architecture '{arch}' (expected e.g. sm_80)")
    return int(m.group(1))


def check_arch(arch: str, nvcc: str | None = None) -> str:
    """Normalise 'sm_80'/'80' and say clearly when this nvcc cannot build it."""
    num = _arch_num(arch)
    name = f"sm_{num}"
    have = supported_archs(nvcc)
    if name in have:
        return name
    major, minor = nvcc_version(nvcc)
    lo, hi = (_arch_num(have[0]), _arch_num(have[-1])) if have else (0, 0)
    what = f" {PAPER_ARCHS[name]}" if name in PAPER_ARCHS else ""
    span = f"{have[0]}..{have[-1]}" if have else "none"
    if num < lo:
        raise UnsupportedError(
            f"nvcc {major}.{minor} too new for {name}{what}: it builds {span}; use an older CUDA toolkit"
        )
    if num > hi:
        raise UnsupportedError(f"nvcc {major}.{minor} too old for {name}{what}: it builds {span}; upgrade CUDA")
    raise UnsupportedError(f"nvcc {major}.{minor} cannot build {name}{what}: it builds {span}")


def paper_archs_status(nvcc: str | None = None) -> dict[str, str]:
    """{'sm_20': 'nvcc 13.0 too new for sm_20 Fermi ...', 'sm_80': 'ok', ...} for every paper architecture."""
    out = {}
    for a in PAPER_ARCHS:
        try:
            check_arch(a, nvcc)
            out[a] = "ok"
        except UnsupportedError as e:
            out[a] = str(e)
    return out


def module_source(descs: list[GpuKernelDesc]) -> str:
    seen: dict[str, str] = {}
    for d in descs:
        seen.setdefault(d.name, d.source("cuda"))
    return "\n".join(seen.values())


@dataclass
class Build:
    arch: str
    ptx: str
    cubin: bytes
    ptxas_log: str
    cubin_path: str = ""
    sass: str = ""
    sass_tool: str = ""


def compile_module(descs: list[GpuKernelDesc], arch: str, *, out_dir: str | None = None,
                   extra_flags: list[str] | None = None, sass: bool = True) -> Build:
    """nvcc -ptx and nvcc -cubin -Xptxas -v of all variants in one translation unit."""
    nvcc = require_nvcc()
    sm = check_arch(arch, nvcc)
    if out_dir is None:      # a build nobody keeps: its files go with the temp directory (Build holds the bytes)
        with tempfile.TemporaryDirectory(prefix="archline-cuda-") as d:
            b = compile_module(descs, arch, out_dir=d, extra_flags=extra_flags, sass=sass)
        b.cubin_path = ""
        return b
    flags = ["-O3", f"-arch={sm}", "-std=c++17", *(extra_flags or [])]
    tmp = out_dir
    Path(tmp).mkdir(parents=True, exist_ok=True)
    cu = Path(tmp) / "kernels.cu"
    cu.write_text(module_source(descs))
    ptx_p, cubin_p = Path(tmp) / "kernels.ptx", Path(tmp) / f"kernels.{sm}.cubin"
    r1 = subprocess.run([nvcc, *flags, "-ptx", str(cu), "-o", str(ptx_p)], capture_output=True, text=True)
    if r1.returncode:
        raise BenchError(f"nvcc -ptx failed for {sm}: {r1.stderr.strip()[-2000:]}")
    r2 = subprocess.run([nvcc, *flags, "-cubin", "-Xptxas", "-v", str(cu), "-o", str(cubin_p)],
                        capture_output=True, text=True)
    if r2.returncode:
        raise BenchError(f"nvcc -cubin failed for {sm}: {r2.stderr.strip()[-2000:]}")
    b = Build(sm, ptx_p.read_text(), cubin_p.read_bytes(), r2.stdout + r2.stderr, str(cubin_p))
    if sass:
        b.sass, b.sass_tool = disassemble(str(cubin_p))
    return b


def disassemble(cubin_path: str) -> tuple[str, str]:
    """SASS text and the tool used; ('', reason) when cuobjdump/nvdisasm is not installed."""
    cuobj, nvdis = find_tool("cuobjdump"), find_tool("nvdisasm")
    env = dict(os.environ)
    if nvdis:
        env["PATH"] = os.path.dirname(nvdis) + os.pathsep + env.get("PATH", "")
    if cuobj and nvdis:
        r = subprocess.run([cuobj, "-sass", cubin_path], capture_output=True, text=True, env=env)
        if r.returncode == 0 and "Function" in r.stdout:
            return r.stdout, "cuobjdump"
    if nvdis:
        r = subprocess.run([nvdis, "-c", cubin_path], capture_output=True, text=True)
        if r.returncode == 0:
            return r.stdout, "nvdisasm"
    return "", "cuobjdump/nvdisasm not installed (pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)"


@dataclass
class KernelReport:
    name: str
    ptx_fma: int = 0           # fma.rn.f32 / fma.rn.f64 / mad.lo.(s|u)32 in the whole function
    ptx_loop_fma: int = -1     # ... inside the round loop (the one backward branch)
    sass_fma: int = -1         # FFMA / DFMA / IMAD in SASS (-1: not disassembled)
    sass_loop_fma: int = -1
    ptx_loop_add: int = -1     # add.f32 / add.f64 / add.(s|u)32 inside the loop (cache kernels: the accumulation)
    ptx_loop_loads: int = -1   # ld.global / ld.shared instructions inside the loop (vector loads count once)
    sass_loop_loads: int = -1  # LDG / LDS inside the SASS loop
    registers: int = -1
    spill_stores: int = -1
    spill_loads: int = -1
    stack_bytes: int = -1
    notes: list[str] = field(default_factory=list)


def _ptx_functions(ptx: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for m in re.finditer(r"\.entry\s+(\w+)\s*\((.*?)\n\}", ptx, re.S):
        out[m.group(1)] = m.group(0)
    return out


def _sass_functions(sass: str) -> dict[str, str]:
    out: dict[str, str] = {}
    parts = re.split(r"\n\s*(?:Function|\.text\.)\s*:?\s*(\w+)", sass)
    for i in range(1, len(parts) - 1, 2):
        out[parts[i]] = parts[i + 1]
    return out


PTX_ADD = {"sp": r"\badd(?:\.rn)?\.f32\b", "dp": r"\badd(?:\.rn)?\.f64\b", "int32": r"\badd\.[su]32\b"}
PTX_LOAD = r"\bld\.(?:global|shared)(?:\.\w+)*\s"
SASS_LOAD = r"\b(?:LDG|LDS)(?:\.[\w.]+)?\s"
PTX_FMA = {"sp": r"\bfma\.rn\.f32\b", "dp": r"\bfma\.rn\.f64\b", "int32": r"\bmad\.lo\.[su]32\b"}
SASS_FMA = {"sp": r"\bFFMA\b", "dp": r"\bDFMA\b", "int32": r"\bIMAD\s"}   # IMAD.WIDE/.MOV/.SHL excluded


def _loop_body_ptx(fn: str) -> str:
    """The backward-branch loop with the most loads: the generated round loop (not a fill or remainder loop)."""
    best, most = "", 0
    for lab in re.findall(r"^(\$L__BB\d+_\d+):", fn, re.M):
        start = fn.index(lab + ":")
        m = re.search(rf"bra(?:\.uni)?\s+{re.escape(lab)};", fn[start:])
        if m:
            body = fn[start:start + m.end()]
            n = len(re.findall(PTX_LOAD, body))
            if n > most:
                best, most = body, n
    return best


def _loop_body_sass(fn: str) -> str:
    """SASS from a branch target to the backward BRA to it; of several loops, the one with the most loads."""
    lines = fn.splitlines()
    addr: dict[int, int] = {}
    for i, ln in enumerate(lines):
        m = re.search(r"/\*([0-9a-f]{4,})\*/", ln)
        if m:
            addr[int(m.group(1), 16)] = i
    best, most = "", 0
    for i, ln in enumerate(lines):
        tgt = re.search(r"\bBRA\b.*?(?:`\(\.L_x_(\d+)\)|0x([0-9a-f]+))", ln)
        if not tgt:
            continue
        if tgt.group(2):
            j = addr.get(int(tgt.group(2), 16))
        else:
            lab = f".L_x_{tgt.group(1)}:"
            j = next((k for k, x in enumerate(lines) if x.strip().startswith(lab)), None)
        if j is not None and j < i:
            body = "\n".join(lines[j:i + 1])
            n = len(re.findall(SASS_LOAD, body))
            if n > most:
                best, most = body, n
    return best


def inspect_module(build: Build, descs: list[GpuKernelDesc]) -> dict[str, KernelReport]:
    ptx_fns = _ptx_functions(build.ptx)
    sass_fns = _sass_functions(build.sass) if build.sass else {}
    reports: dict[str, KernelReport] = {}
    for d in descs:
        rep = KernelReport(d.name)
        fn = ptx_fns.get(d.name, "")
        if not fn:
            rep.notes.append("function missing from PTX")
        pat = PTX_FMA[d.precision]
        rep.ptx_fma = len(re.findall(pat, fn))
        body = _loop_body_ptx(fn)
        rep.ptx_loop_fma = len(re.findall(pat, body)) if body else -1
        if body:
            rep.ptx_loop_add = len(re.findall(PTX_ADD[d.precision], body))
            rep.ptx_loop_loads = len(re.findall(PTX_LOAD, body))
        if sass_fns:
            s = sass_fns.get(d.name, "")
            rep.sass_fma = len(re.findall(SASS_FMA[d.precision], s))
            sb = _loop_body_sass(s)
            rep.sass_loop_fma = len(re.findall(SASS_FMA[d.precision], sb)) if sb else -1
            rep.sass_loop_loads = len(re.findall(SASS_LOAD, sb)) if sb else -1
        m = re.search(
            rf"Function properties for {d.name}\s*\n\s*(\d+) bytes stack frame, (\d+) bytes spill stores, "
            rf"(\d+) bytes spill loads", build.ptxas_log)
        if m:
            rep.stack_bytes, rep.spill_stores, rep.spill_loads = (int(m.group(i)) for i in (1, 2, 3))
        m2 = re.search(rf"Compiling entry function '{d.name}'.*?Used (\d+) registers", build.ptxas_log, re.S)
        if m2:
            rep.registers = int(m2.group(1))
        reports[d.name] = rep
    return reports
