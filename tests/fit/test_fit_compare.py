"""archline compare (fit/analyses/choi/compare.py): the Welch-Satterthwaite test and Holm's correction against values
worked by hand, the flag against the others' median (identical groups not flagged because others differ, one
outlier among ten found), and the figure free of overlaps."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from archline.fit.analyses.choi.compare import GroupValue, compare_files, compare_values, holm, welch
from archline.fit.regress.synthetic import GTX580, synthetic_results, write_results_csv
from tests.support.datasets import part_csv


def test_welch_satterthwaite_and_holm_by_hand() -> None:
    from scipy import stats

    # equal standard errors 0.01 and 16 residual df each: t = 0.05 / sqrt(2e-4), df = 4 / (1/16 + 1/16) = 32
    t, df, p = welch(1.05, 0.01, 16, 1.0, 0.01, 16)
    assert t == pytest.approx(0.05 / math.sqrt(2e-4)) and df == pytest.approx(32.0)
    assert p == pytest.approx(2 * stats.t.sf(3.5355339, 32), rel=1e-6)
    # unequal: df = (0.01^2 + 0.02^2)^2 / (0.01^4/10 + 0.02^4/40) = 25e-8 / 5e-9 = 50
    assert welch(1.0, 0.01, 10, 1.0, 0.02, 40)[1] == pytest.approx(50.0)
    # Holm: sorted 0.01 x3 = 0.03, 0.03 x2 = 0.06, 0.04 x1 -> max(0.06, 0.04) = 0.06
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])


def _gv(name: str, value: float, se: float) -> GroupValue:
    return GroupValue(name, value, se, (value - 2 * se, value + 2 * se), 30, 32)


def test_flag_is_against_the_median_of_the_others() -> None:
    c = compare_values("eps_mem", "J/byte", [_gv("n1", 1.00, 0.005), _gv("n2", 1.00, 0.005),
                                             _gv("n3", 1.05, 0.005), _gv("n4", 0.95, 0.005)], 0.05)
    assert c.flagged == ["n3", "n4"]
    sig = {(p.a, p.b) for p in c.pairs if p.significant}
    assert sig == {("n1", "n3"), ("n1", "n4"), ("n2", "n3"), ("n2", "n4"), ("n3", "n4")}
    assert c.spread["range_rel"] == pytest.approx(0.10) and c.spread["cochran_p"] < 1e-6
    # ten nodes, one 10% high: only that one is flagged (a mean of the others would be pulled towards it)
    vals = [_gv(f"n{i:02d}", 1.0 + 0.002 * ((-1) ** i), 0.005) for i in range(9)] + [_gv("n09", 1.10, 0.005)]
    assert compare_values("eps_mem", "J/byte", vals, 0.05).flagged == ["n09"]
    # identical within noise: nothing flagged, heterogeneity not significant
    c = compare_values("pi0", "W", [_gv("a", 122.0, 0.3), _gv("b", 122.2, 0.3), _gv("c", 121.9, 0.3)], 0.05)
    assert c.flagged == [] and not any(p.significant for p in c.pairs) and c.spread["cochran_p"] > 0.05


def _hosts(tmp: Path, factors: dict[str, float]) -> Path:
    import pandas as pd

    frames = []
    for i, (host, f) in enumerate(factors.items()):
        plat = replace(GTX580, eps_mem_j_per_byte=GTX580.eps_mem_j_per_byte * f)
        df = synthetic_results(plat, n_sp=25, n_dp=36, n_l1=0, n_l2=0, n_rand=0, noise=0.005, seed=10 + i)
        df["host"] = host
        frames.append(df)
    return write_results_csv(pd.concat(frames, ignore_index=True), tmp / "hosts.csv")


def test_compare_by_host_on_synthetic_nodes(tmp_path: Path, run_cli: Callable[..., object]) -> None:
    """S1 Table 4's GTX 580 on four hosts, eps_mem x1.00, x1.00, x1.05, x0.95, 0.5% noise."""
    path = _hosts(tmp_path, {"node01": 1.0, "node02": 1.0, "node03": 1.05, "node04": 0.95})
    cmp = compare_files([path], "host")
    (block,) = cmp.blocks
    coefs = {c.name: c for c in block.coefficients}
    assert coefs["eps_mem"].flagged == ["node03", "node04"]
    assert [round(v.value / GTX580.eps_mem_j_per_byte, 2) for v in coefs["eps_mem"].values] == \
        [1.0, 1.01, 1.04, 0.96]                     # the fits' values, within their CIs of x1.00, x1.05, x0.95
    r = run_cli("compare", str(path), "--by", "host", "--figure", str(tmp_path / "c.png"))
    assert r.exit_code == 0, r.stderr  # type: ignore[attr-defined]
    assert "Welch t-test" in r.stdout and "Holm" in r.stdout and "Cochran" in r.stdout  # type: ignore
    assert "differs: node03 (p " in r.stdout  # type: ignore[attr-defined]
    j = json.loads(run_cli("compare", str(path), "--by", "host", "--format", "json").stdout)  # type: ignore
    assert j["schema"] == "archline.compare/1" and "Holm" in j["tests"]["flag"]
    for argv, needle in ((["--by", "run", "--model", "auto"], "Invalid value"),
                         (["--by", "host", "--where", "host=nosuch"], "no rows match")):
        r = run_cli("compare", str(path), *argv)
        assert r.exit_code == 2 and needle in r.stderr  # type: ignore[attr-defined]


