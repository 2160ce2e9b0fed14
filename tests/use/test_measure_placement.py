"""``archline measure --costs``: the measured program placed on a cost table's roofline beside the model's
prediction for its counts (S1 Ch. 6), with the counts from a profiler export; and the option checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_measure import archline  # type: ignore[import-not-found]

ROOT = Path(__file__).resolve().parents[2]
NCU = ROOT / "tests" / "data" / "counters" / "ncu_raw.csv"
COSTS = ROOT / "results" / "sample" / "gtx580.costs.json"


def test_placement_of_an_emulated_program_agrees_with_the_model(tmp_path: Path) -> None:
    """The emulated device draws the table's pi0 for the whole run; the counted work (ncu_raw.csv: two kernels,
    summed) costs sum N*eps on top in the model, so predicted - measured is that energy, inside the tolerance."""
    costs = json.loads(COSTS.read_text())["coefficients"]
    pi0_w = costs["pi0"]["value"]
    fig = tmp_path / "placed.png"
    r = archline("measure", "--platform", "gtx580", "--emulate", "--idle-w", repr(pi0_w), "--counts-file", str(NCU),
                 "--counts-tool", "ncu", "--costs", str(COSTS), "--figure", str(fig), "--format", "json", "--",
                 "python3", "-c", "import time; time.sleep(0.4)")
    assert r.returncode == 0, r.stderr
    pl = json.loads(r.stdout)["placement"]
    terms = pl["predicted"]["terms_j"]
    work_j = sum(v for k, v in terms.items() if k != "constant")
    assert 0 < work_j < 1.0
    assert pl["emulated"] is True and pl["flops"] > 0
    assert pl["difference"]["energy_j"] == pytest.approx(-work_j, abs=pl["measured"]["energy_err_j"])
    assert pl["difference"]["within"] is True
    assert fig.stat().st_size > 10_000


@pytest.mark.parametrize(("args", "words"), [
    (["--figure", "x.png"], "--costs"),
    (["--costs", "gtx580"], "--counters"),
    (["--counts-file", str(NCU)], "--counts-tool"),
    (["--counters", "perf", "--counts-file", str(NCU), "--counts-tool", "ncu"], "one way"),
])
def test_option_mistakes_are_one_line(args: list[str], words: str, tmp_path: Path) -> None:
    r = archline("measure", "--platform", "gtx580", "--emulate", *args, "--", "true")
    assert r.returncode == 2 and words in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "x.png").exists()


def test_counters_say_why_not_where_the_machine_cannot() -> None:
    from archline.bench.measure_counters import available

    ok, why = available("perf")
    if ok:
        pytest.skip("this machine has PMU access: the refusal path is covered by tests/use/test_measure_counters.py")
    r = archline("measure", "--counters", "perf", "--", "true")
    assert r.returncode == 4 and why.split(":")[0] in r.stderr   # exit 4: the tool has no device access here


def test_trace_marks_carry_the_phase_edges_measure_json_reports(tmp_path: Path) -> None:
    """Breaker 25 item 2: the trace sidecar's marks for a child's phase are the phase's own edges."""
    r = archline("measure", "--platform", "gtx580", "--emulate", "--out", str(tmp_path), "--", "sh", "-c",
                 'echo "begin p" > $ARCHLINE_MARKS; sleep 0.05; echo "end p" > $ARCHLINE_MARKS')
    assert r.returncode == 0, r.stderr
    (run_dir,) = [d for d in tmp_path.iterdir() if d.is_dir()]
    doc = json.loads((run_dir / "measure.json").read_text())
    phase = doc["runs"][0]["phases"][0]
    side = next(run_dir.glob("trace-*.json"))
    marks = {(m["name"], m["kind"]): m["t_s"] for m in json.loads(side.read_text())["marks"]}
    begin, end = marks[("p", "begin")], marks[("p", "end")]
    assert end - begin == pytest.approx(phase["time_s"], abs=1e-9)
    assert begin >= marks[("run", "begin")] and end <= marks[("run", "end")]
