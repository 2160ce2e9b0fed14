"""archline.kernel_tuner: the observer driven in Kernel Tuner's order (core.py of kernel_tuner 1.5: per
configuration register_configuration; per iteration before_start, after_start, during..., after_finish; then
get_results) by a fake tuning loop, on the emulated GTX 580 meter whose device draws a known power inside windows."""

from __future__ import annotations

import abc
import importlib
import math
import sys
import time
import types
from collections.abc import Iterator
from typing import Any

import pytest

import archline
from archline.bench.errors import BenchError
from archline.bench.tuning_observer import EnergyObserver

BUSY_W, IDLE_W = 180.0, 40.0
KERNEL_S = {"block_size_x": {64: 0.2, 256: 0.1}}   # each configuration's kernel time (emulated): >= 12 samples


def _tune(obs: Any, configs: list[dict[str, int]], iterations: int = 2) -> list[dict[str, Any]]:
    """Kernel Tuner's benchmark loop, as core.py calls the observers."""
    results = []
    for params in configs:
        obs.register_configuration(params)
        for _ in range(iterations):
            obs.before_start()
            t_end = time.monotonic() + KERNEL_S["block_size_x"][params["block_size_x"]]   # "launch" the kernel
            obs.after_start()
            while time.monotonic() < t_end:
                obs.during()
                time.sleep(0.002)
            obs.after_finish()
        results.append({**params, **obs.get_results()})
    return results


@pytest.fixture
def monitor() -> Iterator[Any]:
    mon = archline.open_monitor("gtx580", emulate=True, busy_w=BUSY_W, idle_w=IDLE_W, seed=3)
    try:
        with mon:
            yield mon
    finally:
        mon.stop()


def test_energy_and_power_per_configuration(monitor: Any) -> None:
    obs = EnergyObserver(monitor, observables=["archline_energy", "archline_power", "archline_energy_err"])
    res = _tune(obs, [{"block_size_x": 64}, {"block_size_x": 256}])
    assert [r["block_size_x"] for r in res] == [64, 256]
    for r, (params, ms) in zip(res, obs.history, strict=True):
        assert params == {"block_size_x": r["block_size_x"]} and len(ms) == 2
        for m in ms:     # each iteration within the meter's bound of the emulated truth
            truth = monitor.power.energy_j(m.t_start_s, m.t_end_s)
            assert truth == pytest.approx(BUSY_W * (m.t_end_s - m.t_start_s), rel=1e-9)
            assert abs(m.energy_j - truth) <= m.energy_err_j, (m.energy_j, truth, m.energy_err_j)
        assert r["archline_energy"] == pytest.approx(sum(m.energy_j for m in ms) / 2, rel=1e-12)
        assert r["archline_energy_err"] == pytest.approx(sum(m.energy_err_j for m in ms) / 2, rel=1e-12)
        assert r["archline_power"] == pytest.approx(sum(m.mean_power_w for m in ms) / 2, rel=1e-12)
        for m in ms:
            assert abs(m.mean_power_w - BUSY_W) <= m.mean_power_err_w * (1 + 1e-9) + 1e-9
        assert r["archline_emulated"] is True and "archline_reason" not in r
    # the longer kernel took about twice the energy
    assert res[0]["archline_energy"] / res[1]["archline_energy"] == pytest.approx(2.0, rel=0.25)


def test_a_failed_iteration_is_dropped_not_measured(monitor: Any) -> None:
    obs = EnergyObserver(monitor)
    obs.register_configuration({"block_size_x": 64})
    obs.before_start()
    obs.after_start()                 # the kernel failed: Kernel Tuner moves on without after_finish
    obs.register_configuration({"block_size_x": 256})
    assert obs.monitor.recorder._open == {}
    with pytest.raises(BenchError, match="out of Kernel Tuner's order"):
        obs.after_finish()


def test_without_a_meter_the_values_are_nan_with_the_reason() -> None:
    with EnergyObserver(platform="localhost") as obs:
        (r,) = _tune(obs, [{"block_size_x": 256}], iterations=1)
    assert math.isnan(r["archline_energy"]) and math.isnan(r["archline_power"])
    assert r["archline_reason"]


def test_unknown_observable() -> None:
    with pytest.raises(BenchError, match="observable 'nvml_energy'"):
        EnergyObserver(archline.Monitor(), observables=["nvml_energy"])


def test_is_a_kernel_tuner_benchmark_observer(monkeypatch: pytest.MonkeyPatch, monitor: Any) -> None:
    """With Kernel Tuner installed, ArchlineObserver subclasses its BenchmarkObserver (an ABC whose get_results is
    abstract), so instantiate_observer accepts it. Kernel Tuner is not a test dependency: its base class is
    stood in by a module with the same shape."""
    base = types.ModuleType("kernel_tuner.observers.observer")

    class BenchmarkObserver(abc.ABC):
        def register_device(self, dev: Any) -> None:
            self.dev = dev

        @abc.abstractmethod
        def get_results(self) -> dict[str, Any]: ...

    base.BenchmarkObserver = BenchmarkObserver  # type: ignore[attr-defined]
    for name in ("kernel_tuner", "kernel_tuner.observers"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "kernel_tuner.observers.observer", base)
    monkeypatch.delitem(sys.modules, "archline.kernel_tuner", raising=False)
    kt = importlib.import_module("archline.kernel_tuner")
    try:
        assert kt.HAVE_KERNEL_TUNER
        obs = kt.ArchlineObserver(monitor)
        assert isinstance(obs, BenchmarkObserver)
        (r,) = _tune(obs, [{"block_size_x": 256}], iterations=2)
        ms = obs.history[0][1]
        assert r["archline_energy"] == pytest.approx(sum(m.energy_j for m in ms) / 2, rel=1e-12)
        assert all(abs(m.energy_j - BUSY_W * (m.t_end_s - m.t_start_s)) <= m.energy_err_j for m in ms)
    finally:
        sys.modules.pop("archline.kernel_tuner", None)
