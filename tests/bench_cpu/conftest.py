"""Fixtures for the cpu_asm tests: the back end, and which compiled ISAs this CPU can execute."""

from __future__ import annotations

import pytest

from archline.bench.cpu_asm.backend import CpuAsmBackend, isa_usable
from archline.bench.cpu_asm.variants import ISAS, X86_ORDER


@pytest.fixture(scope="session")
def cpu_backend() -> CpuAsmBackend:
    b = CpuAsmBackend()
    ok, why = b.availability()
    if not ok:
        pytest.skip(f"cpu_asm not usable here: {why}")
    return b


@pytest.fixture(params=X86_ORDER)
def x86_isa(request: pytest.FixtureRequest) -> str:
    """Every x86-64 variant; those this CPU cannot execute are skipped with the reason."""
    ok, why = isa_usable(ISAS[request.param])
    if not ok:
        pytest.skip(f"{request.param}: {why}")
    return str(request.param)
