"""One owner per powermon file format (issue 22): samples files and their sidecar (formats/meters/samples_file.py,
sidecar.py), raw captures and theirs (formats/meters/capture.py). Round trips, the format version, content read by its
bytes rather than its name, the sidecar models, and a guard that no other module parses these files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from archline.formats.meters.samples import Samples
from archline.formats.meters.samples_csv import format_block
from archline.formats.meters.samples_file import SamplesFile, read_samples, write_samples
from archline.formats.meters.traces import _chunk_rows
from archline.formats.meters.versions import SAMPLES_FORMAT
from archline.powermon.errors import MeterError
from archline.powermon.powermon2.records import RecordArrays
from archline.powermon.powermon2.row_format import RowFormat

ROOT = Path(__file__).resolve().parents[2]


def _samples(n: int = 400) -> Samples:
    t = np.repeat(np.arange(n // 4) / 128.0 + 10.0, 4)
    ch = np.tile(np.arange(4, dtype=np.int16), n // 4)
    v = 12.0 - 0.01 * ch
    i = 1.0 + 0.001 * np.arange(n)
    return Samples(t, ch, v, i, v * i, None, "pm", True, "host_monotonic")


@pytest.mark.parametrize("suffix", [".csv", ".csv.gz", ".parquet"])
def test_round_trip_with_a_versioned_sidecar(tmp_path: Path, suffix: str) -> None:
    s = _samples()
    p = write_samples(s, tmp_path / f"s{suffix}", {"rate_hz": 128.0, "speed": 1.0})
    side = json.loads(p.with_name(p.name + ".json").read_text())
    assert side["format"] == SAMPLES_FORMAT and side["rate_hz"] == 128.0
    f = SamplesFile.load(p)
    assert f.side is not None and f.side.version == 1 and f.side.rate_hz == 128.0 and f.samples.emulated
    np.testing.assert_allclose(f.samples.power_w, s.power_w, rtol=1e-6)
    np.testing.assert_array_equal(f.samples.channel, s.channel)
    # the format is told by the bytes: a Parquet or gzip file under another name still reads
    other = tmp_path / "renamed.csv"
    other.write_bytes(p.read_bytes())
    np.testing.assert_allclose(read_samples(other)[0].t_s, s.t_s, rtol=1e-12)


def test_a_file_without_sidecar_reads_with_defaults(tmp_path: Path) -> None:
    p = write_samples(_samples(), tmp_path / "s.csv")
    p.with_name("s.csv.json").unlink()
    f = SamplesFile.load(p)
    assert f.side is None and f.meta == {} and f.samples.clock == "unknown"


def test_counter_rows_without_volts_and_amps_pass_the_power_check(tmp_path: Path) -> None:
    s = _samples()
    s.voltage_v[:] = np.nan
    s.current_a[:] = np.nan
    p = write_samples(s, tmp_path / "c.parquet")
    assert np.isnan(read_samples(p)[0].voltage_v).all()


def test_sidecar_models_tolerate_newer_and_refuse_wrong_types() -> None:
    from archline.formats.meters.sidecar import CaptureSidecar, SamplesSidecar

    s = SamplesSidecar.model_validate({"format": "archline.samples/9", "rate_hz": 128, "x": {"y": 1}})
    assert s.version == 9 and s.rate_hz == 128.0 and s.extra("x") == {"y": 1}
    old = SamplesSidecar.model_validate({"info": {"rate_hz": 64.0, "speed": 4.0}})
    assert old.rate_hz == 64.0 and old.speed == 4.0 and old.version == 1
    c = CaptureSidecar.model_validate({"channels": [0, 3], "clock": {"offset_s": 5.0, "drift_ppm": 20.0}})
    assert c.clock is not None and c.clock.scale() == pytest.approx(1 + 20e-6)
    for bad in ({"channels": [0, 16]}, {"period_ticks": "8"}, {"r_sense_ohm": {"0": -1.0}},
                {"clock": {"offset_s": 1.0, "drift_ppm": 1001.0}}, {"format": "archline.samples/1"}):
        with pytest.raises(ValueError):
            CaptureSidecar.model_validate(bad)


def test_sidecar_errors_are_one_line_naming_file_and_key(tmp_path: Path) -> None:
    from archline.formats.meters.sidecar import CaptureSidecar

    sp = tmp_path / "c.raw.bin.json"
    sp.write_text(json.dumps({"clock": {"offset_s": 1.0, "drift_ppm": -1e6}}))
    with pytest.raises(MeterError) as e:
        CaptureSidecar.load(sp)
    assert "\n" not in str(e.value) and "c.raw.bin.json" in str(e.value) and "clock.drift_ppm" in str(e.value)


def test_key_numbering_in_the_code_box_matches_the_hash_table() -> None:
    """Decoded records whose codes span the whole ADC (the hash-table fallback) and a narrow band (numbered in their
    box) format to the same bytes as the row-by-row formatter."""
    rng = np.random.default_rng(3)
    for spread in (8, 4096):
        n = 20000
        ev = np.repeat(np.arange(n // 4), 4).astype(np.int64)
        ch = np.tile(np.arange(4, dtype=np.int16), n // 4)
        v = (3000 + rng.integers(0, spread, n)).clip(0, 4095).astype(np.uint16)
        i = (1000 + rng.integers(0, spread, n)).clip(0, 4095).astype(np.uint16)
        rec = RecordArrays(ev, ch, v, i, np.zeros(n, bool))
        fmt = RowFormat(np.full(16, 0.00422), lambda e: 100.0 + e / 128.0)
        s = fmt.samples(rec)
        assert format_block(rec, fmt).tobytes() == _chunk_rows(s, 0, n)


def test_no_other_module_parses_samples_or_sidecars() -> None:
    """pyarrow's CSV/Parquet readers and sidecar JSON reads appear in the owners only (powermon, cli, bench)."""
    owners = {"formats/meters/samples_file.py", "formats/meters/sidecar.py", "formats/meters/capture.py",
              "formats/meters/sensor_profile.py"}   # the last owns another format: archline.sensor_profile/1
    pattern = re.compile(r"pcsv\.read_csv|pq\.read_table|read_json\(|json\.load\(|CaptureSidecar\.load|"
                         r"SamplesSidecar\.load")
    offenders = []
    for py in [*ROOT.glob("powermon/**/*.py"), ROOT / "cli" / "meter.py"]:
        rel = py.relative_to(ROOT).as_posix()
        if rel not in owners and pattern.search(py.read_text()):
            offenders.append(rel)
    assert not offenders, f"samples files and sidecars are read by their owners only: {offenders}"
