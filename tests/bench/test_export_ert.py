"""ERT's roofline.json both ways. Export (breaker 23 and issue 35): a file that is not a results file,
non-physical rows, failed checksums, a file named twice and a non-.json --out are each refused or warned, never
silent; emulated rows say their checksum was not computed; a peak comes from compute kernels only; the file has
ERT's keys, order, names, level order and spec, and an emulated one says so in its names. Import (issue 35): every
real ERT file in tests/data/real/ert/ is a platform with the ceilings it holds (checked by hand against the file),
and a file that is not one is refused in one line."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from archline.bench.run.summary import summarize, summary_rows
from archline.cli.main import main

BASE = {"schema": "archline.results/1", "platform": "p", "backend": "opencl", "precision": "dp", "level": "mem",
        "emulated": "false", "energy_j": "",
        **{c: "" for c in ("flops_sp", "flops_dp", "int_ops", "bytes_mem", "bytes_l1", "bytes_l2", "bytes_l3",
                           "bytes_shared", "rand_accesses")}}


def write_rows(path: Path, rows: list[dict[str, str]]) -> Path:
    full = [{**BASE, **r} for r in rows]
    cols = sorted({k for r in full for k in r})
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, cols)
        w.writeheader()
        w.writerows(full)
    return path


GOOD = {"kernel": "intensity", "time_s": "1", "flops_dp": "4e10", "bytes_mem": "1e9", "checksum_ok": "true"}


@pytest.fixture
def export(capsys: pytest.CaptureFixture[str]):  # type: ignore[no-untyped-def]
    def run(*args: str) -> tuple[int, str]:
        try:
            code = main(["bench", "export-ert", *args])
        except SystemExit as e:
            code = int(e.code or 0)
        got = capsys.readouterr()
        return code, got.err + got.out
    return run


@pytest.mark.parametrize("content", ["hello\n", '{"empirical": {"gflops": {"data": []}}}\n'])
def test_not_a_results_file_is_refused(export: Any, tmp_path: Path, content: str) -> None:
    src = tmp_path / "afile"
    src.write_text(content)
    code, out = export(str(src), "--out", str(tmp_path / "e.json"))
    assert code == 2, out
    assert "not an archline.results/1 file: missing column(s) schema" in out
    assert not (tmp_path / "e.json").exists()


@pytest.mark.parametrize(("cells", "column"), [
    ({"time_s": "1e-12"}, "flops_dp"),              # 4e22 flop/s: no machine
    ({"time_s": "0"}, "time_s"),
    ({"time_s": "-1"}, "time_s"),
    ({"time_s": ""}, "time_s"),
    ({"time_s": "1_0"}, "time_s"),                 # issue 36 U #11: Python's float() reads 10, no CSV reader does
    ({"bytes_mem": "1e20"}, "bytes_mem"),           # 1e11 GB/s
])
def test_non_physical_rows_refused_naming_file_line_column(export: Any, tmp_path: Path, cells: dict[str, str],
                                                           column: str) -> None:
    src = write_rows(tmp_path / "r.csv", [GOOD, {**GOOD, **cells}])
    code, out = export(str(src), "--out", str(tmp_path / "e.json"))
    assert code == 2, out
    assert f"r.csv:3: {column} = " in out
    assert not (tmp_path / "e.json").exists()


def test_failed_checksum_warns_and_stays_in_json(export: Any, tmp_path: Path) -> None:
    src = write_rows(tmp_path / "r.csv", [GOOD, {**GOOD, "flops_dp": "8e10", "checksum_ok": "false"}])
    code, out = export(str(src), "--out", str(tmp_path / "e.json"))
    assert code == 0, out
    assert "1 row(s) failed their checksum (line(s) 3)" in out
    doc = json.loads((tmp_path / "e.json").read_text())
    assert doc["empirical"]["gflops"]["data"] == [["FP64 GFLOPs", pytest.approx(40.0)]]   # the failed row left out
    assert doc["empirical"]["metadata"]["checksums"] == {"ok": 1, "checked": 2, "rows": 2}


def test_file_named_twice_read_once_with_warning(export: Any, tmp_path: Path) -> None:
    src = write_rows(tmp_path / "r.csv", [GOOD])
    code, out = export(str(src), str(src), "--out", str(tmp_path / "e.json"), "--format", "json")
    assert code == 0, out
    assert "is the same file as" in out and "read once" in out
    doc = json.loads(out[out.index("{"):])
    assert doc["checksums"] == {"ok": 1, "checked": 1, "rows": 1}


def test_out_suffix_other_than_json_refused(export: Any, tmp_path: Path) -> None:
    src = write_rows(tmp_path / "r.csv", [GOOD])
    code, out = export(str(src), "--out", str(tmp_path / "e9.png"))
    assert code == 2 and "suffix" in out, out
    assert not (tmp_path / "e9.png").exists()


def test_peak_from_compute_kernels_only_and_emulated_checksums_not_computed() -> None:
    cache = {"kernel": "cache", "level": "l1", "time_s": "1", "flops_dp": "9.122e9", "bytes_l1": "7.3e10",
             "checksum_ok": ""}
    s = summarize([{**BASE, **cache, "emulated": "true"}])
    assert s["peaks_gflop_per_s"] == {} and s["bandwidths_gb_per_s"] == {"L1": pytest.approx(73.0)}
    table = {q: v for q, v, _, _ in summary_rows(s)}
    assert table["peak"] == "none" and "peak DP" not in table
    assert table["checksums"] == "not computed (emulated)"
    s = summarize([{**BASE, **GOOD}, {**BASE, **GOOD, "checksum_ok": ""}])
    assert {q: (v, b) for q, v, _, b in summary_rows(s)}["checksums"] == ("1/1 ok", "of 2 rows (1 not computed)")


def test_emulated_row_checksum_not_computed() -> None:
    from archline.bench.kernels import Counts, KernelSpec, RunResult
    from archline.bench.run.rows import MeterInfo, Region, RunContext, build_row

    ctx = RunContext.new("emu", "emulated dev", "emulated", True)
    spec = KernelSpec("emulated", "intensity", "dp", "mem", {})
    res = RunResult(time_s=1.0, reps=1, counts=Counts(flops_dp=10, bytes_mem=8), checksum_ok=True,
                    extra={"emulated": True, "checksum_computed": False})
    row = build_row(ctx, spec, "p", [Region(res, 1.0)], MeterInfo("", None, True, "none"), ci_rel=0.01,
                    max_regions=3)
    assert row["checksum_ok"] is None


@pytest.mark.parametrize(("other", "says"), [({"platform": "q"}, "come from 2 machines"),
                                             ({"host": "node2"}, "come from 2 machines"),
                                             ({"emulated": "true"}, "mix emulated and measured")])
def test_rows_of_several_machines_are_not_merged(export: Any, tmp_path: Path, other: dict[str, str],
                                                 says: str) -> None:
    """Breaker 26 item 3: gtx580, gtx680 and this CPU's rows made one roofline of no machine."""
    a = write_rows(tmp_path / "a.csv", [{**GOOD, "host": "node1"}])
    b = write_rows(tmp_path / "b.csv", [{**GOOD, "host": "node1", **other}])
    code, out = export(str(a), str(b), "--out", str(tmp_path / "e.json"))
    assert code == 2 and says in out and not (tmp_path / "e.json").exists(), out


