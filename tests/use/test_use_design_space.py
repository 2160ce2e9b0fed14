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
    (0.77, 5),    # ... and 5 just above (the floor crosses 6 at alpha = 0.7655)
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


def test_use_design_fft_best_llc_and_freq() -> None:
    """S2 §6: FFT's best energy efficiency at an 8 MB LLC and 1.26 GHz (the paper says P = 10; this model gives
    19 cores, the most that stay compute-bound: see the report)."""
    best = d.sweep("fft", M).best("energy")
    assert (best.llc_bytes, best.freq_hz) == (8 * 2**20, 1.26e9)


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
