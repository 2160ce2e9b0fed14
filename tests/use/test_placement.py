"""The program on its roofline (S1 Ch. 6 validated against the meter): an emulated program with known counts on
the emulated GTX 580. Truth: the S0 Table IV / S1 Table 5 coefficients of the shipped gtx580 profile; the fit's
uncertainty: the stderrs of the emulated fit results/sample/gtx580.costs.json."""

from __future__ import annotations

import dataclasses
import math
import random
from pathlib import Path

import pytest

from archline.fit.analyses.placement import K_SIGMA, PlacementError, place_program
from archline.formats.counters import Counts
from archline.formats.platforms.profiles import Platform, load_platform

REPO = Path(__file__).resolve().parents[2]
FIT = REPO / "results" / "sample" / "gtx580.costs.json"
COST = {"flops_sp": "eps_flop_sp", "flops_dp": "eps_flop_dp", "bytes_mem": "eps_mem", "bytes_l2": "eps_l2",
        "bytes_l1": "eps_l1"}
#: known counts of emulated programs (a stencil-like SP mix below B_tau, a DP one above it)
PROGRAMS = [
    Counts("stencil-sp", {"flops_sp": 4.0e12, "bytes_mem": 1.0e12, "bytes_l2": 2.0e11, "bytes_l1": 5.0e11}),
    Counts("dgemm-dp", {"flops_dp": 2.0e12, "bytes_mem": 5.0e10, "bytes_l2": 4.0e11}),
]


def _truth() -> Platform:
    return load_platform("gtx580")


def _with_fit_stderr(p: Platform) -> Platform:
    """The paper's coefficients with the emulated fit's standard errors attached."""
    fitted = load_platform(str(FIT))
    consts = {k: dataclasses.replace(c, stderr=fitted.constants[k].stderr) if k in fitted.constants else c
              for k, c in p.constants.items()}
    return dataclasses.replace(p, constants=consts, emulated=True)


def _true_energy_j(c: Counts, time_s: float) -> float:
    t = _truth()
    return sum(n * t.require(COST[k], "test") for k, n in c.counts.items()) + t.require("pi0", "test") * time_s


def _sigma_j(p: Platform, c: Counts, time_s: float) -> float:
    var = sum((n * (p.constants[COST[k]].stderr or 0.0)) ** 2 for k, n in c.counts.items())
    return math.sqrt(var + (time_s * (p.constants["pi0"].stderr or 0.0)) ** 2)


@pytest.mark.parametrize("prog", PROGRAMS, ids=lambda c: c.name)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_measured_and_predicted_agree_within_the_fits_uncertainty(prog: Counts, seed: int) -> None:
    costs = _with_fit_stderr(_truth())
    time_s = 1.08 * place_program(costs, prog, 1.0, 1.0).model_time_s     # 8% below the time roofline
    sigma = _sigma_j(costs, prog, time_s)
    noise = random.Random(seed).uniform(-sigma, sigma)                   # within the fit's uncertainty
    measured = _true_energy_j(prog, time_s) + noise
    p = place_program(costs, prog, time_s, measured)
    assert p.predicted_energy_j == pytest.approx(_true_energy_j(prog, time_s), rel=1e-12)
    assert p.predicted_energy_err_j == pytest.approx(sigma, rel=1e-12)
    assert p.energy_diff_j == pytest.approx(noise, abs=1e-9 * measured)
    assert p.within is True and p.tolerance_j == pytest.approx(K_SIGMA * sigma)
    assert p.emulated and p.fraction_of_peak_time == pytest.approx(1 / 1.08)


def test_the_emulated_fit_itself_predicts_the_truth_within_its_uncertainty() -> None:
    """The realistic path: the fitted cost table (not the paper's numbers) predicts the emulated program's true
    energy; the difference is the fit's own bias, within 2 of its standard errors."""
    prog = PROGRAMS[0]
    time_s = 6.25
    p = place_program(str(FIT), prog, time_s, _true_energy_j(prog, time_s), measured_energy_err_j=0.0)
    assert p.platform == "gtx580" and p.emulated and p.precision == "sp"
    assert p.intensity_flop_per_byte == 4.0
    assert p.model_time_s == pytest.approx(1.0e12 * 5.8823529411764704e-12, rel=1e-12)   # memory bound: Q*tau_mem
    assert p.measured_energy_j == pytest.approx(1800.2, rel=1e-12)
    assert p.predicted_energy_j == pytest.approx(1799.868, abs=1e-3)
    assert p.predicted_energy_err_j == pytest.approx(0.1842, abs=1e-4)
    assert p.energy_diff_j == pytest.approx(0.332, abs=1e-3) and p.within is True


def test_a_program_outside_the_model_is_said_to_be(tmp_path: Path) -> None:
    prog = PROGRAMS[1]
    costs = _with_fit_stderr(_truth())
    time_s = 0.02
    truth = _true_energy_j(prog, time_s)
    p = place_program(costs, prog, time_s, 1.10 * truth, measured_energy_err_j=0.01 * truth)
    assert p.energy_diff_rel == pytest.approx(0.10, rel=1e-9)
    assert p.within is False
    d = p.as_dict()
    assert d["difference"]["within"] is False and d["measured"]["energy_err_j"] == pytest.approx(0.01 * truth)


def test_a_profile_without_stderr_does_not_judge() -> None:
    p = place_program("gtx580", PROGRAMS[0], 6.25, 1800.0)
    assert p.within is None and math.isnan(p.predicted_energy_err_j)
    assert any("no stderr" in n and "agreement not judged" in n for n in p.notes)
    assert p.as_dict()["difference"]["within"] is None


