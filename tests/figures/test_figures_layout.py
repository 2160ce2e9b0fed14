"""Every figure kind the command line makes, checked as drawn: no text on another text, no text or legend over a
plotted point, no text off the canvas (tick labels closer than 2 px count as touching), and every fallback said on
the figure and on stderr. The check is archline.fit.figure_layout.overlaps, run on each figure as it is saved."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from archline.fit.figure_layout import overlaps, pow2_label

SAMPLE = Path(__file__).resolve().parents[2] / "results" / "sample"
SAMPLE_CSV = next(SAMPLE.glob("gtx580-*.csv"), None)
SAMPLE_COSTS = SAMPLE / "gtx580.costs.json"


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, list[str], str]]]:
    """(file name, overlaps, suptitle) of every figure saved while the test runs."""
    from matplotlib.figure import Figure

    seen: list[tuple[str, list[str], str]] = []
    orig = Figure.savefig

    def savefig(self: Any, fname: Any, *a: Any, **k: Any) -> Any:
        title = self._suptitle.get_text() if self._suptitle is not None else ""
        seen.append((Path(str(fname)).name, overlaps(self), title))
        return orig(self, fname, *a, **k)

    monkeypatch.setattr(Figure, "savefig", savefig)
    yield seen


def _clean(run: Any, drawn: list[tuple[str, list[str], str]], *args: str) -> Any:
    r = run(*args)
    assert r.exit_code == 0, r.stderr
    assert drawn, "no figure was saved"
    for name, found, _ in drawn:
        assert not found, f"{name}: " + "; ".join(found[:5])
    return r


def _rows(path: Path, rows: list[dict[str, Any]]) -> Path:
    import pandas as pd

    base = {"schema": "archline.results/1", "run_id": "t", "backend": "emulated", "level": "mem", "reps": 1,
            "flops_sp": 0, "flops_dp": 0, "bytes_mem": 0, "checksum_ok": "true", "energy_j": ""}
    pd.DataFrame([{**base, **r} for r in rows]).to_csv(path, index=False)
    return path


def _intensity_rows(platform: str = "box", energy: bool = True, lo: float = 1 / 64) -> list[dict[str, Any]]:
    """A 50 GFLOP/s, 20 GB/s, 30 W + 100 pJ/flop + 500 pJ/B machine swept from I = lo to 64 flop/B."""
    out = []
    for inten in 2.0 ** np.arange(np.log2(lo), 7):
        q = 1 << 30
        w = int(inten * q)
        t = max(w / 50e9, q / 20e9)
        e = 30 * t + 100e-12 * w + 500e-12 * q
        out.append({"platform": platform, "kernel": "intensity", "precision": "dp", "flops_dp": w, "bytes_mem": q,
                    "time_s": t, "energy_j": e if energy else ""})
    return out


def test_pow2_labels_are_short() -> None:
    assert [pow2_label(2.0 ** k) for k in (-6, -1, 0, 6, 12, 20)] == ["1/64", "1/2", "1", "64", "4K", "1M"]


@pytest.mark.parametrize("kind", ["roofline", "archline", "powerline", "all"])
def test_plot_single_platform(run_cli: Callable[..., Any], drawn: list[Any], tmp_path: Path, kind: str) -> None:
    _clean(run_cli, drawn, "plot", "gtx580", "--kind", kind, "--out", str(tmp_path / "f.png"))


def test_compare_three_platforms(run_cli: Callable[..., Any], drawn: list[Any], tmp_path: Path) -> None:
    """The issue's figure: B_τ labels, the two pi0 labels and the x ticks no longer collide."""
    _clean(run_cli, drawn, "plot", "gtx580", "gtx680", "i7-950", "--kind", "compare",
           "--out", str(tmp_path / "c.png"))


def test_model_plot_sp_and_dp(run_cli: Callable[..., Any], drawn: list[Any], tmp_path: Path) -> None:
    _clean(run_cli, drawn, "model", "plot", "gtx580", "--out", str(tmp_path / "m.png"))


def test_time_only_rows_over_a_wide_range(run_cli: Callable[..., Any], drawn: list[Any], tmp_path: Path) -> None:
    """The bench-run roofline: time-only rows from 1/64 flop/B; ticks readable, the balance point not over the
    points, and the fallback to a time roofline said on the figure and on stderr."""
    csv = _rows(tmp_path / "r.csv", _intensity_rows(energy=False))
    r = _clean(run_cli, drawn, "plot", str(csv), "--precision", "dp", "--out", str(tmp_path / "t.png"))
    assert "time only" in r.stderr and "archline: warning:" in r.stderr
    assert "note: the results carry time only" in drawn[-1][2]


