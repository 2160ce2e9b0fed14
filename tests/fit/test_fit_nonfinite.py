"""Breaker 28 item 10: an energy of inf was reported as "missing or NaN". A non-finite value is said for what it
is (inf, -inf, or missing/NaN), naming the file, the line (CSV) or row (Parquet) and the column."""

from __future__ import annotations

from pathlib import Path

import pytest

from archline.fit.regress.synthetic import GTX580, synthetic_results, write_results_csv

ROW = 5   # 0-based frame row: CSV line 7 (header = line 1), Parquet row 6


def _frame(column: str, value: object):  # type: ignore[no-untyped-def]
    frame = synthetic_results(GTX580, seed=4, n_l1=0, n_l2=0, n_rand=0)
    frame[column] = frame[column].astype(object)
    frame.loc[ROW, column] = value
    return frame


@pytest.mark.parametrize(("column", "value", "says"), [
    ("energy_j", "inf", "column energy_j is inf (not a finite number)"),
    ("energy_j", "-inf", "column energy_j is -inf (not a finite number)"),
    ("energy_j", "Infinity", "column energy_j is inf (not a finite number)"),
    ("energy_j", "nan", "column energy_j is missing or NaN"),
    ("energy_j", "", "column energy_j is missing or NaN"),
    ("time_s", "inf", "column time_s is inf (not a finite number)"),
    ("time_s", "", "column time_s is missing or NaN"),
    ("bytes_mem", "inf", "column bytes_mem is inf (not a finite number)"),
    # pyarrow's default null words made these an empty count cell, which means 0: the row was accepted
    ("bytes_mem", "nan", "column bytes_mem is NaN (an empty cell means 0)"),
    ("flops_dp", "NaN", "column flops_dp is NaN (an empty cell means 0)"),
    ("bytes_mem", "NULL", "column bytes_mem is not a number: 'NULL'"),
    ("bytes_mem", "N/A", "column bytes_mem is not a number: 'N/A'"),
])
def test_csv_non_finite_values_are_named_for_what_they_are(run_cli, tmp_path: Path, column: str, value: str,  # type: ignore[no-untyped-def]
                                                           says: str) -> None:
    src = write_results_csv(_frame(column, value), tmp_path / "r.csv")
    r = run_cli("fit", str(src), "--model", "basic")
    assert r.exit_code == 2, r.stderr
    assert f"{src}:{ROW + 2}: {says}" in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    if "inf" in says:
        assert "NaN" not in r.stderr and "missing" not in r.stderr


@pytest.mark.parametrize(("value", "says"), [(float("inf"), "column energy_j is inf"),
                                             (float("-inf"), "column energy_j is -inf"),
                                             (float("nan"), "column energy_j is missing or NaN")])
def test_parquet_non_finite_energy_is_named_by_row(run_cli, tmp_path: Path, value: float, says: str) -> None:  # type: ignore[no-untyped-def]
    frame = _frame("energy_j", value)
    frame["energy_j"] = frame["energy_j"].astype(float)
    src = tmp_path / "r.parquet"
    frame.to_parquet(src)
    r = run_cli("fit", str(src), "--model", "basic")
    assert r.exit_code == 2, r.stderr
    assert f"{src}, row {ROW + 1}: {says}" in r.stderr, r.stderr
