"""archline's Kernel Tuner observer in a real Kernel Tuner run on PoCL (OpenCL on this machine's CPU): the time
the observer adds to each iteration of Kernel Tuner's benchmark loop, and the energy it reports against an
emulated meter's truth (issue 35, item 4).

The kernel has 2 tunable parameters (``block_size_x``, ``work_per_thread``) and runs for milliseconds. The meter is
the gtx580 profile's PowerMon 2 (128 Hz, 4 channels), emulated on a pty, whose device draws ``--busy-w`` while a
window of the observer is open and ``--idle-w`` otherwise, so each window's true energy is known exactly
(``monitor.power.energy_j``). The numbers are emulated, and labelled so.

Reported per configuration: Kernel Tuner's kernel time, the observer's mode, ``archline_energy`` (J per
iteration) with its bound, the truth, the samples behind it and the flags; and, over all iterations, the time
spent inside the observer's calls (before_start + after_start + during + after_finish; ``after_finish`` alone is
where a blocking ``end_window`` sat). ``--mode iteration`` measures each iteration on its own (the old way: windows
of milliseconds hold few or no samples); the default ``auto`` switches to one continuous recording for kernels
shorter than the meter resolves. On a code base whose observer has no ``mode`` (before issue 35) the script runs
the only mode there is.

    python benchmarks/kernel_tuner_overhead.py [--mode auto|iteration|continuous] [--blocking] [--iterations 7]
                                               [--json out.json]

``--mode iteration --blocking`` integrates each window inside ``after_finish``, as ``end_window`` did before issue 35
(waiting for the meter's samples past the edge): the "before" figure on today's code.

Timings depend on the machine's load (Kernel Tuner, PoCL and the emulator share its cores): rerun on a quiet one.
"""

from __future__ import annotations

import argparse
import inspect
import json
import statistics
import sys
import time
from typing import Any

import numpy as np

N = 1 << 18                  # work items x work_per_thread: floats in, floats out
LOOPS = 16                   # dependent FMAs per float: milliseconds per launch on 2 PoCL threads

KERNEL = """
__kernel void fma_loop(__global float *out, __global const float *a, const int n) {
    int i = get_global_id(0);
    for (int w = 0; w < work_per_thread; w++) {
        int j = i * work_per_thread + w;
        if (j < n) {
            float x = a[j];
            for (int k = 0; k < LOOPS; k++) x = x * 0.999f + 0.001f;
            out[j] = x;
        }
    }
}
""".replace("LOOPS", str(LOOPS))

TUNE_PARAMS = {"block_size_x": [32, 128], "work_per_thread": [1, 4]}


class CallTimer:
    """Wraps an observer's per-iteration calls and adds up the host time spent in them, per iteration."""

    def __init__(self, obs: Any, blocking: bool = False) -> None:
        self.obs = obs
        self.blocking = blocking
        self.per_iteration_s: list[float] = []
        self.after_finish_s: list[float] = []
        self._now = 0.0
        for name in ("before_start", "after_start", "during", "after_finish"):
            setattr(obs, name, self._wrap(name, getattr(obs, name)))

    def _wrap(self, name: str, fn: Any) -> Any:
        def timed() -> None:
            t0 = time.perf_counter()
            fn()
            if self.blocking and name == "after_finish" and getattr(self.obs, "_pending", None):
                self.obs._pending[-1].measurement()   # integrate at once, as end_window did before issue 35
            dt = time.perf_counter() - t0
            if name == "before_start":
                self._now = 0.0
            self._now += dt
            if name == "after_finish":
                self.after_finish_s.append(dt)
                self.per_iteration_s.append(self._now)
        return timed


def tune(obs: Any, iterations: int) -> list[dict[str, Any]]:
    from kernel_tuner import tune_kernel

    a = np.random.default_rng(0).random(N).astype(np.float32)
    out = np.zeros_like(a)
    args = [out, a, np.int32(N)]
    res, _env = tune_kernel("fma_loop", KERNEL, N, args, TUNE_PARAMS, lang="OpenCL", observers=[obs],
                            grid_div_x=["block_size_x", "work_per_thread"], iterations=iterations,
                            verbose=False, quiet=True, cache=None)
    return list(res)