def test_negative_energies_are_said(run_cli: Callable[..., Any], drawn: list[Any], tmp_path: Path) -> None:
    rows = _intensity_rows()
    for r in rows[:3]:
        r["energy_j"] = -r["energy_j"]
    csv = _rows(tmp_path / "r.csv", rows)
    r = _clean(run_cli, drawn, "plot", str(csv), "--precision", "dp", "--out", str(tmp_path / "n.png"))
    assert "3 of 13 box rows have a missing or non-positive energy_j" in r.stderr
    assert "non-positive energy_j" in drawn[-1][2].replace("\n", " ")
    assert "the arch and power lines show the measured points only" in r.stderr      # no model given


@pytest.mark.skipif(SAMPLE_CSV is None, reason="no sample results shipped")
def test_sample_results_over_their_costs(run_cli: Callable[..., Any], drawn: list[Any], tmp_path: Path) -> None:
    _clean(run_cli, drawn, "plot", str(SAMPLE_CSV), str(SAMPLE_COSTS), "--out", str(tmp_path / "s.png"))


@pytest.mark.skipif(SAMPLE_CSV is None, reason="no sample results shipped")
def test_fit_report_figure(run_cli: Callable[..., Any], drawn: list[Any], tmp_path: Path) -> None:
    _clean(run_cli, drawn, "fit", str(SAMPLE_CSV), "--bootstrap", "10", "--folds", "3",
           "--figure", str(tmp_path / "fit.png"), "--format", "json", "--out", str(tmp_path / "c.json"))


def test_predict_breakdown(run_cli: Callable[..., Any], drawn: list[Any], tmp_path: Path) -> None:
    counts = tmp_path / "c.csv"
    counts.write_text("name,time_s,flops_sp,bytes_mem\nfmm_u,0.5,4e11,2e9\nfmm_v,,1e11,6e10\n"
                      "a_kernel_with_a_long_name,0.2,2e10,8e10\n")
    _clean(run_cli, drawn, "predict", str(counts), "--costs", "gtx580", "--plot", str(tmp_path / "p.png"))


def test_design_space_map(run_cli: Callable[..., Any], drawn: list[Any], tmp_path: Path) -> None:
    _clean(run_cli, drawn, "design-space", "fft", "--plot", str(tmp_path / "d.png"))


def test_ceilings_of_platforms(run_cli: Callable[..., Any], drawn: list[Any], tmp_path: Path) -> None:
    _clean(run_cli, drawn, "plot", "gtx580", "titan", "--kind", "ceilings", "--out", str(tmp_path / "c.png"))


@pytest.mark.skipif(SAMPLE_CSV is None, reason="no sample results shipped")
def test_ceilings_of_results_and_costs(run_cli: Callable[..., Any], drawn: list[Any], tmp_path: Path) -> None:
    """The issue's command, which used to fail with "not valid TOML"."""
    r = _clean(run_cli, drawn, "plot", str(SAMPLE_CSV), str(SAMPLE_COSTS), "--kind", "ceilings",
               "--out", str(tmp_path / "c.png"))
    assert "gtx580 [emulated] SP flops" in r.stdout


def test_bench_run_roofline(drawn: list[Any], tmp_path: Path) -> None:
    """The figure `archline bench run` draws beside its rows (time only, observed roofline)."""
    from archline.fit.plots.inputs import plot_results

    csv = _rows(tmp_path / "r.csv", [{**r, "backend": "opencl"} for r in _intensity_rows(energy=False, lo=1 / 4)])
    plot_results([csv], tmp_path / "r.roofline.png", "dp", kinds=("roofline",))
    assert drawn and not drawn[-1][1], drawn[-1][1]