def test_figure_is_written(tmp_path: Path) -> None:
    out = tmp_path / "placement.png"
    p = place_program(str(FIT), PROGRAMS[0], 6.25, 1800.2, out)
    assert p.figure == out and out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert list(tmp_path.iterdir()) == [out]


@pytest.mark.parametrize(("counts", "t", "e", "needle"), [
    (Counts("io", {"bytes_mem": 1e9}), 1.0, 100.0, "has no flops"),
    (PROGRAMS[0], 0.0, 100.0, "measured_time_s"),
    (PROGRAMS[0], 1.0, -1.0, "measured_energy_j"),
    (PROGRAMS[0], 1.0, math.inf, "measured_energy_j"),
    (PROGRAMS[0], 1.0, math.nan, "measured_energy_j"),          # a broken measurement, not "no meter" (None)
])
def test_bad_placements(counts: Counts, t: float, e: float, needle: str) -> None:
    with pytest.raises(PlacementError, match=needle):
        place_program(str(FIT), counts, t, e)


@pytest.mark.parametrize("energy_j", [None])
def test_a_missing_energy_leaves_the_time_roofline_and_says_why(energy_j: float | None) -> None:
    """No meter: the time side stands (achieved vs attainable GFLOP/s, model vs measured time); every energy
    field is None and the reason is given; agreement is not judged."""
    prog = PROGRAMS[1]                                               # dgemm-dp: above B_tau, flop bound
    truth = _truth()
    model_t = prog.flops * truth.require("tau_flop_dp", "test")
    p = place_program(truth, prog, 2.0 * model_t, energy_j, energy_reason="platform 'x' has no meter")
    d = p.as_dict()
    assert d["measured"]["energy_j"] is None and d["difference"]["energy_j"] is None and p.within is None
    assert "no energy was measured: platform 'x' has no meter" in d["energy_reason"]
    assert d["predicted"]["energy_j"] == pytest.approx(_true_energy_j(prog, 2.0 * model_t), rel=1e-12)
    assert p.model_time_s == pytest.approx(model_t, rel=1e-12)
    assert d["attainable_gflop_per_s"] == pytest.approx(1e-9 / truth.require("tau_flop_dp", "test"), rel=1e-12)
    assert d["achieved_gflop_per_s"] == pytest.approx(0.5 * d["attainable_gflop_per_s"], rel=1e-12)


def test_a_time_only_table_places_the_program_by_time(tmp_path: Path) -> None:
    """A cost table with times and no energy costs (made here through its owner): no predicted energy, said why;
    the model time is max(W*tau_flop, Q*tau_mem) from the table's own taus."""
    import json

    from archline.formats.costs import CostTable

    doc = json.loads(FIT.read_text())
    doc["coefficients"] = {}
    path = CostTable.from_doc(doc, "test").dump(tmp_path / "time-only.costs.json")
    table = load_platform(str(path))
    prog = PROGRAMS[0]                                               # stencil-sp: below B_tau, memory bound
    model_t = prog.counts["bytes_mem"] * table.require("tau_mem", "test")
    p = place_program(str(path), prog, 1.25 * model_t, 10.0, tmp_path / "no.png")
    d = p.as_dict()
    assert d["predicted"]["energy_j"] is None and d["difference"]["energy_j"] is None and p.within is None
    assert d["measured"]["energy_j"] == 10.0 and "no energy predicted" in d["energy_reason"]
    assert p.model_time_s == pytest.approx(model_t, rel=1e-12) and p.fraction_of_peak_time == pytest.approx(0.8)
    assert p.figure is None and not (tmp_path / "no.png").exists() and "no figure drawn" in p.notes[-1]


def test_place_program_takes_a_plain_mapping_and_none_for_no_energy() -> None:
    """The API with a dict of counts (docs/api.md) places the program as Counts does; no meter: None, not NaN."""
    truth = _truth()
    by_dict = place_program(truth, {"flops_dp": 2e9, "bytes_mem": 2.4e7}, 0.3, None)
    by_counts = place_program(truth, Counts("program", {"flops_dp": 2e9, "bytes_mem": 2.4e7}), 0.3, None)
    assert by_dict.measured_energy_j is None and by_counts.measured_energy_j is None
    assert by_dict.model_time_s == by_counts.model_time_s > 0 and not by_dict.above_roofline
    with pytest.raises(PlacementError, match="unknown count column 'gflops'"):
        place_program(truth, {"gflops": 1.0}, 0.3, None)


def test_a_run_faster_than_the_roofline_is_flagged() -> None:
    truth = _truth()
    prog = Counts("mixed", {"flops_sp": 1e12, "flops_dp": 1e12})
    model_t = 1e12 * (truth.require("tau_flop_sp", "t") + truth.require("tau_flop_dp", "t"))
    p = place_program(truth, prog, 0.5 * model_t, None)
    assert p.model_time_s == pytest.approx(model_t, rel=1e-12) and p.precision_label == "sp+dp"
    assert p.above_roofline and p.as_dict()["above_roofline"] is True
    assert any(n.startswith("measured faster than the roofline allows") for n in p.notes)


def test_the_api_docs_place_program_block_prints_what_it_says() -> None:
    """docs/api.md's place_program example (a plain dict of counts) runs and prints the text the doc shows."""
    import contextlib
    import io
    import re

    text = (REPO / "docs" / "api.md").read_text()
    tail = text[text.index("tests/use/test_placement.py runs this block"):]
    code = re.search(r"```python\n(.*?)```", tail, re.S)
    shown = re.search(r"```text\n(.*?)```", tail, re.S)
    assert code is not None and shown is not None
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code.group(1), "docs/api.md", "exec"), {})
    assert out.getvalue() == shown.group(1)
