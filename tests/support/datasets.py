"""A small synthetic results CSV for data-set tests: one platform, host and run, with ids as a sweep writes them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from archline.fit.regress.synthetic import SyntheticPlatform, synthetic_results, write_results_csv


def part_csv(tmp: Path, name: str, plat: SyntheticPlatform, host: str, run_id: str, seed: int) -> Path:
    f = synthetic_results(plat, n_sp=10, n_dp=10, n_l1=0, n_l2=0, n_rand=0, seed=seed)
    f["host"], f["run_id"], f["config_hash"] = host, run_id, f"hash-{plat.name}"
    f["point_id"] = [f"p{i:03d}" for i in range(len(f))]
    return write_results_csv(f, tmp / f"{name}.csv")


def fit_json(run_cli: Any, *args: str) -> tuple[int, dict[str, Any] | None, list[str]]:
    """``archline fit ARGS --model basic --format json``: (exit code, its JSON or None, stderr's non-empty lines)."""
    r = run_cli("fit", *args, "--model", "basic", "--format", "json")
    doc = json.loads(r.stdout) if r.exit_code == 0 and r.stdout.strip() else None
    return r.exit_code, doc, [ln for ln in r.stderr.splitlines() if ln.strip()]
