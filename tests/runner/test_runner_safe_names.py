"""Names from data that become path components stay inside --out: a profile whose name holds ``/``, ``..`` and a
space names the run (``<out>/<run_id>.csv``, ``<out>/<run_id>/`` traces and raw captures) through
``common.outputs.safe_component``; the rows' run_id is the file's name."""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path

from archline.common.outputs import safe_component
from archline.formats.platforms.profiles import load_platform


def test_profile_name_with_path_parts_stays_inside_out(tmp_path: Path, run_cli: Callable[..., object]) -> None:
    src = Path(load_platform("gtx580").origin).read_text()
    bad = "../../escaped/x y"
    prof = tmp_path / "p" / "evil.toml"
    prof.parent.mkdir()
    prof.write_text(src.replace('name = "gtx580"', f'name = "{bad}"', 1))
    out = tmp_path / "a" / "b" / "out"
    r = run_cli("bench", "run", "--platform", str(prof), "--emulate", "--quick", "--kernel", "intensity",
                "--precision", "sp", "--time-compression", "100", "--out", str(out))
    everything = [p for p in tmp_path.rglob("*") if p.is_file()]
    outside = [p for p in everything if out not in p.parents and p != prof]
    assert not outside, outside
    if r.exit_code == 2:           # a profile loader that refuses the name is safe too
        assert "name" in r.stderr  # type: ignore[attr-defined]
        return
    assert r.exit_code == 0, r.stderr  # type: ignore[attr-defined]
    (csv_path,) = out.glob("*.csv")
    run_id = csv_path.stem
    assert run_id == safe_component(run_id) and "/" not in run_id and not run_id.startswith(".")
    assert (out / run_id).is_dir() and any((out / run_id).iterdir())          # traces and raw captures
    with open(csv_path, newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows and {row["run_id"] for row in rows} == {run_id} and {row["platform"] for row in rows} == {bad}
    assert all(row["trace"].startswith(f"{run_id}/") for row in rows if row.get("trace"))