def test_results_is_a_list_of_each_file_once(export: Any, tmp_path: Path) -> None:
    """Breaker 26 item 8: bench run wrote a string, export-ert a list (with a file named twice, twice)."""
    a = write_rows(tmp_path / "a.csv", [GOOD])
    code, out = export(str(a), str(a), "--out", str(tmp_path / "e.json"))
    assert code == 0, out
    assert json.loads((tmp_path / "e.json").read_text())["empirical"]["metadata"]["results"] == ["a.csv"]



# --- issue 35: ERT both ways ----------------------------------------------------------------------------------------

REAL = Path(__file__).resolve().parents[1] / "data" / "real" / "ert"

#: each real file's ceilings, read by hand from the file's text (GFLOP/s or GB/s), and how many of its ceilings are
#: left out (lower ceilings of a precision); "STREAM HBM" and "DDR Mem" are the memory of their file
REAL_CEILINGS: dict[str, tuple[dict[str, float], int]] = {
    "roofline.babbage.nersc.gov.01.json": ({"tau_flop_dp": 299.57, "tau_l1": 1491.61, "tau_l2": 827.18,
                                            "tau_l3": 546.77, "tau_mem": 79.09}, 0),
    "roofline.babbage.nersc.gov.02.json": ({"tau_flop_dp": 974.28, "tau_l1": 2085.58, "tau_l2": 1138.89,
                                            "tau_mem": 145.41}, 0),
    "roofline.edison.nersc.gov.01.json": ({"tau_flop_dp": 355.79, "tau_l1": 1723.23, "tau_l2": 1075.56,
                                           "tau_l3": 669.08, "tau_mem": 83.0}, 0),
    "roofline.madonna.lbl.gov.01.json": ({"tau_flop_dp": 49.92, "tau_l1": 499.81, "tau_l2": 303.69,
                                          "tau_l3": 81.15, "tau_mem": 31.78}, 0),
    "roofline.madonna.lbl.gov.02.json": ({"tau_flop_dp": 52.63, "tau_l1": 500.59, "tau_l2": 306.98,
                                          "tau_l3": 80.82, "tau_mem": 33.88}, 0),
    "roofline.mira.alcf.anl.gov.json": ({"tau_flop_dp": 204.51, "tau_l1": 232.35, "tau_mem": 28.25}, 0),
    "roofline.p100.01.Run.018.json": ({"tau_flop_dp": 288.33, "tau_l1": 1002.83, "tau_l2": 541.98,
                                       "tau_l3": 290.41, "tau_mem": 68.76}, 0),
    "roofline.titan.ccs.ornl.gov.01.json": ({"tau_flop_dp": 105.34, "tau_l1": 360.04, "tau_l2": 185.15,
                                             "tau_mem": 31.16}, 0),
    "roofline.titan.ccs.ornl.gov.02.json": ({"tau_flop_dp": 1225.48, "tau_l1": 559.14, "tau_mem": 160.66}, 0),
    "hpcl_roofline.json": ({"tau_flop_dp": 2772.78, "tau_l1": 8259.44, "tau_l2": 3120.85, "tau_mem": 200.3}, 0),
    "hpcl_roofline_a64_DP.json": ({"tau_flop_dp": 2761.3, "tau_l1": 5802.6, "tau_l2": 2597.6,
                                   "tau_mem": 840.6}, 0),
    "hpcl_roofline_cascadelake_DP.json": ({"tau_flop_dp": 3499.9, "tau_l1": 13932.9, "tau_l2": 3608.6,
                                           "tau_l3": 1361.2, "tau_mem": 203.2}, 3),
    "hpcl_roofline_copy.json": ({"tau_flop_dp": 1406.31, "tau_mem": 1638.12}, 0),
    "hpcl_multi_roofs.json": ({"tau_flop_sp": 5524.0, "tau_l1": 5802.6, "tau_l2": 2597.6, "tau_mem": 640.6}, 3),
}


