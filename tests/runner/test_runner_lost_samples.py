"""A point whose meter lost more than ``max_lost`` of a region's samples fails, and a resumed sweep measures it again
(issue 15); every row says what its meter lost and where its raw capture is."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

from archline.bench.run.sweep import EXIT_OK, EXIT_POINTS_FAILED, RESULTS_NAME, run_sweep


def _config(tmp: Path) -> Path:
    p = tmp / "lossy.toml"
    p.write_text('[sweep]\nplatform = "gtx580"\nemulate = true\nquick = true\ntime_compression = 100.0\n'
                 'kernels = ["intensity"]\nprecisions = ["sp"]\nout = "out"\n')
    return p


def _rows(out: Path) -> list[dict[str, str]]:
    with open(out / RESULTS_NAME, newline="") as f:
        return list(csv.DictReader(f))


def test_a_lossy_point_fails_and_the_resumed_sweep_retries_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import archline.powermon.powermon2.meter as pm
    from archline.powermon.emulator.registry import Faults

    real = pm.emulated_powermon

    def lossy(*a: Any, **kw: Any) -> Any:      # the first stream loses 3000 records (6 s) to an overflow
        return real(*a, **{**kw, "faults": Faults(overflow=((100, 3000),))})

    cfg = _config(tmp_path)
    monkeypatch.setattr(pm, "emulated_powermon", lossy)
    first = run_sweep(cfg)
    assert first.exit_code == EXIT_POINTS_FAILED and first.failed == 1 and first.written >= 1
    log = (tmp_path / "out" / "sweep.log").read_text()
    assert "point" in log and "failed" in log and "lost" in log and "more than the allowed 1%" in log
    monkeypatch.setattr(pm, "emulated_powermon", real)
    second = run_sweep(cfg)
    assert second.exit_code == EXIT_OK and second.written == 1 and second.failed == 0
    rows = _rows(tmp_path / "out")
    ids = [r["point_id"] for r in rows]
    assert len(ids) == len(set(ids)) == first.written + 1          # each point exactly once
    for r in rows:     # nothing lost in the rows that were written, and said so; the raw capture is named
        assert (r["lost_samples"], r["meter_gaps"], r["meter_overflows"]) == ("0", "0", "0")
        assert float(r["lost_s"]) == 0.0
        raw = tmp_path / "out" / "traces" / r["raw_capture"]
        assert raw.exists() and raw.stat().st_size > 0 and raw.with_name(raw.name + ".json").exists()


def test_max_lost_is_checked_where_it_is_typed(tmp_path: Path) -> None:
    from archline.bench.config.options import RunOptions, check_applies
    from archline.bench.errors import BenchError

    with pytest.raises(BenchError, match="--max-lost"):
        RunOptions.from_cli(max_lost=2.0)
    with pytest.raises(BenchError, match="--max-lost"):
        check_applies(RunOptions(max_lost=0.1), path="time-only", backend="cpu_asm", platform="localhost")
