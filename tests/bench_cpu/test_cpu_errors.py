"""Bad input gets a BenchError subclass with a clear message, never a crash or a silent zero."""

from __future__ import annotations

import pytest

from archline.bench.cpu_asm.backend import CpuAsmBackend, isa_usable
from archline.bench.cpu_asm.variants import ISAS
from archline.bench.errors import BenchError, UnsupportedError
from archline.bench.kernels import KernelSpec


def _spec(kernel: str = "intensity", precision: str = "dp", level: str = "mem", **params: object) -> KernelSpec:
    base: dict[str, object] = {"working_set_bytes": 1 << 20}
    if kernel == "intensity":
        base["fma_per_trip"] = 24
    base.update(params)
    return KernelSpec("cpu_asm", kernel, precision, level, base)


def test_unsupported_isa(cpu_backend: CpuAsmBackend) -> None:
    missing = [n for n in ("avx512", "avx2", "sse2") if not isa_usable(ISAS[n])[0]]
    for name in [*missing, "neon"]:
        with pytest.raises(UnsupportedError, match=name):
            cpu_backend.prepare(_spec(isa=name))
    with pytest.raises(UnsupportedError, match="unknown ISA"):
        cpu_backend.prepare(_spec(isa="mmx"))


def test_working_set_larger_than_memory(cpu_backend: CpuAsmBackend) -> None:
    with pytest.raises(BenchError, match="larger than"):
        cpu_backend.prepare(_spec(working_set_bytes=1 << 50))
    with pytest.raises(BenchError, match="larger than"):
        cpu_backend.prepare(_spec("chase", level="mem", working_set_bytes=1 << 50))


@pytest.mark.parametrize("bad", [0, -1, -4096, 1.5, "big", True])
def test_bad_sizes(cpu_backend: CpuAsmBackend, bad: object) -> None:
    with pytest.raises(BenchError):
        cpu_backend.prepare(_spec(working_set_bytes=bad))
    with pytest.raises(BenchError):
        cpu_backend.prepare(_spec("cache", level="l1", working_set_bytes=bad))


def test_too_small_and_bad_knobs(cpu_backend: CpuAsmBackend) -> None:
    with pytest.raises(BenchError, match="below one trip"):
        cpu_backend.prepare(_spec(working_set_bytes=64))
    with pytest.raises(BenchError, match="floor"):
        cpu_backend.prepare(_spec(fma_per_trip=1))
    with pytest.raises(BenchError):
        cpu_backend.prepare(_spec(fma_per_trip=0))
    with pytest.raises(BenchError):
        cpu_backend.prepare(_spec("int", "int32", steps=-1))
    with pytest.raises(BenchError):
        cpu_backend.prepare(_spec("cache", level="l1", mode="copy"))
    with pytest.raises(BenchError):
        cpu_backend.prepare(_spec("chase", level="l1", chains=3))
    with pytest.raises(BenchError):
        cpu_backend.prepare(_spec(threads=0))
    with pytest.raises(BenchError):
        cpu_backend.prepare(_spec(threads=10_000))
    with pytest.raises(UnsupportedError):
        cpu_backend.prepare(_spec("cache", "sp", level="l1"))
    with pytest.raises(BenchError):
        cpu_backend.prepare(_spec("intensity", level="l2"))
    with pytest.raises(BenchError):
        cpu_backend.sweep("nope", "dp")


@pytest.mark.parametrize("reps", [0, -3, 2.0, None, True])
def test_bad_reps(cpu_backend: CpuAsmBackend, reps: object) -> None:
    p = cpu_backend.prepare(_spec())
    try:
        with pytest.raises(BenchError, match="reps"):
            p.run(reps)  # type: ignore[arg-type]
    finally:
        p.close()


def test_bad_reps_runner() -> None:
    from archline.bench.config.options import RunOptions

    with pytest.raises(BenchError, match="--reps: expected greater than or equal to 1"):
        RunOptions.from_cli(reps=0)
    with pytest.raises(BenchError, match="--min-time: expected greater than 0"):
        RunOptions.from_cli(min_time_s=0.0)


@pytest.mark.parametrize("args, says", [
    (["--kernel", "cache", "--store", "nt"], "applies to the intensity kernel only"),
    (["--backend", "opencl", "--store", "none"], "--store applies to the cpu_asm back end"),
])
def test_store_only_for_the_cpu_intensity_kernel(cpu_backend: CpuAsmBackend, run_cli, tmp_path, args: list[str],
                                                 says: str) -> None:
    res = run_cli("bench", "run", *args, "--working-set", "64K", "--out", str(tmp_path))
    assert res.exit_code != 0 and says in res.stderr
    assert "Traceback" not in res.stderr and any(says in line for line in res.stderr.splitlines())
    assert not list(tmp_path.iterdir())  # nothing half-written


def test_unknown_store_mode(cpu_backend: CpuAsmBackend) -> None:
    with pytest.raises(BenchError, match="intensity store must be one of none, nt, got 'wc'"):
        cpu_backend.sweep("intensity", "dp", store="wc")
    with pytest.raises(BenchError, match="intensity store must be one of none, nt, got 'wc'"):
        cpu_backend.prepare(_spec(store="wc"))
