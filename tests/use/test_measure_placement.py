"""``archline measure --costs``: the measured program placed on a cost table's roofline beside the model's
prediction for its counts (S1 Ch. 6), with the counts from a profiler export, archline's counts CSV or given by
hand; with no meter (energy null, said why) and with localhost's emulated schedule; and the option checks."""

from __future__ import annotations

import json
import re
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
    (["--counts-file", str(NCU), "--costs", "gtx580"], "--counts-tool"),   # an export read as a counts CSV
    (["--counts-tool", "ncu"], "--counts-file"),
    (["--counters", "perf", "--counts-file", str(NCU), "--counts-tool", "ncu"], "one way"),
    (["--counters", "perf", "--flops-dp", "1", "--costs", "gtx580"], "one way"),
    (["--flops-dp", "1e9"], "add --costs"),
    (["--counts-file", str(NCU), "--counts-tool", "ncu"], "add --costs"),     # issue 35 #8: not ignored
    (["--bytes-mem", "1e9", "--costs", "gtx580"], "no flops"),
    (["--flops-dp", "-1", "--costs", "gtx580"], "--flops-dp"),
    (["--counts-file", str(NCU), "--counts-tool", "ncu", "--flops-dp", "1", "--costs", "gtx580"], "twice"),
    (["--flops-dp", "1", "--costs", str(NCU)], "--costs takes a platform name"),      # rows, not a cost table
    (["--flops-dp", "1e300", "--costs", "gtx580"], "not a physical count"),
])
def test_option_mistakes_are_one_line(args: list[str], words: str, tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    r = archline("measure", "--platform", "gtx580", "--emulate", *args, "--", "touch", str(ran))
    assert r.returncode == 2 and words in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "x.png").exists() and not ran.exists()      # refused before the command ran


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


#: a command with a phase 'kernel' of known length (0.2 s) inside its run
PHASED = 'echo "begin kernel" > "$ARCHLINE_MARKS"; sleep 0.2; echo "end kernel" > "$ARCHLINE_MARKS"'


def test_counts_by_hand_with_no_meter_place_the_program_on_the_time_roofline() -> None:
    """localhost has no meter here: exit 0, the time side exact from the counts and the measured time (achieved =
    W / T, attainable = W / max(W*tau_dp, Q*tau_mem) of the shipped gtx580), every energy field null with why."""
    from archline.formats.platforms.profiles import load_platform

    w, q = 2.0e9, 2.4e7
    r = archline("measure", "--costs", "gtx580", "--flops-dp", "2e9", "--bytes-mem", "2.4e7", "--format", "json",
                 "--", "sleep", "0.05")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    if doc["summary"].get("energy_j_mean") is not None:
        pytest.skip("this machine has a meter on localhost: the no-meter path needs one without")
    pl, gtx = doc["placement"], load_platform("gtx580")
    t = doc["runs"][0]["time_s"]
    assert pl["flops"] == w and pl["bytes_mem"] == q and pl["intensity_flop_per_byte"] == pytest.approx(w / q)
    assert pl["achieved_gflop_per_s"] == pytest.approx(w / t / 1e9, rel=1e-12)
    model_t = max(w * gtx.require("tau_flop_dp", "t"), q * gtx.require("tau_mem", "t"))
    assert pl["predicted"]["model_time_s"] == pytest.approx(model_t, rel=1e-12)
    assert pl["attainable_gflop_per_s"] == pytest.approx(w / model_t / 1e9, rel=1e-12)
    assert pl["measured"]["energy_j"] is None and pl["difference"]["energy_j"] is None
    assert pl["difference"]["within"] is None and pl["energy_reason"].startswith("no energy was measured")
    table = archline("measure", "--costs", "gtx580", "--flops-dp", "2e9", "--bytes-mem", "2.4e7", "--", "true")
    assert table.returncode == 0 and "GFLOP/s attainable" in table.stdout and "measured -" in table.stdout


