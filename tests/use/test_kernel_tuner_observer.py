"""archline.kernel_tuner: the observer driven in Kernel Tuner's order (core.py of kernel_tuner 1.5: per
configuration register_configuration; per iteration before_start, after_start, during..., after_finish; then
get_results; then, for an observer with a ``continuous_observer``, benchmark_continuous: before_start, the
launches, after_start, during..., after_finish, get_results) by a fake tuning loop, and by Kernel Tuner itself on
PoCL, on the emulated GTX 580 meter (PowerMon 2, 128 Hz) whose device draws a known power inside windows."""

from __future__ import annotations

import abc
import importlib
import math
import sys
import time
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import archline
from archline.bench.errors import BenchError
from archline.bench.tuning_observer import EnergyObserver

BUSY_W, IDLE_W = 180.0, 40.0
KERNEL_S = {"block_size_x": {64: 0.2, 256: 0.1}}   # each configuration's kernel time (emulated): >= 12 samples


def _run(obs: Any, seconds: float) -> None:
    """One pass of core.py's loop: before_start, the launch(es), after_start, during... until done, after_finish."""
    obs.before_start()
    t_end = time.monotonic() + seconds          # "launch" the kernel(s)
    obs.after_start()
    while time.monotonic() < t_end:
        obs.during()
        time.sleep(0.002)
    obs.after_finish()


def _tune(obs: Any, configs: list[dict[str, int]], iterations: int = 2, kernel_s: float | None = None,
          continuous_s: float = 0.3) -> list[dict[str, Any]]:
    """Kernel Tuner's benchmark loop, as core.py calls the observers (its continuous loop too when the observer
    has one, ``continuous_s`` long instead of Kernel Tuner's 1 s)."""
    results = []
    for params in configs:
        k_s = kernel_s if kernel_s is not None else KERNEL_S["block_size_x"][params["block_size_x"]]
        obs.register_configuration(params)
        result: dict[str, Any] = {"time": 1e3 * k_s}       # Kernel Tuner's mean kernel time (ms)
        for _ in range(iterations):
            _run(obs, k_s)
        result.update(obs.get_results())
        cont = getattr(obs, "continuous_observer", None)
        if cont is not None:
            cont.results = result
            _run(cont, max(continuous_s, k_s))              # the kernels launched back to back
            result.update(cont.get_results())
        results.append({**params, **result})
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
    obs = EnergyObserver(monitor, observables=["archline_energy", "archline_power", "archline_energy_err"],
                         mode="iteration")
    assert not hasattr(obs, "continuous_observer")      # so Kernel Tuner runs no continuous loop for it
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
        assert r["archline_emulated"] is True and r["archline_reason"] == "" and r["archline_lost_samples"] == 0
        assert r["archline_mode"] == "iteration" and r["archline_samples"] == sum(m.n_samples for m in ms) > 0
        # 156 ms resolve at 128 Hz (20 periods): the 0.1 s windows are flagged, the 0.2 s ones are not
        assert obs.resolution_s == pytest.approx(20 / 128)
        assert r["archline_short_window"] is (min(m.time_s for m in ms) < 20 / 128)
        assert r["archline_unresolved"] is False
    assert res[0]["archline_short_window"] is False and res[1]["archline_short_window"] is True
    assert "shorter than the 156 ms the meter resolves" in res[1]["archline_note"] and res[0]["archline_note"] == ""
    # the longer kernel took about twice the energy
    assert res[0]["archline_energy"] / res[1]["archline_energy"] == pytest.approx(2.0, rel=0.25)


def test_a_failed_iteration_is_dropped_not_measured(monitor: Any) -> None:
    obs = EnergyObserver(monitor)
    obs.register_configuration({"block_size_x": 64})
    obs.before_start()
    obs.after_start()                 # the kernel failed: Kernel Tuner moves on without after_finish
    obs.register_configuration({"block_size_x": 256})
    assert obs.monitor.open_names == []
    with pytest.raises(BenchError, match="out of Kernel Tuner's order"):
        obs.after_finish()