def test_every_real_ert_file_has_its_hand_checked_ceilings() -> None:
    assert sorted(p.name for p in REAL.glob("*.json")) == sorted(REAL_CEILINGS)


@pytest.mark.parametrize("name", sorted(REAL_CEILINGS))
def test_a_real_ert_file_is_a_platform_of_its_ceilings(name: str) -> None:
    from archline.formats.ert_roofline import ceiling_constants, read_ert
    from archline.formats.platforms.profiles import load_platform

    rates, n_left = REAL_CEILINGS[name]
    pl = load_platform(str(REAL / name))
    assert pl.kind == "measured" and not pl.emulated
    assert {k for k in pl.constants if k.startswith("tau") and pl.value(k) is not None} == set(rates)
    for key, rate in rates.items():
        assert pl.value(key) == pytest.approx(1.0 / (rate * 1e9), rel=1e-12), key
    assert all(pl.value(k) is None for k in ("eps_flop_sp", "eps_flop_dp", "eps_mem", "pi0"))
    assert len(ceiling_constants(read_ert(REAL / name))[1]) == n_left
    assert len(pl.cautions) == (1 if n_left else 0)


def test_a_real_ert_spec_section_is_read() -> None:
    """ERT 1.1.0's spec: ERT_SPEC_GFLOPS and ERT_SPEC_GBYTES_<LEVEL> of the run's config (Edison, Cray XC30)."""
    from archline.formats.ert_roofline import read_ert

    roof = read_ert(REAL / "roofline.edison.nersc.gov.01.json")
    assert roof.spec_gflops == {"GFLOPs": pytest.approx(460.4)}
    assert roof.spec_gbytes == {"L1": pytest.approx(1843.2), "DRAM": pytest.approx(102.4)}
    assert read_ert(REAL / "hpcl_roofline.json").spec_gflops == {}


