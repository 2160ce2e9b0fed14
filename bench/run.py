"""The thin runner the CLI calls: prepare each point, warm up, pick the repetition count, run, verify, make rows.

Meters, platform profiles and resumable sweeps come later on top of ``run_points``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from archline.bench.errors import BenchError
from archline.bench.kernels import Backend, KernelSpec, PreparedKernel, RunResult
from archline.bench.results import make_row, new_run_id, utc_now_iso, write_rows

ProgressCb = Callable[[int, int, KernelSpec, RunResult], None]


@dataclass
class PointResult:
    spec: KernelSpec
    result: RunResult


def choose_reps(warmup: RunResult, min_time_s: float, max_reps: int = 1_000_000_000) -> int:
    """Repetitions that make the timed region last at least ``min_time_s``, from a calibration run."""
    per_rep = warmup.time_s / max(warmup.reps, 1)
    if per_rep <= 0:
        return max_reps
    return int(min(max_reps, max(1, math.ceil(min_time_s / per_rep))))


#: a calibration run shorter than this share of min_time is too short to size reps from (likwid-bench, too, raises
#: its iteration count until a run lasts long enough): one cold L1 rep took 7x a warm one, so a region sized from it
#: lasted 29 ms instead of 200 ms and read 0.78x the bandwidth
CALIBRATE_SHARE = 0.05


def calibrate(prepared: PreparedKernel, min_time_s: float) -> tuple[int, bool]:
    """Warm up and size the timed region: run 1 rep, then grow the count until a run lasts CALIBRATE_SHARE x
    ``min_time_s``; returns (reps for the timed region, every calibration run's checksum ok)."""
    reps, ok = 1, True
    res = prepared.run(1)
    ok = ok and res.checksum_ok
    while res.time_s < CALIBRATE_SHARE * min_time_s and reps < 1_000_000_000:
        grow = CALIBRATE_SHARE * min_time_s / max(res.time_s, 1e-9)
        reps = int(min(1_000_000_000, max(2 * reps, math.ceil(reps * grow))))
        res = prepared.run(reps)
        ok = ok and res.checksum_ok
    return choose_reps(res, min_time_s), ok


def measure(backend: Backend, spec: KernelSpec, *, reps: int | None = None, min_time_s: float = 0.2,
            device: str | None = None) -> RunResult:
    """Run one point: warm-up and calibration (dropped; they size ``reps`` when it is not given), then the timed
    run."""
    if reps is not None and (isinstance(reps, bool) or not isinstance(reps, int) or reps <= 0):
        raise BenchError(f"reps must be a positive integer, got {reps!r}")
    if not min_time_s > 0:
        raise BenchError(f"min_time_s must be > 0, got {min_time_s}")
    prepared = backend.prepare(spec, device)
    try:
        if reps is None:
            n, warm_ok = calibrate(prepared, min_time_s)
        else:
            n, warm_ok = reps, prepared.run(1).checksum_ok
        res = prepared.run(n)
        res.checksum_ok = res.checksum_ok and warm_ok
        return res
    finally:
        prepared.close()


def run_points(backend: Backend, specs: Sequence[KernelSpec], *, reps: int | None = None,
               min_time_s: float = 0.2, progress_cb: ProgressCb | None = None, platform: str = "localhost",
               run_id: str | None = None, device: str | None = None,
               device_label: str = "") -> list[dict[str, Any]]:
    """Measure every spec and return archline.results/1 rows (time only: energy columns empty, note says why)."""
    run_id = run_id or new_run_id()
    started_at = utc_now_iso()
    rows: list[dict[str, Any]] = []
    for i, spec in enumerate(specs):
        res = measure(backend, spec, reps=reps, min_time_s=min_time_s, device=device)
        rows.append(make_row(spec, res, run_id=run_id, started_at=started_at, platform=platform,
                             device=device_label or str(res.extra.get("device", ""))))
        if progress_cb is not None:
            progress_cb(i, len(specs), spec, res)
    return rows


def describe_result(res: RunResult) -> str:
    """The figure a person looks for in a point: GFLOP/s, Gop/s, GB/s or ns per access."""
    c = res.counts
    if c.flops:
        return f"{c.flops / res.time_s / 1e9:8.2f} GFLOP/s"
    if c.int_ops:
        return f"{c.int_ops / res.time_s / 1e9:8.2f} Gop/s"
    if c.bytes_total:
        return f"{c.bytes_total / res.time_s / 1e9:8.2f} GB/s"
    if c.rand_accesses and "ns_per_access" in res.extra:
        cyc = res.extra.get("cycles_per_access")
        return f"{res.extra['ns_per_access']:8.2f} ns/access" + (f" {cyc:6.1f} cyc" if cyc else "")
    return ""


@dataclass
class TimeOnlyRun:
    results: Path
    roofline_png: Path | None
    n_rows: int
    n_bad_checksum: int


def run_time_only(backend: Backend, specs: Sequence[KernelSpec], out_dir: Path, *, platform: str,
                  why_no_energy: str, reps: int | None = None, min_time_s: float = 0.2,
                  device: str | None = None, log: Callable[[str], None] | None = None) -> TimeOnlyRun:
    """Run ``specs`` without a meter, write the rows (each saying why there is no energy) atomically, and draw
    the observed time roofline beside them when the sweep has intensity points."""
    run_id = new_run_id()

    def progress(i: int, n: int, spec: KernelSpec, res: RunResult) -> None:
        if log is not None:
            ok = "ok" if res.checksum_ok else "CHECKSUM MISMATCH"
            log(f"[{i + 1}/{n}] {spec.label} reps={res.reps} {describe_result(res)} {ok}")

    if log is not None and hasattr(backend, "plan_notes"):
        for note in backend.plan_notes():
            log(f"note: {note}")
    rows = run_points(backend, specs, reps=reps, min_time_s=min_time_s, progress_cb=progress, platform=platform,
                      run_id=run_id, device=device)
    for r in rows:
        r["note"] = f"{r['note']}; {why_no_energy}" if r.get("note") else why_no_energy
    path = write_rows(Path(out_dir) / f"{run_id}.csv", rows)
    png = None
    precisions = {s.precision for s in specs if s.kernel == "intensity"}
    if precisions:
        from archline.fit.plots.inputs import plot_results

        png = plot_results([path], path.with_suffix(".roofline.png"), sorted(precisions)[0], kinds=("roofline",))
    return TimeOnlyRun(path, png, len(rows), sum(1 for r in rows if not r["checksum_ok"]))