def test_without_a_meter_the_values_are_nan_with_the_reason_and_no_continuous_loop() -> None:
    """Issue 35 #3: a meterless observer (time only) offers Kernel Tuner no continuous loop (it measured nothing
    for ~1 s per configuration), reports iteration mode and every documented key, and says its reason once."""
    with EnergyObserver(platform="localhost", observables=["energy", "power", "lost_samples"]) as obs:
        assert not hasattr(obs, "continuous_observer") and obs.mode == "iteration" and not obs.metered
        (r,) = _tune(obs, [{"block_size_x": 256}], iterations=1)
    assert math.isnan(r["archline_energy"]) and math.isnan(r["archline_power"])
    assert r["archline_mode"] == "iteration" and r["archline_samples"] == 0 and r["archline_lost_samples"] == 0
    assert r["archline_short_window"] is False and r["archline_unresolved"] is True
    assert r["archline_emulated"] is False and r["archline_note"] == ""
    assert r["archline_reason"].count("time only") == 1, r["archline_reason"]


def test_unknown_observable_or_mode_is_a_value_error() -> None:
    """Kernel Tuner's observers raise ValueError for an observable they do not know."""
    with pytest.raises(ValueError, match="observable 'nvml_energy'"):
        EnergyObserver(archline.Monitor(), observables=["nvml_energy"])
    with pytest.raises(ValueError, match="mode 'always'"):
        EnergyObserver(archline.Monitor(), mode="always")
    with pytest.raises(ValueError, match="continuous_duration_s"):
        EnergyObserver(archline.Monitor(), continuous_duration_s=0.0)


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    # issue 35 #6: a platform name where the Monitor goes
    ({"monitor": "gtx580", "emulate": True}, TypeError, r"first argument is an archline Monitor.*platform='gtx580'"),
    ({"monitor": 3}, TypeError, "monitor must be an archline Monitor"),
    # #7: a string where a list of names goes; a number given as a string
    ({"observables": "energy"}, TypeError, "observables must be a list of names"),
    ({"observables": ["energy", 3]}, ValueError, "observable 3 is not"),
    ({"continuous_duration_s": "1"}, TypeError, "continuous_duration_s must be a number"),
    # #4: Kernel Tuner runs its continuous loop for max(1 s, continuous_duration): a shorter one would be ignored
    ({"continuous_duration_s": 0.1}, ValueError, r"continuous_duration_s must be at least 1 s"),
    ({"max_lost": 2.0}, ValueError, "max_lost must be a share"),
    # #8: results are named <prefix>_energy
    ({"prefix": None}, ValueError, "prefix must be letters and digits"),
    ({"prefix": ""}, ValueError, "prefix must be letters and digits"),
    ({"prefix": "my_"}, ValueError, "prefix must be letters and digits"),
    # #9: a monitor and the arguments that would open another
    ({"platform": "gtx680", "emulate": True}, ValueError, "either a monitor or platform="),
    ({"meter": "ps3"}, ValueError, "either a monitor or platform="),
])
def test_a_wrong_argument_is_named(kwargs: dict[str, Any], error: type[Exception], match: str) -> None:
    kwargs = {"monitor": archline.Monitor(), **kwargs}
    with pytest.raises(error, match=match):
        EnergyObserver(kwargs.pop("monitor"), **kwargs)


def test_prefix_names_the_keys_and_observables_are_deduplicated() -> None:
    obs = EnergyObserver(archline.Monitor(), prefix="b2_run", observables=["energy", "b2_run_energy", "power"])
    assert obs.observables == ["energy", "power"]
    obs.register_configuration({"block_size_x": 1})
    obs.before_start()
    obs.after_start()
    obs.after_finish()
    r = obs.get_results()
    assert {"b2_run_energy", "b2_run_power", "b2_run_mode", "b2_run_note", "b2_run_reason"} <= set(r)
    assert not any(k.startswith("archline") for k in r)


