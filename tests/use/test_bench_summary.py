"""The closing summary of bench run and the ERT roofline.json: exact numbers from hand-made rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from archline.bench.run.progress import point_numbers
from archline.bench.run.summary import summarize, summary_rows
from archline.formats.ert_roofline import ErtRoofline, read_ert, write_ert

ROWS = [  # as csv.DictReader gives them: strings
    {"backend": "cpu_asm", "kernel": "intensity", "time_s": "0.5", "flops_dp": "5e9", "bytes_mem": "1e10",
     "checksum_ok": "true", "emulated": "false"},
    {"backend": "cpu_asm", "kernel": "intensity", "time_s": "1", "flops_dp": "4e10", "bytes_mem": "1e9",
     "checksum_ok": "true", "emulated": "false"},
    {"backend": "cpu_asm", "kernel": "cache", "time_s": "2", "bytes_l1": "2e11", "checksum_ok": "true"},
    {"backend": "cpu_asm", "kernel": "intensity", "time_s": "0.1", "flops_dp": "1e12", "bytes_mem": "1e12",
     "checksum_ok": "false"},  # failed: counted in the status only
    {"backend": "cpu_asm", "kernel": "chase", "time_s": "1", "bytes_l2": "1e12", "checksum_ok": "true"},
]


def test_summary_exact() -> None:
    s = summarize(ROWS)
    assert s["peaks_gflop_per_s"] == {"dp": pytest.approx(40.0)}
    assert s["bandwidths_gb_per_s"] == {"DRAM": pytest.approx(20.0), "L1": pytest.approx(100.0)}
    assert s["balance_flop_per_byte"] == {"dp": pytest.approx(2.0)}
    assert s["checksums"] == {"ok": 4, "checked": 5, "rows": 5}
    assert s["emulated"] is False and s["backends"] == ["cpu_asm"]
    table = dict((q, v) for q, v, _, _ in summary_rows(s))
    assert table["peak DP"] == "40" and table["bandwidth DRAM"] == "20" and table["checksums"] == "4/5 FAILED"
    # one intensity row on the flat top (the other is bandwidth-bound): a figure on one point is not trusted
    assert s["figures"]["peak DP"]["points"] == 1 and s["not_trusted"] == ["peak DP", "bandwidth DRAM",
                                                                          "bandwidth L1"]


def _rate_rows(kernel: str, col: str, rates: list[float], **cells: str) -> list[dict[str, str]]:
    """Rows whose rate (GFLOP/s or GB/s of ``col``) is each of ``rates``: 1e9 units in rate**-1 seconds."""
    return [{"backend": "cpu_asm", "kernel": kernel, "time_s": repr(1.0 / r), col: "1e9", "checksum_ok": "true",
             "time_spread_rel": "0.01", "emulated": "false", **cells} for r in rates]


def test_robust_figure_is_the_median_of_the_plateau_and_leaves_a_lucky_point_out() -> None:
    """ref = 104, the fastest rate another supports; 150 (alone) an outlier, 96..104 the plateau, 50 below."""
    s = summarize(_rate_rows("intensity", "flops_dp", [150.0, 104.0, 100.0, 98.0, 96.0, 50.0]))
    fig = s["figures"]["peak DP"]
    assert s["peaks_gflop_per_s"]["dp"] == pytest.approx(99.0)        # median of 104, 100, 98, 96
    assert (fig["points"], fig["candidates"], fig["outliers"]) == (4, 6, 1)
    assert fig["spread_rel"] == pytest.approx(8 / 99.0) and fig["trusted"] and s["not_trusted"] == []
    assert s["advice"] is None


def test_noisy_rows_give_way_to_clean_ones_on_the_plateau() -> None:
    """Throttled, CI-flagged and wide-spread rows are left out of the median where two clean ones remain."""
    rows = (_rate_rows("cache", "bytes_l1", [100.0, 99.0], level="l1")
            + _rate_rows("cache", "bytes_l1", [105.0], level="l1", throttled="true")
            + _rate_rows("cache", "bytes_l1", [104.0], level="l1", note="CI not below 0.02 after 8 regions")
            + _rate_rows("cache", "bytes_l1", [103.0], level="l1", time_spread_rel="0.4"))
    s = summarize(rows)
    fig = s["figures"]["bandwidth L1"]
    assert s["bandwidths_gb_per_s"]["L1"] == pytest.approx(99.5)
    assert (fig["points"], fig["noisy_points"], fig["trusted"]) == (2, 0, True)


def test_only_noisy_rows_make_a_figure_not_trusted_and_say_what_to_do() -> None:
    s = summarize(_rate_rows("intensity", "flops_sp", [100.0, 101.0, 99.0], note="CI not below 0.02 after 8 "
                             "regions"))
    fig = s["figures"]["peak SP"]
    assert s["peaks_gflop_per_s"]["sp"] == pytest.approx(100.0)
    assert fig["noisy_points"] == 3 and not fig["trusted"]
    assert fig["why_not_trusted"] == "every point is noisy (CI not reached)"
    assert s["not_trusted"] == ["peak SP"] and "--min-time" in s["advice"] and "--cpus" in s["advice"]
    table = {q: (v, basis) for q, v, _, basis in summary_rows(s)}
    assert "NOT TRUSTED: every point is noisy" in table["peak SP"][1]
    assert table["not trusted"] == ("peak SP", s["advice"])


def test_wide_regions_make_a_figure_not_trusted() -> None:
    s = summarize(_rate_rows("intensity", "flops_dp", [100.0, 100.0], time_spread_rel="0.3")
                  + _rate_rows("intensity", "flops_dp", [101.0], time_spread_rel="0.05"))
    assert s["figures"]["peak DP"]["why_not_trusted"] == "its points' regions spread 30%"


def test_failed_checksums_never_feed_a_figure_and_too_few_points_are_said() -> None:
    rows = (_rate_rows("intensity", "flops_dp", [500.0, 480.0], checksum_ok="false")
            + _rate_rows("intensity", "flops_dp", [100.0]))
    s = summarize(rows)
    fig = s["figures"]["peak DP"]
    assert s["peaks_gflop_per_s"]["dp"] == pytest.approx(100.0) and fig["candidates"] == 1
    assert fig["why_not_trusted"] == "rests on 1 point" and s["checksums"] == {"ok": 1, "checked": 3, "rows": 3}
    assert summarize([*_rate_rows("intensity", "flops_dp", [1.0], checksum_ok="false")])["figures"] == {}


def test_a_cache_level_no_faster_than_the_one_outside_is_not_trusted() -> None:
    """An L3 working set that spilled to DRAM (a VM's reported L3) measures DRAM: it is said, not believed."""
    rows = (_rate_rows("intensity", "bytes_mem", [40.0, 41.0, 39.0])
            + _rate_rows("cache", "bytes_l3", [41.0, 40.0, 40.5], level="l3")
            + _rate_rows("cache", "bytes_l2", [300.0, 310.0, 305.0], level="l2"))
    s = summarize(rows)
    assert s["figures"]["bandwidth L3"]["why_not_trusted"].startswith("not faster than DRAM (40 GB/s)")
    assert s["figures"]["bandwidth L2"]["trusted"] and s["not_trusted"] == ["bandwidth L3"]


def test_plot_roof_carries_the_summary_figures() -> None:
    from archline.bench.run.summary import plot_roof

    s = summarize(_rate_rows("intensity", "flops_dp", [100.0, 100.0, 100.0])
                  + _rate_rows("intensity", "bytes_mem", [20.0, 20.0])
                  + _rate_rows("cache", "bytes_l1", [300.0, 300.0], level="l1"))
    roof, notes = plot_roof(s, "dp")
    assert roof == (pytest.approx(100e9), pytest.approx(20e9), "medians of 3 and 2 points")
    assert notes == ["cache bandwidths: L1 300 GB/s"]
    assert plot_roof(s, "sp")[0] is None
    noisy = summarize(_rate_rows("intensity", "flops_dp", [100.0]) + _rate_rows("intensity", "bytes_mem", [20.0]))
    assert plot_roof(noisy, "dp")[1] == ["NOT TRUSTED (too noisy or too few points): peak DP, bandwidth DRAM"]


def test_ert_round_trip(tmp_path: Path) -> None:
    s = summarize(ROWS)
    roof = ErtRoofline.from_summary(s["peaks_gflop_per_s"], s["bandwidths_gb_per_s"], {"results": "r.csv"})
    p = write_ert(tmp_path / "roofline.json", roof)
    doc = json.loads(p.read_text())
    assert doc["empirical"]["gflops"]["data"] == [["FP64 GFLOPs", pytest.approx(40.0)]]
    assert dict(doc["empirical"]["gbytes"]["data"]) == {"DRAM": pytest.approx(20.0), "L1": pytest.approx(100.0)}
    assert read_ert(p) == roof


def test_a_measured_localhost_run_keeps_its_roofline_for_the_localhost_platform(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    from archline.bench.run.export import write_host_roofline
    from archline.formats.ert_roofline import host_roofline_path

    rows = [{**r, "platform": "localhost", "host": "h1", "run_id": "localhost-1", "backend": "cpu_asm"} for r in ROWS]
    s = summarize(rows)
    results = tmp_path / "r.csv"
    path = write_host_roofline(s, rows, results)
    assert path == host_roofline_path() and not str(path).startswith(str(Path.home()))
    roof = read_ert(path)
    assert roof.gflops == {"FP64 GFLOPs": pytest.approx(40.0)}
    meta = roof.metadata
    assert (meta["run_id"], meta["results_csv"], meta["hostname"]) == ("localhost-1", str(results.resolve()), "h1")
    assert meta["created_utc"].endswith("Z") and meta["cpu_model"]
    assert meta["figures"]["peak DP"]["points"] == 1 and "spread_rel" in meta["figures"]["peak DP"]
    # emulated rows, or another platform's, keep nothing
    path.unlink()
    assert write_host_roofline(summarize([{**r, "emulated": "true"} for r in rows]), rows, results) is None
    assert write_host_roofline(s, [{**r, "platform": "gtx580"} for r in rows], results) is None
    # an OpenCL (or GPU) device on localhost is not this CPU's roofline
    assert write_host_roofline(s, [{**r, "backend": "opencl"} for r in rows], results) is None
    assert not path.exists()
    # a state directory that cannot be written is one warning, never a failed run
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_STATE_HOME", str(blocker))
    assert write_host_roofline(s, rows, results) is None
    (rec,) = [r for r in caplog.records if r.levelname == "WARNING"]
    assert "could not keep this run's roofline" in rec.getMessage()


def test_a_later_partial_run_keeps_the_figures_it_did_not_measure(tmp_path: Path) -> None:
    """An SP-only sweep after the quick roofline replaces SP and keeps DP and the bandwidths from the earlier run,
    each figure naming its run; a copy from another host is replaced whole."""
    from archline.bench.run.export import write_host_roofline

    base = {"platform": "localhost", "host": "h1", "backend": "cpu_asm", "kernel": "intensity", "checksum_ok": "true",
            "time_s": "1", "time_spread_rel": "0.01"}
    first = [{**base, "run_id": "r1", "flops_dp": str(g * 1e9), "bytes_mem": str(b * 1e9)}
             for g, b in ((100, 40), (99, 41), (101, 40.5))]
    path = write_host_roofline(summarize(first), first, tmp_path / "r1.csv")
    assert path is not None
    second = [{**base, "run_id": "r2", "flops_sp": str(g * 1e9)} for g in (200, 202, 198)]
    write_host_roofline(summarize(second), second, tmp_path / "r2.csv")
    roof = read_ert(path)
    assert roof.gflops == {"FP32 GFLOPs": pytest.approx(200.0), "FP64 GFLOPs": pytest.approx(100.0)}
    assert roof.gbytes == {"DRAM": pytest.approx(40.5)}
    figs = roof.metadata["figures"]
    assert (figs["peak SP"]["run_id"], figs["peak DP"]["run_id"], figs["bandwidth DRAM"]["run_id"]) == \
        ("r2", "r1", "r1")
    other = [{**r, "host": "h2", "run_id": "r3"} for r in second]
    write_host_roofline(summarize(other), other, tmp_path / "r3.csv")
    assert read_ert(path).gflops == {"FP32 GFLOPs": pytest.approx(200.0)} and read_ert(path).gbytes == {}


def test_an_untrusted_figure_never_replaces_a_trusted_one_and_a_run_without_figures_keeps_nothing(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 34 finding 7: a noisy later run (SP and DP NOT TRUSTED) keeps the trusted figures of the run before,
    says so in one line; its trusted DRAM replaces the old one; a run that measured no figure writes nothing."""
    import logging

    from archline.bench.run.export import write_host_roofline

    base = {"platform": "localhost", "host": "h1", "backend": "cpu_asm", "kernel": "intensity", "checksum_ok": "true",
            "time_s": "1", "time_spread_rel": "0.01"}
    first = [{**base, "run_id": "r1", "flops_sp": str(g * 1e9), "flops_dp": str(g * 5e8), "bytes_mem": str(b * 1e9)}
             for g, b in ((102.8, 40), (102, 40.4), (103, 40.2))]
    path = write_host_roofline(summarize(first), first, tmp_path / "r1.csv")
    assert path is not None
    noisy = [{**base, "run_id": "r2", "time_spread_rel": "0.5", "flops_sp": str(g * 1e9), "flops_dp": str(g * 5e8)}
             for g in (65.3, 66, 64)]
    dram = [{**base, "run_id": "r2", "bytes_mem": str(b * 1e9)} for b in (30, 30.2, 30.1)]
    s = summarize(noisy + dram)
    assert set(s["not_trusted"]) == {"peak SP", "peak DP"}
    caplog.set_level(logging.INFO, logger="archline")
    write_host_roofline(s, noisy + dram, tmp_path / "r2.csv")
    roof = read_ert(path)
    assert roof.gflops == {"FP32 GFLOPs": pytest.approx(102.8), "FP64 GFLOPs": pytest.approx(51.4)}
    assert roof.gbytes == {"DRAM": pytest.approx(30.1)}
    figs = roof.metadata["figures"]
    assert (figs["peak SP"]["run_id"], figs["peak DP"]["run_id"], figs["bandwidth DRAM"]["run_id"]) == \
        ("r1", "r1", "r2")
    assert roof.metadata["not_trusted"] == []
    (line,) = [r.getMessage() for r in caplog.records if "localhost's roofline" in r.getMessage()]
    assert "bandwidth DRAM from this run" in line
    assert "kept peak SP 102.8 GFLOP/s of run r1 (trusted) over this run's 65.3 (NOT TRUSTED" in line
    # a run with no peak and no bandwidth (the chase kernel alone) keeps nothing and says nothing
    caplog.clear()
    chase = [{**base, "run_id": "r3", "kernel": "chase"}]
    summ = summarize(chase)
    assert not summ["peaks_gflop_per_s"] and not summ["bandwidths_gb_per_s"]
    assert write_host_roofline(summ, chase, tmp_path / "r3.csv") is None
    assert read_ert(path).metadata["run_id"] == "r2" and not caplog.records


def test_point_numbers_rounded_and_time_only() -> None:
    line = point_numbers({"time_s": 0.123456789012345, "flops_dp": 2e9, "energy_j": None, "checksum_ok": True})
    assert line == "time_s=0.1235 gflop_per_s=16.2 time only checksum ok"
    line = point_numbers({"time_s": 1.0, "energy_j": 12.345678, "power_w": 12.345678, "checksum_ok": False})
    assert line == "time_s=1 energy_j=12.35 power_w=12.35 checksum FAILED"


def test_version_names_version_commit_and_isas() -> None:
    from click.testing import CliRunner

    import archline
    from archline.cli.main import cli

    res = CliRunner().invoke(cli, ["--version"])
    assert res.exit_code == 0
    lines = res.output.splitlines()
    assert lines[0] == f"archline {archline.__version__}"
    assert lines[1].startswith("commit ") and lines[2].startswith("compiled ISAs ")


def test_export_ert_cli(tmp_path: Path) -> None:
    import csv

    from click.testing import CliRunner

    from archline.cli.main import cli
    from archline.formats.schema import REQUIRED_FOR_FIT

    src = tmp_path / "r.csv"      # every column the contract requires (export-ert checks rows as fit does)
    rows = [{**dict.fromkeys(REQUIRED_FOR_FIT, ""), "schema": "archline.results/1", "platform": "p",
             "precision": "dp", **r} for r in ROWS]
    cols = sorted({k for r in rows for k in r})
    with src.open("w", newline="") as f:
        w = csv.DictWriter(f, cols)
        w.writeheader()
        w.writerows(rows)
    out = tmp_path / "roofline.json"
    res = CliRunner().invoke(cli, ["bench", "export-ert", str(src), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert read_ert(out).gflops == {"FP64 GFLOPs": pytest.approx(40.0)}
    before = src.read_bytes()
    res = CliRunner().invoke(cli, ["bench", "export-ert", str(src), "--out", str(src)])
    assert res.exit_code != 0 and src.read_bytes() == before


def test_cpu_asm_compiler_column() -> None:
    from archline.bench.cpu_asm import build_info

    s = build_info.compiler("avx2")
    assert s.endswith("-O3 -ffp-contract=off -fno-trapping-math -mavx2 -mfma")
    assert s.split()[0] in ("GCC", "clang", "unknown")


def test_a_schedule_energy_is_said_in_the_summary_and_roofline_json(tmp_path: Path) -> None:
    """bench run --emulate on localhost (no power model): real kernels' times, a schedule's energy; the summary's
    rows and roofline.json say which is which, and a measured run says nothing of it."""
    from archline.bench.emulated.schedule import NOTE, describe
    from archline.bench.run.export import export_roofline

    note = describe(30.0, 10.0)
    rows = [{**r, "emulated": "true", "note": f"{note}; clock drift: meter and kernel timer disagree by 5.0%"}
            for r in ROWS]
    s = summarize(rows)
    assert s["emulated"] is True and s["energy_source"] == note and note.startswith(NOTE)
    assert ("energy", "emulated", "", note) in summary_rows(s)
    export_roofline(tmp_path / "r.json", rows, ["r.csv"])
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["empirical"]["metadata"]["energy_source"] == note and doc["empirical"]["metadata"]["emulated"]
    measured = summarize(ROWS)
    assert measured["energy_source"] is None and not [r for r in summary_rows(measured) if r[0] == "energy"]
    export_roofline(tmp_path / "m.json", ROWS, ["m.csv"])
    assert "energy_source" not in json.loads((tmp_path / "m.json").read_text())["empirical"]["metadata"]


def test_every_candidate_is_accounted_for_and_the_two_spreads_are_named_apart() -> None:
    """Issue 34 #15: points + outliers (above) + below the plateau (+ noisy left out) = candidates; the spread
    across points and one point's own regions' spread carry different names."""
    s = summarize(_rate_rows("intensity", "flops_sp", [100.0, 98.0, 78.0])          # 78: below the plateau
                  + _rate_rows("cache", "bytes_mem", [30.0, 18.0, 10.0], time_spread_rel="0.642")  # no two agree
                  + _rate_rows("cache", "bytes_l2", [150.0, 101.0, 100.0]))                       # 150: a hiccup
    for name in ("peak SP", "bandwidth DRAM", "bandwidth L2"):
        f = s["figures"][name]
        assert f["points"] + f["outliers"] + f["below_plateau"] + f["noisy_left_out"] == f["candidates"] == 3
    sp, dram = s["figures"]["peak SP"], s["figures"]["bandwidth DRAM"]
    assert (sp["points"], sp["outliers"], sp["below_plateau"]) == (2, 0, 1)
    # no two DRAM rates agree: the fastest stands alone (not trusted: one point), nothing above it is an outlier
    assert (dram["points"], dram["outliers"], dram["below_plateau"]) == (1, 0, 2) and not dram["trusted"]
    l2 = s["figures"]["bandwidth L2"]
    assert (l2["points"], l2["outliers"], l2["below_plateau"]) == (2, 1, 0) and l2["gb_per_s"] == pytest.approx(100.5)
    assert sp["points_spread_rel"] == pytest.approx(2 / 99.0) and sp["regions_spread_rel"] == pytest.approx(0.01)
    assert dram["points_spread_rel"] is None and dram["regions_spread_rel"] == pytest.approx(0.642)
    table = {q: basis for q, _, _, basis in summary_rows(s)}
    assert table["peak SP"].startswith("median of 2 points, points spread 2.0%; of 3 candidates, left out: "
                                       "1 below the plateau")
    assert table["bandwidth DRAM"].startswith("1 point, its regions spread 64.2%; of 3 candidates, left out: "
                                              "2 below the plateau")


def test_advice_names_only_options_the_back_end_takes() -> None:
    """Issue 34 #14: --cpus pins cpu_asm threads; an OpenCL run's advice must not name it."""
    ocl = summarize(_rate_rows("intensity", "flops_sp", [100.0], backend="opencl"))
    assert ocl["not_trusted"] and "--min-time" in ocl["advice"] and "--cpus" not in ocl["advice"]
    cpu = summarize(_rate_rows("intensity", "flops_sp", [100.0]))
    assert "--cpus" in cpu["advice"]


def _csv(path: Path, rows: list[dict[str, str]]) -> Path:
    import csv

    cols = sorted({k for r in rows for k in r})
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols)
        w.writeheader()
        w.writerows(rows)
    return path


def _quick_rows() -> list[dict[str, str]]:
    """A quick roofline's shape: SP and DP peaks on L1-resident data (bytes_l1 only; a lucky SP point), DRAM from
    DP memory-level rows; the best single points would give other figures than the summary's."""
    base = {"schema": "archline.results/1", "platform": "localhost", "flops_sp": "0", "flops_dp": "0",
            "bytes_mem": "0", "bytes_l1": "0"}
    out = []
    for col, prec, rates, level, moved in (("flops_sp", "sp", [150.0, 100.0, 98.0, 97.0], "l1", "bytes_l1"),
                                           ("flops_dp", "dp", [50.0, 49.0, 48.0], "l1", "bytes_l1"),
                                           ("flops_dp", "dp", [30.0, 20.0, 19.0, 19.5], "mem", "bytes_mem")):
        for r in _rate_rows("intensity", col, rates, precision=prec, level=level):
            # flop per byte: 32 on L1 data, 1/8 at the memory level (so the memory rows' GB/s are 8x their GFLOP/s)
            r.update({k: v for k, v in base.items() if k not in r})
            r[moved] = repr(1e9 / 32) if level == "l1" else repr(8e9)
            out.append(r)
    return out


def test_plot_of_result_rows_shows_the_summary_figures(tmp_path: Path) -> None:
    """Issue 34 #3: `plot` of a run's rows draws the summary's robust peaks and DRAM (one rule), not single best
    points, nor an SP 'bandwidth' made of L1-resident rows."""
    from archline.fit.plots.inputs import plot_plan

    rows = _quick_rows()
    s = summarize(rows)
    plan = plot_plan([str(_csv(tmp_path / "r.csv", rows))], None)
    by_prec = {c.label.split()[1]: c.machine for c in plan.curves}
    assert set(by_prec) == {"SP", "DP"}
    for prec, m in by_prec.items():
        assert 1 / m.tau_flop_s == pytest.approx(s["peaks_gflop_per_s"][prec.lower()] * 1e9)
        assert 1 / m.tau_mem_s_per_byte == pytest.approx(s["bandwidths_gb_per_s"]["DRAM"] * 1e9)
    assert s["peaks_gflop_per_s"]["sp"] == pytest.approx(98.0) and s["bandwidths_gb_per_s"]["DRAM"] == \
        pytest.approx(8 * 19.5)


def test_plot_of_emulated_energy_says_emulated(tmp_path: Path) -> None:
    """Issue 34 #4: rows whose energy is --emulate's schedule are labelled emulated in the plot's curves, points
    and notes (the notes go on the figure and to stderr)."""
    from archline.fit.plots.inputs import plot_plan

    note = "emulated: schedule x measured time, not the program's energy: 65 W inside each timed region"
    rows = [{**r, "backend": "cpu_asm", "emulated": "true", "note": note,
             "energy_j": repr(65.0 * float(r["time_s"]))} for r in _quick_rows()]
    plan = plot_plan([str(_csv(tmp_path / "r.csv", rows))], None)
    assert all("[emulated]" in c.label for c in plan.curves) and all("[emulated]" in m.label for m in plan.measured)
    assert any("energy is emulated, not measured" in n and note in n for n in plan.notes)
