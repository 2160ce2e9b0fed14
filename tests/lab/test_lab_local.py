"""The lab without Slurm: ``--scheduler local`` runs the same tasks (submitit's local executor) on this machine,
one after another; status, collect and fit work the same way."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from support.labs import write_lab

from archline.fit.platforms.profiles import load_platform


def test_lab_local_scheduler_submit_status_collect(tmp_path: Path, run_cli: Callable[..., object]) -> None:
    lab = write_lab(tmp_path / "lab.toml", [
        {"name": "gpu01", "platform": "gtx580", "precisions": ["sp"], "seed": 1,
         "slurm": {"partition": "gpu", "nodelist": "gpu01"}},
        {"name": "gpu02", "platform": "gtx580", "precisions": ["sp"], "seed": 2},
    ], scheduler="slurm")                                          # overridden on the command line
    r = run_cli("lab", "submit", str(lab), "--scheduler", "local", "--machine", "gpu01")
    assert r.exit_code == 0, r.stderr  # type: ignore[attr-defined]
    assert "running locally" in r.stderr  # type: ignore[attr-defined]
    r = run_cli("lab", "status", str(lab), "--format", "json")
    st = {s["machine"]: s for s in json.loads(r.stdout)}  # type: ignore[attr-defined]
    assert r.exit_code == 3                                        # gpu02 was never submitted
    assert st["gpu01"]["state"] == "done" and st["gpu01"]["points_done"] == st["gpu01"]["points_planned"] > 5
    assert st["gpu02"]["state"] == "missing" and "never submitted" in st["gpu02"]["reason"]
    rec = json.loads((tmp_path / "results" / "gpu01" / "task.json").read_text())
    assert rec["job_id"] == st["gpu01"]["job_id"] and rec["exit_code"] == 0
    sweep = (tmp_path / "results" / "gpu01" / "sweep.toml").read_text()
    assert 'host = "gpu01"' in sweep and 'out = "."' in sweep and "slurm" not in sweep

    out = tmp_path / "ds"
    r = run_cli("lab", "collect", str(lab), "--out", str(out), "--format", "json")
    rep = json.loads(r.stdout)  # type: ignore[attr-defined]
    n = st["gpu01"]["points_planned"]
    assert rep["dataset"]["rows"] == n and rep["dataset"]["partitions"] == 1
    m = {x["machine"]: x for x in rep["machines"]}
    assert m["gpu02"]["rows"] == 0 and m["gpu02"]["state"] == "missing"
    # the same sweep run again: nothing to do, nothing doubled
    assert run_cli("lab", "submit", str(lab), "--scheduler", "local", "--machine", "gpu01").exit_code == 0  # type: ignore
    rep = json.loads(run_cli("lab", "collect", str(lab), "--out", str(out), "--format", "json").stdout)  # type: ignore
    assert (rep["dataset"]["rows"], rep["dataset"]["duplicates"]) == (n, n)
    r = run_cli("fit", str(out), "--model", "basic", "--one-precision", "--format", "json", "--where", "host=gpu01")
    c = json.loads(r.stdout)  # type: ignore[attr-defined]
    want = load_platform("gtx580")                                  # S1 Table 4
    for k in ("eps_flop_sp", "eps_mem", "pi0"):
        assert c["coefficients"][k]["value"] == pytest.approx(want.value(k), rel=0.03), k


def test_lab_collect_keeps_machines_that_share_a_host_name(tmp_path: Path, run_cli: Callable[..., object]) -> None:
    """Issue 36 (data lost): two machines of a lab that report one host name (containers) and ran the same sweep
    had one machine's rows dropped as the other's duplicates, exit 0. Every row is kept now, and each machine's
    note names the other."""
    from support.datasets import part_csv

    from archline.fit.regress.synthetic import GTX580

    lab = write_lab(tmp_path / "lab.toml", [{"name": "box1", "platform": "gtx580"},
                                            {"name": "box2", "platform": "gtx580"}])
    for i, m in enumerate(("box1", "box2")):
        (tmp_path / "results" / m).mkdir(parents=True)
        part_csv(tmp_path / "results" / m, "results", GTX580, "localhost", f"gtx580-20260101T000000Z-{m}", i)
    r = run_cli("lab", "collect", str(lab), "--out", str(tmp_path / "ds"), "--format", "json")
    assert r.exit_code == 0, r.stderr  # type: ignore[attr-defined]
    rep = json.loads(r.stdout)  # type: ignore[attr-defined]
    assert (rep["dataset"]["rows"], rep["dataset"]["duplicates"], rep["dataset"]["partitions"]) == (40, 0, 2)
    notes = {m["machine"]: m["note"] for m in rep["machines"]}
    assert "host 'localhost' is also reported by box2" in notes["box1"]
    assert "host 'localhost' is also reported by box1" in notes["box2"]
    assert "box2" in r.stderr  # type: ignore[attr-defined]
    # box1's results copied into box3's directory: the same run, kept once, and both notes say so
    lab = write_lab(tmp_path / "lab.toml", [{"name": "box1", "platform": "gtx580"},
                                            {"name": "box3", "platform": "gtx580"}])
    (tmp_path / "results" / "box3").mkdir()
    (tmp_path / "results" / "box3" / "results.csv").write_bytes((tmp_path / "results" / "box1" / "results.csv")
                                                                 .read_bytes())
    r = run_cli("lab", "collect", str(lab), "--out", str(tmp_path / "ds2"), "--format", "json")
    rep = json.loads(r.stdout)  # type: ignore[attr-defined]
    assert (rep["dataset"]["rows"], rep["dataset"]["duplicates"]) == (20, 20)
    notes = {m["machine"]: m["note"] for m in rep["machines"]}
    assert "also in the results of box3 (a copied results file?)" in notes["box1"]
