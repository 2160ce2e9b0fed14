"""`archline fit` end to end: outputs, grouping, and a one-line error for every kind of bad input."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from archline.fit.regress.synthetic import GTX580, synthetic_results, write_results_csv
from archline.formats.platforms.profiles import load_costs, load_platform
from tests.support.datasets import part_csv


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


# --- folded from test_breaker28b_fit.py (a review round's regression tests) --------------------------------------
# Breaker 28b (archline fit): a whole file in the wrong unit passed silently; `--out costs/` was a file for one
# platform; `--out c3` (an existing file) with two platforms was a raw "File exists" (exit 7); `--out` inside an
# input data set wrote into it; and a coefficient whose interval excludes 0 was said to include it.


def _results(tmp: Path, name: str, seed: int, host: str, *, energy_scale: float = 1.0, time_scale: float = 1.0,
             platform: str | None = None) -> Path:
    """An archline.results/1 CSV of the GTX 580 costs (energy_j = eps_s*flops_sp + eps_d*flops_dp +
    eps_mem*bytes_mem + pi0*time_s, 1% noise), its energy or time written in another unit when scaled."""
    f = synthetic_results(GTX580, seed=seed, n_l1=0, n_l2=0, n_rand=0)
    f["host"] = host
    f["energy_j"] = f["energy_j"] * energy_scale
    f["time_s"] = f["time_s"] * time_scale
    if platform is not None:
        f["platform"] = platform
    return write_results_csv(f, tmp / name)


def _warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("archline: warning:")]


# --- 1. a whole file off by a unit factor ---------------------------------------------------------------------

def test_a_file_in_kj_among_good_ones_is_named_with_its_unit_slip(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    files = [_results(tmp_path, "good.csv", 4, "a"), _results(tmp_path, "good2.csv", 6, "c"),
             _results(tmp_path, "kj.csv", 5, "b", energy_scale=1e-3)]
    r = run_cli("fit", *map(str, files), "--model", "basic")
    assert r.exit_code == 0, r.stderr
    named = [w for w in _warnings(r.stderr) if "kj.csv (" in w]
    assert len(named) == 1 and "kJ written as J" in named[0], r.stderr
    m = re.search(r"its energy is ([0-9.e+-]+)x", named[0])
    assert m is not None and 0.0009 < float(m.group(1)) < 0.0011, named[0]
    assert not [w for w in _warnings(r.stderr) if "its energy is" in w and re.search(r"good2?\.csv \(", w)], r.stderr
    assert any("non-physical fit" in w and "energy MAPE above 100%" in w for w in _warnings(r.stderr)), r.stderr


def test_two_files_that_disagree_by_1000x_are_said_to_disagree_either_way(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    good, kj = _results(tmp_path, "good.csv", 4, "a"), _results(tmp_path, "kj.csv", 5, "b", energy_scale=1e-3)
    r = run_cli("fit", str(good), str(kj), "--model", "basic", "--format", "json")
    assert r.exit_code == 0, r.stderr
    said = [w for w in _warnings(r.stderr) if "the sources disagree" in w]
    assert len(said) == 1 and "kJ written as J" in said[0] and "mJ written as J" in said[0], r.stderr
    assert said[0].split("archline: warning: gtx580: ", 1)[1] in json.loads(r.stdout)["warnings"]


def test_a_file_with_time_in_ms_is_named(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    files = [_results(tmp_path, "good.csv", 4, "a"), _results(tmp_path, "good2.csv", 6, "c"),
             _results(tmp_path, "ms.csv", 5, "b", time_scale=1e3)]
    r = run_cli("fit", *map(str, files), "--model", "basic")
    assert r.exit_code == 0, r.stderr
    named = [w for w in _warnings(r.stderr) if "ms.csv (" in w]
    assert len(named) == 1 and "its time is" in named[0] and "ms written as s" in named[0], r.stderr


def test_a_data_set_run_in_kj_is_named_by_its_host_and_run(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from archline.formats.dataset import write_dataset

    srcs = [part_csv(tmp_path, f"n{i}", GTX580, f"node{i}", "r0", seed=10 + i) for i in range(4)]
    f = pd.read_csv(srcs[2], dtype=str)
    f["energy_j"] = (f["energy_j"].astype(float) / 1000).map(repr)
    f.to_csv(srcs[2], index=False)
    write_dataset(srcs, tmp_path / "fleet")
    r = run_cli("fit", str(tmp_path / "fleet"), "--model", "basic")
    assert r.exit_code == 0, r.stderr
    named = [w for w in _warnings(r.stderr) if "its energy is" in w]
    assert len(named) == 1 and "host=node2/run_id=r0 (" in named[0] and "kJ written as J" in named[0], r.stderr


def test_clean_files_and_a_clean_data_set_raise_no_unit_warning(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from archline.formats.dataset import write_dataset

    files = [_results(tmp_path, f"g{i}.csv", 20 + i, f"h{i}") for i in range(3)]
    srcs = [part_csv(tmp_path, f"n{i}", GTX580, f"node{i}", "r0", seed=10 + i) for i in range(4)]
    write_dataset(srcs, tmp_path / "fleet")
    for args in ([*map(str, files), "--model", "basic"], [*map(str, files)], [str(tmp_path / "fleet")]):
        r = run_cli("fit", *args)
        assert r.exit_code == 0, r.stderr
        assert not [w for w in _warnings(r.stderr) if "unit slip" in w or "non-physical" in w], r.stderr


# --- 2. --out costs/ is a directory; --out FILE for several platforms is one line, exit 2 ------------------------

def test_a_trailing_slash_makes_a_directory_for_one_platform(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    src = _results(tmp_path, "good.csv", 4, "a")
    for fmt in ("json", "table"):
        out = tmp_path / f"costs-{fmt}"
        r = run_cli("fit", str(src), "--model", "basic", "--format", fmt, "--out", f"{out}/")
        assert r.exit_code == 0, r.stderr
        assert out.is_dir() and len(list(out.iterdir())) == 1, r.stderr


def test_an_existing_file_as_the_directory_of_several_platforms_is_refused(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    two = pd.concat([pd.read_csv(_results(tmp_path, "a.csv", 4, "a"), dtype=str),
                     pd.read_csv(_results(tmp_path, "b.csv", 5, "b", platform="other"), dtype=str)])
    src = tmp_path / "two.csv"
    two.to_csv(src, index=False)
    c3 = tmp_path / "c3"
    c3.write_text("keep\n")
    for out in (str(c3), f"{c3}/"):
        r = run_cli("fit", str(src), "--model", "basic", "--format", "json", "--out", out)
        assert r.exit_code == 2, r.stderr
        err = [line for line in r.stderr.splitlines() if line.startswith("archline: error:")]
        assert len(err) == 1 and "c3" in err[0] and "is a file" in err[0] and "File exists" not in r.stderr, r.stderr
        assert c3.read_text() == "keep\n"
    r = run_cli("fit", str(src), "--model", "basic", "--format", "json", "--out", str(tmp_path / "costs") + "/")
    assert r.exit_code == 0 and len(list((tmp_path / "costs").iterdir())) == 2, r.stderr


# --- 3. an output inside an input directory -----------------------------------------------------------------------

def test_an_output_inside_an_input_data_set_is_refused(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from archline.formats.dataset import write_dataset

    srcs = [part_csv(tmp_path, f"n{i}", GTX580, f"node{i}", "r0", seed=10 + i) for i in range(2)]
    fleet = tmp_path / "fleet"
    write_dataset(srcs, fleet)
    before = sorted(p.relative_to(fleet) for p in fleet.rglob("*"))
    for extra in (["--format", "json", "--out", str(fleet)], ["--format", "json", "--out", f"{fleet}/"],
                  ["--out", str(fleet / "platform=gtx580" / "c.txt")], ["--points", str(fleet / "p.csv")]):
        r = run_cli("fit", str(fleet), "--model", "basic", *extra)
        assert r.exit_code == 2 and "inside" in r.stderr and "input directory" in r.stderr, (extra, r.stderr)
        assert sorted(p.relative_to(fleet) for p in fleet.rglob("*")) == before
    assert len(pd.read_parquet(fleet)) == 40


# --- 4. the reason a coefficient is left out ----------------------------------------------------------------------

def test_an_interval_below_zero_is_not_said_to_include_zero(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from archline.fit.regress.result import Coefficient, omission_reason

    below = omission_reason(Coefficient("delta_eps_dp", -2.02e-10, 5e-12, (-2.12e-10, -1.92e-10), "J/flop"))
    assert "significantly negative" in below and "includes 0" not in below and "non-physical" in below
    across = omission_reason(Coefficient("eps_mem", 1e-11, 2e-11, (-3e-11, 5e-11), "J/byte"))
    assert "not identified by the data" in across and "includes 0" in across

    good, kj = _results(tmp_path, "good.csv", 4, "a"), _results(tmp_path, "kj.csv", 5, "b", energy_scale=1e-3)
    r = run_cli("fit", str(good), str(kj), "--model", "basic", "--format", "json")
    omitted = json.loads(r.stdout)["omitted"]
    assert omitted, r.stdout
    for why in omitted.values():
        m = re.search(r"95% CI \[([^,]+), ([^\]]+)\]", why)
        assert m is not None, why
        lo, hi = float(m.group(1)), float(m.group(2))
        assert ("includes 0" in why) == (lo <= 0 <= hi), why
        assert ("significantly negative" in why) == (hi < 0), why


@pytest.mark.parametrize(("quantity", "factor", "slip"), [("energy", 1e-3, "kJ written as J"),
                                                          ("time", 1e3, "ms written as s"),
                                                          ("time", 1 / 60, "minutes written as s"),
                                                          ("time", 1 / 3600, "hours written as s"),
                                                          ("energy", 4.0, None)])
def test_unit_slips_are_named_by_their_factor(quantity: str, factor: float, slip: str | None) -> None:
    from archline.fit.regress.sources import unit_slip

    assert unit_slip(quantity, factor * 1.1) == slip