def test_model_show_and_plot_draw_an_ert_file(run_cli: Any, tmp_path: Path) -> None:
    real = str(REAL / "roofline.edison.nersc.gov.01.json")
    r = run_cli("model", "show", real, "--precision", "dp", "--format", "json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["dp"]["peak_flop_per_s"] == pytest.approx(355.79e9)
    png = tmp_path / "ert.png"
    r = run_cli("plot", real, str(REAL / "hpcl_roofline_cascadelake_DP.json"), "--kind", "roofline", "--out",
                str(png), "--format", "json")
    assert r.exit_code == 0, r.stderr
    assert png.stat().st_size > 0 and "roofline.edison.nersc.gov.01" in r.stdout
    assert r.stderr.count("left out:") == 1 and "'FP64 Scalar GFLOPs' (a lower double precision ceiling" in r.stderr


@pytest.mark.parametrize(("doc", "says"), [
    ({"empirical": {"gflops": {"data": [["GFLOPs", "fast"]]}, "gbytes": {"data": []}}},
     "empirical.gflops.data[0]: expected [name, number]"),
    ({"empirical": {"gflops": {"data": []}, "gbytes": {"data": []}}}, "holds no measured ceiling"),
    ({"empirical": {"gflops": {"data": [["FP16 GFLOPs", 100.0]]}, "gbytes": {"data": [["PCIe", 10.0]]}}},
     "no ceiling archline models"),
    ({"empirical": {"gflops": {"data": [["GFLOPs", -5.0]]}, "gbytes": {"data": []}}}, "GFLOPs = -5.0 is not a rate"),
    ({"empirical": {"gflops": {"data": [["GFLOPs", 5.0]]}, "gbytes": {"data": [["DRAM", 1e9]]}}},
     "DRAM = 1000000000.0 is not a rate"),
    ({"spec": {}, "empirical": []}, "not an ERT roofline.json"),
])
def test_a_file_that_is_no_usable_ert_roofline_is_refused_in_one_line(run_cli: Any, tmp_path: Path, doc: Any,
                                                                      says: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    r = run_cli("model", "show", str(bad))
    assert r.exit_code == 2 and r.stdout == "", r.stderr
    assert r.stderr.startswith("archline: error: ") and r.stderr.count("\n") == 1 and says in r.stderr, r.stderr


#: ERT's level names and their order, as the real files write them
LEVELS_IN_ORDER = ["L1", "L2", "L3", "DRAM"]

ROWS = [{**GOOD, "platform": "gtx580"}, {**GOOD, "platform": "gtx580", "flops_dp": "4.1e10"},
        *({"kernel": "cache", "platform": "gtx580", "time_s": "1", "level": lvl, f"bytes_{lvl}": rate,
           "checksum_ok": "true"} for lvl, rate in (("l1", "8e11"), ("l2", "4e11"), ("l3", "2e11")))]


def _shape(doc: Any) -> Any:
    """Keys in order, and the type of every data entry: what ERT's viewers rely on."""
    if isinstance(doc, dict):
        return [(k, _shape(v)) for k, v in doc.items() if k != "metadata" or not isinstance(v, dict)] + [
            ("metadata", "object") for k, v in doc.items() if k == "metadata" and isinstance(v, dict)]
    if isinstance(doc, list):
        return sorted({json.dumps(_shape(e)) for e in doc})
    return type(doc).__name__


def test_export_has_the_keys_order_and_types_of_a_real_ert_file(export: Any, tmp_path: Path) -> None:
    src = write_rows(tmp_path / "r.csv", ROWS)
    code, out = export(str(src), "--out", str(tmp_path / "e.json"))
    assert code == 0, out
    mine = json.loads((tmp_path / "e.json").read_text())
    model = json.loads((REAL / "hpcl_roofline.json").read_text())      # ERT with ERT_PRECISION (Python 3's order)
    assert list(mine) == list(model) == ["empirical", "spec"]
    assert list(mine["empirical"]) == list(model["empirical"]) == ["metadata", "gflops", "gbytes"]
    for kind in ("gflops", "gbytes"):
        assert list(mine["empirical"][kind]) == list(model["empirical"][kind]) == ["data", "metadata"]
        assert list(mine["spec"][kind]) == list(model["spec"][kind]) == ["data"]
        assert _shape(mine["empirical"][kind]["data"]) == _shape(model["empirical"][kind]["data"])
    for real in REAL.glob("roofline.*.json"):                        # ERT 1.1.0 (Python 2: keys in any order)
        doc = json.loads(real.read_text())
        assert set(doc) == set(mine) and set(doc["empirical"]) == set(mine["empirical"]), real.name
    assert [n for n, _ in mine["empirical"]["gflops"]["data"]] == ["FP64 GFLOPs"]   # as hpcl_roofline.json names it
    assert [n for n, _ in mine["empirical"]["gbytes"]["data"]] == LEVELS_IN_ORDER
    real_order = [n for n, _ in json.loads((REAL / "roofline.edison.nersc.gov.01.json").read_text())[
        "empirical"]["gbytes"]["data"]]
    assert real_order == LEVELS_IN_ORDER


def test_export_spec_is_the_profiles_nominal_peaks_or_empty(export: Any, tmp_path: Path) -> None:
    """gtx580.toml: S1 Table 3's 1581.06 / 197.63 GFLOP/s and 192.4 GB/s; platform 'p' has no profile."""
    src = write_rows(tmp_path / "r.csv", ROWS)
    assert export(str(src), "--out", str(tmp_path / "e.json"))[0] == 0
    doc = json.loads((tmp_path / "e.json").read_text())
    assert doc["spec"]["gflops"]["data"] == [["FP32 GFLOPs", pytest.approx(1581.06)],
                                             ["FP64 GFLOPs", pytest.approx(197.63)]]
    assert doc["spec"]["gbytes"]["data"] == [["DRAM", pytest.approx(192.4)]]
    assert doc["empirical"]["metadata"]["spec_source"].startswith("profile gtx580 (S1 Table 3")
    other = write_rows(tmp_path / "o.csv", [GOOD])
    assert export(str(other), "--out", str(tmp_path / "o.json"))[0] == 0
    doc = json.loads((tmp_path / "o.json").read_text())
    assert doc["spec"] == {"gflops": {"data": []}, "gbytes": {"data": []}}
    assert doc["empirical"]["metadata"]["spec_source"] == "none: platform 'p' has no profile with nominal peaks"


def test_emulated_export_says_so_in_every_name_and_reads_back_untagged(export: Any, tmp_path: Path) -> None:
    from archline.formats.ert_roofline import read_ert
    from archline.formats.platforms.profiles import load_platform

    src = write_rows(tmp_path / "r.csv", [{**r, "emulated": "true", "checksum_ok": ""} for r in ROWS])
    assert export(str(src), "--out", str(tmp_path / "e.json"))[0] == 0
    doc = json.loads((tmp_path / "e.json").read_text())
    assert [n for n, _ in doc["empirical"]["gflops"]["data"]] == ["FP64 GFLOPs (emulated)"]
    assert [n for n, _ in doc["empirical"]["gbytes"]["data"]] == [f"{lvl} (emulated)" for lvl in LEVELS_IN_ORDER]
    assert [n for n, _ in doc["spec"]["gflops"]["data"]] == ["FP32 GFLOPs", "FP64 GFLOPs"]     # nominal: untagged
    roof = read_ert(tmp_path / "e.json")
    assert roof.emulated and list(roof.gflops) == ["FP64 GFLOPs"] and list(roof.gbytes) == LEVELS_IN_ORDER
    pl = load_platform(str(tmp_path / "e.json"))
    assert pl.emulated and pl.value("tau_flop_dp") == pytest.approx(1 / 40.5e9)
    doc["empirical"]["metadata"].pop("emulated")        # the names alone still say it
    (tmp_path / "n.json").write_text(json.dumps(doc))
    assert read_ert(tmp_path / "n.json").emulated


# --- issue 35 FE: what a hostile user found (finding numbers in brackets) ---------------------------------------------

DERIVED = Path(__file__).resolve().parents[1] / "data" / "derived" / "ert"
QUICK = DERIVED / "localhost_quick.csv"          # a quick roofline of the 2-vCPU VM (README.md there)
EMULATED = DERIVED / "gtx580_emulated.csv"


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def _dump(path: Path, rows: list[dict[str, str]], drop: str = "") -> Path:
    cols = [c for c in rows[0] if c != drop]
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, cols, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    return path


def _gbytes(path: Path) -> dict[str, float]:
    return dict(json.loads(path.read_text())["empirical"]["gbytes"]["data"])


def test_noisy_l1_is_the_cache_kernels_figure_never_the_peak_points_traffic(export: Any, tmp_path: Path) -> None:
    """[#1] One of three cache/l1 rows at 60 GB/s (70.6 and 93.3 beside it): the three were all left out "above the
    plateau" of the peak points' incidental L1 loads (1.08, 1.06 GB/s), and L1 read 1.07 GB/s, below DRAM."""
    rows = _rows(QUICK)
    l1 = [r for r in rows if r["kernel"] == "cache" and r["level"] == "l1"]
    assert len(l1) == 3
    l1[0]["time_s"] = repr(float(l1[0]["bytes_l1"]) / 60e9)
    code, out = export(str(_dump(tmp_path / "noisy.csv", rows)), "--out", str(tmp_path / "n.json"))
    assert code == 0, out
    got = _gbytes(tmp_path / "n.json")
    rates = sorted(float(r["bytes_l1"]) / float(r["time_s"]) / 1e9 for r in l1)
    assert rates == pytest.approx([60.0, 70.6, 93.31], abs=0.01)
    # no two of 60, 70.6, 93.3 agree within 10%: the fastest alone, not trusted, never all three thrown out
    assert got["L1"] == pytest.approx(rates[-1]) and got["L1"] > got["DRAM"]
    fig = json.loads((tmp_path / "n.json").read_text())["empirical"]["metadata"]["figures"]["bandwidth L1"]
    assert (fig["candidates"], fig["points"], fig["trusted"]) == (3, 1, False)
    # the three cache rows failed their checksum: no L1 at all, not the peak points' 1.07 GB/s
    for r in l1:
        r["checksum_ok"] = "false"
    code, out = export(str(_dump(tmp_path / "ck.csv", rows)), "--out", str(tmp_path / "ck.json"))
    assert code == 0 and "3 row(s) failed their checksum (line(s) 8, 9, 10)" in out, out
    assert "L1" not in _gbytes(tmp_path / "ck.json")


def test_a_cache_level_slower_than_dram_is_not_trusted_as_non_physical() -> None:
    """[#1] A cache level below DRAM is no cache's: NOT TRUSTED with that reason, beside any other reason."""
    rows = [{**BASE, "kernel": "intensity", "time_s": "1", "bytes_mem": "2e10", "checksum_ok": "true"},
            {**BASE, "kernel": "intensity", "time_s": "1", "bytes_mem": "2.1e10", "checksum_ok": "true"},
            *({**BASE, "kernel": "cache", "level": "l1", "time_s": "1", "bytes_l1": b, "checksum_ok": "true"}
              for b in ("5e9", "5.1e9"))]
    fig = summarize(rows)["figures"]["bandwidth L1"]
    assert fig["gb_per_s"] == pytest.approx(5.05) and not fig["trusted"]
    assert fig["why_not_trusted"].startswith("slower than DRAM (20.5 GB/s), which no cache is: non-physical")


@pytest.mark.parametrize("how", ["no column", "false"])
def test_rows_of_the_emulated_back_end_are_exported_emulated(export: Any, tmp_path: Path, how: str) -> None:
    """[#2] An emulated run without its emulated column, or with emulated=false, was exported untagged."""
    rows = _rows(EMULATED)
    assert {r["backend"] for r in rows} == {"emulated"} and len(rows) == 20
    if how == "false":
        rows = [{**r, "emulated": "false"} for r in rows]
    src = _dump(tmp_path / "e.csv", rows, drop="emulated" if how == "no column" else "")
    code, out = export(str(src), "--out", str(tmp_path / "e.json"))
    assert code == 0, out
    said = "has no emulated column" if how == "no column" else "says emulated=false"
    assert f"archline: warning: {tmp_path / 'e.csv'}: 20 row(s) of the emulated back end {said}" in out
    doc = json.loads((tmp_path / "e.json").read_text())
    assert [n for n, _ in doc["empirical"]["gflops"]["data"]] == ["FP32 GFLOPs (emulated)", "FP64 GFLOPs (emulated)"]
    assert doc["empirical"]["metadata"]["emulated"] is True


@pytest.mark.parametrize(("change", "says"), [
    ({"schema": "archline.results/2"}, ":2: schema is 'archline.results/2', a newer major version"),
    ({"precision": "hp"}, ":2: precision 'hp' is not an archline.results/1 precision"),
    ({"level": "l4"}, ":2: level 'l4' is not an archline.results/1 level"),
    ({"drop": "bytes_l1"}, ": not an archline.results/1 file: missing column(s) bytes_l1"),
])
def test_export_refuses_what_fit_refuses(export: Any, run_cli: Any, tmp_path: Path, change: dict[str, str],
                                         says: str) -> None:
    """[#3] The results contract, by the fit's own checks: what `fit` refuses, export-ert refuses the same way."""
    rows = _rows(QUICK)
    drop = change.pop("drop", "")
    rows[0].update(change)
    src = _dump(tmp_path / "r.csv", rows, drop=drop)
    code, out = export(str(src), "--out", str(tmp_path / "e.json"))
    assert code == 2 and f"archline: error: {src}{says}" in out and out.count("\n") == 1, out
    assert not (tmp_path / "e.json").exists()
    fit = run_cli("fit", str(src))
    assert fit.exit_code == 2 and says in fit.stderr


def test_export_reads_a_results_parquet_file_as_fit_does(export: Any, tmp_path: Path) -> None:
    """[#3] A results Parquet file was refused as "binary"; its figures are the CSV's."""
    import pandas as pd

    pq = tmp_path / "r.parquet"
    pd.read_csv(QUICK, dtype=str, keep_default_na=False).to_parquet(pq)
    assert export(str(pq), "--out", str(tmp_path / "p.json"))[0] == 0
    assert export(str(QUICK), "--out", str(tmp_path / "c.json"))[0] == 0
    assert _gbytes(tmp_path / "p.json") == _gbytes(tmp_path / "c.json")


@pytest.mark.parametrize(("change", "says"), [
    ({"checksum_ok": "false"}, "every row (18) failed its checksum"),
    ({"kernel": "chase", "flops_sp": "0", "flops_dp": "0", "bytes_l1": "0", "bytes_l2": "0", "bytes_l3": "0",
      "bytes_mem": "0"}, "the rows (kernel chase) measure no peak GFLOP/s and no bandwidth"),
])
def test_rows_that_give_no_figure_write_no_file(export: Any, tmp_path: Path, change: dict[str, str],
                                                says: str) -> None:
    """[#6] An empty roofline.json (exit 0) that archline's own reader then refused: exit 2, nothing written."""
    src = _dump(tmp_path / "r.csv", [{**r, **change} for r in _rows(QUICK)])
    code, out = export(str(src), "--out", str(tmp_path / "e.json"))
    assert code == 2 and says in out and out.rstrip().endswith("; nothing written"), out
    assert not (tmp_path / "e.json").exists()


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_out_dev_stdout_puts_the_file_alone_on_stdout(capfd: pytest.CaptureFixture[str], fmt: str) -> None:
    """[#7] The path line came after the JSON (or over its start, with `> r.json`); --format json made two
    documents. As `meter record` does, the report goes to stderr when the file is stdout (fd 1, captured here)."""
    from archline.cli.main import main

    capfd.readouterr()
    try:
        code = main(["bench", "export-ert", str(QUICK), "--out", "/dev/stdout", "--format", fmt])
    except SystemExit as e:
        code = int(e.code or 0)
    got = capfd.readouterr()
    assert code == 0, got.err
    doc = json.loads(got.out)       # one document: the roofline.json, nothing before or after
    assert list(doc) == ["empirical", "spec"] and "/dev/stdout" in got.err


def test_not_trusted_figures_and_shared_rows_are_said_on_the_terminal(export: Any, tmp_path: Path) -> None:
    """[#8, #15, #20] Every figure of the loaded VM's run NOT TRUSTED (L3 above L2) and rows of level shared were
    exported with only the path printed; each is now an `archline: warning:` line."""
    rows = _rows(QUICK)
    for r in rows:
        if r["kernel"] == "cache" and r["level"] == "l2":        # as a GPU's shared level: no ERT name for it
            r["level"], r["bytes_shared"], r["bytes_l2"] = "shared", r["bytes_l2"], "0"
    code, out = export(str(_dump(tmp_path / "r.csv", rows)), "--out", str(tmp_path / "e.json"))
    assert code == 0, out
    warned = [line for line in out.splitlines() if "is NOT TRUSTED: " in line]
    assert len(warned) == 5 and all(line.startswith("archline: warning: ") for line in warned)
    assert "archline: warning: 3 row(s) of level shared left out" in out
    assert not [line for line in out.splitlines() if line and not line.startswith("archline: warning: ")
                and line != str(tmp_path / "e.json")]
    code, out = export(str(QUICK), "--out", str(tmp_path / "q.json"))
    assert "bandwidth L2 = 53.47 GB/s is NOT TRUSTED: every point is noisy (CI not reached); not faster than L3" in out


@pytest.mark.parametrize(("cell", "says"), [("-5e9", "bytes_mem = -5e9 is negative, not a count"),
                                            ("nan", "bytes_mem = nan is not a number, not a count")])
def test_a_negative_or_nan_count_is_said_for_what_it_is(export: Any, tmp_path: Path, cell: str, says: str) -> None:
    """[#18] It said "-41.9 GB/s, more than any machine"."""
    rows = _rows(QUICK)
    rows[-1]["bytes_mem"] = cell
    code, out = export(str(_dump(tmp_path / "r.csv", rows)), "--out", str(tmp_path / "e.json"))
    assert code == 2 and f"r.csv:19: {says}" in out, out


def _ert(tmp_path: Path, gflops: list[Any], gbytes: list[Any], name: str = "f.json", **extra: Any) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"empirical": {"gflops": {"data": gflops}, "gbytes": {"data": gbytes},
                                              **extra.get("empirical", {})}, **extra.get("top", {})}))
    return path


