"""`archline predict` reads hardware counters by the thesis's recipe (S1 §6.2, seed_tables T14; Q103, Q104)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from archline.fit.analyses.choi import app_predict as ap
from archline.formats.app_counts import read_counts
from archline.formats.counters import recipe as cr
from archline.formats.platforms.profiles import load_platform
from archline.model.errors import ArchlineFitError

EVENTS = """==123== Profiling result:
"Device","Kernel","Invocations","Event Name","Min","Max","Avg","Total"
"GK20A (0)","fmm_u",2,"l1_global_load_hit",100,100,100,200
"GK20A (0)","fmm_u",2,"l2_subp0_read_l1_hit_sectors",50,50,50,100
"GK20A (0)","fmm_u",2,"l2_subp0_total_read_sector_queries",80,80,80,160
"GK20A (0)","fmm_u",2,"fb_subp0_read_sectors",15,15,15,30
"GK20A (0)","fmm_u",2,"fb_subp1_read_sectors",15,15,15,30
"GK20A (0)","fmm_u",2,"l2_subp0_total_write_sector_queries",5,5,5,10
"GK20A (0)","fmm_u",2,"l1_shared_load_transactions",10,10,10,20
"GK20A (0)","fmm_u",2,"gst_request",1,1,1,2
"Device","Kernel","Invocations","Metric Name","Metric Description","Min","Max","Avg"
"GK20A (0)","fmm_u",2,"flop_count_sp_fma","FMA",1000,1000,1000
"GK20A (0)","fmm_u",2,"flop_count_sp_add","add",300,300,300
"GK20A (0)","fmm_u",2,"inst_integer","Int",500,500,500
"GK20A (0)","fmm_u",2,"achieved_occupancy","Occ",0.5,0.5,0.5
"""


def test_q103_q104_recipe_multipliers() -> None:
    """Q103: an L1 hit is one 128-byte line; Q104: L2 and DRAM sectors are 32 bytes (S1 §6.2)."""
    assert cr.rule("l1_global_load_hit") == ("bytes_l1", 128.0)
    assert cr.rule("l2_subp3_read_l1_hit_sectors") == ("bytes_l2", 32.0)
    assert cr.rule("fb_subp1_read_sectors") == ("bytes_mem", 32.0)


def test_events_export_by_the_recipe(tmp_path: Path) -> None:
    """Events and metrics sections of one nvprof export: L1 200 x 128 B, L2 hits 100 x 32 B, DRAM (30 + 30) x 32 B
    read + 10 x 32 B written, shared 20 x 128 B, flops 2 x (2 x 1000 + 300), integer 2 x 500. The 160 L2 sector
    requests (L1 misses) equal the L2 hits plus DRAM reads, and are not charged again."""
    f = tmp_path / "ev.csv"
    f.write_text(EVENTS)
    (row,) = read_counts(f)
    assert row.counts == {"bytes_l1": 200 * 128, "bytes_l2": 100 * 32, "bytes_mem": 70 * 32,
                          "bytes_shared": 20 * 128, "flops_sp": 2 * (2 * 1000 + 300), "int_ops": 1000}
    assert any("requested 5120 B" in n and "served 5120 B" in n for n in row.notes)


def test_wide_counters_predict_gtx580(tmp_path: Path, run_cli: Callable[..., object]) -> None:
    """Counter columns, one row per kernel, with the GTX 580 costs (S1 Table 4: eps_s 99.7 pJ, eps_mem 513 pJ/B,
    pi0 122 W; Table 5: eps_L2 257, eps_L1 149 pJ/B)."""
    f = tmp_path / "w.csv"
    f.write_text("name,time_s,l1_global_load_hit,l2_subp0_read_l1_hit_sectors,l2_subp1_read_l1_hit_sectors,"
                 "fb_subp0_read_sectors,flop_count_sp\nk,0.5,1e6,2e6,1e6,4e6,1e11\n")
    (p,) = ap.predict(read_counts(f), load_platform("gtx580"))
    expect = 1e11 * 99.7e-12 + 4e6 * 32 * 513e-12 + 3e6 * 32 * 257e-12 + 1e6 * 128 * 149e-12 + 122 * 0.5
    assert p.energy_j == pytest.approx(expect)
    r = run_cli("predict", str(f), "--costs", "gtx580", "--format", "json")
    d = json.loads(r.stdout)["predictions"][0]                             # type: ignore[attr-defined]
    assert d["energy_j"] == pytest.approx(expect) and "S1 §6.2" in d["notes"][0]
    r = run_cli("predict", str(f), "--costs", "gtx580")
    assert "note: counts from hardware counters by the thesis recipe" in r.stdout  # type: ignore[attr-defined]


@pytest.mark.parametrize(("body", "message"), [
    ("name,l1_global_load_hit,frob_sectors\nk,1,2\n", "column 'frob_sectors' is neither"),
    ("name,flop_count_sp,flop_count_sp_fma\nk,1,2\n", "both given"),
    ("name,l1_global_load_hit\nk,-3\n", "non-negative"),
    ('"Device","Kernel","Invocations","Event Name","Min","Max","Avg","Total"\n"d","k",1,"l1_hit_x",1,1,1,1\n',
     "unknown counter 'l1_hit_x'"),
    ('"Device","Kernel","Invocations","Event Name","Min","Max","Avg","Total"\n"d","k",1,"l1_global_load_hit",1,1,x,\n',
     "no number"),
])
def test_malformed_counter_files_one_line(tmp_path: Path, body: str, message: str,
                                          run_cli: Callable[..., object]) -> None:
    f = tmp_path / "bad.csv"
    f.write_text(body)
    with pytest.raises(ArchlineFitError, match=message):
        read_counts(f)
    r = run_cli("predict", str(f), "--costs", "gtx580")
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and str(f) in r.stderr  # type: ignore[attr-defined]
