"""The declared counts match the instructions: compile each ISA's translation unit to assembly and check that one
Horner step of the chains kernel is exactly G register-only FMA instructions (no spills, no extra loads)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from archline.bench.cpu_asm.variants import ISAS

SRC = Path(__file__).resolve().parents[2] / "bench" / "cpu_asm" / "src"
X86_FLAGS = {"avx512": ["-mavx512f", "-mfma"], "avx2": ["-mavx2", "-mfma"], "sse2": ["-msse2"]}
STEP_INSN = {"avx512": r"vfnmadd\d{3}p[ds]\s+%zmm", "avx2": r"vfnmadd\d{3}p[ds]\s+%ymm", "sse2": r"subp[ds]\s+%xmm",
             "neon": r"fmls\s+v\d+\.(2d|4s)"}


def _asm(isa: str, tmp: Path) -> str:
    if isa == "neon":
        cxx, src, flags = "aarch64-linux-gnu-g++", SRC / "neon_harness.cpp", ["-march=armv8-a"]
    else:
        cxx, src, flags = "g++", SRC / f"isa_{isa}.cpp", X86_FLAGS[isa]
    if shutil.which(cxx) is None:
        pytest.skip(f"{cxx} not installed")
    out = tmp / f"{isa}.s"
    subprocess.run([cxx, "-std=c++17", "-O3", "-ffp-contract=off", *flags, "-S", "-o", str(out), str(src)],
                   check=True, capture_output=True, timeout=240)
    return subprocess.run(["c++filt"], input=out.read_text(), capture_output=True, text=True, check=True).stdout


def _function(asm: str, name_re: str) -> list[str]:
    lines = asm.splitlines()
    start = next(i for i, ln in enumerate(lines) if re.match(name_re, ln))
    end = next(i for i in range(start, len(lines)) if ".cfi_endproc" in lines[i] or lines[i].strip() == ".size")
    return lines[start:end]


@pytest.mark.parametrize("isa", [pytest.param("avx512", marks=pytest.mark.slow), "avx2",
                                 pytest.param("sse2", marks=pytest.mark.slow),
                                 pytest.param("neon", marks=pytest.mark.slow)])
def test_horner_loop_is_g_register_fmas(isa: str, tmp_path: Path) -> None:
    v = ISAS[isa]
    asm = _asm(isa, tmp_path)
    dtype = r"neon::D" if isa == "neon" else r"\(anonymous namespace\)::D"
    body = _function(asm, rf"^double kern::chains<{dtype}, {v.g_fp}, {v.a_fp}, 0>\(")
    step = re.compile(STEP_INSN[isa])
    # the runtime Horner loop: from the first step instruction to the next branch (its loop's backward jump)
    idx = [i for i, ln in enumerate(body) if step.search(ln)]
    assert idx, f"no {STEP_INSN[isa]} in chains kernel"
    branch = re.compile(r"^\s+(j[a-z]+|b\.?(ne|eq|lt|gt|le|ge|hi|ls|lo|hs|cc|cs|mi|pl)|b|cbnz|cbz)\s")
    end = next(i for i in range(idx[0], len(body)) if branch.match(body[i]))
    loop = body[idx[0]: end]
    n_steps = sum(1 for ln in loop if step.search(ln))
    # one Horner step is G independent FMAs; the compiler may unroll the runtime step loop (whole steps only)
    assert n_steps > 0 and n_steps % v.g_fp == 0, (isa, n_steps)
    mem = [ln for ln in loop if "(" in ln or "[" in ln]
    assert not mem, f"memory traffic inside the Horner loop: {mem}"


@pytest.mark.slow
def test_neon_nt_stores_are_stnp(tmp_path: Path) -> None:
    """The NEON nt kernel streams every result vector with one stnp (its two d halves), no ordinary store, and
    ends with one dmb ishst (the sfence counterpart)."""
    v = ISAS["neon"]
    asm = _asm("neon", tmp_path)
    for t in ("D", "S"):
        for r in (0, 7):
            body = _function(asm, rf"^void kern::nt_trips<neon::{t}, {v.g_fp}, {r}>\(")
            ops = [ln.split()[0] for ln in body if ln.startswith("\t") and not ln.strip().startswith(".")]
            n_stnp = ops.count("stnp")
            assert n_stnp > 0 and n_stnp % (v.g_fp // 2) == 0, (t, r, n_stnp)   # whole trips of G/2 stores
            assert not [o for o in ops if o in ("st1", "str", "stp", "stur")], (t, r)
            assert ops.count("dmb") == 1 and any(re.search(r"dmb\s+ishst", ln) for ln in body), (t, r)
