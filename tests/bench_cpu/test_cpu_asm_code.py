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
    body = _function(asm, rf"^double kern::chains<{dtype}, {v.g_fp}, {v.a_fp}, 0, false>\(")
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
            body = _function(asm, rf"^void kern::nt_trips<neon::{t}, {v.g_fp}, {r}, (false|true)>\(")
            ops = [ln.split()[0] for ln in body if ln.startswith("\t") and not ln.strip().startswith(".")]
            n_stnp = ops.count("stnp")
            assert n_stnp > 0 and n_stnp % (v.g_fp // 2) == 0, (t, r, n_stnp)   # whole trips of G/2 stores
            assert not [o for o in ops if o in ("st1", "str", "stp", "stur")], (t, r)
            assert ops.count("dmb") == 1 and any(re.search(r"dmb\s+ishst", ln) for ln in body), (t, r)


def _probe_asm(cxx: str, flags: list[str], tmp: Path) -> list[str]:
    if shutil.which(cxx) is None:
        pytest.skip(f"{cxx} not installed")
    src = tmp / "probe.cpp"
    src.write_text('#include "clock_probe.hpp"\n'
                   'double add_probe(unsigned long n) { return probe::add_chain_hz(n); }\n'
                   'double mul_probe(unsigned long n) { return probe::mul_chain_hz(n); }\n')
    out = tmp / "probe.s"
    subprocess.run([cxx, "-std=c++17", "-O3", *flags, "-I", str(SRC), "-S", "-o", str(out), str(src)],
                   check=True, capture_output=True, timeout=120)
    return out.read_text().splitlines()


def _loop(lines: list[str], func: str) -> list[str]:
    """The instructions of the asm loop (from its label '1:' to the backward branch) inside ``func``."""
    start = next(i for i, ln in enumerate(lines) if ln.startswith(func))
    first = next(i for i in range(start, len(lines)) if lines[i].strip() == "1:")
    end = next(i for i in range(first, len(lines)) if re.search(r"\b(jnz|b\.ne)\s+1b", lines[i]))
    return [ln.strip() for ln in lines[first + 1:end] if ln.strip() and not ln.strip().startswith(".")]


@pytest.mark.parametrize("arch", ["x86_64", pytest.param("aarch64", marks=pytest.mark.slow)])
def test_clock_probe_chains_no_renamer_folds(arch: str, tmp_path: Path) -> None:
    """The clock probe's add chain uses a register operand (Golden Cove+ fold add-immediate chains in the renamer:
    one ran at ~8 adds per cycle); 16 dependent adds per trip, and on x86-64 a chain of 8 dependent imuls."""
    cxx = "g++" if arch == "x86_64" else "aarch64-linux-gnu-g++"
    lines = _probe_asm(cxx, [] if arch == "x86_64" else ["-march=armv8-a"], tmp_path)
    adds = [ln for ln in _loop(lines, "_Z9add_probe") if ln.startswith("add")]
    if arch == "x86_64":
        ops = [re.match(r"addq?\s+(%\w+),\s*(%\w+)$", a) for a in adds]
        assert len(adds) == 16 and all(ops), adds                       # register source: no $immediate
        dst = {m.group(2) for m in ops if m}
        assert len(dst) == 1 and dst.isdisjoint({m.group(1) for m in ops if m})  # one chain, fed by another reg
        muls = [ln for ln in _loop(lines, "_Z9mul_probe") if ln.startswith("imul")]
        regs = [re.match(r"imulq?\s+(%\w+),\s*(%\w+)$", m) for m in muls]
        assert len(muls) == 8 and all(r and r.group(1) == r.group(2) for r in regs), muls
    else:
        ops = [re.match(r"add\s+(x\d+),\s*(x\d+),\s*(x\d+)$", a) for a in adds]
        assert len(adds) == 16 and all(m and m.group(1) == m.group(2) != m.group(3) for m in ops), adds