@pytest.mark.parametrize("n_hosts", [2, 12])
def test_compare_figure_has_no_overlaps(tmp_path: Path, n_hosts: int) -> None:
    from archline.fit.figure_layout import overlaps, pyplot
    from archline.fit.plots.compare import draw_compare

    path = _hosts(tmp_path, {f"cluster-node{i:03d}": 1.0 + 0.01 * (i % 3) for i in range(n_hosts)})
    fig = draw_compare(compare_files([path], "host"))
    try:
        assert overlaps(fig) == []
    finally:
        pyplot().close(fig)  # type: ignore[arg-type]


# --- folded from test_breaker28c_compare.py (a review round's regression tests) ----------------------------------
# Breaker 28c (archline compare, the source check of archline fit): a run written in kJ passed compare
# silently (its host's mean mixed it in, the between-run variance hid it); a cell fit's non-physical warning was
# lost; the unit-slip factor was wrong where sources share only some configurations, and a kJ slip was named for
# a Wh one; an outlier of 0.8x was called a unit slip; a signal after the outputs killed the process by the
# signal itself; click's multi-line usage errors.


def _warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("archline: warning:")]


def _fleet(tmp: Path, edit: dict[tuple[str, str], str]) -> Path:
    """A data set of 4 hosts x 3 runs of the GTX 580; ``edit[(host, run)]`` = "kJ" (energy written in kJ) or
    "shuffle" (its energies shuffled over the rows)."""
    from archline.formats.dataset import write_dataset

    srcs = []
    for i in range(4):
        for k in range(3):
            host, run = f"n{i}", f"r{k}"
            p = part_csv(tmp, f"{host}{run}", GTX580, host, run, seed=10 * i + k)
            f = pd.read_csv(p, dtype=str)
            f["config_hash"] = f"hash-{run}"          # a point is (host, config_hash, point_id): one per run
            how = edit.get((host, run))
            if how:
                e = f["energy_j"].astype(float).to_numpy()
                e = e / 1000 if how == "kJ" else np.random.default_rng(i).permutation(e)
                f["energy_j"] = [repr(float(x)) for x in e]
            f.to_csv(p, index=False)
            srcs.append(p)
    write_dataset(srcs, tmp / "fleet")
    return tmp / "fleet"


# --- 1. a run in the wrong unit -------------------------------------------------------------------------------

