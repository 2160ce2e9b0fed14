"""archline compare (fit/analyses/choi/compare.py): the Welch-Satterthwaite test and Holm's correction against values
worked by hand, the flag against the others' median (identical groups not flagged because others differ, one
outlier among ten found), and the figure free of overlaps."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from archline.fit.analyses.choi.compare import GroupValue, compare_files, compare_values, holm, welch
from archline.fit.regress.synthetic import GTX580, synthetic_results, write_results_csv


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
    from archline.fit.plots.compare import draw_compare
    from archline.fit.plots.layout import overlaps, pyplot

    path = _hosts(tmp_path, {f"cluster-node{i:03d}": 1.0 + 0.01 * (i % 3) for i in range(n_hosts)})
    fig = draw_compare(compare_files([path], "host"))
    try:
        assert overlaps(fig) == []
    finally:
        pyplot().close(fig)  # type: ignore[arg-type]
