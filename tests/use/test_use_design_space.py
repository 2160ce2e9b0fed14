"""archline design-space: Elango et al. (S2 §4-6; model.md §12.3) on the paper's Nehalem-EX (S2 Tables III-VI,
§4.2; fit/data/elango_*.csv). Printed facts from S2 §4.2, §5, §6 (seed_tables T22, T23;
elango_design_space_results.csv)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from archline.fit.analyses.elango import design_space as d

Run = Callable[..., subprocess.CompletedProcess[str]]
M = d.nehalem_ex()


@pytest.mark.parametrize(("alpha", "cores"), [
    (0.01, 25),   # S2 §4.2 / §5: "a maximum of 25 cores would fit"
    (0.95, 1),    # S2 §4.2: "for alpha of 0.95, only one core"
    (0.93, 1),    # S2 §5: P = 1 for alpha above 0.93
    (0.92, 2),
    (0.75, 6),    # S2 §5: FFT compute-bound "alpha > 75%, cores < 6": 6 at exactly 0.75 ...
    (0.77, 5),    # ... and 5 just above (the floor crosses 6 at alpha = 0.7655); which roof holds there:
                  # test_use_design_fft_compute_bound_at_alpha
])
def test_use_design_cores_at_alpha(alpha: float, cores: int) -> None:
    assert M.cores_at_alpha(alpha) == cores


def test_use_design_compute_roof_alpha_001() -> None:
    """S2 §5: alpha = 0.01 gives 25 cores, a 226 GFLOP/s roof (9.04 x 25)."""
    assert 25 * M.flops_per_core(M.f_max_hz) == pytest.approx(226e9)


def test_use_design_perf_bounds() -> None:
    """S2 §5: CG 16.7 GFLOP/s (0.417 x 40 GB/s) for P >= 2, 9.04 for P = 1; FFT 45 GFLOP/s at 4 KB (1.125 x 40)."""
    ds = d.sweep("cg", M, freqs_hz=[M.f_max_hz])
    perf = {(p.llc_bytes, p.cores): p.perf_flop_per_s for p in ds.points}
    assert perf[(4096.0, 2)] == pytest.approx(16.67e9, rel=1e-3)
    assert perf[(4096.0, 25)] == pytest.approx(16.67e9, rel=1e-3)
    assert perf[(4096.0, 1)] == pytest.approx(9.04e9)
    fft = d.sweep("fft", M, llc_sizes_bytes=[4096.0], freqs_hz=[M.f_max_hz])
    assert max(p.perf_flop_per_s for p in fft.points) == pytest.approx(45e9)


def test_use_design_cg_best_energy() -> None:
    """S2 §6: "CG has the best upper bound on energy efficiency of 0.373 GFLOP/J for the cache size of 4KB with
    three cores at 1.26GHz" (with eps_flop proportional to V; see fit/analyses/elango/design_space.py)."""
    best = d.sweep("cg", M).best("energy")
    assert (best.llc_bytes, best.cores, best.freq_hz) == (4096.0, 3, 1.26e9)
    assert best.flop_per_j / 1e9 == pytest.approx(0.373, abs=5e-4)


@pytest.mark.parametrize("scaling", d.EPS_SCALINGS)
def test_use_design_fft_best_half_bound_reproduces_s2(scaling: str) -> None:
    """S2 §6: "FFT achieves its maximum energy efficiency for the cache size of 8MB at P = 10 and f = 1.26GHz".
    The half reading of the FFT bound (0.0625*log2 S flop/B) gives exactly that under every eps scaling."""
    best = d.sweep("fft", d.nehalem_ex(scaling), reading="half").best("energy")
    assert (best.llc_bytes, best.cores, best.freq_hz) == (8 * 2**20, 10, 1.26e9)


