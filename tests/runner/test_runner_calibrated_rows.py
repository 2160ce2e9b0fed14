"""Issue 24 item 5: a meter entry carrying a calibration (what `meter calibrate` writes) corrects the energy, and
every row measured through it says so in its `calibration` column; a meter without one leaves it empty."""

from __future__ import annotations

import csv
from pathlib import Path

from archline.formats.platforms.profiles import SHIPPED_DIR

CAL = ("calibration = { gain = 1.07, gain_err = 0.001, offset_w = -3.5, offset_w_err = 0.1, lag_s = 0.0, "
       "lag_s_err = 0.0, emulated = true }")      # as `meter calibrate --emulate` writes it


def _rows(run_cli, tmp_path: Path, profile: Path, out: str) -> list[dict[str, str]]:  # type: ignore[no-untyped-def]
    r = run_cli("bench", "run", "--platform", str(profile), "--emulate", "--meter", "ps3", "--quick", "--kernel",
                "intensity", "--precision", "sp", "--out", str(tmp_path / out))
    assert r.exit_code == 0, r.stderr
    (csv_path,) = (tmp_path / out).glob("*.csv")
    with csv_path.open() as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def test_rows_through_a_calibrated_meter_say_so(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    text = (SHIPPED_DIR / "gtx580.toml").read_text()
    header = '[[meters]]\nname = "ps3"\n'
    assert header in text
    cal = tmp_path / "gtx580-cal.toml"
    cal.write_text(text.replace(header, header + CAL + "\n", 1))
    plain = tmp_path / "gtx580.toml"
    plain.write_text(text)
    rows = _rows(run_cli, tmp_path, cal, "cal")
    assert rows and all(r["calibration"].startswith("calibrated (emulated calibration): gain 1.07") for r in rows)
    assert all(r["emulated"].lower() == "true" for r in rows)
    base = _rows(run_cli, tmp_path, plain, "plain")
    assert base and all(r["calibration"] == "" for r in base)
