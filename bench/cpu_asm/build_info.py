"""Which compiler built the kernel module and with which flags, for the rows' ``compiler`` column.

The compiler is read at run time from the module's ELF ``.comment`` section (GCC and clang stamp it there); the
flags mirror bench/cpu_asm/CMakeLists.txt (per-ISA options plus the target's common options) -- keep the two
in step."""

from __future__ import annotations

import functools
import re

_COMMON = "-O3 -ffp-contract=off -fno-trapping-math"
FLAGS: dict[str, str] = {"avx512": "-mavx512f -mfma", "avx2": "-mavx2 -mfma", "sse2": "-msse2 -mno-avx -mno-fma",
                         "neon": "-march=armv8-a", "scalar": ""}


@functools.cache
def compiler_id() -> str:
    """E.g. "GCC 12.2.0" (from "GCC: (Debian 12.2.0-14) 12.2.0"), "clang 16.0.6", or "unknown"."""
    try:
        from archline.bench.cpu_asm import _kernels

        data = open(str(_kernels.__file__), "rb").read()
    except (ImportError, OSError):
        return "unknown"
    m = re.search(rb"GCC: \([^)]*\) ([0-9][0-9.]*)", data)
    if m:
        return f"GCC {m.group(1).decode()}"
    m = re.search(rb"clang version ([0-9][0-9.]*)", data)
    return f"clang {m.group(1).decode()}" if m else "unknown"


def compiler(isa: str) -> str:
    """The compiler column: id, version and flags of the ISA's translation unit."""
    return " ".join(x for x in (compiler_id(), _COMMON, FLAGS.get(isa, "")) if x)