def test_a_stopped_monitor_or_a_closed_observer_is_refused() -> None:
    """Issue 35 #9: a stopped monitor is refused when the observer is made, not mid-tuning; a closed observer
    neither enters a ``with`` nor measures again; closing twice is harmless."""
    mon = archline.Monitor().start()
    mon.stop()
    with pytest.raises(ValueError, match="monitor is stopped"):
        EnergyObserver(mon)
    obs = EnergyObserver(platform="gtx580", emulate=True, mode="iteration")
    own = obs.monitor
    obs.close()
    obs.close()
    assert own.stopped
    with pytest.raises(BenchError, match="observer is closed"):
        with obs:
            pass
    with pytest.raises(BenchError, match="observer is closed"):
        obs.register_configuration({"block_size_x": 1})
    lent = archline.Monitor().start()
    obs = EnergyObserver(lent)
    lent.stop()                       # by its owner, mid-tuning
    with pytest.raises(BenchError, match="monitor was stopped by its owner"):
        obs.register_configuration({"block_size_x": 1})


def test_an_observer_listed_twice_is_named() -> None:
    """Issue 35 #10: observers=[a, a] makes Kernel Tuner call each step twice; said as that, not as a call out of
    order."""
    obs = EnergyObserver(archline.Monitor(), mode="iteration")
    obs.register_configuration({"block_size_x": 1})
    with pytest.raises(BenchError, match="listed twice in observers="):
        obs.register_configuration({"block_size_x": 1})
    obs = EnergyObserver(archline.Monitor(), mode="iteration")
    obs.register_configuration({"block_size_x": 1})
    obs.before_start()
    obs.before_start()
    obs.after_start()
    with pytest.raises(BenchError, match="listed twice in observers="):
        obs.after_start()


def test_an_observer_dropped_without_close_stops_its_monitor() -> None:
    """Issue 35 #11: its finalizer stops the monitor it opened (the meter's thread and port); a lent monitor
    stays its owner's."""
    import gc
    import threading

    before = threading.active_count()
    obs = EnergyObserver(platform="gtx580", emulate=True)
    own = obs.monitor
    assert threading.active_count() > before and not own.stopped
    del obs
    gc.collect()
    assert own.stopped and threading.active_count() == before
    lent = archline.Monitor().start()
    obs = EnergyObserver(lent)
    del obs
    gc.collect()
    assert not lent.stopped
    lent.stop()


