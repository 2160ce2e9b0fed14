"""The lab on a real one-node Slurm cluster (slurmctld + slurmd + munge, tests/support/slurm.py): submit one job
array through submitit, follow it with squeue and the task records, collect one Parquet data set, fit it and
compare it; a task killed (SIGKILL) or cancelled (scancel) and then resubmitted leaves every point exactly once.

Emulated machines (the GTX 580 and the i7-950 of S1 Table 4, and a GTX 580 whose eps_mem is scaled) with small
time-compressed sweeps, so the whole file takes well under a minute.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow.dataset as ds
import pytest
from support.labs import scaled_profile, write_lab
from support.slurm import Cluster

from archline.formats.platforms.profiles import load_platform

#: the single-machine end-to-end test's tolerance (tests/runner/test_runner_emulated_e2e.py)
TOL_REL = 0.03
KEYS = ("eps_flop_sp", "eps_flop_dp", "eps_mem", "pi0")


def _expected(platform: str) -> dict[str, float]:
    """The values the emulator plays: the profile's S1 Table 4 constants."""
    p = load_platform(platform)
    return {k: float(p.value(k)) for k in KEYS}


def _rows(path: Path) -> list[dict[str, object]]:
    return ds.dataset(path, format="parquet", partitioning="hive").to_table().to_pylist()


def test_lab_slurm_two_platforms_submit_collect_fit_compare(slurm_cluster: Cluster, tmp_path: Path,
                                                             run_cli: Callable[..., object]) -> None:
    lab = write_lab(tmp_path / "lab.toml", [
        {"name": "gpu01", "platform": "gtx580", "precisions": ["sp", "dp"], "seed": 1,
         "slurm": {"partition": "debug", "time": "00:10:00"}},
        {"name": "cpu01", "platform": "i7-950", "precisions": ["sp", "dp"], "seed": 2,
         "slurm": {"partition": "debug", "time": "00:10:00"}},
    ], scheduler="slurm")
    r = run_cli("lab", "submit", str(lab), "--wait")
    assert r.exit_code == 0, r.stderr  # type: ignore[attr-defined]
    assert "submitted as job" in r.stderr  # type: ignore[attr-defined]
    r = run_cli("lab", "status", str(lab), "--format", "json")
    st = {s["machine"]: s for s in json.loads(r.stdout)}  # type: ignore[attr-defined]
    assert r.exit_code == 0 and {s["state"] for s in st.values()} == {"done"}
    # one array of two tasks (same placement): ids <array>_0 and <array>_1
    arrays = {s["job_id"].split("_")[0] for s in st.values()}
    assert len(arrays) == 1 and sorted(s["job_id"].split("_")[1] for s in st.values()) == ["0", "1"]
    assert all(s["points_done"] == s["points_planned"] == 20 for s in st.values())

    out = tmp_path / "fleet"
    r = run_cli("lab", "collect", str(lab), "--out", str(out))
    assert r.exit_code == 0, r.stderr  # type: ignore[attr-defined]
    parts = sorted(str(p.relative_to(out).parent) for p in out.rglob("*.parquet"))
    assert len(parts) == 2 and parts[0].startswith("platform=gtx580/host=gpu01/run_id=gtx580-")
    assert parts[1].startswith("platform=i7-950/host=cpu01/run_id=i7-950-")
    assert len(_rows(out)) == 40

    r = run_cli("fit", str(out), "--model", "basic", "--format", "json")
    assert r.exit_code == 0, r.stderr  # type: ignore[attr-defined]
    fits = {c["platform"]: c for c in json.loads(r.stdout)}  # type: ignore[attr-defined]
    assert sorted(fits) == ["gtx580", "i7-950"]
    for platform, c in fits.items():
        for k, want in _expected(platform).items():
            assert c["coefficients"][k]["value"] == pytest.approx(want, rel=TOL_REL), (platform, k)

    r = run_cli("compare", str(out), "--by", "platform", "--format", "json")
    cmp = json.loads(r.stdout)  # type: ignore[attr-defined]
    (block,) = cmp["blocks"]
    assert block["groups"] == ["gtx580", "i7-950"]
    mem = next(c for c in block["coefficients"] if c["name"] == "eps_mem")
    got = {v["group"]: v["value"] for v in mem["values"]}
    assert got["gtx580"] == pytest.approx(_expected("gtx580")["eps_mem"], rel=TOL_REL)
    assert got["i7-950"] == pytest.approx(_expected("i7-950")["eps_mem"], rel=TOL_REL)
    assert mem["flagged"] == ["gtx580", "i7-950"] and mem["pairs"][0]["significant"]
    r = run_cli("compare", str(out), "--by", "platform")
    head = next(ln for ln in r.stdout.splitlines() if ln.strip().startswith("coefficient"))  # type: ignore
    assert head.split() == ["coefficient", "gtx580", "i7-950"]          # side by side
    assert "Welch t-test" in r.stdout and "Holm" in r.stdout  # type: ignore[attr-defined]

    r = run_cli("plot", str(out), "gtx580", "--where", "host=gpu01", "--kind", "roofline",
                "--out", str(tmp_path / "gpu01.png"))
    assert r.exit_code == 0 and (tmp_path / "gpu01.png").stat().st_size > 0, r.stderr  # type: ignore