def test_a_name_given_twice_keeps_the_highest_and_is_named(run_cli: Any, tmp_path: Path) -> None:
    """[#4] Last one won, silently."""
    from archline.formats.platforms.profiles import load_platform

    f = _ert(tmp_path, [["FP64 GFLOPs", 100], ["FP64 GFLOPs", 50]], [["DRAM", 10], ["DRAM", 20], ["L1", 300],
                                                                     ["L1", 30]])
    pl = load_platform(str(f))
    assert pl.value("tau_flop_dp") == pytest.approx(1 / 100e9) and pl.value("tau_mem") == pytest.approx(1 / 20e9)
    assert pl.value("tau_l1") == pytest.approx(1 / 300e9)
    (line,) = [c for c in pl.cautions if "given twice" in c]
    assert line.count("given twice") == 3 and "'DRAM' given twice in empirical.gbytes (10 and 20" in line


@pytest.mark.parametrize("value", ["1" + "0" * 400, "5e-324", "1e-300"])
@pytest.mark.parametrize("command", [("model", "show"), ("model", "predict", "-i", "1"), ("plot",)])
def test_a_rate_no_machine_has_is_one_line_in_every_reader(run_cli: Any, tmp_path: Path, value: str,
                                                           command: tuple[str, ...]) -> None:
    """[#5] 1e400 as an integer was an OverflowError traceback, 5e-324 an infinite tau (plot: math domain error),
    1e-300 got a cost table's unit advice."""
    f = tmp_path / "x.json"
    f.write_text('{"empirical":{"gflops":{"data":[["FP64 GFLOPs",' + value + ']]},"gbytes":{"data":[["DRAM",10]]}}}')
    args = [*command[:2], str(f), *command[2:]] + (["--out", str(tmp_path / "p.png")] if command == ("plot",) else [])
    r = run_cli(*args)
    assert r.exit_code == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "FP64 GFLOPs = " in r.stderr and "is not a rate a machine has" in r.stderr and "unit" not in r.stderr