def _faulty_gtx580(tmp_path: Any, faults: str) -> str:
    """A derived gtx580 profile (tests' copy, not a real file) whose PowerMon 2 port plays emulator faults."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "formats" / "platforms" / "gtx580.toml").read_text()
    assert text.count('port = "/dev/ttyUSB0"') == 1
    path = tmp_path / "gtx580-faults.toml"
    path.write_text(text.replace('port = "/dev/ttyUSB0"', f'port = "powermon://default?{faults}"'))
    return str(path)


def test_lost_samples_are_said_and_past_max_lost_there_is_no_value(tmp_path: Any,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    """Issue 35 #1 and #5: the meter stalls 0.3 s (4 channels x 128 Hz: 153.6 samples) inside the iterations'
    windows. The loss is counted (a total, an int, as archline_samples), named in the note and logged; a window
    that lost more than max_lost (1%, as bench run) has no value: NaN, unresolved, the reason naming the window."""
    prof = _faulty_gtx580(tmp_path, "stall=0.5:0.3")
    with EnergyObserver(platform=prof, emulate=True, mode="iteration",
                        observables=["energy", "power", "energy_err", "lost_samples"]) as obs:
        (r,) = _tune(obs, [{"block_size_x": 64}], iterations=3, kernel_s=0.4)
    ms = obs.history[0][1]
    lost = sum(m.lost_samples for m in ms)
    assert isinstance(r["archline_lost_samples"], int) and r["archline_lost_samples"] == lost
    assert abs(lost - 0.3 * 128 * 4) <= 4 * 2, lost        # two samples a channel at the stall's edges
    assert r["archline_samples"] == sum(m.n_samples for m in ms)
    assert f"the meter lost {lost} of {sum(m.expected_samples for m in ms)} samples" in r["archline_note"]
    assert math.isnan(r["archline_energy"]) and math.isnan(r["archline_power"]) and r["archline_unresolved"]
    worst = max(ms, key=lambda m: m.lost_share)
    assert f"window {worst.name} lost" in r["archline_reason"] and "more than the allowed 1%" in r["archline_reason"]
    assert any("the meter lost" in rec.getMessage() for rec in caplog.records if rec.levelname == "WARNING")


def test_lost_samples_within_max_lost_keep_the_value_inside_its_bound(tmp_path: Any) -> None:
    """Issue 35 #1: the continuous window (about 1 s) loses 0.15 s; allowed (max_lost=0.5) the value stands, its
    bound covering the loss and the truth, and the note still names the loss."""
    prof = _faulty_gtx580(tmp_path, "stall=0.4:0.15")
    with EnergyObserver(platform=prof, emulate=True, mode="continuous", max_lost=0.5,
                        observables=["energy", "energy_err", "lost_samples"]) as obs:
        (r,) = _tune(obs, [{"block_size_x": 64}], iterations=1, kernel_s=0.002, continuous_s=1.0)
    (_, m, kernel_s), = obs.continuous_history
    assert 0 < m.lost_share <= 0.5 and r["archline_lost_samples"] == m.lost_samples > 0.1 * 128 * 4
    assert f"the meter lost {m.lost_samples} of {m.expected_samples} samples" in r["archline_note"]
    assert r["archline_reason"] == "" and r["archline_mode"] == "continuous"
    truth_j = obs.monitor.power.energy_j(m.t_start_s, m.t_end_s) * kernel_s / m.time_s
    assert abs(r["archline_energy"] - truth_j) <= r["archline_energy_err"]


def test_a_meter_that_disconnects_is_never_zero_watts(tmp_path: Any) -> None:
    """Issue 35 #2: the PowerMon 2 vanishes 0.6 s in. The configuration before is measured; the one across it has
    no value (NaN, the reason naming the meter, its port and the disconnect), not 0 W from no samples; the next
    configuration stops the tuning, naming the meter."""
    prof = _faulty_gtx580(tmp_path, "disconnect=0.6")
    with EnergyObserver(platform=prof, emulate=True, mode="iteration") as obs:
        (before,) = _tune(obs, [{"block_size_x": 64}], iterations=2, kernel_s=0.05)
        (across,) = _tune(obs, [{"block_size_x": 256}], iterations=3, kernel_s=0.3)
        with pytest.raises(BenchError, match=r"meter failed during the tuning \(powermon-emulated: PowerMon 2 on "
                                             r".*disconnected.*configuration \{'block_size_x': 32\} on"):
            obs.register_configuration({"block_size_x": 32})
    assert before["archline_energy"] > 0 and before["archline_reason"] == ""
    assert math.isnan(across["archline_energy"]) and math.isnan(across["archline_power"])
    assert across["archline_unresolved"] is True and across["archline_lost_samples"] > 0
    assert "powermon-emulated: PowerMon 2 on" in across["archline_reason"]
    assert "disconnected" in across["archline_reason"]


def test_the_emulated_gtx580_draws_the_models_peak_power_and_its_idle_power() -> None:
    """Issue 35 #12: what docs/counters.md and docs/api.md say the emulated GTX 580 draws: busy pi0 + eps_flop_sp x
    the observed SP rate + eps_mem x the observed byte rate (S0 Table IV energies, the profile's [emulate] S0 Sec.
    IV-B rates), idle the profile's idle_w (S0 Sec. V-A)."""
    mon = archline.open_monitor("gtx580", emulate=True)
    try:
        busy_w = 122.0 + 99.7e-12 * 1398e9 + 513e-12 * 170e9
        assert mon.power.busy_w == pytest.approx(busy_w, rel=1e-12) and round(busy_w, 2) == 348.59
        assert mon.power.idle_w == 39.6
    finally:
        mon.stop()


