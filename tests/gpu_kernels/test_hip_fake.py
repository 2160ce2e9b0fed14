"""The hip driver (discovery -> hipcc build -> launch -> events -> AMD SMI readings -> checksum) against a stand-in
cupy for ROCm: the driver's own lines run in the default test run without an AMD GPU. The stand-in launch writes
what the test tells it to, so this checks the plumbing, not the arithmetic on a GPU."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest
from test_cuda_runtime_fake import FakeCupy

from archline.bench.errors import BackendUnavailableError
from archline.bench.hip import hipcc
from archline.bench.hip.backend import HipBackend
from archline.bench.kernels import KernelSpec
from archline.bench.registry import get_backend

needs_hipcc = pytest.mark.skipif(hipcc.find_hipcc() is None, reason="hipcc not installed (apt install hipcc)")


class FakeRocmCupy(FakeCupy):
    def __init__(self, arch: str = "gfx90a:sramecc+:xnack-", is_hip: bool = True, count: int = 1) -> None:
        super().__init__(count=count)
        rt = self.cuda.runtime
        props = rt.getDeviceProperties

        class Runtime(rt):  # type: ignore[misc, valid-type]
            @staticmethod
            def getDeviceProperties(i: int) -> dict[str, Any]:
                return {**props(i), "name": b"Fake MI250", "gcnArchName": arch.encode()}

        Runtime.is_hip = is_hip
        self.cuda.runtime = Runtime


SPECS = [
    KernelSpec("hip", "intensity", "sp", "mem", {"fma_per_elem": 2, "working_set_bytes": 1 << 20}),
    KernelSpec("hip", "cache", "sp", "shared", {"rounds": 4}),
    KernelSpec("hip", "chase", "int32", "mem", {"chains": 64, "steps": 100, "working_set_bytes": 64 << 10}),
    KernelSpec("hip", "ceil_flop", "sp", "mem", {"fma": 0, "chains": 2, "rounds": 8}),
]


@needs_hipcc
@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.label)
def test_run_path(monkeypatch: pytest.MonkeyPatch, spec: KernelSpec) -> None:
    fake = FakeRocmCupy()
    monkeypatch.setitem(sys.modules, "cupy", fake)
    b = get_backend("hip")
    ok, why = b.availability()
    assert ok and "Fake MI250" in why and "gfx90a" in why, why
    pk = b.prepare(spec)
    fake.expected = pk.desc.reference(pk._host, pk.global_size, pk.rounds, pk.local_size)
    res = pk.run(2)
    assert res.checksum_ok and res.reps == 2 and res.time_s > 0
    assert res.extra["timer"] == "hip-events" and res.extra["arch"] == "gfx90a"
    assert res.extra["compiler"].startswith("hipcc --offload-arch=gfx90a") and res.extra["vgprs"] > 0
    assert "clocks" in res.extra          # no AMD SMI here: the row says why there are no clocks
    grid, block, _ = fake.launches[-1]
    assert grid[0] * block[0] == pk.global_size
    fake.expected = np.zeros_like(fake.expected) + 1
    assert not pk.run(1).checksum_ok
    pk.close()
    rows = b.describe()
    assert {r["name"] for r in rows} >= {"intensity", "cache", "chase", "ceil_flop", "ceil_mem"}
    assert all(r["available"] for r in rows) and not any(r["level"] == "l1" for r in rows)
    assert len(b.sweep("chase", "int32")) == 4


def test_refusals(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cupy", FakeRocmCupy(is_hip=False))
    ok, why = HipBackend().availability()
    assert not ok and "cupy for ROCm" in why
    monkeypatch.setitem(sys.modules, "cupy", FakeRocmCupy(count=0))
    with pytest.raises(BackendUnavailableError, match="no HIP device"):
        HipBackend().prepare(SPECS[0])
    monkeypatch.setitem(sys.modules, "cupy", None)
    ok, why = HipBackend().availability()
    assert not ok and "archline[hip]" in why
