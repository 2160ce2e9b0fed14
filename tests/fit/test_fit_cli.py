"""`archline fit` end to end: outputs, grouping, and a one-line error for every kind of bad input."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from archline.fit.platforms.profiles import load_costs, load_platform
from archline.fit.regress.synthetic import GTX580, synthetic_results, write_results_csv


@pytest.fixture(scope="module")
def good_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("fitcli")
    return write_results_csv(synthetic_results(GTX580, seed=4, n_l1=0, n_l2=0, n_rand=0), d / "gtx580.csv")


def _intensity_frame() -> pd.DataFrame:
    return synthetic_results(GTX580, seed=4, n_l1=0, n_l2=0, n_rand=0)


def test_fit_cli_json_is_a_cost_table_usable_as_a_profile(run_cli: Callable[..., Any], good_csv: Path,
                                                        tmp_path: Path) -> None:
    out = tmp_path / "gtx580.json"
    r = run_cli("fit", str(good_csv), "--model", "basic", "--format", "json", "--out", str(out))
    assert r.exit_code == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc["schema"] == "archline.costs/1" and doc["platform"] == "gtx580" and doc["model"] == "basic"
    assert doc["emulated"] is True
    for k in ("eps_flop_sp", "eps_flop_dp", "eps_mem", "pi0"):
        c = doc["coefficients"][k]
        assert set(c) >= {"value", "stderr", "ci95", "unit"} and c["value"] > 0
    assert doc["coefficients"]["eps_flop_sp"]["unit"] == "J/flop"
    assert {"tau_flop_sp", "tau_flop_dp", "tau_mem"} <= set(doc["tau"])
    assert doc["quality"]["cv_folds"] == 10 and "cv_mape_pct" in doc["quality"] and "r2" in doc["quality"]
    assert "B_tau" in doc["derived"] and "B_eps" in doc["derived"] and "eps_hat" in doc["derived"]
    plat = load_costs(out)
    assert plat.emulated and plat.kind == "costs"
    m = plat.machine("sp")
    assert abs(m.eps_flop_j / 99.7e-12 - 1) < 0.05
    assert load_platform(str(out)).precisions_available() == ["sp", "dp"]


def test_fit_cli_table_and_csv(run_cli: Callable[..., Any], good_csv: Path) -> None:
    r = run_cli("fit", str(good_csv), "--model", "basic")
    assert r.exit_code == 0, r.stderr
    assert "pJ/flop" in r.stdout and "pJ/B" in r.stdout and " W " in r.stdout and "EMULATED" in r.stdout
    r = run_cli("fit", str(good_csv), "--model", "basic", "--format", "csv")
    assert r.exit_code == 0
    df = pd.read_csv(io.StringIO(r.stdout))
    assert list(df.columns[:5]) == ["platform", "model", "emulated", "section", "name"]
    v = df[(df.section == "coefficients") & (df.name == "eps_mem")]["value"].iloc[0]
    assert abs(v / 513e-12 - 1) < 0.05


def test_fit_cli_figure_and_points(run_cli: Callable[..., Any], good_csv: Path, tmp_path: Path) -> None:
    png, pts = tmp_path / "fit.png", tmp_path / "pts.csv"
    r = run_cli("fit", str(good_csv), "--model", "basic", "--figure", str(png), "--points", str(pts))
    assert r.exit_code == 0, r.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
    p = pd.read_csv(pts)
    assert len(p) == 61 and {"energy_rel_err", "time_rel_err", "power_rel_err"} <= set(p.columns)


def test_fit_cli_emulated_rows_not_mixed(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    real = _intensity_frame()
    real["backend"] = "cuda"
    emu = synthetic_results(GTX580, seed=5, n_l1=0, n_l2=0, n_rand=0)
    a, b = write_results_csv(real, tmp_path / "real.csv"), write_results_csv(emu, tmp_path / "emu.csv")
    r = run_cli("fit", str(a), str(b), "--model", "basic", "--format", "json")
    assert r.exit_code == 0, r.stderr
    docs = json.loads(r.stdout)
    assert isinstance(docs, list) and sorted(d["emulated"] for d in docs) == [False, True]
    assert all(d["n_points"] == 61 for d in docs)
    r = run_cli("fit", str(a), str(b), "--model", "basic", "--format", "json", "--mix-emulated")
    doc = json.loads(r.stdout)
    assert doc["emulated"] is True and doc["n_points"] == 122
    r = run_cli("fit", str(a), str(b), "--model", "basic", "--format", "json", "--exclude-emulated")
    doc = json.loads(r.stdout)
    assert doc["emulated"] is False and doc["n_points"] == 61


def test_fit_cli_holdout(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    f = _intensity_frame()
    f["split"] = ["V" if i % 3 == 0 else "T" for i in range(len(f))]
    p = write_results_csv(f, tmp_path / "split.csv")
    r = run_cli("fit", str(p), "--model", "basic", "--format", "json", "--holdout-col", "split", "--folds", "4")
    assert r.exit_code == 0, r.stderr
    q = json.loads(r.stdout)["quality"]
    assert q["holdout_n_validate"] == 21 and q["holdout_mape_pct"] < 5 and q["cv_folds"] == 4


def _bad(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _check_error(r: Any, *needles: str) -> None:
    assert r.exit_code != 0
    assert "Traceback" not in r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("archline: error:"), r.stderr
    for n in needles:
        assert n in lines[0], (n, lines[0])


def test_fit_cli_errors_empty_and_schema(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    _check_error(run_cli("fit", str(_bad(tmp_path, "empty.csv", ""))), "empty.csv", "empty")
    hdr = ",".join(_intensity_frame().columns)
    _check_error(run_cli("fit", str(_bad(tmp_path, "hdr.csv", hdr + "\n"))), "hdr.csv", "no result rows")
    _check_error(run_cli("fit", str(_bad(tmp_path, "other.csv", "a,b,c\n1,2,3\n"))), "other.csv",
                 "missing column", "energy_j")
    f = _intensity_frame()
    f.loc[3, "schema"] = "archline.results/0"
    _check_error(run_cli("fit", str(write_results_csv(f, tmp_path / "schema.csv"))), "schema.csv:5",
                 "archline.results/1")
    _check_error(run_cli("fit", str(tmp_path / "missing.csv")), "missing.csv")


def test_fit_cli_errors_bad_values(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    f = _intensity_frame()
    f.loc[10, "energy_j"] = float("nan")
    _check_error(run_cli("fit", str(write_results_csv(f, tmp_path / "nan.csv"))), "nan.csv:12", "energy_j")
    f = _intensity_frame()
    f.loc[0, "energy_j"] = -1.0
    _check_error(run_cli("fit", str(write_results_csv(f, tmp_path / "neg.csv"))), "neg.csv:2", "negative")
    f = _intensity_frame().astype({"time_s": object})
    f.loc[6, "time_s"] = "fast"
    _check_error(run_cli("fit", str(write_results_csv(f, tmp_path / "txt.csv"))), "txt.csv:8", "time_s",
                 "not a number")
    p = tmp_path / "ragged.csv"
    write_results_csv(_intensity_frame(), p)
    lines = p.read_text().splitlines()
    lines[4] += ",1,2,3"
    p.write_text("\n".join(lines) + "\n")
    _check_error(run_cli("fit", str(p)), "ragged.csv", "malformed")


def test_fit_cli_errors_model_needs(run_cli: Callable[..., Any], tmp_path: Path) -> None:
    sp_only = synthetic_results(GTX580, seed=4, n_dp=0, n_l1=0, n_l2=0, n_rand=0)
    p = write_results_csv(sp_only, tmp_path / "sp.csv")
    _check_error(run_cli("fit", str(p), "--model", "basic"), "only sp", "--one-precision")
    assert run_cli("fit", str(p), "--model", "basic", "--one-precision").exit_code == 0
    few = synthetic_results(GTX580, seed=4, n_sp=2, n_dp=1, n_l1=0, n_l2=0, n_rand=0)
    _check_error(run_cli("fit", str(write_results_csv(few, tmp_path / "few.csv")), "--model", "basic"),
                 "4 parameters", "only 3")
    _check_error(run_cli("fit", str(write_results_csv(_intensity_frame(), tmp_path / "nov.csv")), "--model",
                         "dvfs"), "dvfs", "core_v")
    _check_error(run_cli("fit", str(write_results_csv(_intensity_frame(), tmp_path / "noc.csv")), "--model",
                         "cache"), "cache")