def test_after_finish_only_marks_the_edge_integration_waits_for_get_results(monitor: Any) -> None:
    """after_finish takes the window's end edge and returns (no wait for the meter's samples past it: that wait
    was ~61 ms per iteration inside Kernel Tuner's loop); get_results integrates every iteration's window."""
    obs = EnergyObserver(monitor, mode="iteration")
    obs.register_configuration({"block_size_x": 64})
    for _ in range(3):
        obs.before_start()
        obs.after_start()
        time.sleep(0.01)
        obs.after_finish()
    pending = list(obs._pending)
    assert len(pending) == 3 and all(not p.measured for p in pending)
    assert not any(name in monitor.regions for name in (p.name for p in pending))  # not integrated yet
    assert [m.kind for m in monitor.marks[-6:]] == ["begin", "end"] * 3            # edges taken
    r = obs.get_results()
    ms = obs.history[-1][1]
    assert [p.measurement() for p in pending] == ms and len(ms) == 3     # (== leaves the samples out)
    assert all(m.region is None for m in ms) and not monitor.regions     # numbers kept, not samples
    assert all(m.t_end_s == p.t1_s and m.has_energy for m, p in zip(ms, pending, strict=True))
    assert r["archline_energy"] == pytest.approx(sum(m.energy_j for m in ms) / 3, rel=1e-12)
    for m in ms:      # 10 ms windows: two samples at most, a bound larger than the value, said
        assert abs(m.energy_j - monitor.power.energy_j(m.t_start_s, m.t_end_s)) <= m.energy_err_j
    assert r["archline_short_window"] is True and r["archline_unresolved"] is True
    assert "larger than itself" in r["archline_note"]


def test_continuous_mode_divides_one_window_over_the_iterations(monitor: Any) -> None:
    """Millisecond kernels: Kernel Tuner's continuous loop is one window; energy per iteration = its mean power
    x the kernel time, within the bound of the truth (the device draws BUSY_W throughout)."""
    obs = EnergyObserver(monitor, observables=["energy", "power", "energy_err", "lost_samples"], mode="continuous")
    res = _tune(obs, [{"block_size_x": 64}, {"block_size_x": 256}], iterations=3, kernel_s=0.002)
    assert obs.history == []                              # no iteration windows in continuous mode
    assert len(obs.continuous_history) == 2
    for r, (params, m, kernel_s) in zip(res, obs.continuous_history, strict=True):
        assert params["block_size_x"] == r["block_size_x"] and kernel_s == pytest.approx(0.002)
        assert r["archline_mode"] == "continuous" and r["archline_continuous_s"] == m.time_s >= 0.3
        truth_j = monitor.power.energy_j(m.t_start_s, m.t_end_s) * kernel_s / m.time_s
        assert truth_j == pytest.approx(BUSY_W * kernel_s, rel=1e-9)
        assert r["archline_energy"] == pytest.approx(m.mean_power_w * kernel_s, rel=1e-12)
        assert r["archline_energy_err"] == pytest.approx(m.mean_power_err_w * kernel_s, rel=1e-12)
        assert abs(r["archline_energy"] - truth_j) <= r["archline_energy_err"]
        assert abs(r["archline_power"] - BUSY_W) <= m.mean_power_err_w
        assert r["archline_samples"] == m.n_samples >= 4 * 30     # 4 channels at 128 Hz over >= 0.3 s
        assert r["archline_lost_samples"] == m.lost_samples == 0
        assert r["archline_short_window"] is False and r["archline_unresolved"] is False
        assert r["archline_note"] == "" and r["archline_emulated"] is True


def test_auto_mode_uses_the_continuous_loop_only_for_kernels_the_meter_cannot_resolve(monitor: Any) -> None:
    obs = EnergyObserver(monitor, observables=["energy", "energy_err"])
    assert obs.mode == "auto" and obs.continuous_observer.continuous_duration == 1.0
    (short,) = _tune(obs, [{"block_size_x": 64}], iterations=2, kernel_s=0.003)
    assert len(obs.continuous_history) == 1
    assert short["archline_mode"] == "continuous" and short["archline_short_window"] is False
    assert abs(short["archline_energy"] - BUSY_W * 0.003) <= short["archline_energy_err"]
    # a kernel longer than the 156 ms the meter resolves: the iterations' own windows stand
    (long,) = _tune(obs, [{"block_size_x": 256}], iterations=2, kernel_s=0.2)
    ms = obs.history[-1][1]
    assert long["archline_mode"] == "iteration" and long["archline_short_window"] is False
    assert long["archline_energy"] == pytest.approx(sum(x.energy_j for x in ms) / 2, rel=1e-12)
    assert len(obs.continuous_history) == 2          # measured all the same (Kernel Tuner ran the loop)


