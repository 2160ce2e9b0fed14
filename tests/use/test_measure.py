"""``archline measure -- CMD`` (docs/api.md): an emulated device doing known work in phases the child marks is
measured within the meter's stated bound of the truth; the exit code, SIGINT and SIGTERM pass through; phases are
windows; --format json is parseable with units in the names; --out keeps result, trace and raw capture."""

from __future__ import annotations

import json
import math
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

_MAIN = "import sys; from archline.cli.main import main; sys.exit(main(sys.argv[1:]))"

#: a child that does known work: idle 0.15 s, phase "load" 0.3 s, idle 0.1 s, phase "solve" 0.4 s (busy inside)
CHILD = """
import time, archline
mon = archline.Monitor.from_env()
time.sleep(0.15)
with mon.window("load"):
    time.sleep(0.3)
time.sleep(0.1)
mon.begin_window("solve")
time.sleep(0.4)
mon.end_window("solve")
"""

UNIT_SUFFIXES = ("_s", "_j", "_w", "_samples")


def archline(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _MAIN, *args], capture_output=True, text=True, timeout=timeout,
                          check=False)


def _windows(doc: dict) -> list[dict]:
    out = [doc["baseline"]] if doc.get("baseline") else []
    for r in doc["runs"]:
        out += [r, *r["phases"]]
    return out


