"""Issue 34 (items 2 and 3): rows without energy (no meter: energy_j and meter empty, the note says why) give a time
cost table, and localhost and such tables are platforms for model, plot, predict and the placement.

The taus are checked against the rates the synthetic rows were made with (S0 §IV-B observed rates of the GTX 580,
the emulated profile's [emulate] rates; L1/L2/random rates assumed in fit/regress/synthetic.py) within the
table's own standard error (3 of them: six taus are checked at once), and localhost's against the peaks of the
same run (the run summary's, bench/run/summary.py) within the tau's 95% interval."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from archline.fit.regress.synthetic import GTX580, synthetic_results, write_results_csv

REASON = "time only: localhost: time only, no energy: no RAPL: /sys/class/powercap does not exist"
#: the synthetic rows' rate of each tau (GTX580's [emulate] rates; cache and random rates ASSUMED there)
TRUTH_S = {"tau_flop_sp": 1 / GTX580.flop_per_s_sp, "tau_flop_dp": 1 / GTX580.flop_per_s_dp,
           "tau_mem": 1 / GTX580.byte_per_s, "tau_l1": 1 / GTX580.byte_per_s_l1, "tau_l2": 1 / GTX580.byte_per_s_l2,
           "tau_rand": 1 / GTX580.rand_per_s}


def _time_only(frame: pd.DataFrame, platform: str | None = None) -> pd.DataFrame:
    """``frame`` as a meterless run writes it: energy_j empty, no meter, the reason in the note."""
    out = frame.copy()
    out["energy_j"] = np.nan
    out["meter"] = ""
    out["note"] = f"CI not below 0.02 after 3 regions; {REASON}"
    if platform is not None:
        out["platform"] = platform
    return out


def _rows(seed: int = 3) -> pd.DataFrame:
    # as an emulated platform runs: each point at its rate (the model's time), with 1% noise
    return synthetic_results(GTX580, seed=seed, noise=0.01, efficiency_spread=0.0, n_repeats=2)


def test_time_table_recovers_the_rates_within_its_interval(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    src = write_results_csv(_time_only(_rows()), tmp_path / "rows.csv")
    r = run_cli("fit", str(src), "--format", "json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["model"] == "time" and doc["coefficients"] == {}
    for name, truth in TRUTH_S.items():     # six taus at once: within 3 stderr each (1% false alarms, not 26%)
        c = doc["tau"][name]
        assert abs(c["value"] - truth) <= 3 * c["stderr"], (name, c, truth)
        assert c["stderr"] / c["value"] < 0.01          # 1% noise, tens of rows at each peak
    # every energy term of the counts present is absent, with the rows' own reason and what would give it
    absent = doc["energy_absent"]
    assert absent["terms"] == ["eps_flop_sp", "eps_flop_dp", "eps_mem", "eps_l1", "eps_l2", "eps_rand", "pi0"]
    assert absent["row_reasons"] == [REASON] and "archline meter list" in absent["reason"]
    assert set(doc["omitted"]) == set(absent["terms"])


def test_rows_of_two_hosts_under_one_platform_are_said_not_merged_silently(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Issue 34 finding 9: one machine's rows and a copy from host node2 at twice the time give one warning line
    naming both hosts and --where host=...; that option fits one host's rows alone."""
    frame = _time_only(_rows(), platform="localhost")
    frame["host"] = "vm"
    mine = write_results_csv(frame, tmp_path / "in.csv")
    other = frame.copy()
    other["host"], other["time_s"] = "node2", other["time_s"] * 2
    theirs = write_results_csv(other, tmp_path / "other.csv")
    r = run_cli("fit", str(mine), str(theirs), "--format", "json")
    assert r.exit_code == 0, r.stderr
    (line,) = [x for x in r.stderr.splitlines() if "hosts" in x]
    assert "2 hosts (vm, node2)" in line and "'localhost'" in line and "--where host=" in line
    r = run_cli("fit", str(mine), str(theirs), "--where", "host=node2", "--format", "json")
    assert r.exit_code == 0 and "hosts" not in r.stderr
    slow = json.loads(r.stdout)["tau"]["tau_flop_dp"]["value"]
    r = run_cli("fit", str(mine), "--format", "json")
    assert r.exit_code == 0 and "hosts" not in r.stderr
    assert slow == pytest.approx(2 * json.loads(r.stdout)["tau"]["tau_flop_dp"]["value"], rel=0.05)


