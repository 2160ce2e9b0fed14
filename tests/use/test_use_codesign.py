"""`archline codesign`: S2's Figs. 4-8 (Elango et al., TACO 2015, §5-6) from the design-space model."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from archline.fit.analyses.elango import figures
from archline.fit.analyses.elango.design_space import nehalem_ex

M = nehalem_ex()


def test_fig4_oi_against_alpha() -> None:
    """S2 Fig. 4 / §5: CG flat at 0.417 flop/B whatever the cache; MM and J2D rise with alpha; FFT rises mildly
    (full bound: 2.0 at alpha = 0.01, 2.875 at 0.95, S2 §5's "1.125 to 2.875")."""
    f = figures.compute("oi-alpha", M)
    by = {a: [r for r in f.rows if r["algorithm"] == a] for a in figures.ALGORITHMS}
    assert {round(r["oi_flop_per_byte"], 3) for r in by["cg"]} == {0.417}
    for a in ("fft", "matmul", "jacobi2d"):
        ois = [r["oi_flop_per_byte"] for r in by[a]]
        assert ois == sorted(ois) and ois[-1] > ois[0]
    assert by["fft"][-1]["oi_flop_per_byte"] == pytest.approx(2.875, abs=0.01)
    half = figures.compute("oi-alpha", M, ("fft",), fft_bound="half")
    assert all(0.5 <= r["oi_flop_per_byte"] <= 2 for r in half.rows)     # Fig. 4's "between 0.5 and 2"


def test_fig5_rooflines_at_four_alpha() -> None:
    """S2 Fig. 5 / §5: at alpha = 0.01, 25 cores x 9.04 = 226 GFLOP/s; CG and FFT bandwidth-bound, MM and J2D
    not; at 0.25 fewer cores lower the roof, FFT's bound rises and MM's falls (opposite trends)."""
    f = figures.compute("rooflines", M)
    at = {(r["alpha"], r["algorithm"]): r for r in f.rows}
    assert at[(0.01, "cg")]["cores"] == 25
    assert at[(0.01, "cg")]["peak_flop_per_s"] == pytest.approx(226e9)
    assert [at[(0.01, a)]["bandwidth_bound"] for a in figures.ALGORITHMS] == [True, True, False, False]
    assert at[(0.25, "fft")]["perf_flop_per_s"] > at[(0.01, "fft")]["perf_flop_per_s"]
    assert at[(0.25, "matmul")]["perf_flop_per_s"] < at[(0.01, "matmul")]["perf_flop_per_s"]
    assert at[(0.95, "cg")]["cores"] == 1


def test_fig6_multiroofline() -> None:
    """S2 Fig. 6 / §5: CG's two points, 16.7 GFLOP/s (0.417 x 40 GB/s) with P >= 2 and 9.04 with P = 1; MM and
    J2D always compute-bound, with equal bounds at each alpha."""
    f = figures.compute("perf-multiroofline", M)
    cg = {round(r["perf_flop_per_s"] / 1e9, 2) for r in f.rows if r["algorithm"] == "cg"}
    assert cg == {16.67, 9.04}
    mm = [r for r in f.rows if r["algorithm"] == "matmul"]
    j2 = [r for r in f.rows if r["algorithm"] == "jacobi2d"]
    assert not any(r["bandwidth_bound"] for r in mm + j2)
    assert [r["perf_flop_per_s"] for r in mm] == pytest.approx([r["perf_flop_per_s"] for r in j2])


def test_fig7_energy_against_cores_and_frequency() -> None:
    """S2 Fig. 7 / §6 trends: (1) lower frequency, higher bound; (2) more cores hurt bandwidth-bound CG and FFT
    at small LLC (the curves bend down), MM and J2D stay flat within 1%."""
    f = figures.compute("energy-cores-freq", M)
    v = {(r["algorithm"], r["llc_bytes"], r["freq_hz"], r["cores"]): r["flop_per_j"] for r in f.rows}
    for a in figures.ALGORITHMS:
        for s in figures.FIG7_LLC_BYTES:
            for c in figures.FIG7_CORES:
                assert v[(a, s, 1.46e9, c)] > v[(a, s, 1.86e9, c)] > v[(a, s, 2.26e9, c)]
    for a in ("cg", "fft"):
        assert v[(a, 4096.0, 2.26e9, 16)] < 0.95 * v[(a, 4096.0, 2.26e9, 1)]
    for a in ("matmul", "jacobi2d"):
        assert v[(a, 4096.0, 2.26e9, 16)] == pytest.approx(v[(a, 4096.0, 2.26e9, 1)], rel=0.01)


def test_fig8_energy_multiroofline_optima() -> None:
    """S2 Fig. 8 / §6: CG's best is 0.373 GFLOP/J at 4 KB, 3 cores, 1.26 GHz (eps ~ V); FFT's at 8 MB and
    1.26 GHz with P = 19 (full bound) or P = 10 (half bound, as printed; docs/analyses.md)."""
    f = figures.compute("energy-multiroofline", M, ("cg", "fft"))
    best = {r["algorithm"]: r for r in f.rows if r["best"]}
    assert best["cg"]["flop_per_j"] / 1e9 == pytest.approx(0.373, abs=5e-4)
    assert (best["cg"]["llc_bytes"], best["cg"]["cores"], best["cg"]["freq_hz"]) == (4096.0, 3, 1.26e9)
    assert (best["fft"]["llc_bytes"], best["fft"]["cores"]) == (8 * 2**20, 19)
    half = figures.compute("energy-multiroofline", M, ("fft",), fft_bound="half")
    hb = next(r for r in half.rows if r["best"])
    assert (hb["llc_bytes"], hb["cores"], hb["freq_hz"]) == (8 * 2**20, 10, 1.26e9)


@pytest.mark.parametrize("kind", list(figures.KINDS))
def test_cli_codesign(kind: str, tmp_path: Path, run_cli: Callable[..., object]) -> None:
    out = tmp_path / "f.png"
    r = run_cli("codesign", kind, "-a", "cg", "-a", "fft", "--format", "json", "--plot", str(out))
    d = json.loads(r.stdout)                                                 # type: ignore[attr-defined]
    assert d["figure"] == figures.KINDS[kind] and d["points"]
    assert {p["algorithm"] for p in d["points"]} == {"cg", "fft"}
    assert out.read_bytes()[:4] == b"\x89PNG"
    r = run_cli("codesign", kind)
    assert figures.KINDS[kind] in r.stdout                                   # type: ignore[attr-defined]


def test_cli_codesign_errors(run_cli: Callable[..., object]) -> None:
    r = run_cli("codesign", "energy-cores-freq", "--llc", "12")
    assert r.exit_code == 2 and "64-byte" in r.stderr                        # type: ignore[attr-defined]
    r = run_cli("codesign", "fig9")
    assert r.exit_code == 2                                                  # type: ignore[attr-defined]