def test_mixed_precision_is_timed_per_precision_and_beating_the_roofline_is_said() -> None:
    """SP and DP flops: labelled sp+dp, the model time W_sp*tau_sp + W_dp*tau_dp (each precision's own tau); a
    run faster than that is impossible for right counts and a right table: a warning line and a JSON flag."""
    from archline.formats.platforms.profiles import load_platform

    args = ["measure", "--costs", "gtx580", "--flops-sp", "1e11", "--flops-dp", "1e11", "--bytes-mem", "1e8"]
    r = archline(*args, "--format", "json", "--", "true")
    assert r.returncode == 0, r.stderr
    pl, gtx = json.loads(r.stdout)["placement"], load_platform("gtx580")
    model_t = 1e11 * gtx.require("tau_flop_sp", "t") + 1e11 * gtx.require("tau_flop_dp", "t")
    assert pl["precision"] == "sp+dp" and pl["flops_sp"] == 1e11 and pl["flops_dp"] == 1e11
    assert pl["predicted"]["model_time_s"] == pytest.approx(model_t, rel=1e-12)
    assert pl["above_roofline"] is True and "counts or the cost table must be wrong" in r.stderr
    table = archline(*args, "--", "true")
    assert "sp+dp" in table.stdout and "measured faster than the roofline allows" in table.stdout
    assert "archline: warning:" in table.stderr


def test_measure_help_spells_the_access_unit() -> None:
    assert "accesss" not in archline("measure", "--help").stdout


def _cost_table(tmp_path: Path, *, time_only: bool) -> tuple[Path, dict[str, float]]:
    """A cost table made here through its owner (CostTable): the sample gtx580 fit with eps_flop_dp doubled (or
    with no energy costs at all); returns its path and its SI values."""
    from archline.formats.costs import CostTable
    from archline.formats.platforms.profiles import load_platform

    doc = json.loads(COSTS.read_text())
    if time_only:
        doc["coefficients"] = {}
    else:
        doc["coefficients"]["eps_flop_dp"]["value"] *= 2.0
    path = CostTable.from_doc(doc, "test").dump(tmp_path / "made.costs.json")
    table = load_platform(str(path))
    return path, {k: v for k in ("eps_flop_dp", "eps_mem", "pi0", "tau_flop_dp", "tau_mem")
                  if (v := table.value(k)) is not None}


@pytest.mark.parametrize("time_only", [False, True], ids=["full-table", "time-only-table"])
def test_counts_csv_on_localhost_emulated_schedule(tmp_path: Path, time_only: bool) -> None:
    """A counts CSV (run + a phase, `archline predict`'s format) on a cost table made in the test, measured on
    localhost's emulated schedule (60 W while the command runs, 20 W otherwise): measured energy = 60 W x the
    measured time exactly, labelled; predicted = sum N*eps + pi0*T from the table, or null with why (time-only)."""
    costs, v = _cost_table(tmp_path, time_only=time_only)
    counts = tmp_path / "counts.csv"
    counts.write_text("name,flops_dp,bytes_mem\nrun,4e9,1e8\nkernel,3e9,5e7\nnever,1e9,1e6\n")
    r = archline("measure", "--platform", "localhost", "--emulate", "--busy-w", "60", "--idle-w", "20",
                 "--costs", str(costs), "--counts-file", str(counts), "--out", str(tmp_path / "out"),
                 "--format", "json", "--", "sh", "-c", PHASED)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    pl = doc["placement"]
    run, (kernel,) = doc["runs"][0], doc["runs"][0]["phases"]
    placed = {p["name"]: p for p in pl["phases"]}
    assert placed["never"]["reason"] == "no completed run marked a phase 'never'"
    for p, win, (w, q) in ((pl, run, (4e9, 1e8)), (placed["kernel"], kernel, (3e9, 5e7))):
        t = win["time_s"]
        assert p["measured"]["time_s"] == t and p["measured"]["energy_j"] == pytest.approx(60.0 * t, rel=1e-12)
        assert p["emulated"] is True and p["energy_source"] == "emulated: schedule x measured time, not the " \
            "program's energy"
        assert p["predicted"]["model_time_s"] == pytest.approx(max(w * v["tau_flop_dp"], q * v["tau_mem"]),
                                                               rel=1e-12)
        if time_only:
            assert p["predicted"]["energy_j"] is None and "no energy predicted" in p["energy_reason"]
        else:
            want = w * v["eps_flop_dp"] + q * v["eps_mem"] + v["pi0"] * t
            assert p["predicted"]["energy_j"] == pytest.approx(want, rel=1e-12) and p["energy_reason"] is None
    assert 0.2 <= kernel["time_s"] < run["time_s"]
    (saved,) = (tmp_path / "out").glob("measure-*/measure.json")
    assert json.loads(saved.read_text())["energy_source"] == "emulated: schedule x measured time, not the " \
        "program's energy"


