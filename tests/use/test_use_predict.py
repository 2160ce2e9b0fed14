"""archline predict: E = sum_i N_i*eps_i + pi0*T (S1 Ch. 6, S0 Sec. V-C; model.md §6.6).

Costs are those of the shipped gtx580 profile (S1 Table 4, Table 5) or hand-made cost tables; DVFS costs come
from eq.44-46 (model/dvfs.py) at Jetson TK1 clocks of S1 Table 10."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from archline.fit.analyses.choi import app_predict as ap
from archline.formats.app_counts import read_counts
from archline.formats.platforms.profiles import load_platform
from archline.model.dvfs import costs_at
from archline.model.hierarchy import model_time

Run = Callable[..., subprocess.CompletedProcess[str]]

COEFFS = {"c0_core_single": 20e-12, "delta_c0_core_double": 60e-12, "c0_mem": 300e-12, "c1_core": 2.0,
          "c1_mem": 1.0, "c0_core_integer": 15e-12, "c0_core_sm": 10e-12, "c0_core_l2": 30e-12,
          "pi_misc": 1.5}


def _dvfs_table(tmp_path: Path, emulated: bool = True) -> Path:
    settings = []
    for core_mhz, mem_mhz, core_v, mem_v in [(852, 924, 1.09, 1.2), (612, 528, 0.9, 1.0),
                                             (180, 924, 0.8, 1.2)]:
        c = costs_at(COEFFS, core_v, mem_v).as_dict()
        settings.append({"core_mhz": core_mhz, "mem_mhz": mem_mhz, "core_v": core_v, "mem_v": mem_v, **c})
    table = {"schema": "archline.costs/1", "platform": "tk1-emulated", "model": "dvfs", "emulated": emulated,
             "coefficients": {k: {"value": v} for k, v in COEFFS.items()}, "settings": settings}
    p = tmp_path / "dvfs.json"
    p.write_text(json.dumps(table))
    return p


def test_use_predict_gtx580_by_hand(tmp_path: Path) -> None:
    """gtx580: eps_s = 99.7 pJ, eps_mem = 513 pJ/B, pi0 = 122 W (S1 Table 4); eps_L2 = 257, eps_L1 = 149 pJ/B
    (S1 Table 5)."""
    f = tmp_path / "c.csv"
    f.write_text("name,time_s,flops_sp,bytes_mem,bytes_l2,bytes_l1\nk,0.5,4e11,2e10,5e10,1e11\n")
    (p,) = ap.predict(read_counts(f), load_platform("gtx580"))
    assert p.terms_j["flops"] == pytest.approx(4e11 * 99.7e-12)
    assert p.terms_j["dram"] == pytest.approx(2e10 * 513e-12)
    assert p.terms_j["l2"] == pytest.approx(5e10 * 257e-12)
    assert p.terms_j["l1"] == pytest.approx(1e11 * 149e-12)
    assert p.terms_j["constant"] == pytest.approx(122.0 * 0.5)
    assert p.energy_j == pytest.approx(39.88 + 10.26 + 12.85 + 14.9 + 61.0)
    assert p.time_source == "measured"


def test_use_predict_model_time_when_no_time(tmp_path: Path) -> None:
    """Without time_s, T = max(W*tau_flop, Q*tau_mem) (S0 eq.3) with gtx580 peaks (S1 Table 3)."""
    f = tmp_path / "c.csv"
    f.write_text("flops_sp,bytes_mem\n1e12,1e11\n")
    (p,) = ap.predict(read_counts(f), load_platform("gtx580"))
    assert p.time_source == "model"
    assert p.time_s == pytest.approx(max(1e12 / 1581.06e9, 1e11 / 192.4e9))


def test_use_predict_dvfs_setting(tmp_path: Path) -> None:
    """A DVFS table: the row's clocks pick the setting; costs are eq.44-46 at its voltages."""
    table = _dvfs_table(tmp_path)
    f = tmp_path / "c.csv"
    f.write_text("name,core_mhz,mem_mhz,time_s,flops_sp,int_ops,bytes_mem,bytes_shared,bytes_l2\n"
                 "s5,612,528,0.2,1e9,2e8,3e8,4e8,5e8\n")
    (p,) = ap.predict(read_counts(f), load_platform(str(table)))
    vc, vm = 0.9, 1.0
    e = (1e9 * 20e-12 * vc**2 + 2e8 * 15e-12 * vc**2 + 3e8 * 300e-12 * vm**2 + 4e8 * 10e-12 * vc**2
         + 5e8 * 30e-12 * vc**2 + (2.0 * vc + 1.0 * vm + 1.5) * 0.2)
    assert p.energy_j == pytest.approx(e)
    assert p.setting["core_v"] == 0.9


def test_use_predict_nvprof_export(tmp_path: Path) -> None:
    f = tmp_path / "nvprof.csv"
    f.write_text('==1== Profiling result:\n'
                 '"Device","Kernel","Invocations","Metric Name","Metric Description","Min","Max","Avg"\n'
                 '"GK20A","p2p","2","flop_count_sp","Floating Point Operations(Single Precision)",5,5,5000\n'
                 '"GK20A","p2p","2","dram_read_transactions","Device Memory Read Transactions",10,10,100\n'
                 '"GK20A","p2p","2","dram_write_transactions","Device Memory Write Transactions",1,1,10\n')
    (row,) = read_counts(f)
    assert row.name == "p2p"
    assert row.counts == {"flops_sp": 10000.0, "bytes_mem": (200 + 20) * 32.0}