def test_units_in_names_and_on_chip_memories_are_left_out_not_misread(run_cli: Any, tmp_path: Path) -> None:
    """[#9] "FP64 TFLOPs" 100 was read as 100 GFLOP/s, "DRAM MB/s" 10000 as 10000 GB/s, "Shared Mem" as DRAM."""
    from archline.formats.platforms.profiles import load_platform

    r = run_cli("model", "show", str(_ert(tmp_path, [["FP64 TFLOPs", 100]], [["DRAM MB/s", 10000]])))
    assert r.exit_code == 2 and "no ceiling archline models" in r.stderr
    assert "gives the unit TFLOPs" in r.stderr and "gives the unit MB/s" in r.stderr
    pl = load_platform(str(_ert(tmp_path, [["DP GFLOPs", 100]], [["Shared Mem", 1000], ["L2", 50]], "s.json")))
    assert pl.value("tau_mem") is None and pl.value("tau_l2") == pytest.approx(1 / 50e9)
    assert "'Shared Mem' (an on-chip memory" in pl.cautions[0]


def test_platform_names_follow_ert_directories_and_never_pose_as_a_profile(run_cli: Any, tmp_path: Path) -> None:
    """[#10] ERT 1.1.0's Results.<name>/Run.NNN/roofline.json was named "roofline" (two runs alike); a file in
    Results.gtx580/ posed as the shipped gtx580; one file named twice in plot was drawn twice."""
    from archline.formats.platforms.profiles import load_platform

    run = _ert(tmp_path, [["GFLOPs", 100]], [["DRAM", 10]], "Results.box/Run.007/roofline.json")
    assert load_platform(str(run)).name == "box/Run.007"
    assert load_platform(str(_ert(tmp_path, [["GFLOPs", 100]], [["DRAM", 10]],
                                  "Results.box/roofline.json"))).name == "box"
    assert load_platform(str(_ert(tmp_path, [["GFLOPs", 100]], [["DRAM", 10]],
                                  "Results.gtx580/roofline.json"))).name == "gtx580 (ERT)"
    r = run_cli("plot", str(run), str(run), "--kind", "roofline", "--out", str(tmp_path / "p.png"), "--format",
                "json")
    assert r.exit_code == 0 and r.stderr.count("; it is read once") == 1, r.stderr
    assert json.loads(r.stdout)["files"][0]["shows"] == "roofline of box/Run.007 DP (time only)"


