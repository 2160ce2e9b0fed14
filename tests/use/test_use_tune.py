"""archline tune: DVFS setting choice and the S1 Table 8 evaluation (S1 §5.3.2; model.md §6.5).

The 16-setting data set follows S1 §5.3.1's design (per setting 25 SP + 36 DP intensity points, 23 integer,
16 shared-memory, 16 L2) with energies from eq.47/48 (model/dvfs.py) at ASSUMED Tegra-K1-like coefficients and
voltages; S1 Table 7 (the real settings and costs) is not in the seed. It is emulated data."""

from __future__ import annotations

import csv
import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from archline.fit.analyses.choi import dvfs_tune as dt
from archline.formats.platforms.profiles import load_platform
from archline.model.dvfs import costs_at, energy_j

Run = Callable[..., subprocess.CompletedProcess[str]]

TRUTH = {"c0_core_single": 28e-12, "delta_c0_core_double": 160e-12, "c0_mem": 220e-12,
         "c0_core_integer": 22e-12, "c0_core_sm": 9e-12, "c0_core_l2": 35e-12, "c1_core": 2.2, "c1_mem": 0.8,
         "pi_misc": 1.4}
SETTINGS_MHZ = [(852, 924), (756, 924), (180, 924), (852, 792), (612, 528), (540, 528), (612, 396), (852, 204),
                (72, 924), (396, 792), (468, 600), (684, 600), (324, 396), (252, 528), (804, 300), (108, 204)]
N_CORES = 192
BYTES_PER_CYCLE = 16.0


def core_v(f: float) -> float:
    return 0.80 + 0.30 * (f - 72.0) / (852.0 - 72.0)


def mem_v(f: float) -> float:
    return 1.20 + 0.15 * (f - 204.0) / (924.0 - 204.0)


def write_costs(path: Path, coeffs: dict[str, float] = TRUTH, with_tau: bool = False) -> Path:
    settings = []
    for fc, fm in SETTINGS_MHZ:
        s = {"core_mhz": fc, "mem_mhz": fm, "core_v": core_v(fc), "mem_v": mem_v(fm),
             **costs_at(coeffs, core_v(fc), mem_v(fm)).as_dict()}
        if with_tau:
            s["tau_flop_sp"] = 1 / (2 * N_CORES * fc * 1e6)
            s["tau_mem"] = 1 / (BYTES_PER_CYCLE * fm * 1e6)
        settings.append(s)
    path.write_text(json.dumps({"schema": "archline.costs/1", "platform": "tk1-synthetic", "model": "dvfs",
                                "emulated": True, "coefficients": {k: {"value": v} for k, v in coeffs.items()},
                                "settings": settings}))
    return path


def write_measured(path: Path, noise: float, seed: int = 0) -> Path:
    """S1 §5.3.1 design, energy from eq.47/48 with the true coefficients, times from the clocks."""
    rng = np.random.default_rng(seed)
    rows = []
    q0 = 2.0**26
    for fc, fm in SETTINGS_MHZ:
        vc, vm = core_v(fc), mem_v(fm)
        flop_rate = 2 * N_CORES * fc * 1e6
        byte_rate = BYTES_PER_CYCLE * fm * 1e6
        pts: list[tuple[str, str, str, dict[str, float], float]] = []
        for prec, n, rate in (("sp", 25, flop_rate), ("dp", 36, flop_rate / 24)):
            for i in 2.0 ** np.linspace(-3, 6, n):
                w = i * q0
                pts.append(("intensity", prec, "mem", {f"flops_{prec}": w, "bytes_mem": q0},
                            max(w / rate, q0 / byte_rate)))
        for x in q0 * np.linspace(1, 8, 23):
            pts.append(("int", "int32", "", {"int_ops": x}, x / (flop_rate / 2)))
        for x in q0 * np.linspace(1, 8, 16):
            pts.append(("cache", "sp", "shared", {"bytes_shared": x}, x / (4 * byte_rate)))
            pts.append(("cache", "sp", "l2", {"bytes_l2": x}, x / (2 * byte_rate)))
        for kernel, prec, level, counts, t in pts:
            t_m = t * (1 + noise * rng.standard_normal())
            e = float(energy_j(TRUTH, vc, vm, t_m, **counts)) * (1 + noise * rng.standard_normal())
            rows.append({"kernel": kernel, "precision": prec, "level": level, "core_mhz": fc, "mem_mhz": fm,
                         "core_v": vc, "mem_v": vm, "time_s": t_m, "energy_j": e, **counts})
    cols = sorted({k for r in rows for k in r})
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows(rows)
    return path