def test_docstring_example_emulated_and_a_missing_meter_said_when_made(tmp_path: Any) -> None:
    """The module docstring's ArchlineObserver(platform="gtx580", emulate=True) measures without the meter and says
    it is emulated; without emulate=True and without the meter the observer is refused when it is made (naming
    the port and emulate=True), not at the first configuration."""
    import os

    from archline.kernel_tuner import ArchlineObserver

    with ArchlineObserver(platform="gtx580", emulate=True) as obs:      # as the docstring writes it
        assert obs.monitor.emulated and len(obs.monitor.meters) == 1
        (r,) = _tune(obs, [{"block_size_x": 256}], iterations=1)
    assert r["archline_emulated"] is True and r["archline_energy"] > 0 and r["archline_mode"] == "continuous"
    if os.path.exists("/dev/ttyUSB0"):
        pytest.skip("a serial device is at gtx580's PowerMon 2 port here")
    with pytest.raises(BenchError, match=r"/dev/ttyUSB0 does not exist.*emulate=True"):
        ArchlineObserver(platform="gtx580")


def test_is_a_kernel_tuner_benchmark_observer(monkeypatch: pytest.MonkeyPatch, monitor: Any) -> None:
    """With Kernel Tuner installed, ArchlineObserver subclasses its BenchmarkObserver (an ABC whose get_results is
    abstract), so instantiate_observer accepts it, and its continuous observer Kernel Tuner's ContinuousObserver.
    Stood in by a module of the same shape, so that this holds for any Kernel Tuner (the real one: below)."""
    base = types.ModuleType("kernel_tuner.observers.observer")

    class BenchmarkObserver(abc.ABC):
        def register_device(self, dev: Any) -> None:
            self.dev = dev

        @abc.abstractmethod
        def get_results(self) -> dict[str, Any]: ...

    class ContinuousObserver(BenchmarkObserver):
        def __init__(self, *args: Any) -> None:
            raise AssertionError("archline's continuous observer does not call Kernel Tuner's __init__")

    base.BenchmarkObserver = BenchmarkObserver  # type: ignore[attr-defined]
    base.ContinuousObserver = ContinuousObserver  # type: ignore[attr-defined]
    for name in ("kernel_tuner", "kernel_tuner.observers"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "kernel_tuner.observers.observer", base)
    monkeypatch.delitem(sys.modules, "archline.kernel_tuner", raising=False)
    kt = importlib.import_module("archline.kernel_tuner")
    try:
        assert kt.HAVE_KERNEL_TUNER
        obs = kt.ArchlineObserver(monitor, mode="iteration")
        assert isinstance(obs, BenchmarkObserver)
        assert isinstance(kt.ArchlineObserver(monitor).continuous_observer, ContinuousObserver)
        (r,) = _tune(obs, [{"block_size_x": 256}], iterations=2)
        ms = obs.history[0][1]
        assert r["archline_energy"] == pytest.approx(sum(m.energy_j for m in ms) / 2, rel=1e-12)
        assert all(abs(m.energy_j - BUSY_W * (m.t_end_s - m.t_start_s)) <= m.energy_err_j for m in ms)
    finally:
        sys.modules.pop("archline.kernel_tuner", None)