def test_mixed_rows_energy_from_metered_taus_from_all(tmp_path: Path) -> None:
    from archline.fit.regress.api import FitOptions, fit_files

    metered = _rows(seed=5)
    timed = _time_only(_rows(seed=6))
    both = write_results_csv(pd.concat([metered, timed], ignore_index=True), tmp_path / "both.csv")
    alone = write_results_csv(metered, tmp_path / "metered.csv")
    opts = FitOptions(model="cache", n_boot=0)
    (mixed,) = fit_files([both], opts)
    (ref,) = fit_files([alone], opts)
    # energy terms: exactly the metered rows' fit
    assert set(mixed.coefficients) == set(ref.coefficients) and mixed.coefficients
    for k, c in ref.coefficients.items():
        assert mixed.coefficients[k].value == pytest.approx(c.value, rel=1e-12), k
    # time terms: from all rows (twice as many at the peak), each within its interval of the rate
    assert mixed.extra["time_terms"]["from_rows"] == len(metered) + len(timed)
    for name, truth in TRUTH_S.items():
        c = mixed.tau[name]
        assert c.stderr is not None and abs(c.value - truth) <= 3 * c.stderr, (name, c, truth)
    assert any("time-only row(s)" in w for w in mixed.warnings)


def test_a_row_naming_a_meter_still_needs_its_energy(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    frame = _time_only(_rows())
    frame.loc[4, "meter"] = "rapl"           # measured by a meter, yet no energy: broken, not time only
    src = write_results_csv(frame, tmp_path / "rows.csv")
    r = run_cli("fit", str(src))
    assert r.exit_code == 2 and f"{src}:6: column energy_j is missing or NaN" in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1


def test_energy_model_asked_of_time_only_rows_is_one_line(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    src = write_results_csv(_time_only(_rows()), tmp_path / "rows.csv")
    r = run_cli("fit", str(src), "--model", "basic")
    assert r.exit_code == 2 and "have none" in r.stderr and REASON in r.stderr and r.stderr.count("\n") == 1


# --- localhost and time tables as platforms ---------------------------------------------------------------------

def _localhost_run(tmp_path: Path) -> tuple[Path, dict[str, float]]:
    """A dp-only time-only localhost run (as --quick writes) and its roofline.json where localhost is read from;
    returns the rows and the summary's peaks (flop/s, byte/s)."""
    from archline.bench.run.summary import summarize
    from archline.formats.ert_roofline import ErtRoofline, host_roofline_path, write_ert

    frame = _time_only(synthetic_results(GTX580, seed=9, noise=0.03, efficiency_spread=0.0, n_sp=0, n_l1=0,
                                         n_l2=0, n_rand=0, n_repeats=2), platform="localhost")
    frame["backend"] = "cpu_asm"
    src = write_results_csv(frame, tmp_path / "localhost-run.csv")
    summ = summarize(frame.astype(object).where(frame.notna(), "").to_dict("records"))
    path = host_roofline_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_ert(path, ErtRoofline.from_summary(summ["peaks_gflop_per_s"], summ["bandwidths_gb_per_s"],
                                             {"run_id": "run-1", "emulated": False, "results": [src.name]}))
    return src, {"tau_flop_dp": summ["peaks_gflop_per_s"]["dp"] * 1e9,
                 "tau_mem": summ["bandwidths_gb_per_s"]["DRAM"] * 1e9}


def test_localhost_is_the_last_runs_peaks_and_its_time_table_agrees(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from archline.fit.regress.api import fit_files
    from archline.formats.platforms.profiles import load_platform

    r = run_cli("model", "show", "localhost")        # before any run: one line, what to do
    assert r.exit_code == 2 and "archline bench run --platform localhost --quick" in r.stderr
    assert r.stderr.count("\n") == 1
    src, peaks = _localhost_run(tmp_path)
    host = load_platform("localhost")
    assert not host.emulated and "measured" in host.title and "run-1" in host.title
    (table,) = fit_files([src])
    for key, peak in peaks.items():
        assert host.value(key) == pytest.approx(1 / peak, rel=1e-12)          # tau = 1/peak of the run
        c = table.tau[key]
        assert c.ci95 is not None and c.ci95[0] <= 1 / peak <= c.ci95[1], (key, c, 1 / peak)
    for key in ("eps_flop_dp", "eps_mem", "pi0"):
        assert host.value(key) is None and host.source(key).startswith("no meter")


@pytest.fixture
def host_and_table(tmp_path: Path, run_cli):  # type: ignore[no-untyped-def]
    """localhost's roofline.json of a run, the run's rows, its time table and the run's peaks."""
    src, peaks = _localhost_run(tmp_path)
    costs = tmp_path / "costs.json"
    assert run_cli("fit", str(src), "--format", "json", "--out", str(costs)).exit_code == 0
    return src, costs, peaks


@pytest.mark.parametrize("which", ["localhost", "table"])
def test_model_show_and_predict_give_time_and_say_why_no_energy(run_cli, host_and_table, which: str) -> None:  # type: ignore[no-untyped-def]
    _src, costs, peaks = host_and_table
    platform = "localhost" if which == "localhost" else str(costs)
    r = run_cli("model", "show", platform)
    assert r.exit_code == 0 and "B_tau" in r.stdout, r.stderr
    # one line says why every energy answer is absent (not one per symbol and precision); the cache taus shown
    (why,) = [line for line in r.stdout.splitlines() if line.startswith("no energy answers (")]
    assert "eps_flop, eps_mem, pi0" in why and ("no meter" in why or "no energy" in why)
    assert "cannot compute" not in r.stdout
    from archline.formats.platforms.profiles import load_platform

    has_l1 = load_platform(platform).value("tau_l1") is not None
    assert any(line.split()[:1] == ["tau_l1"] for line in r.stdout.splitlines()) == has_l1
    dp = json.loads(run_cli("model", "show", platform, "--format", "json").stdout)["dp"]
    assert dp["tau_flop"] > 0 and dp["eps_flop"] is None and dp["pi0"] is None     # JSON: null and the reason
    assert "eps_flop_dp" in dp["missing"]["eps_flop"]
    r = run_cli("model", "predict", platform, "-i", "0.5,1024", "--format", "json")
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["precision"] == "dp" and "eps_flop_dp" in d["energy_missing"]
    low, high = d["points"]
    assert low["gflop_per_j"] is None and low["power_w"] is None and low["bound"] == "memory"
    assert high["bound"] == "compute"
    if which == "localhost":      # the time roofline through the run's own peaks
        assert low["gflop_per_s"] == pytest.approx(0.5 * peaks["tau_mem"] / 1e9, rel=1e-12)
        assert high["gflop_per_s"] == pytest.approx(peaks["tau_flop_dp"] / 1e9, rel=1e-12)
    r = run_cli("model", "predict", platform, "-i", "1")
    assert r.exit_code == 0 and "note: GFLOP/J and power: -" in r.stdout


@pytest.mark.parametrize("which", ["localhost", "table"])
def test_predict_gives_time_and_says_why_no_energy(run_cli, host_and_table, tmp_path: Path, which: str) -> None:  # type: ignore[no-untyped-def]
    _src, costs, peaks = host_and_table
    platform = "localhost" if which == "localhost" else str(costs)
    counts = tmp_path / "counts.csv"
    counts.write_text("name,flops_dp,bytes_mem\nk,4e9,1e9\n")
    r = run_cli("predict", str(counts), "--costs", platform, "--format", "json")
    assert r.exit_code == 0, r.stderr
    (p,) = json.loads(r.stdout)["predictions"]
    assert p["energy_j"] is None and p["power_w"] is None and "no energy constants" in p["energy_missing"]
    if which == "localhost":
        assert p["time_s"] == pytest.approx(max(4e9 / peaks["tau_flop_dp"], 1e9 / peaks["tau_mem"]), rel=1e-12)
    r = run_cli("predict", str(counts), "--costs", platform)
    assert r.exit_code == 0 and "note: E and P: -" in r.stdout


def test_plot_picks_the_rows_precision(run_cli, host_and_table, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from archline.fit.plots.inputs import plot_plan

    src, costs, _peaks = host_and_table
    plan = plot_plan([str(src)], None)            # no --precision: the rows' own (dp only here)
    assert [m.label for m in plan.measured] == ["localhost DP"] and [c.label.split()[1] for c in plan.curves] == ["DP"]
    plan = plot_plan([str(costs)], None)          # a dp-only time table alone: its dp time roofline
    assert [c.label for c in plan.curves] == ["localhost DP (time only)"] and plan.kinds == ("roofline",)
    r = run_cli("plot", str(src), "--precision", "sp", "--out", str(tmp_path / "s.png"))   # what the rows lack
    assert r.exit_code == 2 and "no sp intensity rows" in r.stderr and r.stderr.count("\n") == 1


def test_plot_and_model_plot_draw_localhost_time_roofline(run_cli, host_and_table, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from archline.fit.plots.inputs import plot_plan

    src, _costs, _peaks = host_and_table
    plan = plot_plan([str(src), "localhost"], None)     # the rows over localhost's time roofline, said so
    assert [c.label for c in plan.curves] == ["localhost DP (time only)"] and plan.kinds == ("roofline",)
    assert any("time roofline" in n for n in plan.notes)
    monkeypatch.chdir(tmp_path)
    r = run_cli("model", "plot", "localhost", "--out", "m.png")
    assert r.exit_code == 0 and (tmp_path / "m.png").stat().st_size > 0 and "time roofline" in r.stderr


def test_placement_on_localhost_gives_time_and_says_why_no_energy(tmp_path: Path) -> None:
    from archline.fit.analyses.placement import Counts, place_program

    _src, peaks = _localhost_run(tmp_path)
    c = Counts("k", {"flops_dp": 4e9, "bytes_mem": 1e9})
    p = place_program("localhost", c, 0.5, None, energy_reason="no meter (RAPL unreadable)")
    assert p.model_time_s == pytest.approx(max(4e9 / peaks["tau_flop_dp"], 1e9 / peaks["tau_mem"]), rel=1e-12)
    assert math.isnan(p.predicted_energy_j) and p.energy_reason is not None
    assert "no meter (RAPL unreadable)" in p.energy_reason and "no energy constants" in p.energy_reason


def test_fit_figure_of_time_only_rows_is_one_line(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    src = write_results_csv(_time_only(_rows()), tmp_path / "rows.csv")
    r = run_cli("fit", str(src), "--figure", str(tmp_path / "f.png"))
    assert r.exit_code == 2 and "have no energy" in r.stderr and r.stderr.count("\n") == 1
    assert not (tmp_path / "f.png").exists()


def test_localhost_takes_the_summary_figures_spread_and_trust(tmp_path: Path) -> None:
    from archline.formats.ert_roofline import ErtRoofline, host_roofline_path, write_ert
    from archline.formats.platforms.profiles import load_platform

    figures = {"peak DP": {"gflop_per_s": 40.0, "points": 3, "spread_rel": 0.08, "why_not_trusted": None},
               "bandwidth DRAM": {"gb_per_s": 20.0, "points": 1, "spread_rel": 0.5,
                                  "why_not_trusted": "rests on 1 point"}}
    path = host_roofline_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_ert(path, ErtRoofline.from_summary({"dp": 40.0}, {"DRAM": 20.0}, {"run_id": "r2", "figures": figures}))
    host = load_platform("localhost")
    dp, mem = host.constants["tau_flop_dp"], host.constants["tau_mem"]
    assert dp.value == pytest.approx(1 / 40e9, rel=1e-12) and dp.stderr == pytest.approx(0.04 / 40e9, rel=1e-12)
    assert "NOT TRUSTED" not in dp.source and "NOT TRUSTED: rests on 1 point" in mem.source
    assert mem.stderr == pytest.approx(0.25 / 20e9, rel=1e-12)


def _write_host_copy(gflops: dict[str, float], gbytes: dict[str, float], meta: dict[str, object]) -> Path:
    from archline.formats.ert_roofline import ErtRoofline, host_roofline_path, write_ert

    path = host_roofline_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_ert(path, ErtRoofline(gflops, gbytes, dict(meta)))
    return path


def test_localhost_says_not_trusted_figures_and_names_each_figures_run(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Issue 34 finding 7: every reader of localhost says the NOT TRUSTED figures (one stderr line, JSON keys);
    the title names the run each figure came from."""
    figures = {"peak DP": {"run_id": "r-5e5602", "spread_rel": 0.3, "trusted": False,
                           "why_not_trusted": "rests on 1 point"},
               "bandwidth DRAM": {"run_id": "r-1fffc6", "spread_rel": 0.01, "trusted": True}}
    _write_host_copy({"FP64 GFLOPs": 40.0}, {"DRAM": 20.0}, {"run_id": "r-1fffc6", "figures": figures,
                                                             "not_trusted": ["peak DP"]})
    r = run_cli("model", "show", "localhost")
    assert r.exit_code == 0, r.stderr
    assert "runs r-5e5602 (peak DP); r-1fffc6 (bandwidth DRAM)" in r.stdout.splitlines()[0]
    (line,) = [x for x in r.stderr.splitlines() if "NOT TRUSTED" in x]
    assert "peak DP" in line and "bandwidth DRAM" not in line
    d = json.loads(run_cli("model", "show", "localhost", "--format", "json").stdout)
    assert d["not_trusted"] == ["peak DP"] and len(d["cautions"]) == 1
    r = run_cli("model", "predict", "localhost", "-i", "1", "--format", "json")
    assert r.exit_code == 0 and json.loads(r.stdout)["not_trusted"] == ["peak DP"] and "NOT TRUSTED" in r.stderr
    r = run_cli("model", "plot", "localhost", "--out", str(tmp_path / "m.png"))
    assert r.exit_code == 0 and "NOT TRUSTED" in r.stderr


def test_localhost_copy_from_another_machine_is_said(run_cli) -> None:  # type: ignore[no-untyped-def]
    """Issue 34 finding 7: a copy naming another host and CPU is used with one warning naming both and the fix."""
    import socket

    _write_host_copy({"FP64 GFLOPs": 40.0}, {"DRAM": 20.0},
                     {"run_id": "r1", "hostname": "gpu-node-17", "cpu_model": "Intel(R) Xeon(R) CPU E5-2680 v4",
                      "created_utc": "2019-03-01T00:00:00Z"})
    r = run_cli("model", "show", "localhost")
    assert r.exit_code == 0, r.stderr
    (line,) = [x for x in r.stderr.splitlines() if "another machine" in x]
    assert "gpu-node-17" in line and socket.gethostname() in line and "Xeon" in line
    assert "bench run --platform localhost --quick" in line
    assert "cautions" in json.loads(run_cli("model", "show", "localhost", "--format", "json").stdout)
    from archline.formats.ert_roofline import cpu_model

    _write_host_copy({"FP64 GFLOPs": 40.0}, {}, {"hostname": socket.gethostname(), "cpu_model": cpu_model()})
    r = run_cli("model", "show", "localhost")
    assert r.exit_code == 0 and "another machine" not in r.stderr


@pytest.mark.parametrize(("gflops", "gbytes", "named"), [
    ({"FP64 GFLOPs": -5.0}, {"DRAM": 20.0}, "FP64 GFLOPs = -5.0"),
    ({"FP64 GFLOPs": 40.0}, {"DRAM": 1e30}, "DRAM = 1e+30"),
    ({"FP64 GFLOPs": 0.0}, {"DRAM": 20.0}, "FP64 GFLOPs = 0.0"),
    ({"FP32 GFLOPs": float("nan")}, {"DRAM": 20.0}, "FP32 GFLOPs = nan"),
    ({"FP64 GFLOPs": 2e6}, {"DRAM": 20.0}, "FP64 GFLOPs = 2000000.0"),
])
def test_localhost_corrupt_rates_are_refused_in_one_line(run_cli, gflops, gbytes, named) -> None:  # type: ignore[no-untyped-def]
    """Issue 34 finding 8: a rate not positive, not finite or above the documented bounds is one line naming the
    file, the key and the value (exit 2), never dropped or believed."""
    path = _write_host_copy(gflops, gbytes, {"run_id": "r1"})
    for args in (("model", "show", "localhost"), ("model", "predict", "localhost", "-i", "1")):
        r = run_cli(*args)
        assert r.exit_code == 2 and r.stderr.startswith("archline: error: "), r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and named in r.stderr and path.name in r.stderr


def test_emulated_gtx580_rows_give_the_emulators_rates(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The shipped sample run (`bench run --platform gtx580 --emulate`, results/sample) with energy_j and meter
    blanked: each tau is the rate the emulator ran at (the profile's [emulate] rates; L1 and L2 derived from DRAM by
    bench/emulated/model.py), within the table's 95% interval."""
    import csv

    from archline.bench.emulated.model import DERIVED_RATE_FACTORS
    from archline.formats.platforms.profiles import load_platform

    (sample,) = sorted((Path(__file__).resolve().parents[2] / "results" / "sample").glob("gtx580-*.csv"))
    with sample.open(newline="") as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        row["energy_j"], row["meter"] = "", ""
    blank = tmp_path / "blank.csv"
    with blank.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    emulate = load_platform("gtx580").raw["emulate"]
    mem = emulate["observed_byte_per_s"]
    rates = {"tau_flop_sp": emulate["observed_flop_per_s_sp"], "tau_flop_dp": emulate["observed_flop_per_s_dp"],
             "tau_mem": mem, "tau_l1": mem * DERIVED_RATE_FACTORS["bytes_l1"][1],
             "tau_l2": mem * DERIVED_RATE_FACTORS["bytes_l2"][1]}
    r = run_cli("fit", str(blank), "--format", "json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["model"] == "time" and doc["emulated"] is True and set(doc["tau"]) == set(rates)
    for name, rate in rates.items():
        lo, hi = doc["tau"][name]["ci95"]
        assert lo * (1 - 1e-12) <= 1 / rate <= hi * (1 + 1e-12), (name, doc["tau"][name], 1 / rate)
    # model show gives the cache levels' taus too (in ps/B), each the inverse of its rate
    costs = tmp_path / "blank-costs.json"
    costs.write_text(r.stdout)
    shown = json.loads(run_cli("model", "show", str(costs), "--format", "json").stdout)
    for p in ("sp", "dp"):
        assert shown[p]["tau_l1"] == pytest.approx(1 / rates["tau_l1"], rel=0.05)
        assert shown[p]["tau_l2"] == pytest.approx(1 / rates["tau_l2"], rel=0.05)


def test_tau_rand_is_the_dram_chase_alone(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """tau_rand is a random DRAM access (S1 §4.3, model.md §6): cache-level chase rows, 20x faster, are not
    mixed in (the median of the best three of all rows was an L2 rate); with only cache-level chases tau_rand
    is left out, said why."""
    rows = _time_only(_rows())
    chase = rows[rows["rand_accesses"] > 0]
    l2 = chase.assign(level="l2", time_s=chase["time_s"] / 20)
    src = write_results_csv(pd.concat([rows, l2], ignore_index=True), tmp_path / "rows.csv")
    r = run_cli("fit", str(src), "--format", "json")
    assert r.exit_code == 0, r.stderr
    c = json.loads(r.stdout)["tau"]["tau_rand"]
    assert abs(c["value"] - TRUTH_S["tau_rand"]) <= 3 * c["stderr"] and "level-mem" in c["method"]
    only_l2 = write_results_csv(pd.concat([rows[rows["rand_accesses"] == 0], l2], ignore_index=True),
                                tmp_path / "l2.csv")
    r = run_cli("fit", str(only_l2), "--format", "json")
    doc = json.loads(r.stdout)
    assert "tau_rand" not in doc["tau"] and any("tau_rand left out" in w for w in doc["warnings"])


def test_fit_of_a_cost_table_says_what_it_is(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    src = write_results_csv(_time_only(_rows()), tmp_path / "rows.csv")
    table = tmp_path / "costs.json"
    assert run_cli("fit", str(src), "--format", "json", "--out", str(table)).exit_code == 0
    r = run_cli("fit", str(table))
    assert r.exit_code == 2 and "is a cost table" in r.stderr and "--costs" in r.stderr