def test_use_design_fft_best_full_bound_differs() -> None:
    """The full reading (S2 Theorem 3.1 and §5's 0.125*log2 S) keeps the 8 MB LLC and 1.26 GHz but gives 19 cores,
    the most that stay compute-bound (8 MB: OI 2.625 flop/B, 105 GFLOP/s roof, 19 x 5.04 = 95.8 GFLOP/s): the
    contradiction with S2's P = 10 is the bound's reading, not the design space (docs/analyses.md)."""
    best = d.sweep("fft", M).best("energy")
    assert (best.llc_bytes, best.cores, best.freq_hz) == (8 * 2**20, 19, 1.26e9)
    assert d.sweep("fft", M, reading="full").reading == "full"


@pytest.mark.parametrize(("reading", "alpha", "cores", "compute_bound"), [
    # S2 §5: "when alpha goes above 75% and the number of cores drops below six, the algorithm becomes
    # compute-bound": the half reading crosses at alpha = 0.74 (6 cores) ...
    ("half", 0.70, 7, False),
    ("half", 0.75, 6, True),
    ("half", 0.77, 5, True),
    # ... the full reading is compute-bound from alpha ~ 0.5 (12 cores) on: S2's sentence does not hold for it.
    ("full", 0.25, 19, False),
    ("full", 0.50, 12, True),
    ("full", 0.75, 6, True),
])
def test_use_design_fft_compute_bound_at_alpha(reading: str, alpha: float, cores: int, compute_bound: bool) -> None:
    """FFT with every core that fits at alpha, at f_max: which roof holds, not only the core count."""
    p = d.at_alpha("fft", alpha, M, reading=reading)
    assert p.cores == cores
    assert p.bandwidth_bound is not compute_bound


def test_use_design_fft_oi_range_by_reading() -> None:
    """S2 §5: FFT's OI bound runs 1.125..2.875 flop/B over alpha 1%..95% with S = 2^9..2^23 words (the full
    reading); Fig. 4's text says "between 0.5 and 2", which is the half reading's 0.56..1.44."""
    from archline.fit.analyses.elango.oi_bounds import oi_upper_bound
    full = [oi_upper_bound("fft", 8 * 2**k).oi_upper_flop_per_byte for k in (9, 23)]
    half = [oi_upper_bound("fft", 8 * 2**k, reading="half").oi_upper_flop_per_byte for k in (9, 23)]
    assert full == [1.125, 2.875] and half == [0.5625, 1.4375]
    assert all(0.5 <= v <= 2 for v in half) and not all(0.5 <= v <= 2 for v in full)


@pytest.mark.parametrize(("scaling", "gflop_per_j"), [("v", 0.3732), ("v2", 0.4079), ("table6", 0.3873)])
def test_use_design_cg_optimum_by_eps_scaling(scaling: str, gflop_per_j: float) -> None:
    """S2 §6 prints 0.373 GFLOP/J (4 KB, 3 cores, 1.26 GHz); only eps ~ V gives it. S2's own law (energy per
    operation ~ V^2) gives 0.408 at the same point. The scaling is named in the notes and selectable."""
    ds = d.sweep("cg", d.nehalem_ex(scaling))
    best = ds.best("energy")
    assert (best.llc_bytes, best.cores, best.freq_hz) == (4096.0, 3, 1.26e9)
    assert best.flop_per_j / 1e9 == pytest.approx(gflop_per_j, abs=5e-5)
    assert any(f"scaled by '{scaling}'" in n for n in ds.notes)


def test_use_design_cg_case_label() -> None:
    """S2 §6 says "CG starts at case IV with P = 3". By S2's own case definitions, 3 cores on 4 KB are compute-bound
    at f_min (3 x 5.04 = 15.1 < 16.7 GFLOP/s) and bandwidth-bound at f_max (27.1 > 16.7): case III (an f_cutoff in
    between). archline labels it III; 4 cores are bandwidth-bound at every f, which is the half of case IV that
    holds."""
    best = d.sweep("cg", M).best("energy")
    assert d.case_of(M, best.oi_flop_per_byte, 3) == "III"
    assert 4 * M.flops_per_core(M.f_min_hz) > M.b_mem_byte_per_s * best.oi_flop_per_byte


