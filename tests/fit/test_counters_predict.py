"""``archline predict --counters FILE --tool T``: time and energy from each profiler's counts (S1 Ch. 6),
checked against E = sum_i N_i*eps_i + pi0*T computed here from the same costs."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from archline.formats.platforms.profiles import load_platform

DATA = Path(__file__).resolve().parents[1] / "data" / "counters"
REPO = Path(__file__).resolve().parents[2]
GTX580_FIT = REPO / "results" / "sample" / "gtx580.costs.json"     # emulated, fitted (eps_l1, eps_l2 too)
COST = {"flops_sp": "eps_flop_sp", "flops_dp": "eps_flop_dp", "bytes_mem": "eps_mem", "bytes_l2": "eps_l2",
        "bytes_l1": "eps_l1", "bytes_l3": "eps_l3", "int_ops": "eps_int"}


def _cpu_profile(tmp_path: Path) -> Path:
    """The shipped i7-950 profile (S0 Table IV) with an assumed eps_l3 (no paper gives one) for the L3 term."""
    text = (REPO / "formats" / "platforms" / "i7-950.toml").read_text()
    line = "eps_l3 = { value = 300e-12, source = \"assumed for a test\" }\n"
    text = text.replace("[constants]\n", "[constants]\n" + line, 1)
    p = tmp_path / "i7-l3.toml"
    p.write_text(text)
    return p


def _expected(costs: str, counts: dict[str, float], time_s: float) -> float:
    plat = load_platform(costs)
    return sum(n * plat.require(COST[k], "test") for k, n in counts.items()) + plat.require("pi0", "test") * time_s


@pytest.mark.parametrize(("tool", "fixture", "costs", "name", "counts", "time_s"), [
    ("ncu", "ncu_raw.csv", str(GTX580_FIT), "daxpy",
     {"flops_dp": 4 * 1_048_576, "bytes_mem": 48 * 1_048_576, "bytes_l2": 2 * 1_048_576,
      "bytes_l1": 2 * 7_340_032}, 103e-6),
    ("rocprof", "rocprofv3_counter_collection.csv", str(GTX580_FIT), "daxpy",
     {"flops_dp": 4_194_304, "bytes_mem": 50_331_648, "bytes_l2": 2_097_152}, 120e-6),
    ("perf", "perf_intel.csv", "CPU", "program",
     {"flops_dp": 3_145_728, "bytes_mem": 25_165_824, "bytes_l3": 806_784 * 64}, 2.5e-3),
    ("likwid", "likwid_flops_mem.csv", "i7-950", "program", {"flops_dp": 16_004_000, "bytes_mem": 115_200_000}, 0.5),
])
def test_predict_from_each_tool(run_cli: Callable[..., Any], tmp_path: Path, tool: str, fixture: str, costs: str,
                                name: str, counts: dict[str, float], time_s: float) -> None:
    costs = str(_cpu_profile(tmp_path)) if costs == "CPU" else costs
    r = run_cli("predict", "--counters", str(DATA / fixture), "--tool", tool, "--costs", costs, "--format", "json")
    assert r.exit_code == 0, r.stderr
    pred = json.loads(r.stdout)["predictions"][0]
    assert pred["name"] == name and pred["time_source"] == "measured"
    assert pred["time_s"] == pytest.approx(time_s, rel=1e-9)
    assert pred["energy_j"] == pytest.approx(_expected(costs, counts, time_s), rel=1e-12)
    assert any(tool.split()[0] in n for n in pred["notes"]), "the source is named in the notes"


def test_predict_table_shows_the_tools_notes(run_cli: Callable[..., Any]) -> None:
    r = run_cli("predict", "--counters", str(DATA / "likwid_flops_mem.csv"), "--tool", "likwid", "--costs", "i7-950")
    assert r.exit_code == 0, r.stderr
    assert "note: group MEM ran 0.25 s of 0.5 s: its counts scaled by 2" in r.stdout


@pytest.mark.parametrize("args", [
    ["--tool", "ncu"],                                           # neither a counts file nor --counters
    ["--counters", str(DATA / "ncu_raw.csv")],                   # no --tool
    [str(DATA / "ncu_raw.csv"), "--counters", str(DATA / "ncu_raw.csv"), "--tool", "ncu"],   # both
])
def test_predict_counters_usage(run_cli: Callable[..., Any], args: list[str]) -> None:
    r = run_cli("predict", *args, "--costs", "gtx580")
    assert r.exit_code == 2 and r.stderr.count("\n") == 1


def test_predict_wrong_tool_is_one_line(run_cli: Callable[..., Any]) -> None:
    r = run_cli("predict", "--counters", str(DATA / "perf_intel.csv"), "--tool", "ncu", "--costs", "gtx580")
    assert r.exit_code == 2 and "no ncu --csv header" in r.stderr and r.stderr.count("\n") == 1


REAL = REPO / "tests" / "data" / "real"


def test_predict_says_the_multiplexing_and_refuses_an_energy_only_file(run_cli: Callable[..., Any]) -> None:
    r = run_cli("predict", "--counters", str(REAL / "perf" / "cpu-bops_readme_bops_x86_test_min.txt"), "--tool",
                "perf", "--costs", "i7-950")
    assert r.exit_code == 0, r.stderr
    assert "each count +-67% (1 - the share it ran)" in r.stdout
    joules = REAL / "perf" / "cloudlab_PerfStat.Joules.Overhead.linux_silo_iter0.csv"
    r = run_cli("predict", "--counters", str(joules), "--tool", "perf", "--costs", "i7-950")
    assert r.exit_code == 2 and r.stderr.count("\n") == 1
    assert "no flop or byte count (only a measured energy, 1423.5 J)" in r.stderr


def test_multiplexed_counts_widen_the_predicted_energy_uncertainty() -> None:
    import math

    from archline.fit.analyses.choi.app_predict import CONSTANT_TERM
    from archline.fit.analyses.placement import place_program
    from archline.formats.counters import Counts

    counts = {"flops_dp": 2e9, "bytes_mem": 4e8}
    exact = place_program(str(GTX580_FIT), Counts("p", dict(counts)), 0.5, 60.0)
    rough = place_program(str(GTX580_FIT), Counts("p", dict(counts), count_rel_err=0.5, scaled=True), 0.5, 60.0)
    dynamic_j = sum(v for k, v in rough.terms_j.items() if k != CONSTANT_TERM)
    base = 0.0 if math.isnan(exact.predicted_energy_err_j) else exact.predicted_energy_err_j ** 2
    assert rough.predicted_energy_err_j ** 2 == pytest.approx(base + (0.5 * dynamic_j) ** 2, rel=1e-12)
    assert any("counts' +-50% (multiplexed)" in n for n in rough.notes)


DERIVED = REPO / "tests" / "data" / "derived"


@pytest.mark.parametrize(("path", "words"), [
    (DERIVED / "perf" / "netdata_c.csv", "no flop or byte count (only a time, 1.00521 s)"),      # issue 35 #17
    (REAL / "perf" / "cloudlab_mcd_md_loadonly_run1.csv", "(only a time, 14.0708 s and a measured energy, 485.05 J)"),
    (DERIVED / "perf" / "nc2.csv", "no flop or byte count"),
    (DERIVED / "perf" / "loc3.csv", "decimal comma"),                                           # #1: no traceback
])
def test_predict_refuses_what_it_cannot_predict_from(run_cli: Callable[..., Any], path: Path, words: str) -> None:
    r = run_cli("predict", "--counters", str(path), "--tool", "perf", "--costs", "i7-950")
    assert r.exit_code == 2 and words in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_predict_warns_of_a_time_faster_than_the_roofline(run_cli: Callable[..., Any]) -> None:
    # 8e21 flops in 1 ms (hugeflops.csv): the roofline's least time is far longer, as measure warns
    r = run_cli("predict", "--counters", str(DERIVED / "perf" / "hugeflops.csv"), "--tool", "perf", "--costs",
                "i7-950")
    assert r.exit_code == 0
    assert "archline: warning: measured faster than the roofline allows" in r.stderr
    assert "note: measured faster than the roofline allows" in r.stdout


def test_predict_plot_makes_missing_directories_as_fit_out_does(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    # issue 35 #19, kept: every output (fit --out, predict --plot) makes its missing directories (docs/errors.md)
    fig = tmp_path / "new" / "dir" / "x.png"
    r = run_cli("predict", "--counters", str(DATA / "likwid_flops_mem.csv"), "--tool", "likwid", "--costs",
                "i7-950", "--plot", str(fig))
    assert r.exit_code == 0, r.stderr
    assert fig.stat().st_size > 1000


def test_predict_table_keeps_long_names_short_and_notes_under_their_kernel(run_cli: Callable[..., Any]) -> None:
    """Issue 35 FN #21: CUTLASS's kernel name (thousands of characters) made the table 4,881 characters wide;
    notes true of one kernel are printed under it, those of every kernel once."""
    r = run_cli("predict", "--counters", str(REAL / "ncu" / "a100_cutlass_gemm_tensor_pipe.csv"), "--tool", "ncu",
                "--costs", "gtx580")
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert max(len(ln) for ln in lines[:7]) < 160
    assert any(ln.startswith("void cutlass::Kernel<cutlass::gemm::kernel::Gemm<...>>  ") for ln in lines)
    at = lines.index("void cutlass::Kernel<cutlass::gemm::kernel::Gemm<...>>:")
    assert lines[at + 1].startswith("  note: sm__inst_executed_pipe_tensor.sum = 5.03316e+10 tensor-core")
    assert "note: time_s from sm__cycles_elapsed.avg / sm__cycles_elapsed.avg.per_second" in lines    # all four


def test_predict_help_points_at_the_docs_and_names_the_exports(run_cli: Callable[..., Any]) -> None:
    """Issue 35 FN #22: the help named a source directory (formats/counters/)."""
    r = run_cli("predict", "--help")
    text = " ".join(r.stdout.split())
    assert "fit/io/counters" not in text and "docs/counters.md" in text
    for needle in ("--print-summary per-kernel", "Duration", "rocprofv2", "omniperf"):
        assert needle in text


def test_predict_refuses_a_time_of_more_than_a_year(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    """Issue 35 FN #10: gpu__time_duration.sum = 1e30 s (a wrong unit or a corrupt value) was placed."""
    f = tmp_path / "huge.csv"
    f.write_text('"ID","Kernel Name","dram__bytes_read.sum","gpu__time_duration.sum"\n"","","byte","second"\n'
                 '"0","k","100","1e30"\n')
    r = run_cli("predict", "--counters", str(f), "--tool", "ncu", "--costs", "gtx580")
    assert r.exit_code == 2 and "its time is 1e+30 s, more than a year" in r.stderr and r.stderr.count("\n") == 1