def test_a_bom_does_not_hide_an_ert_file(tmp_path: Path) -> None:
    """[#11] It was "not an archline.costs/1 cost table"."""
    from archline.formats.platforms.profiles import load_platform

    f = tmp_path / "bom.json"
    f.write_bytes(b"\xef\xbb\xbf" + json.dumps({"empirical": {"gflops": {"data": [["FP64 GFLOPs", 100]]},
                                                               "gbytes": {"data": [["DRAM", 10]]}}}).encode())
    assert load_platform(str(f)).value("tau_mem") == pytest.approx(1 / 10e9)


def test_a_missing_precision_gives_its_own_reason(run_cli: Any) -> None:
    """[#12] tau_flop was listed under "no energy answers ... no meter"; predict and plot advised `bench run`."""
    real = str(REAL / "roofline.edison.nersc.gov.01.json")
    r = run_cli("model", "show", real, "--precision", "sp")
    (line,) = [x for x in r.stdout.splitlines() if x.startswith("no SP time answers")]
    assert line.startswith("no SP time answers (tau_flop, B_tau, peak_flop_per_s): ")
    assert line.endswith("holds no FP32 GFLOPs ceiling; give --precision dp")
    (energy,) = [x for x in r.stdout.splitlines() if x.startswith("no energy answers")]
    assert "tau_flop" not in energy and "peak_flop_per_s," not in energy
    r = run_cli("model", "predict", real, "--precision", "sp", "-i", "1")
    assert r.exit_code == 2 and "give --precision dp" in r.stderr and "bench run" not in r.stderr


