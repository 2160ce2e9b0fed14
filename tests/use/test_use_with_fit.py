"""bound, predict and tune on cost tables written by 'archline fit' from emulated (synthetic) runs
(issue 9 acceptance). The synthetic sets are fit/regress/synthetic.py's: basic model on gtx580-like constants, and the
16-setting DVFS set of S1 §5.3.1's design; all of it is labelled emulated."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

Run = Callable[..., subprocess.CompletedProcess[str]]
_MAIN = "import sys; from archline.cli.main import main; sys.exit(main(sys.argv[1:]))"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _MAIN, *args], capture_output=True, text=True, check=False,
                          timeout=300)


@pytest.fixture(scope="module")
def fitted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    synth = pytest.importorskip("archline.fit.regress.synthetic")
    d = tmp_path_factory.mktemp("fitted")
    synth.write_results_csv(synth.synthetic_results(), d / "basic.csv")
    synth.write_results_csv(synth.synthetic_dvfs(), d / "dvfs.csv")
    for name, extra in (("basic", ()), ("dvfs", ("--model", "dvfs"))):
        out = _run("fit", str(d / f"{name}.csv"), *extra, "--format", "json", "--out", str(d / f"{name}.json"))
        if out.returncode != 0:
            pytest.skip(f"archline fit failed: {out.stderr.strip()[:200]}")
    return {"basic": d / "basic.json", "dvfs": d / "dvfs.json", "dvfs_csv": d / "dvfs.csv", "dir": d}


def test_use_bound_on_fitted_table(fitted: dict[str, Path], archline_run: Run) -> None:
    out = archline_run("bound", "fft", "--fast-memory", "512K", "--costs", str(fitted["basic"]), "--format", "json")
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    assert d["emulated"] is True and d["oi_upper_flop_per_byte"] == 2.0 and d["max_flop_per_j"] > 0


def test_use_predict_on_fitted_table(fitted: dict[str, Path], archline_run: Run) -> None:
    counts = fitted["dir"] / "counts.csv"
    counts.write_text("name,time_s,flops_sp,bytes_mem,bytes_l2\napp,0.5,1e11,1e10,2e10\n")
    out = archline_run("predict", str(counts), "--costs", str(fitted["basic"]), "--format", "json")
    assert out.returncode == 0, out.stderr
    (p,) = json.loads(out.stdout)["predictions"]
    assert set(p["terms_j"]) == {"flops", "dram", "l2", "constant"}
    assert sum(p["terms_j"].values()) == pytest.approx(p["energy_j"])


def test_use_tune_on_fitted_dvfs_table(fitted: dict[str, Path], archline_run: Run) -> None:
    """S1 Table 8 format from a fitted 16-setting DVFS table and the data it was fitted to."""
    out = archline_run("tune", "--costs", str(fitted["dvfs"]), "--measured", str(fitted["dvfs_csv"]),
                       "--format", "json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)["table8"]
    assert [r["cases"] for r in rows] == [25, 25, 36, 36, 23, 23, 16, 16, 16, 16]
    model = sum(r["mispredictions"] for r in rows if r["strategy"] == "Model")
    oracle = sum(r["mispredictions"] for r in rows if r["strategy"] == "Time Oracle")
    assert model < oracle