def pct(xs: list[float], q: float) -> float:
    return float(np.percentile(xs, q)) if xs else float("nan")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", default="auto", choices=["auto", "iteration", "continuous"])
    ap.add_argument("--iterations", type=int, default=7, help="Kernel Tuner's iterations per configuration")
    ap.add_argument("--busy-w", type=float, default=200.0)
    ap.add_argument("--idle-w", type=float, default=40.0)
    ap.add_argument("--blocking", action="store_true",
                    help="integrate each window inside after_finish, as before issue 35 (the 'before' figure)")
    ap.add_argument("--json", default=None, help="also write the numbers here")
    a = ap.parse_args(argv)

    import archline
    from archline.kernel_tuner import ArchlineObserver

    has_mode = "mode" in inspect.signature(archline.bench.tuning_observer.EnergyObserver.__init__).parameters
    kw: dict[str, Any] = {"mode": a.mode} if has_mode else {}
    observables = ["energy", "power", "energy_err"]
    mon = archline.open_monitor("gtx580", emulate=True, busy_w=a.busy_w, idle_w=a.idle_w, seed=1)
    rows: list[dict[str, Any]] = []
    t_start = time.perf_counter()
    with mon:
        obs = ArchlineObserver(mon, observables=observables, **kw)
        timer = CallTimer(obs, a.blocking)
        results = tune(obs, a.iterations)
        wall_s = time.perf_counter() - t_start
        continuous = {tuple(sorted(p.items())): (m, t) for p, m, t in getattr(obs, "continuous_history", [])}
        iterations = {tuple(sorted(p.items())): ms for p, ms in obs.history}   # the last of each configuration
        for r in results:
            params = {k: r[k] for k in TUNE_PARAMS}
            key = tuple(sorted(params.items()))
            ms = iterations.get(key, [])       # none in continuous mode
            kernel_s = r["time"] / 1e3
            if r.get("archline_mode") == "continuous" and key in continuous:
                m, _ = continuous[key]
                truth_j = mon.power.energy_j(m.t_start_s, m.t_end_s) * kernel_s / m.time_s
            else:     # the mean of the iteration windows' truths
                truth_j = statistics.fmean(mon.power.energy_j(x.t_start_s, x.t_end_s) for x in ms) if ms \
                    else float("nan")
            e, err = r.get("archline_energy", float("nan")), r.get("archline_energy_err", float("nan"))
            rows.append({"params": params, "kernel_ms": r["time"], "mode": r.get("archline_mode", "iteration"),
                         "energy_j": e, "energy_err_j": err, "truth_j": truth_j,
                         "within_bound": bool(abs(e - truth_j) <= err), "err_over_value": err / e if e else None,
                         "samples": r.get("archline_samples"), "short_window": r.get("archline_short_window"),
                         "unresolved": r.get("archline_unresolved"), "emulated": r.get("archline_emulated")})
    out = {"emulated": True, "meter": "gtx580 PowerMon 2 (emulated, 128 Hz)", "busy_w": a.busy_w,
           "mode": (a.mode if has_mode else "iteration (no mode: before issue 35)")
           + (" blocking" if a.blocking else ""),
           "iterations": a.iterations,
           "observer_ms_per_iteration": {"median": 1e3 * pct(timer.per_iteration_s, 50),
                                         "p95": 1e3 * pct(timer.per_iteration_s, 95),
                                         "max": 1e3 * max(timer.per_iteration_s, default=float("nan")),
                                         "n": len(timer.per_iteration_s)},
           "after_finish_ms": {"median": 1e3 * pct(timer.after_finish_s, 50),
                               "p95": 1e3 * pct(timer.after_finish_s, 95)},
           "tune_wall_s": wall_s, "configurations": rows}
    print(f"mode {out['mode']}; emulated meter, {a.busy_w:g} W busy; {a.iterations} iterations per configuration")
    o = out["observer_ms_per_iteration"]
    print(f"observer per iteration: median {o['median']:.3f} ms, p95 {o['p95']:.3f} ms, max {o['max']:.3f} ms "
          f"(n={o['n']}); after_finish median {out['after_finish_ms']['median']:.3f} ms; tuning {wall_s:.1f} s")
    print(f"{'params':40s} {'kernel ms':>9s} {'mode':>10s} {'energy J':>10s} {'bound J':>10s} {'truth J':>10s} "
          f"{'within':>6s} {'samples':>7s} flags")
    for r in rows:
        flags = ",".join(k for k in ("short_window", "unresolved") if r[k])
        print(f"{json.dumps(r['params']):40s} {r['kernel_ms']:9.3f} {r['mode']:>10s} {r['energy_j']:10.4g} "
              f"{r['energy_err_j']:10.3g} {r['truth_j']:10.4g} {r['within_bound']!s:>6s} "
              f"{r['samples'] if r['samples'] is not None else '-':>7} {flags}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