def test_emulated_child_phases_are_windows_within_the_bound_of_the_truth(tmp_path: Path) -> None:
    res = archline("measure", "--platform", "gtx580", "--emulate", "--busy-w", "150", "--idle-w", "40",
                   "--baseline-s", "0.3", "--subtract-idle", "--format", "json", "--out", str(tmp_path),
                   "--", sys.executable, "-c", CHILD)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["emulated"] is True and doc["exit_code"] == 0 and doc["signal"] is None
    (run,) = doc["runs"]
    assert run["name"] == "run" and [p["name"] for p in run["phases"]] == ["load", "solve"]
    for w in _windows(doc):
        assert abs(w["energy_j"] - w["truth_energy_j"]) <= w["energy_err_j"], w["name"]
        assert w["energy_err_j"] < 0.05 * w["truth_energy_j"]          # a bound that says something
        assert w["lost_samples"] == 0 and w["emulated"] is True
    load, solve = run["phases"]
    # a phase's edges sit on the device's power steps: their placement on the meter's clock is in the bound;
    # the run's edges are in steady idle power: nothing to move across them
    assert load["clock_err_j"] > 0 and solve["clock_err_j"] > 0 and run["clock_err_j"] == 0
    # emulated: the edges are the device's switches, made as the parent read each mark (well under 5 ms late)
    assert 0.295 <= load["time_s"] < 0.4 and 0.395 <= solve["time_s"] < 0.5
    assert load["truth_energy_j"] == pytest.approx(150.0 * load["time_s"], rel=1e-9)   # busy all through
    assert doc["idle_power_w"] == pytest.approx(40.0, abs=doc["idle_power_err_w"])
    # idle subtracted where asked, both shown: a phase's energy above idle is (150 - 40) W x its time
    assert solve["energy_above_idle_j"] == pytest.approx(110.0 * solve["duration_s"],
                                                         abs=solve["energy_above_idle_err_j"])
    assert run["energy_j"] > load["energy_j"] + solve["energy_j"]       # the run also holds the idle stretches
    # units in the names: every numeric key of a window ends in its unit (or is a count/flag)
    for w in _windows(doc):
        for k, v in w.items():
            if isinstance(v, float):
                assert k.endswith(UNIT_SUFFIXES), k
    # kept beside the result: measure.json (the same document), trace with the marks, raw capture
    (d,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    from archline.bench.measure import result

    saved = result.read(d / "measure.json")
    assert saved["format"] == "archline.measure/1" and saved["runs"][0]["phases"][1]["name"] == "solve"
    assert (d / "trace-powermon-emulated.csv.gz").is_file()
    assert saved["files"]["raw"] == ["powermon-0000.raw", "powermon-0000.raw.json"]
    assert (d / "powermon-0000.raw").stat().st_size > 0
    assert abs(saved["anchor"]["unix_s"] - time.time()) < 600


def test_repeats_and_a_second_measurement_never_overwrite(tmp_path: Path) -> None:
    shell = 'echo "begin a" > "$ARCHLINE_MARKS"; sleep 0.2; echo "end a" > "$ARCHLINE_MARKS"'
    for _ in range(2):
        res = archline("measure", "--platform", "gtx580", "--emulate", "--busy-w", "100", "--idle-w", "30",
                       "--repeat", "2", "--out", str(tmp_path), "--", "sh", "-c", shell)
        assert res.returncode == 0, res.stderr
    dirs = sorted(p for p in tmp_path.iterdir() if p.is_dir())
    assert len(dirs) == 2                                              # a new directory each time
    from archline.bench.measure import result

    doc = result.read(dirs[1] / "measure.json")
    assert [r["name"] for r in doc["runs"]] == ["run-1", "run-2"]
    assert [p["name"] for r in doc["runs"] for p in r["phases"]] == ["run-1/a", "run-2/a"]
    for r in doc["runs"]:                                              # shell marks: stamped on arrival
        (a,) = r["phases"]
        assert abs(a["energy_j"] - a["truth_energy_j"]) <= a["energy_err_j"]
        assert a["truth_energy_j"] == pytest.approx(100.0 * a["time_s"], rel=1e-9)
    assert doc["summary"]["n_runs"] == 2 and "energy_j_stdev" in doc["summary"]
    assert "run-2" in res.stdout and "truth_j" in res.stdout            # the table names every window


def test_exit_code_passes_through_and_stops_the_repeats() -> None:
    res = archline("measure", "--platform", "gtx580", "--emulate", "--repeat", "3", "--format", "json", "--",
                   sys.executable, "-c", "import sys; sys.exit(3)")
    assert res.returncode == 3, res.stderr
    doc = json.loads(res.stdout)
    assert len(doc["runs"]) == 1 and doc["exit_code"] == 3
    assert doc["problems"] == ["stopped after run-1: the command exited 3"]


def _start_and_signal(tmp_path: Path, sig: int, child: str) -> tuple[subprocess.Popen[str], str, str]:
    ready = tmp_path / "ready"
    proc = subprocess.Popen([sys.executable, "-c", _MAIN, "measure", "--platform", "gtx580", "--emulate",
                             "--format", "json", "--", sys.executable, "-c", child, str(ready)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert ready.exists(), "the child never started"
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc, out, err


HANDLES = ("import signal, sys, time, pathlib\n"
           "signal.signal(signal.{sig}, lambda s, f: sys.exit(42))\n"
           "pathlib.Path(sys.argv[1]).write_text('ready')\n"
           "time.sleep(60)\n")
DIES = ("import signal, sys, time, pathlib\n"
        "signal.signal(signal.SIGINT, signal.SIG_DFL)\n"
        "pathlib.Path(sys.argv[1]).write_text('ready')\n"
        "time.sleep(60)\n")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signals_reach_the_child_and_archline_exits_as_it_did(tmp_path: Path, sig: int) -> None:
    # a child that handles the signal (exit 42): archline's exit is the child's
    proc, out, err = _start_and_signal(tmp_path, sig, HANDLES.format(sig=signal.Signals(sig).name))
    assert proc.returncode == 42, err
    doc = json.loads(out)
    assert doc["exit_code"] == 42 and doc["runs"][0]["time_s"] > 0
    # a child that the signal ends: archline exits 128 + N and says so
    (tmp_path / "ready").unlink()
    dies = DIES.replace("SIGINT", signal.Signals(sig).name)
    proc, out, err = _start_and_signal(tmp_path, sig, dies)
    assert proc.returncode == 128 + sig, err
    doc = json.loads(out)
    assert doc["signal"] == sig and doc["exit_code"] is None and math.isfinite(doc["runs"][0]["energy_j"])


def test_user_mistakes_are_one_line(tmp_path: Path) -> None:
    res = archline("measure", "--platform", "gtx580", "--emulate", "--out", str(tmp_path / "o"), "--",
                   "/nonexistent/prog-xyz")
    assert res.returncode == 2 and "command not found" in res.stderr and "Traceback" not in res.stderr
    assert list((tmp_path / "o").iterdir()) == []                     # no half-written measurement left
    res = archline("measure", "--platform", "gtx580", "--emulate", "--subtract-idle", "--", "true")
    assert res.returncode == 2 and res.stderr.strip().count("\n") == 0 and "--baseline-s" in res.stderr
    res = archline("measure", "--platform", "gtx580", "--emulate", "--", "/nonexistent/prog-xyz")
    assert res.returncode == 2 and "command not found" in res.stderr and "Traceback" not in res.stderr
    res = archline("measure", "--platform", "gtx580", "--busy-w", "5", "--", "true")
    assert res.returncode == 2 and "--emulate" in res.stderr


def test_counters_and_placement_hooks(tmp_path: Path) -> None:
    """The hooks the counter collectors and the roofline placement plug into: the wrapped command is what runs,
    its counts land in the run, the placement sees the finished document."""
    from archline.bench.measure.run import MeasureOptions, measure

    seen = tmp_path / "wrapped"

    def counters(cmd: object) -> tuple[list[str], object]:
        argv = ["sh", "-c", f'echo wrapped > "{seen}"; exec "$@"', "sh", *cmd]  # type: ignore[misc]
        return argv, lambda: {"flops_dp": 1000, "source": "test"}

    out = measure(MeasureOptions(command=[sys.executable, "-c", "pass"], platform="gtx580", emulate=True,
                                 counters=counters, place=lambda doc: {"n_runs": len(doc["runs"])}))  # type: ignore[arg-type]
    assert out.exit_status == 0 and seen.read_text() == "wrapped\n"
    assert out.doc["runs"][0]["counters"] == {"flops_dp": 1000, "source": "test"}
    assert out.doc["placement"] == {"n_runs": 1}


def test_phase_marks_are_ordered_and_clipped_by_one_rule() -> None:
    """Issue 36 (hangs/lost report): marks however they come (stamps out of arrival order, read after the exit,
    from before the run) become phases that begin no later than they end and lie inside the run; none raises."""
    from archline.bench.measure.process import phases_of_run
    from archline.powermon.marks import Mark

    marks = [Mark("end", "x", 10.5), Mark("begin", "x", 10.2),     # from two writers: end arrived first
             Mark("begin", "late", 12.0), Mark("end", "late", 12.1),    # read after the run ended at 11
             Mark("begin", "early", 1.0), Mark("end", "early", 10.1),   # an API stamp from before the run
             Mark("begin", "z", 10.7), Mark("end", "z", 10.7)]          # one chunk's stamp: begin, then end
    phases, problems = phases_of_run(marks, 10.0, 11.0)
    assert phases == [("early", 10.0, 10.1), ("x", 10.2, 10.5), ("z", 10.7, 10.7), ("late", 11.0, 11.0)]
    assert problems == []
    nan = [Mark("begin", "n", math.nan), *marks, Mark("end", "n", math.inf)]     # 'begin n<TAB>nan' from a child
    phases, problems = phases_of_run(nan, 10.0, 11.0)
    assert [p[0] for p in phases] == ["early", "x", "z", "late"]
    assert problems == ["2 mark(s) with a time that is not a finite number ignored (first: begin 'n' at nan)"]
    rng = __import__("random").Random(36)
    many = [Mark(k, f"p{i}", 10.0 + (i + (k == "end") * 0.5) * 1e-4) for i in range(1000) for k in ("begin", "end")]
    rng.shuffle(many)
    phases, problems = phases_of_run(many, 10.0, 10.05)
    assert len(phases) == 1000 and problems == []
    assert all(10.0 <= t0 <= t1 <= 10.05 for _, t0, t1 in phases)


def test_two_thousand_marks_never_lose_the_report() -> None:
    """Issue 36: a command writing 2000 begin/end marks lost the whole report in 2 of 3 runs ('region ends before
    it starts', exit 2 after the command ran). Each pair is one phase inside the run, and the command's exit code
    is kept. (The null meter of localhost: the marks' path is the same with any meter.)"""
    shell = ('exec 3>"$ARCHLINE_MARKS"; i=0; while [ $i -lt 1000 ]; do echo "begin p$i" >&3; echo "end p$i" >&3; '
             'i=$((i+1)); done; exit 3')
    res = archline("measure", "--platform", "localhost", "--format", "json", "--", "sh", "-c", shell)
    assert res.returncode == 3, res.stderr
    doc = json.loads(res.stdout)
    assert doc["exit_code"] == 3 and len(doc["runs"]) == 1
    (run,) = doc["runs"]
    assert sorted(p["name"] for p in run["phases"]) == sorted(f"p{i}" for i in range(1000))
    assert all(0 <= p["time_s"] <= run["time_s"] for p in run["phases"])
    assert not [p for p in doc["problems"] if "not measured" in p or "never ended" in p]


def test_marks_written_before_take_are_all_taken() -> None:
    """A run's marks are read before its phases are made: none is left in the FIFO for the next run to stamp."""
    import os

    from archline.powermon.marks import MarksReader

    reader = MarksReader()
    try:
        fd = os.open(reader.path, os.O_WRONLY)
        os.write(fd, b"".join(f"begin p{i}\nend p{i}\n".encode() for i in range(1000)))
        os.close(fd)
        marks = reader.take()
        assert len(marks) == 2000 and [m.name for m in marks[:2]] == ["p0", "p0"]
    finally:
        reader.close()


def test_a_last_mark_without_newline_is_taken_and_junk_is_escaped() -> None:
    """Issue 36 U #11: a final ``printf 'begin nonl'`` (no newline) was dropped without the "never ended" warning,
    and junk on $ARCHLINE_MARKS (terminal escapes, random bytes) was printed raw in the warning."""
    import os

    from archline.powermon.marks import MarksReader

    reader = MarksReader()
    try:
        fd = os.open(reader.path, os.O_WRONLY)
        os.write(fd, b"\x1b]0;pwned\x07\xe2\x80\xae junk\nbegin nonl")
        os.close(fd)
        marks = reader.take()
        assert [(m.kind, m.name) for m in marks] == [("begin", "nonl")]
        (said,) = reader.take_malformed()
        assert said.isascii() and "\x1b" not in said and "\\x1b" in said and "\\u202e" in said
    finally:
        reader.close()