def test_compare_names_a_run_in_kj_and_calls_the_comparison_unreliable(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    fleet = _fleet(tmp_path, {("n3", "r1"): "kJ"})
    r = run_cli("compare", str(tmp_path / "fleet"), "--by", "host")
    assert r.exit_code == 0, r.stderr
    named = [w for w in _warnings(r.stderr) if "host=n3/run_id=r1 (" in w and "its energy is" in w]
    assert len(named) == 1 and "kJ written as J" in named[0], r.stderr
    m = re.search(r"its energy is ([0-9.e+-]+)x", named[0])
    assert m is not None and 0.0009 < float(m.group(1)) < 0.0011, named[0]
    assert "UNRELIABLE" in r.stdout and "the comparison is unreliable" in r.stdout, r.stdout
    j = run_cli("compare", str(fleet), "--by", "host", "--format", "json")
    data = json.loads(j.stdout)
    assert any("host=n3/run_id=r1" in w for w in data["warnings"]), data["warnings"]
    block = data["blocks"][0]
    assert block["unreliable"] and block["off_sources"][0]["source"] == "host=n3/run_id=r1"


def test_compare_of_a_clean_fleet_warns_nothing(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _fleet(tmp_path, {})
    r = run_cli("compare", str(tmp_path / "fleet"), "--by", "host")
    assert r.exit_code == 0, r.stderr
    assert _warnings(r.stderr) == [] and "UNRELIABLE" not in r.stdout, r.stderr + r.stdout


# --- 2. a cell's non-physical fit -------------------------------------------------------------------------------

def test_compare_carries_a_cells_non_physical_fit_naming_the_cell(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _fleet(tmp_path, {("n2", "r0"): "shuffle", ("n2", "r1"): "shuffle", ("n2", "r2"): "shuffle"})
    r = run_cli("compare", str(tmp_path / "fleet"), "--by", "host")
    assert r.exit_code == 0, r.stderr
    said = [w for w in _warnings(r.stderr) if "non-physical fit" in w]
    assert said and all(re.search(r"gtx580: n2 r\d: non-physical fit", w) for w in said), r.stderr
    assert "UNRELIABLE" in r.stdout


# --- 3. the unit-slip factor where sources share only some configurations --------------------------------------

def _part(tmp: Path, name: str, seed: int, keep: float, *, energy: float = 1.0, time: float = 1.0) -> Path:
    f = synthetic_results(GTX580, seed=seed, n_l1=0, n_l2=0, n_rand=0)
    f = f[np.random.default_rng(seed + 100).random(len(f)) < keep].copy()
    f["energy_j"], f["time_s"] = f["energy_j"] * energy, f["time_s"] * time
    return write_results_csv(f, tmp / name)


@pytest.mark.parametrize(("scale", "factor", "slip"), [(1e-3, 1e-3, "kJ written as J"),
                                                       (1 / 3600, 1 / 3600, "Wh written as J")])
def test_the_slip_factor_is_the_median_over_the_configurations_shared_with_the_majority(
        tmp_path: Path, scale: float, factor: float, slip: str) -> None:
    from archline.fit.regress.api import FitOptions, fit_files

    files = [_part(tmp_path, f"c{i}.csv", 4 + i, 0.5) for i in range(3)] + [_part(tmp_path, "bad.csv", 9, 0.3,
                                                                                   energy=scale)]
    off = fit_files(files, FitOptions(model="basic"))[0].extra["off_sources"]
    assert len(off) == 1 and off[0]["source"].endswith("bad.csv"), off
    assert off[0]["factor"] == pytest.approx(factor, rel=0.05) and off[0]["slip"] == slip, off


def test_a_factor_between_known_slips_is_named_as_none() -> None:
    from archline.fit.regress.sources import unit_slip

    assert unit_slip("energy", 1e-3 * 1.3) == "kJ written as J"       # a host 30% off, still a kJ slip
    assert unit_slip("energy", 1.8e-3) is None and unit_slip("energy", 5.5e-4) is None
    assert unit_slip("energy", 2.9e-4) == "Wh written as J"


# --- 4. an outlier is called a unit slip only near a slip's factor ---------------------------------------------

@pytest.mark.parametrize(("ratio", "slip"), [(0.785, False), (1.18, False), (1.02e-3, True), (3500.0, False)])
def test_an_outlier_suggests_a_unit_slip_only_near_a_slip_factor(ratio: float, slip: bool) -> None:
    from archline.fit.regress.outliers import Outlier

    msg = Outlier("f.csv:3", {"kernel": "k"}, 1, ratio, 9.0).message()
    assert ("unit slip" in msg) is slip and "check or drop that row" in msg, msg


# --- 5. a signal while the process exits --------------------------------------------------------------------

@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_a_signal_after_the_command_exits_130_saying_interrupted(sig: str) -> None:
    import subprocess
    import sys

    # an exit function sends the signal: after the command and its outputs, while the process ends
    code = ("import atexit, os, signal, sys; sys.argv = ['archline', '--version']; "
            f"atexit.register(lambda: os.kill(os.getpid(), signal.{sig})); "
            "from archline.cli.main import main; sys.exit(main())")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 130, (p.returncode, p.stderr)
    assert p.stderr.strip().splitlines()[-1] == "archline: interrupted", p.stderr


# --- 6. click's usage errors on one line ------------------------------------------------------------------------

def test_a_missing_choice_option_is_one_line(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    r = run_cli("compare", str(tmp_path))
    assert r.exit_code == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("archline: error:") and "host, run, platform" in lines[0], r.stderr
