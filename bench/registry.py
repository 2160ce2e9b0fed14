"""Back-end registry: name -> implementation, imported lazily so a missing dependency is a reason, not a crash."""

from __future__ import annotations

import importlib
from typing import cast

from archline.bench.errors import BackendUnavailableError
from archline.bench.kernels import Backend

BACKENDS: dict[str, str] = {
    "cpu_asm": "archline.bench.cpu_asm.backend:CpuAsmBackend",
    "opencl": "archline.bench.opencl.backend:OpenCLBackend",
    "cuda": "archline.bench.cuda.backend:CudaBackend",
    "hip": "archline.bench.hip.backend:HipBackend",
    "emulated": "archline.bench.emulated.backend:EmulatedBackend",
}


def get_backend(name: str) -> Backend:
    if name not in BACKENDS:
        raise BackendUnavailableError(f"unknown backend '{name}' (known: {', '.join(BACKENDS)})")
    module, attr = BACKENDS[name].split(":")
    try:
        cls = getattr(importlib.import_module(module), attr)
    except ImportError as e:
        raise BackendUnavailableError(f"backend '{name}' cannot be loaded: {e}") from None
    return cast(Backend, cls())


def availability() -> dict[str, tuple[bool, str]]:
    """Every back end with (usable, reason)."""
    out: dict[str, tuple[bool, str]] = {}
    for name in BACKENDS:
        try:
            out[name] = get_backend(name).availability()
        except BackendUnavailableError as e:
            out[name] = (False, str(e))
    return out
