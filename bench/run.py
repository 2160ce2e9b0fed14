"""The thin runner the CLI calls: prepare each point, warm up, pick the repetition count, run, verify, make rows.

Meters, platform profiles and resumable sweeps come later on top of ``run_points``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from archline.bench.errors import BenchError
from archline.bench.kernels import Backend, KernelSpec, RunResult
from archline.bench.results import make_row, new_run_id, utc_now_iso

ProgressCb = Callable[[int, int, KernelSpec, RunResult], None]


@dataclass
class PointResult:
    spec: KernelSpec
    result: RunResult


def choose_reps(warmup: RunResult, min_time_s: float, max_reps: int = 1_000_000) -> int:
    """Repetitions that make the timed region last at least ``min_time_s``, from a 1-rep warm-up."""
    per_rep = warmup.time_s / max(warmup.reps, 1)
    if per_rep <= 0:
        return max_reps
    return int(min(max_reps, max(1, math.ceil(min_time_s / per_rep))))


def measure(backend: Backend, spec: KernelSpec, *, reps: int | None = None, min_time_s: float = 0.2,
            device: str | None = None) -> RunResult:
    """Run one point: a 1-rep warm-up (dropped, also sizes ``reps`` when not given), then the timed run."""
    if reps is not None and (isinstance(reps, bool) or not isinstance(reps, int) or reps <= 0):
        raise BenchError(f"reps must be a positive integer, got {reps!r}")
    if not min_time_s > 0:
        raise BenchError(f"min_time_s must be > 0, got {min_time_s}")
    prepared = backend.prepare(spec, device)
    try:
        warm = prepared.run(1)
        n = reps if reps is not None else choose_reps(warm, min_time_s)
        res = prepared.run(n)
        res.checksum_ok = res.checksum_ok and warm.checksum_ok
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
