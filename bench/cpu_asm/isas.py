"""What this CPU runs: the compiled ISA variants it can execute, the best of them, and the native module."""

from __future__ import annotations

from typing import Any

from archline.bench.cpu_asm.variants import ISAS, STORE_MODES, X86_ORDER, IsaVariant
from archline.bench.errors import BenchError

NODE_BYTES = 64            # one pointer-chase node per cache line
#: dependent steps per chain in one chase repetition at most: a memory-sized cycle (16 M nodes per GiB, ~0.3 us
#: each) would take seconds per lap; a shorter rep continues the same walk
CHASE_STEPS_PER_REP = 1 << 20
PAGE_BYTES = 4096
KERNEL_LEVELS = {"intensity": ("mem", "l1"), "int": ("mem",), "cache": ("l1", "l2", "l3", "mem"),
                 "chase": ("l1", "l2", "l3", "mem")}
KERNEL_PRECISIONS = {"intensity": ("sp", "dp"), "int": ("int32",), "cache": ("dp",), "chase": ("dp",)}


def features() -> dict[str, Any]:
    """The CPUID probe's flags (imported lazily: a missing build is a reason, not a crash)."""
    from archline.bench.cpu_asm.cpu_features import cpu_features

    return cpu_features()


def native() -> Any:
    from archline.bench.cpu_asm import _kernels

    return _kernels


def version_line() -> str:
    """``archline --version``'s line on this back end: the ISAs the kernel module was compiled for."""
    try:
        return "compiled ISAs " + ", ".join(native().compiled_isas())
    except ImportError as e:
        return f"compiled ISAs none (kernel module not built: {e})"


def isa_usable(v: IsaVariant) -> tuple[bool, str]:
    try:
        feats = features()
    except ImportError as e:
        return False, f"CPUID probe not built: {e}"
    if feats.get("arch") != v.arch:
        return False, f"{v.isa} needs {v.arch}, this is {feats.get('arch')}"
    missing = [f for f in v.requires if not feats.get(f)]
    if missing:
        return False, f"{v.isa}: CPU/OS lacks {', '.join(missing)}"
    return True, v.note


def check_store(store: str) -> str:
    if store not in STORE_MODES:
        raise BenchError(f"intensity store must be one of {', '.join(STORE_MODES)}, got '{store}'")
    return store


def best_isa() -> str | None:
    for name in (*X86_ORDER, "neon"):  # isa_usable turns away the other architecture's ISAs
        if isa_usable(ISAS[name])[0]:
            return name
    return None