def _benchmark_module() -> Any:
    """benchmarks/kernel_tuner_overhead.py, whose kernel this test tunes (one kernel for the test and the benchmark)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "kernel_tuner_overhead.py"
    spec = importlib.util.spec_from_file_location("kernel_tuner_overhead", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_kernel_tuner_on_pocl_continuous_energy_within_the_bound_of_the_truth(monitor: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Kernel Tuner itself (OpenCL on PoCL, 2 tunable parameters, millisecond kernels) with the observer on the
    emulated meter: each configuration's energy comes from Kernel Tuner's continuous loop (auto mode), within its
    bound of the truth (BUSY_W x Kernel Tuner's kernel time), with the samples behind it and no flag; the
    kernel's output is checked by Kernel Tuner against the answer. The benchmark is
    benchmarks/kernel_tuner_overhead.py (overhead per iteration, more configurations)."""
    kt = pytest.importorskip("kernel_tuner")
    import numpy as np

    monkeypatch.chdir(tmp_path)     # Kernel Tuner writes temp_*.c in the working directory, kept on an error

    from archline.kernel_tuner import ArchlineObserver

    bm = _benchmark_module()
    n = 1 << 18      # a few ms per launch: a few hundred launches fill Kernel Tuner's 1 s continuous loop
    a = np.random.default_rng(0).random(n).astype(np.float32)
    want = a.copy()
    for _ in range(bm.LOOPS):
        want = want * np.float32(0.999) + np.float32(0.001)
    obs = ArchlineObserver(monitor, observables=["energy", "power", "energy_err"])
    tune_params = {"block_size_x": [64], "work_per_thread": [2]}    # one configuration: each costs a 1 s loop
    res, _ = kt.tune_kernel("fma_loop", bm.KERNEL, n, [np.zeros_like(a), a, np.int32(n)], tune_params,
                            lang="OpenCL", observers=[obs], grid_div_x=["block_size_x", "work_per_thread"],
                            iterations=3, answer=[want, None, None], atol=1e-5, verbose=False, quiet=True,
                            cache=None)
    assert [(r["block_size_x"], r["work_per_thread"]) for r in res] == [(64, 2)]
    cont = {tuple(sorted(p.items())): (m, k_s) for p, m, k_s in obs.continuous_history}
    for r in res:
        m, kernel_s = cont[(("block_size_x", r["block_size_x"]), ("work_per_thread", 2))]
        assert kernel_s == pytest.approx(r["time"] / 1e3, rel=1e-12)
        assert r["archline_mode"] == "continuous" and r["archline_emulated"] is True
        truth_j = monitor.power.energy_j(m.t_start_s, m.t_end_s) * kernel_s / m.time_s
        assert truth_j == pytest.approx(BUSY_W * kernel_s, rel=1e-9)
        assert abs(r["archline_energy"] - truth_j) <= r["archline_energy_err"] < 0.05 * truth_j
        assert r["archline_samples"] == m.n_samples > 0 and m.time_s > obs.resolution_s   # about 1 s
        assert r["archline_short_window"] is False and r["archline_unresolved"] is False


@pytest.mark.slow     # PoCL's compile: seconds; test_an_observer_listed_twice_is_named covers it in the default run
def test_kernel_tuner_with_the_observer_listed_twice_is_told_so(monitor: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 35 #10 through Kernel Tuner itself (PoCL): observers=[obs, obs] stops at the first configuration with
    the duplicate named, not with 'after_finish without after_start'."""
    kt = pytest.importorskip("kernel_tuner")
    import numpy as np

    monkeypatch.chdir(tmp_path)     # Kernel Tuner writes temp_*.c in the working directory, kept on an error

    from archline.kernel_tuner import ArchlineObserver

    bm = _benchmark_module()
    n = 1 << 10
    a = np.ones(n, dtype=np.float32)
    obs = ArchlineObserver(monitor, mode="iteration")
    with pytest.raises(BenchError, match="listed twice in observers="):
        kt.tune_kernel("fma_loop", bm.KERNEL, n, [np.zeros_like(a), a, np.int32(n)],
                       {"block_size_x": [64], "work_per_thread": [2]}, lang="OpenCL", observers=[obs, obs],
                       grid_div_x=["block_size_x", "work_per_thread"], iterations=1, verbose=False, quiet=True,
                       cache=None)