def test_use_tune_table8_format_16_settings(tmp_path: Path) -> None:
    """Table 8 layout (S1 Table 8: benchmark x {Model, Time Oracle}; mispredictions out of cases; energy lost
    mean/min/max %), on 16 settings and S1 §5.3.1's sample counts (25, 36, 23, 16, 16 per setting)."""
    platform = load_platform(str(write_costs(tmp_path / "c.json")))
    ev = dt.evaluate(platform, dt.read_measured(write_measured(tmp_path / "m.csv", noise=0.01)))
    assert [(r.benchmark, r.strategy) for r in ev.rows] == [
        (b, s) for b, _, _ in dt.BENCHMARKS for s in dt.STRATEGIES]
    assert [r.cases for r in ev.rows] == [25, 25, 36, 36, 23, 23, 16, 16, 16, 16]
    for r in ev.rows:
        assert 0 <= r.mispredictions <= r.cases
        if r.mispredictions:
            assert 0 < r.energy_lost_min_pct <= r.energy_lost_mean_pct <= r.energy_lost_max_pct
        else:
            assert r.energy_lost_mean_pct == r.energy_lost_min_pct == r.energy_lost_max_pct == 0
    model = {r.benchmark: r for r in ev.rows if r.strategy == "Model"}
    oracle = {r.benchmark: r for r in ev.rows if r.strategy == "Time Oracle"}
    # as in S1 Table 8: the model mispredicts less and loses less energy than racing to halt
    assert sum(r.mispredictions for r in model.values()) < sum(r.mispredictions for r in oracle.values())
    assert oracle["single-precision intensity"].energy_lost_mean_pct > model[
        "single-precision intensity"].energy_lost_mean_pct
    text = dt.format_table8(ev.rows)
    assert "0 (out of 25)" in text or "(out of 25)" in text


def test_use_tune_exact_model_never_mispredicts(tmp_path: Path) -> None:
    """Noise-free data and the true costs: every Model choice is the measured optimum (0 mispredictions)."""
    platform = load_platform(str(write_costs(tmp_path / "c.json")))
    ev = dt.evaluate(platform, dt.read_measured(write_measured(tmp_path / "m.csv", noise=0.0)))
    for r in ev.rows:
        if r.strategy == "Model":
            assert (r.mispredictions, r.energy_lost_max_pct) == (0, 0.0)
    assert any(r.mispredictions > 0 for r in ev.rows if r.strategy == "Time Oracle")


def test_use_tune_energy_lost_by_hand(tmp_path: Path) -> None:
    """Two settings, one case: E_meas 10 J (fast) vs 8 J (slow): racing loses 100*(10-8)/8 = 25 %."""
    costs = {"schema": "archline.costs/1", "platform": "two", "model": "dvfs", "settings": [
        {"core_mhz": 800, "mem_mhz": 900, "eps_flop_sp": 1e-9, "eps_mem": 1e-9, "pi0": 1.0},
        {"core_mhz": 400, "mem_mhz": 900, "eps_flop_sp": 0.5e-9, "eps_mem": 1e-9, "pi0": 1.0}]}
    (tmp_path / "c.json").write_text(json.dumps(costs))
    (tmp_path / "m.csv").write_text("kernel,precision,level,core_mhz,mem_mhz,time_s,energy_j,flops_sp,bytes_mem\n"
                                    "intensity,sp,mem,800,900,1.0,10.0,1e9,1e9\n"
                                    "intensity,sp,mem,400,900,2.0,8.0,1e9,1e9\n")
    ev = dt.evaluate(load_platform(str(tmp_path / "c.json")), dt.read_measured(tmp_path / "m.csv"))
    rows = {r.strategy: r for r in ev.rows}
    # model: 800 -> 1+1+1 = 3 J, 400 -> 0.5+1+2 = 3.5 J: the model picks 800 MHz and misses too
    assert (rows["Time Oracle"].mispredictions, rows["Time Oracle"].energy_lost_mean_pct) == (1, 25.0)
    assert (rows["Model"].mispredictions, rows["Model"].energy_lost_max_pct) == (1, 25.0)


