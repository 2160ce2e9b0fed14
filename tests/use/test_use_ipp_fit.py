"""`archline ipp fit / validate / microbench`: S3 Table 2's unit powers from microbenchmark rows (S3 §3.4) and
measured against predicted power (S3 §6.1, Figs. 7 and 12)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from archline.fit.analyses.hongkim.files import load_gpu
from archline.fit.analyses.hongkim.ipp import IppInputError
from archline.fit.analyses.hongkim.unit_fit import emulated_rows, fit_unit_powers, geomean_error, read_rows, rows_csv

GPU = load_gpu("gtx280")
TABLE2 = {"fp": 0.2, "reg": 0.3, "alu": 0.2, "sfu": 0.5, "int": 0.25, "fds": 0.5, "shared": 1.0, "texture": 0.9,
          "const_cache": 0.4, "const_sm": 0.813, "global_mem": 52.0, "local_mem": 52.0}   # S3 Table 2


def test_fit_recovers_s3_table2_from_model_rows(tmp_path: Path) -> None:
    """S3 Table 2: rows the model makes with Table 2's unit powers (eq.5-16), written and read back as a file,
    give back every MaxPower within 1e-6 W."""
    assert {u.key: u.max_power_w for u in GPU.units.values()} == TABLE2
    p = tmp_path / "rows.csv"
    p.write_text(rows_csv(emulated_rows(GPU), GPU))
    f = fit_unit_powers(read_rows(p, GPU), GPU)
    assert f.kept == [] and f.emulated
    for u, w in TABLE2.items():
        assert f.fitted[u] == pytest.approx(w, abs=1e-6), u
    assert f.rms_w < 1e-6


def test_fit_with_noise_within_its_standard_errors() -> None:
    """With 1% meter noise the fit stays within 4 of its own standard errors of Table 2 for every unit."""
    f = fit_unit_powers(emulated_rows(GPU, 0.01, seed=3), GPU)
    for u, w in TABLE2.items():
        se = f.stderr[u]
        assert se is not None and abs(f.fitted[u] - w) <= 4 * se + 1e-9, (u, f.fitted[u], se)


def test_fit_keeps_units_no_row_accesses() -> None:
    """A unit no row accesses is not determined: the GPU file's value is kept and said."""
    rows = [r for r in emulated_rows(GPU) if "local_mem" not in r.rates]
    f = fit_unit_powers(rows, GPU)
    assert f.kept == ["local_mem"] and "local_mem" not in f.fitted
    assert f.fitted["global_mem"] == pytest.approx(52.0, abs=1e-6)
    with pytest.raises(IppInputError, match="cannot determine"):
        fit_unit_powers(rows[:3], GPU)


def test_geomean_error_as_s3() -> None:
    """S3 §6.1 reports the geometric mean of |predicted - measured| / measured."""
    assert geomean_error(np.array([100.0, 200.0]), np.array([102.0, 192.0])) == pytest.approx(np.sqrt(0.02 * 0.04))


def test_cli_fit_validate_microbench(tmp_path: Path, run_cli: Callable[..., object]) -> None:
    rows = tmp_path / "rows.csv"
    r = run_cli("ipp", "microbench")
    rows.write_text(r.stdout)                                                # type: ignore[attr-defined]
    r = run_cli("ipp", "fit", str(rows), "--format", "json", "--plot", str(tmp_path / "f.png"))
    d = json.loads(r.stdout)                                                 # type: ignore[attr-defined]
    got = {u["unit"]: u["max_power_w"] for u in d["units"]}
    assert got == pytest.approx(TABLE2, abs=1e-6) and d["emulated"] is True
    assert (tmp_path / "f.png").read_bytes()[:4] == b"\x89PNG"
    r = run_cli("ipp", "validate", str(rows), "--format", "json")
    d = json.loads(r.stdout)                                                 # type: ignore[attr-defined]
    assert all(x["predicted_w"] == pytest.approx(x["measured_w"]) for x in d["rows"])
    bad = tmp_path / "bad.csv"
    bad.write_text("name,gpu_power_w,rate_fpu\nX,100,0.5\n")
    r = run_cli("ipp", "fit", str(bad))
    assert r.exit_code == 2 and "unknown column 'rate_fpu'" in r.stderr     # type: ignore[attr-defined]
    bad.write_text("name,gpu_power_w,rate_fp\nX,-1,0.5\n")
    r = run_cli("ipp", "validate", str(bad))
    assert r.exit_code == 2 and "line 2: gpu_power_w" in r.stderr            # type: ignore[attr-defined]
