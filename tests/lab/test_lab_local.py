"""The lab without Slurm: ``--scheduler local`` runs the same tasks (submitit's local executor) on this machine,
one after another; status, collect and fit work the same way."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from support.labs import write_lab

from archline.formats.platforms.profiles import load_platform


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
    assert "archline: warning: machine box1: host 'localhost' is also reported by box2" in r.stderr  # type: ignore
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
    # issue 36 U #11: box3 shares host 'localhost' with box2 and box1 (a copy of its run): its note names both
    lab = write_lab(tmp_path / "lab.toml", [{"name": m, "platform": "gtx580"} for m in ("box1", "box2", "box3")])
    r = run_cli("lab", "collect", str(lab), "--out", str(tmp_path / "ds3"), "--format", "json")
    notes = {m["machine"]: m["note"] for m in json.loads(r.stdout)["machines"]}  # type: ignore[attr-defined]
    assert "host 'localhost' is also reported by box1, box2" in notes["box3"], notes["box3"]


def _box_lab(tmp_path: Path, n: int = 2) -> Path:
    """A lab of ``n`` machines whose results are there already (no sweep run): box1..boxN, each its own host."""
    from support.datasets import part_csv

    from archline.fit.regress.synthetic import GTX580

    lab = write_lab(tmp_path / "lab.toml", [{"name": f"box{i}", "platform": "gtx580"} for i in range(1, n + 1)])
    for i in range(1, n + 1):
        (tmp_path / "results" / f"box{i}").mkdir(parents=True)
        part_csv(tmp_path / "results" / f"box{i}", "results", GTX580, f"host{i}", f"gtx580-20260101T000000Z-{i}", i)
    return lab


def test_lab_collect_reads_a_fifo_once(tmp_path: Path, run_cli: Callable[..., object],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 36 U #6: a machine's results.csv that is a FIFO was opened three or more times (rows counted, runs
    listed, the data set written), so collect hung once its writer had written once. It is read once now (a
    second open of the FIFO is refused here instead of hanging the test)."""
    import threading

    from archline.formats import results_file

    lab = _box_lab(tmp_path)
    fifo = tmp_path / "results" / "box2" / "results.csv"
    data = fifo.read_bytes()
    fifo.unlink()
    os.mkfifo(fifo)
    opened = [0]
    real = results_file.open_input

    def once(p: Path, **kw: object) -> object:
        if Path(p) == fifo:
            opened[0] += 1
            if opened[0] > 1:
                raise RuntimeError("the FIFO was opened a second time: its writer is gone, this would hang")
        return real(p, **kw)  # type: ignore[arg-type]

    def writer() -> None:
        with open(fifo, "wb") as f:         # blocks until collect opens it
            f.write(data)

    monkeypatch.setattr(results_file, "open_input", once)
    threading.Thread(target=writer, daemon=True).start()
    r = run_cli("lab", "collect", str(lab), "--out", str(tmp_path / "ds"), "--format", "json")
    assert opened[0] == 1, f"the FIFO was opened {opened[0]} times"
    assert r.exit_code == 0, r.stderr  # type: ignore[attr-defined]
    rows = {m["machine"]: m["rows"] for m in json.loads(r.stdout)["machines"]}  # type: ignore[attr-defined]
    assert rows == {"box1": 20, "box2": 20}


def test_lab_collect_leaves_no_half_made_data_set(tmp_path: Path, run_cli: Callable[..., object]) -> None:
    """Issue 36 U #7: a write that failed (``ulimit -f``) left the empty partition directories under the final
    name, and the error blamed the file system. A new data set is made beside its name and renamed into place."""
    import resource

    lab = _box_lab(tmp_path)
    out = tmp_path / "ds"
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (8192, hard))
    try:
        r = run_cli("lab", "collect", str(lab), "--out", str(out))
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert r.exit_code == 7, r.stderr  # type: ignore[attr-defined]
    err = r.stderr.strip().splitlines()[-1]  # type: ignore[attr-defined]
    assert err.startswith(f"archline: error: {out}/platform=gtx580/") and "the file-size limit (ulimit -f)" in err
    assert not out.exists() and [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    out.mkdir()                              # an empty directory given as --out: filled and swapped in
    r = run_cli("lab", "collect", str(lab), "--out", str(out), "--format", "json")
    assert r.exit_code == 0 and json.loads(r.stdout)["dataset"]["rows"] == 40  # type: ignore[attr-defined]
    # merging into it: a new partition (host0, written first) whose write fails leaves no directory behind
    from support.datasets import part_csv

    from archline.fit.regress.synthetic import GTX580

    lab = write_lab(tmp_path / "lab.toml", [{"name": f"box{i}", "platform": "gtx580"} for i in range(3)])
    (tmp_path / "results" / "box0").mkdir()
    part_csv(tmp_path / "results" / "box0", "results", GTX580, "host0", "gtx580-20260101T000000Z-0", 0)
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    resource.setrlimit(resource.RLIMIT_FSIZE, (8192, hard))
    try:
        r = run_cli("lab", "collect", str(lab), "--out", str(out))
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert r.exit_code == 7 and "host=host0" in r.stderr, r.stderr  # type: ignore[attr-defined]
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before


def test_lab_collect_names_a_broken_or_cut_off_results_file(tmp_path: Path, run_cli: Callable[..., object]) -> None:
    """Issue 36 U #11: a results.csv that is a symlink to itself was "never submitted"; one cut off mid-row (its
    task not running) was collected silently, though a cut-off CSV is an error everywhere else."""
    lab = _box_lab(tmp_path)
    res = tmp_path / "results" / "box2" / "results.csv"
    good = res.read_bytes()
    res.unlink()
    res.symlink_to(res.name)
    r = run_cli("lab", "collect", str(lab), "--out", str(tmp_path / "ds"), "--format", "json")
    assert r.exit_code == 0, r.stderr  # type: ignore[attr-defined]
    note = {m["machine"]: m["note"] for m in json.loads(r.stdout)["machines"]}["box2"]  # type: ignore[attr-defined]
    assert "results.csv" in note and "never submitted" not in note, note
    res.unlink()
    res.write_bytes(good[:-7])
    r = run_cli("lab", "collect", str(lab), "--out", str(tmp_path / "ds2"))
    assert r.exit_code == 2 and "box2/results.csv ends in the middle of a line" in r.stderr  # type: ignore[attr-defined]
    assert r.stderr.count("\n") == 1 and not (tmp_path / "ds2").exists()  # type: ignore[attr-defined]
