"""Breaker 28 item 1: `archline fit DATASET --out DATASET/.../part-0.parquet` wrote the cost table over a part of
the data set it read (the next fit found no Parquet there). Every part of an input data set is an input."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from archline.fit.regress.synthetic import GTX580, synthetic_results


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_an_output_named_as_a_part_of_an_input_data_set_is_refused(run_cli, tmp_path: Path, fmt: str) -> None:  # type: ignore[no-untyped-def]
    part_dir = tmp_path / "ds" / "platform=gtx580" / "host=a" / "run_id=r0"
    part_dir.mkdir(parents=True)
    frame = synthetic_results(GTX580, seed=4, n_l1=0, n_l2=0, n_rand=0)
    part = part_dir / "part-0.parquet"
    frame.drop(columns=[c for c in ("platform", "host", "run_id") if c in frame]).to_parquet(part)
    (tmp_path / "link.out").symlink_to(part)
    before = part.read_bytes()
    for out in (part, tmp_path / "link.out", Path(os.path.relpath(part))):
        r = run_cli("fit", str(tmp_path / "ds"), "--model", "basic", "--format", fmt, "--out", str(out))
        assert r.exit_code == 2 and "is an input" in r.stderr, r.stderr
        assert part.read_bytes() == before
    ok = run_cli("fit", str(tmp_path / "ds"), "--model", "basic", "--format", "json")
    assert ok.exit_code == 0, ok.stderr


@pytest.mark.parametrize(("column", "value", "says"), [
    ("energy_j", 1e300, "is not a measurement"), ("energy_j", 0.0, "is not a measurement"),
    ("energy_j", 1e-300, "is not a measurement"), ("time_s", 1e-300, "is not a measurement"),
    ("time_s", 1e300, "is not a measurement"), ("checksum_ok", "falsch", "checksum_ok must be true, false or empty"),
])
def test_a_row_no_machine_gives_is_refused_naming_its_line(run_cli, tmp_path: Path, column: str, value: object,  # type: ignore[no-untyped-def]
                                                           says: str) -> None:
    """Breaker 28 items 2, 3, 6, 8: energy 1e300 J, 0 J or a 1e-300 s time moved the coefficients silently (up to
    28%); an unknown checksum_ok word counted as a pass."""
    from archline.fit.regress.synthetic import write_results_csv

    frame = synthetic_results(GTX580, seed=4, n_l1=0, n_l2=0, n_rand=0)
    frame[column] = frame[column].astype(object)
    frame.loc[5, column] = value
    src = write_results_csv(frame, tmp_path / "r.csv")
    r = run_cli("fit", str(src), "--model", "basic")
    assert r.exit_code == 2 and says in r.stderr and ":7:" in r.stderr.replace("r.csv", ""), r.stderr
