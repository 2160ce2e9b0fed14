"""The step load of ``meter probe`` / ``meter calibrate`` on real hardware (bench/step_load): cpu_asm's own
intensity kernel really switches with ``high()`` / ``low()``, names what it ran, and leaves nothing running after
``close()``, an exception in its ``with`` block, or SIGTERM; a GPU back end that cannot run here is one line, exit 4.

How "switches" is checked: the worker's call counter (exact: it does not move while low, it moves while high) and
the process's CPU time (getrusage, every thread): while high it grows by at least 0.2 x threads x wall (the kernel
is compute bound and L1-resident; 0.2, not 1, because this 2-vCPU machine is shared by other jobs: a runnable
thread still gets a fifth of a core), while low by at most 0.05 x wall + 20 ms (the idle process: nothing else
runs in it; 20 ms for the accounting granularity and the end of the call in flight).
"""

from __future__ import annotations

import resource
import subprocess
import sys
import textwrap
import threading
import time
from typing import Any

import pytest

from archline.bench.errors import BenchError
from archline.bench.kernels import Counts, KernelSpec, RunResult
from archline.bench.step_load import (
    KernelStepLoad,
    StepLoadUnavailable,
    cpu_step_load,
    device_of,
    gpu_step_load,
    step_load_for,
)
from archline.common.exits import EXIT_DEVICE
from archline.powermon.spec import MeterSpec


def _cpu_usable() -> tuple[bool, str]:
    from archline.bench.cpu_asm.backend import CpuAsmBackend

    return CpuAsmBackend().availability()


needs_cpu_asm = pytest.mark.skipif(not _cpu_usable()[0], reason=f"cpu_asm: {_cpu_usable()[1]}")
HIGH_MIN_SHARE = 0.2       # of threads x wall while high (see the module docstring)
LOW_MAX_SHARE = 0.05       # of wall while low, plus LOW_SLACK_S
LOW_SLACK_S = 0.02


def _cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _stretch(load: KernelStepLoad | None, high: bool, wall_s: float) -> tuple[float, float, int]:
    """(process CPU seconds, wall seconds, kernel calls) over one stretch at one level."""
    if load is not None:
        (load.high if high else load.low)()
    calls0, c0, w0 = (load.calls if load else 0), _cpu_s(), time.perf_counter()
    time.sleep(wall_s)
    if load is not None and high:
        load.low()           # the stretch ends when the device is idle again
    return _cpu_s() - c0, time.perf_counter() - w0, (load.calls if load else 0) - calls0


def _step_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "archline step load"]


@needs_cpu_asm
def test_cpu_step_load_switches_between_busy_and_idle() -> None:
    with cpu_step_load(threads=1) as load:
        assert load.what["backend"] == "cpu_asm" and load.what["kernel"] == "intensity"
        assert load.what["threads"] == 1 and len(load.what["cpus"]) == 1 and load.what["reps_per_call"] >= 1
        assert "intensity/dp" in load.label and "1 thread" in load.label
        for _ in range(2):
            cpu, wall, calls = _stretch(load, True, 0.4)
            assert calls >= 1, "no kernel call while high"
            assert cpu >= HIGH_MIN_SHARE * 1 * wall, f"high: {cpu:.3f} s CPU over {wall:.3f} s"
            assert not load.running          # low() returned with no call in flight
            cpu, wall, calls = _stretch(load, False, 0.4)
            assert calls == 0, f"{calls} kernel call(s) while low"
            assert cpu <= LOW_MAX_SHARE * wall + LOW_SLACK_S, f"low: {cpu:.3f} s CPU over {wall:.3f} s"
    assert not _step_threads()


@needs_cpu_asm
def test_low_is_prompt_and_idempotent() -> None:
    with cpu_step_load(threads=1) as load:
        load.low()                            # low before any high: nothing to stop
        load.high()
        load.high()                           # twice high: still one worker
        time.sleep(0.05)
        assert load.running or load.calls >= 1
        t0 = time.perf_counter()
        load.low()
        # one call (about 2 ms of kernel plus ~4 ms of the native run's clock probe) ends; 1 s is generous on a
        # shared machine, and a low() that waited for the whole stretch would fail it
        assert time.perf_counter() - t0 < 1.0
        n = load.calls
        time.sleep(0.1)
        assert load.calls == n and not load.running


@needs_cpu_asm
def test_nothing_runs_after_close_or_an_exception_in_the_with_block() -> None:
    load = cpu_step_load(threads=1)
    load.high()
    time.sleep(0.05)
    load.close()
    load.close()                              # twice: harmless
    assert not _step_threads() and not load.running
    with pytest.raises(BenchError, match="after close"):
        load.high()
    cpu, wall, _ = _stretch(None, False, 0.3)
    assert cpu <= LOW_MAX_SHARE * wall + LOW_SLACK_S

    with pytest.raises(RuntimeError, match="boom"):
        with cpu_step_load(threads=1) as load2:
            load2.high()
            time.sleep(0.05)
            raise RuntimeError("boom")
    assert not _step_threads() and not load2.running
    cpu, wall, _ = _stretch(None, False, 0.3)
    assert cpu <= LOW_MAX_SHARE * wall + LOW_SLACK_S


