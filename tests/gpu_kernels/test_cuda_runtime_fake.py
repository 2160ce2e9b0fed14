"""The CUDA run path (prepare -> nvcc build -> launch -> events -> NVML -> checksum) against a stand-in cupy.

No GPU here: the stand-in "launch" writes what the test tells it to, so this checks the plumbing (device query,
arch check, the real nvcc build and inspection, argument lists, event timing, NVML fallback, checksum verdicts),
not the kernels' arithmetic on a GPU; that is still unmeasured until a GPU machine runs tests marked gpu.
"""

from __future__ import annotations

import os
import sys
import types
from typing import Any

import numpy as np
import pytest

from archline.bench.cuda import nvcc
from archline.bench.cuda.backend import CudaBackend
from archline.bench.errors import BackendUnavailableError, UnsupportedError
from archline.bench.kernels import KernelSpec

needs_nvcc = pytest.mark.skipif(nvcc.find_nvcc() is None, reason="nvcc not installed")


class FakeCupy(types.ModuleType):
    def __init__(self, major: int = 8, minor: int = 0, count: int = 1) -> None:
        super().__init__("cupy")
        self.expected: np.ndarray | None = None
        self.launches: list[tuple[Any, Any, tuple[Any, ...]]] = []
        fake = self

        class Runtime:
            @staticmethod
            def getDeviceCount() -> int:
                return count

            @staticmethod
            def getDeviceProperties(i: int) -> dict[str, Any]:
                return {"name": b"Fake GPU", "major": major, "minor": minor, "multiProcessorCount": 2,
                        "l2CacheSize": 1 << 20, "sharedMemPerBlock": 48 << 10, "totalGlobalMem": 1 << 30}

            @staticmethod
            def driverGetVersion() -> int:
                return 13000

            @staticmethod
            def runtimeGetVersion() -> int:
                return 13000

        class Device:
            def __init__(self, i: int) -> None:
                self.i = i

            def __enter__(self) -> Device:
                return self

            def __exit__(self, *a: object) -> None:
                return None

        class Event:
            def __init__(self) -> None:
                self.t = 0.0

            def record(self) -> None:
                import time

                self.t = time.perf_counter()

            def synchronize(self) -> None:
                return None

        class Function:
            def __init__(self, name: str) -> None:
                self.name = name

            def __call__(self, grid: Any, block: Any, args: tuple[Any, ...]) -> None:
                fake.launches.append((grid, block, args))
                if fake.expected is not None:
                    args[1][...] = fake.expected.reshape(args[1].shape)

        class RawModule:
            def __init__(self, path: str) -> None:
                assert os.path.getsize(path) > 0
                self.blob = open(path, "rb").read()

            def get_function(self, name: str) -> Function:
                assert name.encode() in self.blob, f"{name} not in the cubin"
                return Function(name)

        self.cuda = types.SimpleNamespace(
            runtime=Runtime, Device=Device, Event=Event,
            get_elapsed_time=lambda s, e: max(e.t - s.t, 1e-6) * 1e3,
        )
        self.RawModule = RawModule
        self.asarray = lambda a: np.array(a, copy=True)
        self.zeros = lambda n, dtype: np.zeros(n, dtype=dtype)
        self.asnumpy = lambda a: np.array(a, copy=True)


@pytest.fixture
def fake_cupy(monkeypatch: pytest.MonkeyPatch) -> FakeCupy:
    fc = FakeCupy()
    monkeypatch.setitem(sys.modules, "cupy", fc)
    return fc


SPECS = [
    KernelSpec("cuda", "intensity", "sp", "mem", {"fma_per_elem": 1.25, "working_set_bytes": 1 << 20}),
    KernelSpec("cuda", "intensity", "dp", "mem", {"fma_per_elem": 2, "working_set_bytes": 1 << 20}),
    KernelSpec("cuda", "int", "int32", "mem", {"fma_per_elem": 3, "working_set_bytes": 1 << 20}),
    KernelSpec("cuda", "cache", "sp", "shared", {"rounds": 4}),
    KernelSpec("cuda", "cache", "dp", "l2", {"rounds": 4, "working_set_bytes": 64 << 10}),
    KernelSpec("cuda", "chase", "int32", "mem", {"chains": 64, "steps": 100, "working_set_bytes": 64 << 10}),
]


