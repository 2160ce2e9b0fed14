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
    from archline.fit.io.ert_roofline import ceiling_constants, read_ert
    from archline.fit.platforms.profiles import load_platform

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
    from archline.fit.io.ert_roofline import read_ert

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
    from archline.fit.io.ert_roofline import read_ert
    from archline.fit.platforms.profiles import load_platform

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