def test_localhost_emulated_schedule_energy_and_its_label(tmp_path: Path) -> None:
    """No fit needed: baseline at idle power, the run and its phase at busy power, each x its measured time;
    the label in the table, the JSON and measure.json."""
    label = "emulated: schedule x measured time, not the program's energy"
    r = archline("measure", "--platform", "localhost", "--emulate", "--busy-w", "60", "--idle-w", "20",
                 "--baseline-s", "0.1", "--subtract-idle", "--format", "json", "--", "sh", "-c", PHASED)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["emulated"] is True and doc["energy_source"] == label and label in doc["meter"]
    base, run = doc["baseline"], doc["runs"][0]
    assert base["energy_j"] == pytest.approx(20.0 * base["time_s"], rel=1e-12)
    assert doc["idle_power_w"] == 20.0
    for w in (run, *run["phases"]):
        assert w["energy_j"] == pytest.approx(60.0 * w["time_s"], rel=1e-12) and w["energy_source"] == label
        assert w["energy_above_idle_j"] == pytest.approx(40.0 * w["time_s"], rel=1e-12)
        assert "truth_energy_j" not in w          # issue 34 #4: no truth beyond the schedule itself
    assert "truth_energy_j" not in base


def test_localhost_emulated_schedule_in_the_table_and_without_watts() -> None:
    label = "emulated: schedule x measured time, not the program's energy"
    table = archline("measure", "--platform", "localhost", "--emulate", "--tdp-w", "65", "--", "true")
    assert table.returncode == 0 and label in table.stdout      # --tdp-w: busy = TDP, idle = a quarter of it
    assert "schedule 65 W while the command runs, 16.25 W otherwise" in table.stdout
    assert "truth_j" not in table.stdout       # the schedule is the energy: no column equal to it
    refused = archline("measure", "--platform", "localhost", "--emulate", "--", "true")
    assert refused.returncode == 2 and "--busy-w" in refused.stderr and len(refused.stderr.splitlines()) == 1


def test_the_whole_commands_counts_given_twice_are_refused(tmp_path: Path) -> None:
    counts = tmp_path / "counts.csv"
    counts.write_text("name,flops_dp,bytes_mem\nrun,4e9,1e8\n")
    ran = tmp_path / "ran"
    r = archline("measure", "--costs", "gtx580", "--counts-file", str(counts), "--flops-dp", "1e9", "--",
                 "touch", str(ran))
    assert r.returncode == 2 and "given twice" in r.stderr and len(r.stderr.splitlines()) == 1
    assert not ran.exists()


def test_table_prints_the_counts_notes_and_the_predicted_uncertainty(tmp_path: Path) -> None:
    """Issue 35 #9: the table says what the JSON says: the counts' notes (multiplexing, the tool's energy) and
    the predicted energy's +-, also where no energy was measured (localhost in a VM: no RAPL)."""
    f = tmp_path / "perf.csv"       # perf stat -x, lines; the flop event ran half the time
    f.write_text("1000000000,,fp_arith_inst_retired.scalar_double,1000,50.00,,\n100000,,LLC-load-misses,1000,"
                 "100.00,,\n12.5,Joules,power/energy-pkg/,1000,100.00,,\n1000000000,ns,duration_time,1000,100.00,,\n")
    r = archline("measure", "--platform", "localhost", "--costs", str(COSTS), "--counts-file", str(f),
                 "--counts-tool", "perf", "--", "sleep", "0.1")
    assert r.returncode == 0, r.stderr
    # the +- of the counts: 50% of the count-driven energy (1e9 flops x eps_flop_dp + 6.4e6 B x eps_mem) at least
    costs = json.loads(COSTS.read_text())["coefficients"]
    dynamic_j = 1e9 * costs["eps_flop_dp"]["value"] + 6.4e6 * costs["eps_mem"]["value"]
    m = re.search(r"energy: measured .*predicted [0-9.e+]+ \+- ([0-9.e+-]+) J", r.stdout)   # a meter or none
    assert m and float(m[1]) >= 0.5 * dynamic_j * 0.95, r.stdout     # printed to 2 digits
    for note in ("multiplexed, counts scaled by perf: fp_arith_inst_retired.scalar_double ran 50.00% of the time",
                 "measured energy 12.5 J from power/energy-pkg/", "predicted energy's uncertainty includes the "
                 "counts' +-50% (multiplexed)"):
        assert f"note: {note}" in r.stdout, r.stdout