@needs_cpu_asm
def test_sigterm_stops_the_load(tmp_path: Any) -> None:
    """As archline's CLI does, SIGTERM raises in the main thread; the with block closes the load; the process ends."""
    code = textwrap.dedent("""
        import signal, sys, threading, time
        from archline.bench.step_load import cpu_step_load
        def _term(*a):
            raise KeyboardInterrupt
        signal.signal(signal.SIGTERM, _term)
        try:
            with cpu_step_load(threads=1) as load:
                load.high()
                print("ready", flush=True)
                time.sleep(60)
        except KeyboardInterrupt:
            alive = [t.name for t in threading.enumerate() if t.name == "archline step load"]
            print("closed", load.calls > 0, alive, flush=True)
            sys.exit(130)
    """)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        assert p.stdout is not None
        assert p.stdout.readline().strip() == "ready"
        time.sleep(0.2)
        p.terminate()
        out, _ = p.communicate(timeout=20)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 130
    assert out.strip() == "closed True []"


class _FailingKernel:
    spec = KernelSpec("fake", "intensity", "dp", "mem")
    counts_per_rep = Counts()

    def __init__(self) -> None:
        self.closed = False

    def run(self, reps: int) -> RunResult:
        raise RuntimeError("device lost")

    def close(self) -> None:
        self.closed = True


def test_a_failing_kernel_is_reported_at_the_next_switch_and_still_freed() -> None:
    k = _FailingKernel()
    with KernelStepLoad(k, 1, {"label": "fake kernel"}) as load:
        load.high()
        time.sleep(0.05)
        with pytest.raises(BenchError, match="step load fake kernel: the kernel failed: device lost"):
            load.low()
    assert k.closed and not _step_threads()


def _spec(kind: str, **kw: Any) -> MeterSpec:
    return MeterSpec(name="m", kind=kind, **kw)  # type: ignore[arg-type]


def test_the_device_a_meter_measures() -> None:
    assert device_of(_spec("rapl")) == "cpu" and device_of(_spec("hwmon")) == "cpu"
    assert device_of(_spec("nvml")) == "gpu" and device_of(_spec("amdsmi")) == "gpu"
    assert device_of(_spec("redfish", url="http://127.0.0.1:1")) == "node"
    gpu_rails = [{"id": 0, "rail": "pcie_slot_12v", "device": "gpu"}]
    assert device_of(_spec("powermon2", port="powermon://default", channels=gpu_rails)) == "gpu"
    assert device_of(_spec("pmd", port="pmd://default", channels=[{"id": 0, "rail": "eps", "device": "cpu"}])) == "cpu"


def test_a_gpu_meter_needs_a_gpu_back_end() -> None:
    with pytest.raises(BenchError, match=r"measures a GPU: give --backend \(cuda\|hip\|opencl\)"):
        step_load_for(_spec("nvml"))
    with pytest.raises(BenchError, match="a CPU step load would not move it"):
        step_load_for(_spec("nvml"), backend="cpu_asm")
    with pytest.raises(BenchError, match="backend 'emulated' has no step load"):
        step_load_for(_spec("rapl"), backend="emulated")


@pytest.mark.parametrize("backend", ["cuda", "hip", "opencl"])
def test_a_gpu_back_end_that_cannot_run_here_is_one_line_exit_4(backend: str) -> None:
    from archline.bench.registry import get_backend

    try:
        ok = get_backend(backend).availability()[0]
    except BenchError:
        ok = False
    if ok:
        pytest.skip(f"{backend} has a device here")
    with pytest.raises(StepLoadUnavailable) as e:
        gpu_step_load(backend)
    assert e.value.exit_code == EXIT_DEVICE
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("step load on the GPU") and backend in msg


@pytest.mark.slow
def test_an_opencl_step_load_switches_where_opencl_runs() -> None:
    """The GPU path through the same back-end interface (here OpenCL on whatever device it has: pocl on a CPU
    in CI; compile and warm-up take ~15 s there)."""
    from archline.bench.registry import get_backend

    try:
        ok, why = get_backend("opencl").availability()
    except BenchError as e:
        ok, why = False, str(e)
    if not ok:
        pytest.skip(f"opencl: {why}")
    with gpu_step_load("opencl") as load:
        assert load.what["backend"] == "opencl" and load.what["kernel"] == "intensity"
        load.high()
        deadline = time.monotonic() + 30
        while load.calls < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        load.low()
        assert load.calls >= 1 and not load.running
        n = load.calls
        time.sleep(0.3)
        assert load.calls == n
    assert not _step_threads()