def test_use_predict_cli_json_and_plot(tmp_path: Path, archline_run: Run) -> None:
    table = _dvfs_table(tmp_path)
    f = tmp_path / "c.csv"
    f.write_text("name,core_mhz,mem_mhz,time_s,flops_sp,bytes_mem\n"
                 "a,852,924,0.1,1e9,1e8\nb,180,924,0.4,1e9,1e8\n")
    fig = tmp_path / "bars.png"
    out = archline_run("predict", str(f), "--costs", str(table), "--format", "json", "--plot", str(fig))
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    assert d["emulated"] is True and [p["name"] for p in d["predictions"]] == ["a", "b"]
    for p in d["predictions"]:
        assert sum(p["terms_j"].values()) == pytest.approx(p["energy_j"])
    assert fig.stat().st_size > 1000
    table_out = archline_run("predict", str(f), "--costs", str(table))
    assert table_out.returncode == 0 and "emulated" in table_out.stdout


@pytest.mark.parametrize(("content", "costs", "needle"), [
    ("name,flops_sp,gflops\nx,1,2\n", "gtx580", "unknown column(s) gflops"),
    ("name,flops_dp\nx,1e300\n", "gtx580", "not a physical count"),
    ("name,time_s,flops_sp\nx,1,-2\n", "gtx580", "non-negative"),
    ("name,time_s\nx,1\n", "gtx580", "no count column"),
])
def test_use_predict_bad_input(tmp_path: Path, archline_run: Run, content: str, costs: str,
                               needle: str) -> None:
    f = tmp_path / "c.csv"
    f.write_text(content)
    out = archline_run("predict", str(f), "--costs", costs)
    assert out.returncode != 0 and needle in out.stderr and "Traceback" not in out.stderr


def test_use_predict_dvfs_no_matching_setting(tmp_path: Path, archline_run: Run) -> None:
    table = _dvfs_table(tmp_path)
    f = tmp_path / "c.csv"
    f.write_text("name,core_mhz,mem_mhz,time_s,flops_sp\nx,999,999,1,1\n")
    out = archline_run("predict", str(f), "--costs", str(table))
    assert out.returncode != 0 and "none matches" in out.stderr and "Traceback" not in out.stderr


def test_use_predict_partial_energy_table_gives_time_and_names_the_missing_cost(tmp_path: Path,
                                                                                 archline_run: Run) -> None:
    """i7-950 has no eps_l2: the row's time stands (exit 0) and its energy is absent, naming eps_l2 (issue 34)."""
    f = tmp_path / "c.csv"
    f.write_text("name,time_s,bytes_l2\nx,1,2\n")
    out = archline_run("predict", str(f), "--costs", "i7-950", "--format", "json")
    assert out.returncode == 0, out.stderr
    p = json.loads(out.stdout)["predictions"][0]
    assert p["time_s"] == 1 and p["energy_j"] is None and "eps_l2" in p["energy_missing"]
    table = archline_run("predict", str(f), "--costs", "i7-950")
    assert table.returncode == 0 and "eps_l2" in table.stdout


TIME_TABLE = {"schema": "archline.costs/1", "platform": "toy", "model": "time", "emulated": True, "coefficients": {},
              "tau": {"tau_flop_dp": {"value": 1e-11}, "tau_mem": {"value": 1e-10}, "tau_int": {"value": 2e-11},
                      "tau_l1": {"value": 5e-12}, "tau_rand": {"value": 1e-7}}}


def test_use_predict_model_time_takes_every_tau_and_names_those_left_out(tmp_path: Path,
                                                                          archline_run: Run) -> None:
    """T = max over every counted component (model.md §3): random accesses, int ops and L1 bytes are timed by
    their taus; a count whose tau the table lacks (bytes_l2) is left out with a note, never silently 0."""
    table = tmp_path / "toy.json"
    table.write_text(json.dumps(TIME_TABLE))
    f = tmp_path / "c.csv"
    f.write_text("name,rand_accesses,int_ops,bytes_l1,flops_dp,bytes_mem,bytes_l2\nchase,1e6,0,0,0,0,0\n"
                 "ints,0,1e9,0,0,0,0\nl1,0,0,1e9,0,0,0\nmix,1e6,1e9,1e9,1e9,1e8,0\nl2,0,0,0,1,0,1e9\n")
    out = archline_run("predict", str(f), "--costs", str(table), "--format", "json")
    assert out.returncode == 0, out.stderr
    t = {p["name"]: p for p in json.loads(out.stdout)["predictions"]}
    assert t["chase"]["time_s"] == pytest.approx(0.1)         # 1e6 * 100 ns
    assert t["ints"]["time_s"] == pytest.approx(0.02)         # 1e9 * 20 ps
    assert t["l1"]["time_s"] == pytest.approx(0.005)          # 1e9 * 5 ps
    assert t["mix"]["time_s"] == pytest.approx(0.1)           # the largest component (random accesses)
    assert t["l2"]["time_s"] == pytest.approx(1e-11) and "tau_l2" in t["l2"]["notes"][0]
    text = archline_run("predict", str(f), "--costs", str(table))
    assert "N_rand*tau_rand" in text.stdout and "leaves out bytes_l2" in text.stdout


def test_model_time_sums_sp_and_dp_each_at_its_own_tau() -> None:
    t, notes = model_time({"flops_sp": 1e9, "flops_dp": 1e9, "bytes_mem": 1.0},
                             {"tau_flop_sp": 1e-11, "tau_flop_dp": 2e-11, "tau_mem": 1e-10}, "toy", "x")
    assert t == pytest.approx(0.03) and notes == []