@needs_nvcc
@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.label)
def test_run_path(fake_cupy: FakeCupy, spec: KernelSpec) -> None:
    b = CudaBackend()
    ok, why = b.availability()
    assert ok and "Fake GPU" in why and "sm_80" in why
    pk = b.prepare(spec)
    fake_cupy.expected = pk.desc.reference(pk._host, pk.global_size, pk.rounds, pk.local_size)
    res = pk.run(3)
    assert res.checksum_ok and res.reps == 3 and res.time_s > 0
    assert res.counts == pk.counts_per_rep.scaled(3)
    assert res.extra["timer"] == "cuda-events" and res.extra["device"] == "Fake GPU"
    assert res.extra["arch"] == "sm_80" and res.extra["compiler"].startswith("nvcc")
    assert "core_mhz" in res.extra or "clocks" in res.extra            # clocks, or why not
    grid, block, args = fake_cupy.launches[-1]
    assert grid[0] * block[0] == pk.global_size and len(args) >= 4   # in, out, then scalars or starts
    # a wrong result is caught
    fake_cupy.expected = np.zeros_like(fake_cupy.expected) + 1
    assert not pk.run(1).checksum_ok
    pk.close()


@needs_nvcc
def test_too_old_arch_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cupy", FakeCupy(major=3, minor=5))
    ok, why = CudaBackend().availability()
    assert not ok and "too new for sm_35" in why
    with pytest.raises(UnsupportedError, match="sm_35"):
        CudaBackend().prepare(SPECS[0])


def test_no_device(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cupy", FakeCupy(count=0))
    ok, why = CudaBackend().availability()
    assert not ok and "no CUDA device" in why
    with pytest.raises(BackendUnavailableError, match="no CUDA device"):
        CudaBackend().prepare(SPECS[0])
    with pytest.raises(BackendUnavailableError):
        CudaBackend().prepare(SPECS[0], device="3")


@needs_nvcc
def test_clocks_sampled_through_a_recorder_window(fake_cupy: FakeCupy, monkeypatch: pytest.MonkeyPatch) -> None:
    """No sampling code in the driver: powermon's ReadingsMeter samples NvmlGpu.readings() through a Recorder
    window around the launches (on the recorder's clock); the row gets the window's mean, min and max."""
    import itertools

    from support.fakes import FakeNvml

    from archline.bench.cuda.backend import CudaDevice
    from archline.powermon.counters.nvml import NvmlGpu

    class ClockedNvml(FakeNvml):
        NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 0, 1, 0
        sm = itertools.cycle([1400, 1500])

        def nvmlDeviceGetClockInfo(self, h: int, t: int) -> int:
            return next(self.sm) if t == 0 else 9500

        def nvmlDeviceGetTemperature(self, h: int, t: int) -> int:
            return 61

    gpu = NvmlGpu.open(0, ClockedNvml())
    monkeypatch.setattr(CudaDevice, "layer", types.SimpleNamespace(open=lambda i: gpu))
    # no poll inside the window: each run reads at start (1400), begin (1500), end (1400) and stop (1500)
    monkeypatch.setattr(CudaDevice, "readings_poll_s", 60.0)
    pk = CudaBackend().prepare(SPECS[0])
    fake_cupy.expected = pk.desc.reference(pk._host, pk.global_size, pk.rounds, pk.local_size)
    ex = pk.run(2).extra
    assert "core_mhz" in ex, ex.get("clocks")
    assert ex["readings_n"] == 2 and ex["core_mhz"] == 1450.0
    assert (ex["core_mhz_min"], ex["core_mhz_max"]) == (1400.0, 1500.0)
    assert ex["mem_mhz"] == 9500 and ex["temp_c_max"] == 61
    assert ex["effective_clock_hz"] == ex["core_mhz"] * 1e6


@needs_nvcc
def test_no_clocks_says_why(fake_cupy: FakeCupy, monkeypatch: pytest.MonkeyPatch) -> None:
    """A layer that opens but has no clocks (FakeNvml has none): energy meters keep going; the row says why."""
    from support.fakes import FakeNvml

    from archline.bench.cuda.backend import CudaDevice
    from archline.powermon.counters.nvml import NvmlGpu

    gpu = NvmlGpu.open(0, FakeNvml())
    monkeypatch.setattr(CudaDevice, "layer", types.SimpleNamespace(open=lambda i: gpu))
    pk = CudaBackend().prepare(SPECS[0])
    fake_cupy.expected = pk.desc.reference(pk._host, pk.global_size, pk.rounds, pk.local_size)
    ex = pk.run(1).extra
    assert "core_mhz" not in ex and "NVML_CLOCK_SM" in ex["clocks"]