def test_use_design_mm_always_compute_bound() -> None:
    """S2 §5-6: MM and J2D are always compute-bound (case II)."""
    for alg in ("matmul", "jacobi2d"):
        ds = d.sweep(alg, M)
        assert not any(p.bandwidth_bound for p in ds.points)


def test_use_design_cacti_extrapolation_stated() -> None:
    """CACTI areas stop at 8 MB (S2 Table V); 64 MB extrapolates to ~0.94 of the die, one core (S2 §4.2)."""
    area, ext = M.llc_area_mm2(64 * 2**20)
    assert ext and 0.93 < area / M.die_area_mm2 < 0.95 and M.max_cores(area) == 1
    assert M.llc_area_mm2(8 * 2**20) == (pytest.approx(93.191), False)
    assert M.llc_area_mm2(3 * 2**20)[0] == pytest.approx(39.858)
    ds = d.sweep("fft", M)
    assert any("EXTRAPOLATED" in n for n in ds.notes)


def test_use_design_cli(tmp_path: Path, archline_run: Run) -> None:
    fig = tmp_path / "map.png"
    out = archline_run("design-space", "cg", "--format", "json", "--plot", str(fig))
    assert out.returncode == 0, out.stderr
    js = json.loads(out.stdout)
    assert js["best"]["cores"] == 3 and js["best"]["flop_per_j"] == pytest.approx(0.373e9, rel=2e-3)
    assert any("EXTRAPOLATED" in n for n in js["notes"])
    assert fig.stat().st_size > 1000
    table = archline_run("design-space", "fft")
    assert table.returncode == 0 and "area extrapolated" in table.stdout


def test_use_design_user_machine(tmp_path: Path, archline_run: Run) -> None:
    """A user's machine file: half the die, twice the bandwidth."""
    f = tmp_path / "chip.toml"
    f.write_text('name = "halfchip"\ndie_area_mm2 = 342.0\nb_mem_byte_per_s = 80e9\n')
    m = d.load_machine(f)
    assert m.name == "halfchip" and m.cores_at_alpha(0.01) == 12
    out = archline_run("design-space", "cg", "--machine", str(f), "--format", "json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["machine"] == "halfchip"


@pytest.mark.parametrize(("args", "needle"), [
    (("design-space", "qr"), "known: cg, fft, jacobi2d, matmul"),
    (("design-space", "cg", "--machine", "/nonexistent/chip.toml"), "chip.toml does not exist"),
])
def test_use_design_bad_input(archline_run: Run, args: tuple[str, ...], needle: str) -> None:
    out = archline_run(*args)
    assert out.returncode != 0 and needle in out.stderr and "Traceback" not in out.stderr


def test_use_design_bad_machine_key(tmp_path: Path, archline_run: Run) -> None:
    f = tmp_path / "chip.toml"
    f.write_text("die_area = 100\n")
    out = archline_run("design-space", "cg", "--machine", str(f))
    assert out.returncode != 0 and "unknown key 'die_area'" in out.stderr and "Traceback" not in out.stderr


def test_use_design_fft_bound_option(archline_run: Run) -> None:
    """`--fft-bound half` names the reading and gives S2 §6's optimum; `bound --fft-bound` names it too."""
    out = archline_run("design-space", "fft", "--fft-bound", "half", "--format", "json")
    assert out.returncode == 0, out.stderr
    js = json.loads(out.stdout)
    assert js["bound_reading"] == "half"
    assert (js["best"]["llc_bytes"], js["best"]["cores"], js["best"]["freq_hz"]) == (8 * 2**20, 10, 1.26e9)
    assert any("bound read 'half'" in n for n in js["notes"])
    b = archline_run("bound", "fft", "--fast-memory", "512K", "--fft-bound", "half", "--format", "json")
    assert b.returncode == 0 and json.loads(b.stdout)["oi_upper_flop_per_byte"] == 1.0
    assert json.loads(b.stdout)["reading"] == "half"
