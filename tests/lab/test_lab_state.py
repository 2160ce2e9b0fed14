"""The lab's state files (task.json, submissions.json) are versioned models: a newer archline's extra keys are
tolerated; a wrong type, a cut-off file or a newer major version is one line naming the file: ``lab status``
is one line (exit 2), ``lab submit`` refuses before it submits anything.

Lab-file values that reach the sbatch script: control characters and characters outside Slurm's syntax are
refused naming the key; what passes (the Python path, the results directory) is quoted in submitit's script, which
a bash run with a fake srun shows."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from support.labs import write_lab

from archline.bench.lab.labfile import LabFileError, load_lab
from archline.formats.lab_state import (
    SUBMISSIONS_SCHEMA,
    TASK_SCHEMA,
    LabStateError,
    Submission,
    Submissions,
    TaskRecord,
)

GPU = {"name": "gpu01", "platform": "gtx580", "precisions": ["sp"]}
GOOD = {"schema": TASK_SCHEMA, "machine": "gpu01", "state": "done", "job_id": "123", "node": "n1", "pid": 42,
        "exit_code": 0, "message": "sweep complete"}


def _one_line(err: str) -> str:
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("archline: error: "), err
    return lines[0]


def _lab(tmp_path: Path) -> Path:
    return write_lab(tmp_path / "lab.toml", [GPU])


def _record(tmp_path: Path, body: str) -> Path:
    p = tmp_path / "results" / "gpu01" / "task.json"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(body)
    return p


def test_task_record_round_trip_and_tolerated_extras(tmp_path: Path) -> None:
    p = tmp_path / "task.json"
    TaskRecord(machine="m", state="running", pid=7, point_ids=["a", "b"]).write(p)
    raw = json.loads(p.read_text())
    assert raw["schema"] == TASK_SCHEMA and next(iter(raw)) == "schema"
    rec = TaskRecord.read(p)
    assert rec is not None and (rec.machine, rec.state, rec.pid, rec.point_ids) == ("m", "running", 7, ["a", "b"])
    # a newer minor version's key, and a file written before the schema key existed: both read
    p.write_text(json.dumps({**GOOD, "schema": "archline.lab-task/1.3", "gpu_serial": "X123", "new": {"a": 1}}))
    assert TaskRecord.read(p).state == "done"  # type: ignore[union-attr]
    p.write_text(json.dumps({k: v for k, v in GOOD.items() if k != "schema"}))
    assert TaskRecord.read(p).job_id == "123"  # type: ignore[union-attr]
    assert TaskRecord.read(tmp_path / "none.json") is None
    subs = tmp_path / "submissions.json"
    subs.write_text(json.dumps({"schema": SUBMISSIONS_SCHEMA, "lab": "x", "extra": 1, "machines": {
        "gpu01": {"job_id": "5_0", "scheduler": "slurm", "submitted_at": "t", "array_size": 4}}}))
    got = Submissions.read(subs, "x").machines["gpu01"]
    assert got == Submission(job_id="5_0", scheduler="slurm", submitted_at="t")


@pytest.mark.parametrize(("body", "needle"), [
    (json.dumps({**GOOD, "pid": "abc"}), "pid: expected a valid integer, got 'abc'"),
    (json.dumps({**GOOD, "state": "exploded"}), "state must be one of running, done, failed"),
    (json.dumps({**GOOD, "point_ids": "p1"}), "point_ids"),
    (json.dumps({k: v for k, v in GOOD.items() if k != "machine"}), "task.json: missing 'machine'"),   # not '::'
    (json.dumps(GOOD)[:40], "is not valid JSON (cut off)"),
    ("", "is empty"),
    ("[1, 2]", "is not a JSON object"),
    (json.dumps({**GOOD, "schema": "archline.lab-task/2"}), "written by a newer archline"),
    (json.dumps({**GOOD, "schema": "archline.results/1"}), "not a task record"),
    (b"\xff\xfe{}".decode("latin-1"), "not UTF-8"),
])
def test_bad_task_record_is_one_line_in_status_and_submit(
        tmp_path: Path, run_cli: Callable[..., object], body: str, needle: str) -> None:
    lab = _lab(tmp_path)
    rec = _record(tmp_path, body)
    if body.startswith("\xff"):
        rec.write_bytes(b"\xff\xfe{}")
    with pytest.raises(LabStateError, match="task record"):
        TaskRecord.read(rec)
    before = rec.read_bytes()
    for fmt in ("json", "table"):
        r = run_cli("lab", "status", str(lab), "--format", fmt)
        assert r.exit_code == 2, r.stderr  # type: ignore[attr-defined]
        line = _one_line(r.stderr)  # type: ignore[attr-defined]
        assert str(rec) in line and needle in line, line
        assert r.stdout == ""  # type: ignore[attr-defined]              # no state guessed from a damaged file
    r = run_cli("lab", "submit", str(lab), "--scheduler", "local")
    assert r.exit_code == 2  # type: ignore[attr-defined]
    line = _one_line(r.stderr)  # type: ignore[attr-defined]
    assert "gpu01" in line and str(rec) in line and needle in line and "nothing submitted" in line
    assert rec.read_bytes() == before                                   # never overwritten
    assert not (tmp_path / "results" / ".lab" / "testlab" / "submissions.json").exists()


@pytest.mark.parametrize(("body", "needle"), [
    ('{"schema": "archline.lab-submissions/1", "lab": "testlab", "machines": {"gpu01": {"job_id": 5, '
     '"scheduler": "local", "submitted_at": "t"}}}', "machines.gpu01.job_id: expected a valid string"),
    ('{"schema": "archline.lab-submissions/1", "lab": "testlab", "machines": {"gpu01": {"job_id": "5", '
     '"scheduler": "pbs", "submitted_at": "t"}}}', "scheduler must be one of slurm, local"),
    ('{"schema": "archline.lab-submissions/7", "lab": "testlab"}', "written by a newer archline"),
    ('{"schema": "archline.lab-submissions/1", "lab": "testlab", "machi', "not valid JSON (cut off)"),
])
def test_bad_submission_record(tmp_path: Path, run_cli: Callable[..., object], body: str, needle: str) -> None:
    lab = write_lab(tmp_path / "lab.toml", [GPU, {**GPU, "name": "gpu02"}])
    subs = tmp_path / "results" / ".lab" / "testlab" / "submissions.json"
    subs.parent.mkdir(parents=True)
    subs.write_text(body)
    _record(tmp_path, json.dumps(GOOD))                                   # gpu01 ended: its record says so
    r = run_cli("lab", "status", str(lab), "--format", "json")
    assert r.exit_code == 2  # type: ignore[attr-defined]
    line = _one_line(r.stderr)  # type: ignore[attr-defined]
    assert str(subs) in line and needle in line, line
    r = run_cli("lab", "submit", str(lab), "--scheduler", "local")
    assert r.exit_code == 2  # type: ignore[attr-defined]
    line = _one_line(r.stderr)  # type: ignore[attr-defined]
    assert str(subs) in line and needle in line
    assert subs.read_text() == body                                       # a newer archline's file is kept


# --- lab-file values that reach the scheduler's script -------------------------------------------------------

@pytest.mark.parametrize(("machine", "extra", "needle"), [
    ({**GPU, "slurm": {"partition": "debug\ntouch INJECTED #"}}, "", "machine[0].slurm.partition: holds the control"),
    ({**GPU, "slurm": {"account": "a\rb"}}, "", "machine[0].slurm.account: holds the control character '\\r'"),
    ({**GPU, "slurm": {"qos": "q\u0000"}}, "", "machine[0].slurm.qos"),
    ({**GPU, "slurm": {"constraint": "a\u2028b"}}, "", "machine[0].slurm.constraint"),
    ({**GPU, "slurm": {"time": "01:00:00\n#"}}, "", "machine[0].slurm.time"),
    ({**GPU, "slurm": {"partition": "gpu;touch INJECTED"}}, "", "machine[0].slurm.partition: 'gpu;touch INJECTED' "
                                                               "holds ' ', ';'"),
    ({**GPU, "slurm": {"gres": "gpu:1 $(id)"}}, "", "machine[0].slurm.gres"),
    ({**GPU, "slurm": {"mem": "4G'"}}, "", "machine[0].slurm.mem"),
    ({**GPU, "host": "node\n1"}, "", "machine[0].host: holds the control"),
    ({**GPU, "platform": "gtx580\u001b[2J"}, "", "machine[0].platform: holds the control"),
    (GPU, 'setup = ["module load x\\ntouch INJECTED"]\n', "lab.setup[0]: holds the control"),
    (GPU, 'python = "/usr/bin/python3\\n"\n', "lab.python: holds the control"),
    (GPU, 'python = "/usr/bin/python3\\u0085"\n', "lab.python: holds the control"),
])
def test_unsafe_lab_file_values_are_refused(tmp_path: Path, run_cli: Callable[..., object],
                                           machine: dict[str, object], extra: str, needle: str) -> None:
    lab = _write_lab(tmp_path / "lab.toml", machine, extra)
    with pytest.raises(LabFileError) as e:
        load_lab(lab)
    assert needle in str(e.value) and str(lab) in str(e.value), str(e.value)
    r = run_cli("lab", "submit", str(lab), "--scheduler", "local")
    assert r.exit_code == 2  # type: ignore[attr-defined]
    assert needle in _one_line(r.stderr)  # type: ignore[attr-defined]
    assert not (tmp_path / "results").exists() and not list(tmp_path.rglob("INJECTED"))


def _toml(v: object) -> str:
    """A TOML value; strings as JSON strings (the same escapes as TOML's basic strings, so control characters
    arrive as written)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_toml(x)}" for k, x in v.items()) + " }"
    return repr(v)


