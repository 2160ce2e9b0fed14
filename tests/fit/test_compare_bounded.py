"""``archline compare`` from configuration statistics (fit/analyses/choi/compare.py): the files' comparison, read
in bounded memory and split into cells by configuration, equals the row-wise frame's; beyond the row bound the
coefficients are those of every row and a note says a sample was kept; identical cells make the ANOVA F
undefined, not infinite; a partition directory that disagrees with the column inside its file is refused."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from archline.fit.analyses.choi.compare import Cell, Comparison, compare_cells, compare_files, compare_frame
from archline.fit.analyses.choi.compare_report import to_table
from archline.fit.io.results import read_results
from archline.fit.regress.synthetic import GTX580, synthetic_results
from archline.formats.results_check import SchemaError


def _fleet(root: Path, hosts: int = 3, runs: int = 2, repeats: int = 3, in_file: bool = False) -> Path:
    """A data set as ``lab collect`` writes it: platform=gtx580/host=<h>/run_id=<r>/part-0.parquet, node02's
    eps_mem 5% high; with ``in_file`` the files keep their host and run_id columns (agreeing)."""
    for h in range(hosts):
        plat = replace(GTX580, eps_mem_j_per_byte=GTX580.eps_mem_j_per_byte * (1.05 if h == 2 else 1.0))
        for r in range(runs):
            d = root / "platform=gtx580" / f"host=node{h:02d}" / f"run_id=run{r}"
            d.mkdir(parents=True)
            f = synthetic_results(plat, n_sp=10, n_dp=10, n_l1=0, n_l2=0, n_rand=0, seed=10 * h + r,
                                  n_repeats=repeats)
            f["host"], f["run_id"] = f"node{h:02d}", f"run{r}"
            f.drop(columns=["platform"] if in_file else ["platform", "host", "run_id"]).to_parquet(
                d / "part-0.parquet", index=False)
    return root


def _numbers(cmp: Comparison) -> dict[str, float]:
    """Every coefficient's group value, standard error and p, by (block, coefficient, group)."""
    out: dict[str, float] = {}
    for b in cmp.blocks:
        for c in b.coefficients:
            for v in c.values:
                out[f"{b.scope}/{c.name}/{v.group}/value"] = v.value
                out[f"{b.scope}/{c.name}/{v.group}/stderr"] = v.stderr if v.stderr is not None else math.nan
                out[f"{b.scope}/{c.name}/{v.group}/p"] = v.p_vs_others if v.p_vs_others is not None else math.nan
    return out


def _same(a: dict[str, float], b: dict[str, float], rel: float = 1e-9) -> None:
    assert a.keys() == b.keys()
    for k, x in a.items():
        assert b[k] == pytest.approx(x, rel=rel, abs=0, nan_ok=True), k


@pytest.mark.parametrize(("by", "method"), [("host", "two-stage"), ("run", "two-stage"), ("platform", "two-stage"),
                                            ("host", "pooled")])
def test_files_equal_the_row_wise_frame(tmp_path: Path, by: str, method: str) -> None:
    root = _fleet(tmp_path / "fleet")
    bounded = compare_files([root], by, method=method)
    frame = compare_frame(read_results([root]).frame, by, method=method)
    assert [b.groups for b in bounded.blocks] == [b.groups for b in frame.blocks]
    assert [b.n_cells for b in bounded.blocks] == [b.n_cells for b in frame.blocks]
    _same(_numbers(frame), _numbers(bounded))
    if by == "host" and method == "two-stage":
        (b,) = bounded.blocks
        assert b.two_stage and b.n_cells == {"node00": 2, "node01": 2, "node02": 2}
        assert next(c for c in b.coefficients if c.name == "eps_mem").flagged == ["node02"]


def test_beyond_the_row_bound_every_row_counts_and_a_note_says_so(tmp_path: Path) -> None:
    root = _fleet(tmp_path / "fleet", repeats=8)          # 3 x 2 x 20 x 8 = 960 rows
    every = compare_files([root], "host")
    bounded = compare_files([root], "host", max_rows=100)
    _same(_numbers(every), _numbers(bounded))
    assert not any("uniform sample" in n for b in every.blocks for n in b.notes)
    note = [n for n in bounded.blocks[0].notes if "uniform sample" in n]
    assert note and note[0].startswith("960 rows") and "of 100 rows" in note[0]
    (b,) = bounded.blocks
    assert {v.n_points for c in b.coefficients for v in c.values} == {320}    # every row, not the sample's