def test_spec_peaks_are_shown_and_those_no_machine_has_warned(run_cli: Any, tmp_path: Path) -> None:
    """[#13] The notes' spec peaks were shown by `platforms show` only; NaN, -5, 0, 1e30 without comment."""
    r = run_cli("model", "show", str(REAL / "roofline.edison.nersc.gov.01.json"), "--precision", "dp")
    assert "nominal (ERT spec): GFLOPs 460.4 GFLOP/s, L1 1843.2 GB/s, DRAM 102.4 GB/s" in r.stdout
    spec = {"gflops": {"data": [["FP64 GFLOPs", -5], ["FP32 GFLOPs", 1e30]]}, "gbytes": {"data": [["DRAM", 0]]}}
    f = _ert(tmp_path, [["FP64 GFLOPs", 100]], [["DRAM", 10]], top={"spec": spec})
    r = run_cli("model", "show", str(f))
    assert r.exit_code == 0 and "nominal (ERT spec): none given" in r.stdout
    assert "spec (nominal peaks) left out, no machine's: FP64 GFLOPs -5 GFLOP/s; FP32 GFLOPs 1e+30 GFLOP/s; DRAM 0 " \
           "GB/s" in r.stderr


def test_titles_name_the_host_and_who_measured_on_one_line(export: Any, tmp_path: Path) -> None:
    """[#14] HPCL's files were "unnamed host"; archline's export "measured by ERT"; a newline in HOSTNAME went
    into the title; a dict ERT_VERSION was printed as one; a pipe was named "63"."""
    from archline.formats.platforms.ert_file import ert_platform
    from archline.formats.platforms.profiles import load_platform

    assert load_platform(str(REAL / "hpcl_roofline.json")).title.startswith(
        "apollo.cs.uoregon.edu, measured by ERT 1.1.0")
    assert export(str(QUICK), "--out", str(tmp_path / "a.json"))[0] == 0
    assert load_platform(str(tmp_path / "a.json")).title.startswith("vm, measured by archline (")
    meta = {"metadata": {"HOSTNAME": "evil\nline2\x1b[31m", "ERT_VERSION": {"a": 1}}}
    pl = load_platform(str(_ert(tmp_path, [["GFLOPs", 1]], [["DRAM", 1]], "e.json", empirical=meta)))
    assert pl.title.startswith("evil line2 [31m, measured by ERT (") and "\n" not in pl.title
    assert ert_platform("/dev/fd/63", read_ert_of(tmp_path / "e.json")).name == "ERT evil line2 [31m"


def read_ert_of(path: Path) -> Any:
    from archline.formats.ert_roofline import read_ert

    return read_ert(path)


def test_inverted_levels_and_an_exports_not_trusted_figures_are_warned(run_cli: Any, tmp_path: Path,
                                                                       export: Any) -> None:
    """[#8] L1 10 < L2 50 < DRAM 100 was accepted silently; model show of an export whose every figure is NOT
    TRUSTED (L3 above L2) said nothing, where model show localhost warns."""
    r = run_cli("model", "show", str(_ert(tmp_path, [["FP64 GFLOPs", 100]], [["L1", 10], ["L2", 50], ["DRAM", 100]])))
    assert r.exit_code == 0
    assert "archline: warning: " in r.stderr and "L1 (10 GB/s) is slower than L2 50 GB/s, DRAM 100 GB/s" in r.stderr
    assert "L2 (50 GB/s) is slower than DRAM 100 GB/s" in r.stderr
    assert export(str(QUICK), "--out", str(tmp_path / "q.json"))[0] == 0
    r = run_cli("model", "show", str(tmp_path / "q.json"), "--format", "json")
    assert json.loads(r.stdout)["not_trusted"] == [
        "peak SP (every point is noisy (throttled))", "peak DP (every point is noisy (CI not reached))",
        "bandwidth DRAM (rests on 1 point)", "bandwidth L3 (rests on 1 point)",
        "bandwidth L2 (every point is noisy (CI not reached); not faster than L3 (62.36 GB/s): the working set did "
        "not stay in this cache)", "bandwidth L1 (every point is noisy (throttled))"]
    assert "L2 (53.4654 GB/s) is slower than L3 62.359 GB/s" in r.stderr


def test_a_warning_of_20000_names_is_one_short_line(tmp_path: Path) -> None:
    """[#19] 20,000 lower ceilings made a 1.5 MB warning line."""
    from archline.formats.platforms.profiles import load_platform

    f = _ert(tmp_path, [[f"FP64 GFLOPs {i}", 100.0 - i / 1000] for i in range(20000)], [["DRAM", 10]])
    (line,) = load_platform(str(f)).cautions
    assert line.endswith("; and 19,989 more") and len(line) < 2000


def test_localhost_copy_warnings_are_prefixed_and_a_foreign_copy_is_cautioned(run_cli: Any) -> None:
    """[#15, #16] "warning: localhost: ..." had no archline prefix; an ERT file copied as localhost's copy was
    "this machine, measured by run unknown run"."""
    import shutil

    from archline.formats.ert_roofline import host_roofline_path

    path = host_roofline_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(REAL / "roofline.edison.nersc.gov.01.json", path)
    r = run_cli("model", "show", "localhost")
    assert r.exit_code == 0, r.stderr
    assert r.stderr.startswith("archline: warning: localhost: ")
    assert "was not written by `archline bench run" in r.stderr
    assert "this machine" not in r.stdout.splitlines()[0]