def _write_lab(path: Path, machine: dict[str, object], extra: str) -> Path:
    body = {"emulate": True, "kernels": ["intensity"], "quick": True, **machine}
    path.write_text(f'[lab]\nresults = "results"\nscheduler = "slurm"\nname = "testlab"\n{extra}\n[[machine]]\n'
                    + "".join(f"{k} = {_toml(v)}\n" for k, v in body.items()))
    return path


def _fake_bin(tmp_path: Path) -> Path:
    """srun and sbatch that only record their arguments (one per line)."""
    b = tmp_path / "bin"
    b.mkdir()
    for name in ("srun", "sbatch"):
        f = b / name
        f.write_text(f'#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done > "{tmp_path}/{name}.args"\n')
        f.chmod(f.stat().st_mode | stat.S_IXUSR)
    return b


def test_sbatch_script_quotes_what_passes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a lab file may hold still reaches submitit's script only as quoted words: a Python path and a
    results directory with spaces, quotes, ``$(...)`` and ``;`` run nothing, and every ``#SBATCH`` line is one
    line. The script is submitit's own text, run by bash with a fake srun."""
    from archline.bench.lab.submit import _executor, job_name

    monkeypatch.setenv("PATH", f"{_fake_bin(tmp_path)}{os.pathsep}{os.environ['PATH']}")
    weird = tmp_path / "my results; $(touch INJECTED) 'x'"
    python = str(tmp_path / "py $(touch INJECTED); env" / "python3")
    lab_toml = write_lab(tmp_path / "lab file.toml", [
        {**GPU, "slurm": {"partition": "gpu,debug", "constraint": "a100&(ib|eth)", "nodelist": "n[01-04]",
                          "gres": "gpu:a100:2", "account": "proj-1", "qos": "normal", "mem": "16G",
                          "time": "1-00:00:00", "exclusive": True}}],
        results=str(weird).replace("\\", "\\\\").replace('"', '\\"'), scheduler="slurm", name="fleet",
        extra=f'python = "{python}"\n')
    lab = load_lab(lab_toml)
    assert lab.results == weird and lab.python == python
    ex = _executor(lab, "slurm", lab.machines[0], 1)
    script = ex._make_submission_file_text(ex._submitit_command_str, "uid")
    sbatch = [ln for ln in script.splitlines() if ln.startswith("#SBATCH")]
    assert f"#SBATCH --job-name={job_name(lab)}" in sbatch and "#SBATCH --partition=gpu,debug" in sbatch
    assert "#SBATCH --constraint='a100&(ib|eth)'" in sbatch and "#SBATCH --exclusive" in sbatch
    assert "#SBATCH --time=1-00:00:00" in sbatch and "#SBATCH --mem=16G" in sbatch
    (tmp_path / "job.sh").write_text(script)
    r = subprocess.run(["bash", "-n", str(tmp_path / "job.sh")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    subprocess.run(["bash", str(tmp_path / "job.sh")], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert not list(tmp_path.rglob("INJECTED"))
    args = (tmp_path / "srun.args").read_text().splitlines()
    assert python in args                                   # the Python path arrived as one word
    assert str(lab.state_dir / "logs" / "%j") in args     # and so did the folder
    # the lab file's stem is not a plain name: the job name is a cleaned one
    lab2 = load_lab(write_lab(tmp_path / "my lab;x.toml", [GPU], name="x", scheduler="slurm").rename(
        tmp_path / "my lab;x.toml"))
    assert lab2.name == "x"
    text = (tmp_path / "my lab;x.toml").read_text().replace('name = "x"\n', "", 1)
    (tmp_path / "my lab;x.toml").write_text(text)
    lab3 = load_lab(tmp_path / "my lab;x.toml")
    assert lab3.name.startswith("my_lab_x") and all(c.isalnum() or c in "._-" for c in lab3.name)


def test_percent_in_results_is_refused_for_slurm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from archline.bench.lab.status import LabError
    from archline.bench.lab.submit import _executor

    monkeypatch.setenv("PATH", f"{_fake_bin(tmp_path)}{os.pathsep}{os.environ['PATH']}")
    lab = load_lab(write_lab(tmp_path / "lab.toml", [GPU], results="r%j", scheduler="slurm"))
    with pytest.raises(LabError, match="holds '%'"):
        _executor(lab, "slurm", lab.machines[0], 1)
