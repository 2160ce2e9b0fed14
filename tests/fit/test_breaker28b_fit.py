"""Breaker 28b (archline fit): a whole file in the wrong unit passed silently; `--out costs/` was a file for one
platform; `--out c3` (an existing file) with two platforms was a raw "File exists" (exit 7); `--out` inside an
input data set wrote into it; and a coefficient whose interval excludes 0 was said to include it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from archline.fit.regress.synthetic import GTX580, synthetic_results, write_results_csv
from tests.support.datasets import part_csv


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
    from archline.fit.io.dataset import write_dataset

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
    from archline.fit.io.dataset import write_dataset

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
    from archline.fit.io.dataset import write_dataset

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