def test_use_tune_rank_at_intensity(tmp_path: Path) -> None:
    """E/W = eps_flop + eps_mem/I + pi0*max(tau_flop, tau_mem/I) at each setting; race-to-halt = fastest."""
    platform = load_platform(str(write_costs(tmp_path / "c.json")))
    ranked = dt.rank_settings(platform, 4.0, "sp", flops_per_cycle=2 * N_CORES, bytes_per_cycle=16)
    assert len(ranked) == 16
    for r in ranked:
        fc, fm = r.setting.core_mhz, r.setting.mem_mhz
        c = costs_at(TRUTH, core_v(fc), mem_v(fm))
        t = max(1 / (2 * N_CORES * fc * 1e6), 1 / (16 * fm * 1e6) / 4.0)
        assert r.energy_per_flop_j == pytest.approx(c.eps_flop_sp + c.eps_mem / 4.0 + c.pi0 * t)
    assert ranked[0].energy_per_flop_j == min(r.energy_per_flop_j for r in ranked)
    assert dt.race_to_halt(ranked).time_per_flop_s == min(r.time_per_flop_s for r in ranked)


def test_use_tune_cli(tmp_path: Path, archline_run: Run) -> None:
    c = write_costs(tmp_path / "c.json", with_tau=True)
    m = write_measured(tmp_path / "m.csv", noise=0.01)
    out = archline_run("tune", "--costs", str(c), "--intensity", "2", "--measured", str(m))
    assert out.returncode == 0, out.stderr
    assert "model choice" in out.stdout and "race-to-halt" in out.stdout
    assert "(out of 36)" in out.stdout and "Time Oracle" in out.stdout and "S1 Table 8" in out.stdout
    js = archline_run("tune", "--costs", str(c), "--intensity", "2", "--format", "json")
    d = json.loads(js.stdout)
    assert d["emulated"] is True and len(d["settings"]) == 16
    assert d["energy_saving_vs_race_to_halt_pct"] >= 0


@pytest.mark.parametrize(("mutate", "args", "needle"), [
    ("drop_eps_mem", ("--intensity", "2", "--flops-per-cycle", "384", "--bytes-per-cycle", "16"), "eps_mem"),
    ("none", ("--intensity", "2"), "--flops-per-cycle"),
    ("none", ("--intensity", "-1", "--flops-per-cycle", "384", "--bytes-per-cycle", "16"), "positive"),
])
def test_use_tune_bad_input(tmp_path: Path, archline_run: Run, mutate: str, args: tuple[str, ...],
                            needle: str) -> None:
    c = write_costs(tmp_path / "c.json")
    if mutate == "drop_eps_mem":
        d = json.loads(c.read_text())
        for s in d["settings"]:
            del s["eps_mem"]
        c.write_text(json.dumps(d))
    out = archline_run("tune", "--costs", str(c), *args)
    assert out.returncode != 0 and needle in out.stderr and "Traceback" not in out.stderr


def test_use_tune_needs_dvfs_table(archline_run: Run) -> None:
    out = archline_run("tune", "--costs", "gtx580", "--intensity", "2")
    assert out.returncode != 0 and "settings" in out.stderr and "Traceback" not in out.stderr


def test_use_tune_on_fit_synthetic_set(tmp_path: Path) -> None:
    """When the fit issue's generator is present: its 16-setting set through the same evaluation."""
    synth = pytest.importorskip("archline.fit.regress.synthetic")
    if not hasattr(synth, "synthetic_dvfs"):
        pytest.skip("fit.synthetic has no synthetic_dvfs")
    df = synth.synthetic_dvfs(seed=1)
    m = tmp_path / "m.csv"
    df.to_csv(m, index=False)
    settings = []
    for fc, fm in synth.DVFS_SETTINGS_MHZ:
        vc, vm = synth.core_volt_v(fc), synth.mem_volt_v(fm, 0.15)
        settings.append({"core_mhz": fc, "mem_mhz": fm, **costs_at(synth.DVFS_TRUTH, vc, vm).as_dict()})
    c = tmp_path / "c.json"
    c.write_text(json.dumps({"schema": "archline.costs/1", "platform": "syn", "model": "dvfs",
                             "settings": settings}))
    ev = dt.evaluate(load_platform(str(c)), dt.read_measured(m))
    assert [r.cases for r in ev.rows if r.strategy == "Model"] == [25, 36, 23, 16, 16]
