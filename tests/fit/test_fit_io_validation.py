"""Reading rows (grouping, emulated labels, checksums), the W = 0 normalisation, k-fold and holdout splits."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from archline.fit.io.results import ResultsError, group_rows, read_results
from archline.fit.regress.result import row_normaliser
from archline.fit.regress.synthetic import GTX580, synthetic_results, write_results_csv
from archline.fit.regress.validation import holdout_mask, kfold_indices


def test_fit_io_checksum_failures_dropped_and_emulated_column(tmp_path: Path) -> None:
    f = synthetic_results(GTX580, seed=0, n_l1=2, n_l2=2, n_rand=2)
    f["backend"] = "cpu_asm"
    f["emulated"] = ["true" if i % 2 else "false" for i in range(len(f))]
    f.loc[0, "checksum_ok"] = "false"
    rs = read_results([write_results_csv(f, tmp_path / "r.csv")])
    assert len(rs.frame) == len(f) - 1 and any("checksum_ok" in n for n in rs.notes)
    groups = group_rows(rs)
    assert [(g.platform, g.emulated) for g in groups] == [("gtx580", False), ("gtx580", True)]
    assert sum(len(g.frame) for g in groups) == len(f) - 1
    assert len(group_rows(rs, mix_emulated=True)) == 1
    with pytest.raises(ResultsError, match="no rows for platform"):
        group_rows(rs, platform="nope")


def test_fit_io_all_emulated_excluded_is_an_error(tmp_path: Path) -> None:
    rs = read_results([write_results_csv(synthetic_results(GTX580, seed=0), tmp_path / "e.csv")])
    with pytest.raises(ResultsError, match="--include-emulated"):
        group_rows(rs, include_emulated=False)


def test_fit_row_normaliser_uses_own_count_when_no_flops() -> None:
    f = pd.DataFrame({"work_flop": [10.0, 0, 0, 0, 0, 0], "int_ops": [0, 5.0, 0, 0, 0, 0],
                      "bytes_shared": [0, 0, 7.0, 0, 0, 0], "bytes_l1": [0.0] * 6, "bytes_l2": [1.0, 0, 0, 3.0, 0, 0],
                      "bytes_l3": [0.0] * 6, "rand_accesses": [0, 0, 0, 0, 4.0, 0], "bytes_mem": [2.0, 0, 0, 0, 0, 0]})
    n, src = row_normaliser(f)
    np.testing.assert_array_equal(n, [10, 5, 7, 3, 4, 0])
    assert list(src) == ["work_flop", "int_ops", "bytes_shared", "bytes_l2", "rand_accesses", ""]


def test_fit_kfold_partitions_and_holdout_mask() -> None:
    folds = kfold_indices(103, 16, seed=1)
    assert len(folds) == 16
    allidx = np.concatenate(folds)
    assert sorted(allidx.tolist()) == list(range(103))
    assert max(len(f) for f in folds) - min(len(f) for f in folds) <= 1
    frame = pd.DataFrame({"split": ["T", "V", "validation", "train", "1", None]})
    assert holdout_mask(frame, "split").tolist() == [False, True, True, False, True, False]
    with pytest.raises(ResultsError):
        kfold_indices(3, 5)


@pytest.mark.slow
def test_fit_cli_one_million_rows(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    f = synthetic_results(GTX580, seed=0, n_repeats=9901).iloc[:1_000_000]
    p = write_results_csv(f, tmp_path / "big.csv")
    r = run_cli("fit", str(p), "--model", "basic", "--format", "json", "--out", str(tmp_path / "big.json"))
    assert r.exit_code == 0, r.stderr
    import json

    doc = json.loads((tmp_path / "big.json").read_text())
    assert doc["n_points"] == 61 * 9901 and abs(doc["coefficients"]["eps_mem"]["value"] / 513e-12 - 1) < 0.01
