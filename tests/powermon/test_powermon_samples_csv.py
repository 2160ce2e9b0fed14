"""The samples CSV written while decoding is byte for byte the CSV of the decoded samples (traces.csv_bytes),
whichever way a block is formatted; Parquet and .csv.gz hold the same samples."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from archline.formats.meters.samples_csv import format_block
from archline.formats.meters.samples_file import read_samples
from archline.formats.meters.traces import _chunk_rows, csv_bytes
from archline.powermon.emulator import Script
from archline.powermon.offline import decode_file, decode_to_file
from archline.powermon.powermon2.emulator import PowerMon2Core
from archline.powermon.powermon2.records import RecordArrays
from archline.powermon.powermon2.row_format import RowFormat


class _Clock:
    t = 0.0

    def __call__(self) -> float:
        return self.t


def _capture(path: Path, seconds: int, channels: int = 4) -> int:
    """A capture of ``channels`` channels at 1024 Hz whose power steps every second (as the benchmark's)."""
    clk = _Clock()
    steps = [(float(k), {c: (12.0 - 0.1 * c, 2.0 + ((k + c) % 7)) for c in range(channels)}) for k in range(seconds)]
    core = PowerMon2Core(Script(steps), clock=clk)
    core.write(f"t 0\rm {(1 << channels) - 1}\rs 1 0\r".encode())
    core.read_available()
    core.write(b"e\r")
    with open(path, "wb") as f:
        for k in range(1, seconds + 1):
            clk.t = float(k)
            f.write(core.read_available())
        core.write(b"d\r")
        f.write(core.read_available())
    side = {"format": "archline.powermon2.raw/1", "meter": "powermon2", "emulated": True,
            "channels": list(range(channels)), "r_sense_ohm": {str(c): 0.00422 + 0.001 * c for c in range(channels)},
            "period_ticks": 1, "rate_hz": 1024.0, "time_set_s": 0, "speed": 1.0,
            "clock": {"offset_s": 1000.0, "seconds_per_device_s": 1.0, "drift_ppm": 3.0}}
    path.with_name(path.name + ".json").write_text(json.dumps(side))
    return sum(len(p) for p in core.truth.parts)


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    raw = tmp_path_factory.mktemp("cap") / "capture.raw.bin"
    return raw, _capture(raw, 70)   # more than one feed of bytes: several blocks written while decoding


def test_streamed_csv_equals_the_samples_csv(capture: tuple[Path, int], tmp_path: Path) -> None:
    raw, n = capture
    s, _ = decode_file(raw, None)
    assert len(s) == n
    expected = b"".join(bytes(p) for p in csv_bytes(s))
    out = tmp_path / "s.csv"
    rows, emulated, meta = decode_to_file(raw, out)
    assert rows == n and emulated and meta["lost_records"] == 0
    assert out.read_bytes() == expected
    assert json.loads((tmp_path / "s.csv.json").read_text())["emulated"] is True
    s2, _ = decode_file(raw, tmp_path / "s.csv.gz")
    assert gzip.decompress((tmp_path / "s.csv.gz").read_bytes()) == expected
    np.testing.assert_array_equal(s2.power_w, s.power_w)
    decode_file(raw, tmp_path / "s.parquet")
    p, _ = read_samples(tmp_path / "s.parquet")
    for col in ("t_s", "voltage_v", "current_a", "power_w"):
        np.testing.assert_array_equal(getattr(p, col), getattr(s, col))
    assert p.meter == "powermon2" and p.emulated


def _fmt() -> RowFormat:
    r_lut = np.full(16, 0.00422)
    return RowFormat(r_lut, lambda ev: 1000.0 + ev * (1 / 1024), "powermon2", True)


def test_block_of_distinct_codes_is_formatted_row_by_row_alike() -> None:
    """Noisy codes (almost every key distinct) and times past the fixed width take the row-by-row path."""
    rng = np.random.default_rng(3)
    n = 5000
    rec = RecordArrays(np.repeat(np.arange(n // 5), 5).astype(np.int64), np.tile(np.arange(5), n // 5).astype(np.int16),
                       rng.integers(1, 4096, n).astype(np.uint16), rng.integers(1, 4096, n).astype(np.uint16),
                       np.zeros(n, bool))
    fmt = _fmt()
    assert format_block(rec, fmt).tobytes() == _chunk_rows(fmt.samples(rec), 0, n)
    few = RecordArrays(rec.event, rec.channel, rec.vcode % 3 + 100, rec.icode % 5 + 200, rec.overflow)
    assert format_block(few, fmt).tobytes() == _chunk_rows(fmt.samples(few), 0, n)
    late = RowFormat(fmt.r_lut, lambda ev: 2e6 + ev * (1 / 1024))     # t_s past 13 digits' fixed width
    whole = b"".join(bytes(p) for p in csv_bytes(late.samples(few)))
    assert format_block(few, late).tobytes() == whole.split(b"\n", 1)[1]
