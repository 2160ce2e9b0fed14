"""The AArch64 build of the _kernels Python module: module.cpp + isa_neon.cpp cross-compiled and linked the way
bench/cpu_asm/CMakeLists.txt builds them on an AArch64 host.

This is a build check, not a run: no AArch64 Python interpreter exists on an x86-64 CI machine. The kernels the
module contains are the ones tests/bench_cpu/test_cpu_neon_qemu.py runs under qemu-aarch64 and checks."""

from __future__ import annotations

import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "bench" / "cpu_asm" / "src"
CXX = "aarch64-linux-gnu-g++"


@pytest.mark.slow
def test_kernels_module_builds_for_aarch64(tmp_path: Path) -> None:
    if shutil.which(CXX) is None:
        pytest.skip(f"{CXX} not installed")
    pybind11 = pytest.importorskip("pybind11")
    so = tmp_path / "_kernels.so"
    # The host's Python headers: pyconfig.h describes an LP64 Linux build, which AArch64 Linux shares.
    cmd = [CXX, "-std=c++17", "-O3", "-march=armv8-a", "-ffp-contract=off", "-fno-trapping-math", "-fopenmp",
           "-fPIC", "-shared", "-fvisibility=hidden", f"-I{pybind11.get_include()}",
           f"-I{sysconfig.get_paths()['include']}", "-o", str(so), str(SRC / "module.cpp"), str(SRC / "isa_neon.cpp")]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    head = so.read_bytes()[:20]
    assert head[:4] == b"\x7fELF" and int.from_bytes(head[18:20], "little") == 183  # e_machine EM_AARCH64
    readelf = shutil.which("aarch64-linux-gnu-readelf") or shutil.which("readelf")
    if readelf:
        syms = subprocess.run([readelf, "-Ws", str(so)], capture_output=True, text=True).stdout.splitlines()
        assert any(ln.split()[-1] == "PyInit__kernels" for ln in syms if ln.split())
        # -shared lets undefined symbols through: the NEON table must be defined here, not left to the loader
        table = [ln for ln in syms if ln.split() and ln.split()[-1] == "isa_neon"]
        assert table and all(" UND " not in ln for ln in table)
    objdump = shutil.which("aarch64-linux-gnu-objdump")
    if objdump:
        asm = subprocess.run([objdump, "-d", str(so)], capture_output=True, text=True).stdout
        assert "stnp" in asm and "fmls" in asm and "fmla" in asm  # the nt stream, the Horner steps, the FMAs
