"""What this CPU can execute, from the compiled CPUID probe."""

from __future__ import annotations

import functools
from typing import Any


@functools.cache
def cpu_features() -> dict[str, Any]:
    """ISA flags (``avx2``, ``fma``, ``avx512f``, ``neon``…) that both the CPU and the OS support."""
    from archline.bench.cpu_asm import _cpuid

    return dict(_cpuid.features())
