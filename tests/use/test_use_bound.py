"""archline bound: Elango et al. (S2) OI upper bounds at the paper's cache sizes.

Values: S2 Sec. 5 (seed_tables T17, T23; elango_oi_upper_bounds.csv, elango_design_space_results.csv)."""

from __future__ import annotations

import csv
import json
import math
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from archline.fit.analyses.elango import oi_bounds as ob
from archline.model.errors import ArchlineFitError

DATA = Path(ob.__file__).parent.parent / "data"


Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.mark.parametrize(("algorithm", "s_words", "flop_per_byte"), [
    ("fft", 2**16, 2.0),         # S2 Sec. 5: alpha = 0.01, OI FFT = 2.0 (S = 65536 words = 512 KB)
    ("matmul", 2**16, 181.02),   # S2 Sec. 5: OI MM = 181.02
    ("jacobi2d", 2**16, 384.0),  # S2 Sec. 5: OI J2D = 384.0
    ("fft", 2**9, 1.125),        # S2 Sec. 5: "At alpha = 1%, OI = 1.125" (4 KB)
    ("fft", 2**23, 2.875),       # S2 Sec. 5: FFT OI range 1.125-2.875 (64 MB)
    ("cg", 2**16, 0.417),        # S2 Sec. 5: CG OI 0.417 (all alpha)
    ("cg", 2**9, 0.417),
])
def test_use_bound_paper_values(algorithm: str, s_words: int, flop_per_byte: float) -> None:
    r = ob.oi_upper_bound(algorithm, s_words * 8, word_bytes=8)
    assert r.fast_memory_words == s_words
    assert r.oi_upper_flop_per_byte == pytest.approx(flop_per_byte, abs=5e-3)
    assert r.oi_upper_flop_per_word == pytest.approx(8 * r.oi_upper_flop_per_byte)


def test_use_bound_matches_shipped_csv_expressions() -> None:
    """The formulas agree with the python_expr column of elango_oi_upper_bounds.csv (S2 Sec. 3, T17)."""
    names = {"matrix": "matmul", "FFT,": "fft", "conjugate": "cg", "9-point": "jacobi2d"}
    with (DATA / "elango_oi_upper_bounds.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 4
    for row in rows:
        name = next(v for k, v in names.items() if row["algorithm"].startswith(k))
        for s in (2.0**9, 2.0**16, 2.0**23):
            expected = eval(row["python_expr_flop_per_byte(S in words)"], {"math": math, "S": s})
            assert ob.oi_upper_bound(name, s * 8).oi_upper_flop_per_byte == pytest.approx(expected)
        assert ob.BOUNDS[name].uncertain == row["certainty"].startswith("UNCERTAIN")


def test_use_bound_word_bytes_4() -> None:
    r = ob.oi_upper_bound("fft", 2**16 * 4, word_bytes=4)
    assert r.fast_memory_words == 2**16
    assert r.oi_upper_flop_per_byte == pytest.approx(16 / 4)


def test_use_bound_register_new() -> None:
    b = ob.register_bound(ob.OiBound(
        name="_test_stream", title="test", op_count="N", io_lower_bound_words="N", formula_flop_per_word="1",
        oi_flop_per_word=lambda s: 1.0, min_fast_memory_words=1, min_reason="one word", citation="test"))
    try:
        assert ob.oi_upper_bound("_test_stream", 64).oi_upper_flop_per_byte == 1 / 8
    finally:
        del ob.BOUNDS[b.name]


def test_use_bound_with_costs_floor(tmp_path: Path, archline_run: Run) -> None:
    """Energy floor = eps_flop + eps_mem/OI + pi0*max(tau_flop, tau_mem/OI) (S2 Sec. 2.1; S0 eq.3-5)."""
    costs = {"schema": "archline.costs/1", "platform": "toy", "model": "basic", "emulated": True,
             "coefficients": {"eps_flop_dp": {"value": 100e-12, "unit": "J/flop"},
                              "eps_mem": {"value": 500e-12, "unit": "J/byte"},
                              "pi0": {"value": 10.0, "unit": "W"}},
             "tau": {"tau_flop_dp": {"value": 1e-11}, "tau_mem": {"value": 1e-10}}}
    p = tmp_path / "c.json"
    p.write_text(json.dumps(costs))
    out = archline_run("bound", "fft", "--fast-memory", "512K", "--costs", str(p), "--format", "json")
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    i = 2.0
    t = max(1e-11, 1e-10 / i)
    assert d["min_time_per_flop_s"] == pytest.approx(t)
    assert d["min_energy_per_flop_j"] == pytest.approx(100e-12 + 500e-12 / i + 10.0 * t)
    assert d["max_flop_per_j"] == pytest.approx(1 / d["min_energy_per_flop_j"])
    assert d["emulated"] is True
    # a table without the dp flop cost: the error names the coefficient
    del costs["coefficients"]["eps_flop_dp"]  # type: ignore[attr-defined]
    p.write_text(json.dumps(costs))
    bad = archline_run("bound", "fft", "--fast-memory", "512K", "--costs", str(p))
    assert bad.returncode != 0 and "eps_flop_dp" in bad.stderr and "Traceback" not in bad.stderr


def test_use_bound_on_shipped_platform(archline_run: Run) -> None:
    out = archline_run("bound", "matmul", "--fast-memory", "8M", "--costs", "gtx580", "--format", "json")
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    assert d["precision"] == "dp" and d["max_flop_per_j"] > 0


def test_use_bound_cli_table_marks_uncertain(archline_run: Run) -> None:
    out = archline_run("bound", "cg", "--fast-memory", "4K")
    assert out.returncode == 0 and "UNCERTAIN" in out.stdout and "0.416667 flop/B" in out.stdout


@pytest.mark.parametrize(("args", "needle"), [
    (("bound", "qr", "--fast-memory", "1M"), "known: cg, fft, jacobi2d, matmul"),
    (("bound", "fft", "--fast-memory", "0"), "positive"),
    (("bound", "jacobi2d", "--fast-memory", "64"), "too small"),
    (("bound", "fft", "--fast-memory", "16"), "too small"),
    (("bound", "fft", "--fast-memory", "lots"), "cannot read"),
])
def test_use_bound_bad_input(args: tuple[str, ...], needle: str, archline_run: Run) -> None:
    out = archline_run(*args)
    assert out.returncode != 0
    assert needle in out.stderr and "Traceback" not in out.stderr


def test_use_bound_errors_are_user_errors() -> None:
    with pytest.raises(ArchlineFitError):
        ob.oi_upper_bound("fft", -5)