def test_the_check_sees_what_the_issue_saw(tmp_path: Path) -> None:
    """The check itself: a label written on a point, two labels on each other, run-together ticks."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot([1, 2, 3], [1, 2, 3], "o")
    ax.annotate("B_τ = 1.15", (2, 2))
    ax.annotate("B_τ = 1.03", (2, 2.02))
    ax.set_xscale("log", base=2)
    ax.set_xticks([2.0 ** k for k in range(-6, 2)], [f"{2.0 ** k:g}" for k in range(-6, 2)])
    ax.set_xlim(1 / 64, 4)
    found = overlaps(fig)
    plt.close(fig)
    assert any("covers a plotted point" in f for f in found)
    assert any("'B_τ = 1.15' overlaps" in f or "'B_τ = 1.03' overlaps" in f for f in found)
    assert any("x tick '0.015625' overlaps" in f for f in found)


def test_temp_figure_never_left_behind(tmp_path: Path) -> None:
    from archline.fit.plots.rooflines import curves_for, plot_model
    from archline.formats.platforms.profiles import load_platform

    plot_model(curves_for([load_platform("gtx580")], ["sp"]), tmp_path / "x.png")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.png"]
    shutil.rmtree(tmp_path)


@pytest.mark.parametrize("args", [
    ("ipp", "sweep", "table4", "--plot"),                                   # S3 Fig. 13 style, all 11 kernels
    ("ipp", "sweep", "table4", "-k", "Dotp", "-k", "Nmat", "-k", "Cmem", "--plot"),
    ("ipp", "power", "--plot"),
    ("ipp", "temperature", "--time-s", "0,60,600", "--plot"),
    ("iso-power", "titan", "jetson-tk1", "--n", "22", "--plot"),
    ("iso-power", "gtx580", "i7-950", "--plot"),
], ids=["ipp-sweep-all", "ipp-sweep-three", "ipp-power", "ipp-temperature", "iso-power-titan-jetson",
        "iso-power-gtx580-i7"])
def test_ipp_and_iso_power_figures(run_cli: Callable[..., Any], drawn: list[Any], tmp_path: Path,
                                   args: tuple[str, ...]) -> None:
    _clean(run_cli, drawn, *args, str(tmp_path / "f.png"))


def test_throttle_figure(run_cli: Callable[..., Any], drawn: list[Any], tmp_path: Path) -> None:
    """S1 Fig. 13's three panels (issue 27 item 5)."""
    _clean(run_cli, drawn, "throttle", "gtx580", "--delta-pi-w", "150", "--plot", str(tmp_path / "t.png"))
    assert "S1 Fig. 13" in drawn[-1][2]


def test_tradeoff_figure(run_cli: Callable[..., Any], drawn: list[Any], tmp_path: Path) -> None:
    """S1 Fig. 8 (issue 27 item 5)."""
    _clean(run_cli, drawn, "tradeoff", "fermi-sample", "--plot", str(tmp_path / "t.png"))
    assert "S1 Fig. 8" in drawn[-1][2]


@pytest.mark.parametrize("given", [True, False], ids=["constants-given", "time-only"])
def test_iso_power_fig16_three_panels(run_cli: Callable[..., Any], drawn: list[Any], tmp_path: Path,
                                      given: bool) -> None:
    """S1 Fig. 16: time, energy and power panels (issue 27 item 5); without energy constants the figure says
    which are missing."""
    sets = ["--set-a", "eps_flop_sp=40e-12", "--set-a", "pi0=120", "--set-b", "eps_flop_sp=25e-12",
            "--set-b", "eps_mem=200e-12", "--set-b", "pi0=2"] if given else []
    _clean(run_cli, drawn, "iso-power", "titan", "jetson-tk1", "--n", "22", *sets, "--plot", str(tmp_path / "f.png"))
    assert "S1 Fig. 16" in drawn[-1][2]
    assert ("no energy or power curve" in drawn[-1][2]) is not given


@pytest.mark.parametrize("kind", ["oi-alpha", "rooflines", "perf-multiroofline", "energy-cores-freq",
                                  "energy-multiroofline"])
def test_codesign_figures(run_cli: Callable[..., Any], drawn: list[Any], tmp_path: Path, kind: str) -> None:
    """S2 Figs. 4-8 (issue 27 item 5); each title names its figure."""
    from archline.fit.analyses.elango.figures import KINDS

    _clean(run_cli, drawn, "codesign", kind, "--plot", str(tmp_path / "f.png"))
    assert KINDS[kind] in drawn[-1][2]


@pytest.mark.parametrize("sub", ["fit", "validate"])
def test_ipp_power_validation_figure(run_cli: Callable[..., Any], drawn: list[Any], tmp_path: Path, sub: str) -> None:
    """S3 Figs. 7 and 12: measured against predicted GPU power per row (issue 27 item 5)."""
    rows = tmp_path / "rows.csv"
    rows.write_text(run_cli("ipp", "microbench", "--noise", "0.02").stdout)
    _clean(run_cli, drawn, "ipp", sub, str(rows), "--plot", str(tmp_path / "f.png"))
    assert "S3 Fig" in drawn[-1][2]