def test_identical_cells_make_the_anova_f_undefined() -> None:
    ulp = math.ulp(2.5)
    cells = {g: [Cell(f"r{i}", 2.5 + (ulp if (g, i) == ("b", 1) else 0.0), 0.0, 100, 96) for i in range(3)]
             for g in ("a", "b", "c", "d")}
    cc, ok = compare_cells("pi0", "W", cells, 0.05, ("hosts", "runs"))
    assert ok and cc.spread["anova_f"] is None and cc.spread["anova_p"] is None
    assert cc.flagged == [] and not any(p.significant for p in cc.pairs)
    assert cc.notes and "undefined" in cc.notes[0]
    assert cc.spread["range_rel"] == pytest.approx(0.0, abs=1e-15)
    # the cells of each group equal, c not: a difference beyond doubt (F infinite), the others' median equal
    cells["c"] = [Cell(f"r{i}", 2.6, 0.0, 100, 96) for i in range(3)]
    cc, _ = compare_cells("pi0", "W", cells, 0.05, ("hosts", "runs"))
    assert cc.spread["anova_f"] == math.inf and cc.spread["anova_p"] == 0.0 and not cc.notes
    assert cc.flagged == ["c"]
    assert {(p.a, p.b) for p in cc.pairs if p.significant} == {("a", "c"), ("b", "c"), ("c", "d")}


def test_identical_fleet_end_to_end_reports_no_f(tmp_path: Path) -> None:
    """Every cell the same rows: every coefficient's F undefined, said in words, nothing flagged."""
    f = synthetic_results(GTX580, n_sp=10, n_dp=10, n_l1=0, n_l2=0, n_rand=0, seed=1, n_repeats=2)
    for h in range(3):
        for r in range(2):
            d = tmp_path / "same" / "platform=gtx580" / f"host=node{h}" / f"run_id=run{r}"
            d.mkdir(parents=True)
            f.drop(columns=["platform", "host", "run_id"]).to_parquet(d / "part-0.parquet", index=False)
    cmp = compare_files([tmp_path / "same"], "host")
    (b,) = cmp.blocks
    assert b.two_stage and b.coefficients
    for c in b.coefficients:
        assert c.spread["anova_f"] is None and c.flagged == [], c.name
    text = to_table(cmp)
    assert "ANOVA F undefined" in text and "ANOVA F inf" not in text
    assert json.loads(json.dumps(cmp.as_json(), default=float))["blocks"][0]["coefficients"][0]["notes"]


def test_partition_and_column_agreeing_is_fine_disagreeing_is_refused(tmp_path: Path,
                                                                        run_cli: Callable[..., object]) -> None:
    root = _fleet(tmp_path / "fleet", hosts=2, in_file=True)
    assert compare_files([root], "run").blocks[0].n_cells == {"run0": 2, "run1": 2}
    # run1's file of node01 says run0 inside: read as run0, it would merge into run0's cell
    part = root / "platform=gtx580" / "host=node01" / "run_id=run1" / "part-0.parquet"
    import pandas as pd

    f = pd.read_parquet(part)
    f["run_id"] = "run0"
    f.to_parquet(part, index=False)
    with pytest.raises(SchemaError, match=r"column run_id holds 'run0' but its directory says run_id=run1"):
        compare_files([root], "host")
    r = run_cli("compare", str(root), "--by", "host")
    assert r.exit_code == 2 and r.stderr.startswith("archline: error: ")  # type: ignore[attr-defined]
    assert len(r.stderr.strip().splitlines()) == 1 and "run_id=run1" in r.stderr  # type: ignore[attr-defined]
    # an empty cell in the column is a disagreement too (the reader refuses it too)
    f["run_id"] = [None] + ["run1"] * (len(f) - 1)
    f.to_parquet(part, index=False)
    with pytest.raises(SchemaError, match=r"is empty in 1 row\(s\)"):
        compare_files([root], "host")


def test_rows_without_the_group_column_are_refused(tmp_path: Path) -> None:
    from archline.fit.analyses.choi.compare import CompareError
    from archline.fit.regress.synthetic import write_results_csv

    f = synthetic_results(GTX580, n_sp=10, n_dp=10, n_l1=0, n_l2=0, n_rand=0, seed=1).drop(columns=["host"])
    path = write_results_csv(f, tmp_path / "r.csv")
    with pytest.raises(CompareError, match="no 'host' column"):
        compare_files([path], "host")