@pytest.mark.slow
def test_lab_slurm_node_variability_flags_the_nodes_that_differ(slurm_cluster: Cluster, tmp_path: Path,
                                                                run_cli: Callable[..., object]) -> None:
    """Four emulated GTX 580 nodes whose profiles differ only in eps_mem (x1.00, x1.00, x1.05, x0.95):
    compare --by host flags node03 and node04 only, in eps_mem only. The emulated meter plays the model without
    power noise here, so identical nodes give identical fits (with noise a test at alpha flags an identical node
    with probability alpha by construction; docs/lab.md shows a noisy run's numbers)."""
    src = Path(load_platform("gtx580").origin)
    factors = {"node01": 1.00, "node02": 1.00, "node03": 1.05, "node04": 0.95}
    machines = []
    for i, (name, f) in enumerate(factors.items(), 1):
        prof = scaled_profile(src, tmp_path / f"{name}.toml", "eps_mem", f)
        machines.append({"name": name, "platform": prof.name, "precisions": ["sp"], "seed": i})
    lab = write_lab(tmp_path / "nodes.toml", machines, scheduler="slurm")
    r = run_cli("lab", "submit", str(lab), "--wait")
    assert r.exit_code == 0, r.stderr  # type: ignore[attr-defined]
    out = tmp_path / "nodes"
    assert run_cli("lab", "collect", str(lab), "--out", str(out)).exit_code == 0  # type: ignore[attr-defined]
    r = run_cli("compare", str(out), "--by", "host", "--format", "json", "--figure", str(tmp_path / "nodes.png"))
    assert r.exit_code == 0, r.stderr  # type: ignore[attr-defined]
    (block,) = json.loads(r.stdout)["blocks"]  # type: ignore[attr-defined]
    assert block["scope"] == "gtx580" and block["groups"] == list(factors)
    coefs = {c["name"]: c for c in block["coefficients"]}
    mem = coefs["eps_mem"]
    assert mem["flagged"] == ["node03", "node04"]
    want = _expected("gtx580")["eps_mem"]
    for v in mem["values"]:
        assert v["value"] == pytest.approx(want * factors[v["group"]], rel=0.01), v
    pair = {(p["a"], p["b"]): p for p in mem["pairs"]}
    assert not pair[("node01", "node02")]["significant"]
    assert all(pair[k]["significant"] for k in pair if k != ("node01", "node02"))
    for name in ("eps_flop_sp", "pi0"):     # the same on every node: nothing flagged
        assert coefs[name]["flagged"] == [], coefs[name]
    assert mem["spread"]["range_rel"] == pytest.approx(0.10, rel=0.05)


def _wait_rows(path: Path, n: int, timeout_s: float = 60.0) -> int:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if path.exists():
            rows = path.read_text().count("\n") - 1
            if rows >= n:
                return rows
        time.sleep(0.05)
    raise AssertionError(f"{path} did not reach {n} rows in {timeout_s:g} s")


@pytest.mark.slow
def test_lab_slurm_killed_and_cancelled_tasks_resubmitted_every_point_once(
        slurm_cluster: Cluster, tmp_path: Path, run_cli: Callable[..., object]) -> None:
    lab = write_lab(tmp_path / "lab.toml", [
        {"name": "killed", "platform": "gtx580", "precisions": ["sp", "dp"], "seed": 1},
        {"name": "cancelled", "platform": "i7-950", "precisions": ["sp", "dp"], "seed": 2},
    ], scheduler="slurm")
    res = tmp_path / "results"
    assert run_cli("lab", "submit", str(lab)).exit_code == 0  # type: ignore[attr-defined]
    _wait_rows(res / "killed" / "results.csv", 3)
    rec = json.loads((res / "killed" / "task.json").read_text())
    assert rec["state"] == "running"
    os.kill(rec["pid"], signal.SIGKILL)                              # the sweep itself, mid-point
    _wait_rows(res / "cancelled" / "results.csv", 3)
    st = json.loads(run_cli("lab", "status", str(lab), "--format", "json").stdout)  # type: ignore[attr-defined]
    slurm_cluster.run("scancel", next(s["job_id"] for s in st if s["machine"] == "cancelled"))
    slurm_cluster.wait_idle(60)
    r = run_cli("lab", "status", str(lab), "--format", "json")
    st = {s["machine"]: s for s in json.loads(r.stdout)}  # type: ignore[attr-defined]
    assert r.exit_code == 3                                          # failed tasks
    assert st["killed"]["state"] == "failed" and "killed while running" in st["killed"]["reason"]
    assert st["cancelled"]["state"] == "failed" and "exit 130" in st["cancelled"]["reason"]
    for s in st.values():
        assert 3 <= s["points_done"] < s["points_planned"] == 20 and len(s["missing_points"]) == 20 - s["points_done"]

    out = tmp_path / "fleet"
    r = run_cli("lab", "collect", str(lab), "--out", str(out))       # a partial data set first
    assert r.exit_code == 0 and "missing" in r.stdout  # type: ignore[attr-defined]
    partial = len(_rows(out))
    assert partial == sum(s["points_done"] for s in st.values())

    r = run_cli("lab", "submit", str(lab), "--wait")                 # both resume where they stopped
    assert r.exit_code == 0, r.stderr  # type: ignore[attr-defined]
    r = run_cli("lab", "collect", str(lab), "--out", str(out), "--format", "json")
    rep = json.loads(r.stdout)  # type: ignore[attr-defined]
    assert rep["dataset"]["kept_existing"] == partial and rep["dataset"]["duplicates"] == partial
    rows = _rows(out)
    keys = [(r["host"], r["config_hash"], r["point_id"]) for r in rows]
    assert len(rows) == 40 and len(set(keys)) == 40                  # every point exactly once
    for m in ("killed", "cancelled"):
        assert {r["point_id"] for r in rows if r["host"] == m} == set(
            json.loads((res / m / "task.json").read_text())["point_ids"])
