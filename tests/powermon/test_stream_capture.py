"""Raw captures of the byte-stream meters (PowerSensor3, PMD-USB): the bytes the reader read, kept through the one
capture owner (powermon2/capture.py) with a sidecar, decode offline into the very samples of the live run, faults
(a dropped byte, garbage, a stall, whose frame index hint the sidecar keeps) included."""

from __future__ import annotations

import importlib
import json
import time
from pathlib import Path

import numpy as np
import pytest
from support.stream_meters import SPEED, spec_of

from archline.powermon.errors import MeterError
from archline.powermon.powermon2.capture import STREAM_RAW_FORMAT, sidecar_path, stream_capture_kind
from archline.powermon.record.recorder import Recorder
from archline.powermon.spec import emulate_meter
from archline.powermon.stream.core import StreamFaults

KINDS = {"pmd": 20, "powersensor3": 18}          # kind -> frame bytes
#: frames discarded for the dropped byte and the garbage: the PMD-USB's fixed frames lose one each, the
#: PowerSensor3's per-byte sync bits skip the bad bytes alone
DISCARDED = {"pmd": 2, "powersensor3": 0}


def _ramp(t_s: float) -> dict[int, tuple[float, float]]:
    return {0: (12.0, 5.0 + 10.0 * t_s), 1: (3.3, 2.0)}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_decoding_the_capture_gives_the_live_samples(kind: str, tmp_path: Path) -> None:
    fb = KINDS[kind]
    faults = StreamFaults(drop_bytes=(fb * 100 + 5,), noise=((fb * 300, 3),), stall=(0.2, 0.7))
    meter = emulate_meter(spec_of(kind), _ramp, speed=SPEED, faults=faults, seed=2, raw_dir=tmp_path)
    with Recorder([meter]) as rec:
        rec.begin("w")
        time.sleep(0.7)        # the stall is 0.35 host s: longer than the reader's silence limit
        rec.end("w", t0_s=meter.stream_start_s())
    live = meter.samples()
    raw = meter.raw_path
    assert raw == tmp_path / f"{kind}-0000.raw" and raw.exists()
    side = json.loads(sidecar_path(raw).read_text())
    assert side["format"] == STREAM_RAW_FORMAT and side["type"] == kind and side["emulated"] is True
    assert len(side["hints"]) >= 1                       # the stall's silence, with the hint the reader used
    assert stream_capture_kind(raw) == kind
    stats = meter.info()["stats"]
    assert stats["frames_missing"] >= 1400 and stats["frames_discarded"] == DISCARDED[kind]

    module = importlib.import_module(f"archline.powermon.{kind}.meter")
    got, got_stats = module.decode_capture(raw, [0, 1])
    assert got_stats == stats
    assert len(live) > 0 and len(got) == len(live)
    np.testing.assert_array_equal(got.meta["t_dev_s"], live.meta["t_dev_s"])
    np.testing.assert_array_equal(got.channel, live.channel)
    np.testing.assert_array_equal(got.voltage_v, live.voltage_v)
    np.testing.assert_array_equal(got.current_a, live.current_a)
    np.testing.assert_allclose(got.t_s, live.t_s, rtol=0, atol=1e-9)
    assert got.emulated is True
    # the current really ramps: the comparison is not of constants
    assert np.ptp(got.current_a[got.channel == 0]) > 1.0


def test_a_capture_of_another_kind_or_without_sidecar_is_refused(tmp_path: Path) -> None:
    from archline.powermon.pmd.meter import decode_capture

    raw = tmp_path / "c.raw"
    raw.write_bytes(b"\0" * 40)
    with pytest.raises(MeterError, match="no sidecar"):
        decode_capture(raw)
    sidecar_path(raw).write_text(json.dumps({"format": STREAM_RAW_FORMAT, "type": "powersensor3", "rate_hz": 1}))
    with pytest.raises(MeterError, match="not the sidecar of a pmd capture"):
        decode_capture(raw)


def test_meter_decode_reads_a_stream_capture(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from archline.cli.meter import meter as meter_cli
    from archline.powermon.record.samples_file import read_samples

    meter = emulate_meter(spec_of("pmd"), _ramp, speed=SPEED, seed=2, raw_dir=tmp_path)
    with Recorder([meter]) as rec:
        rec.begin("w")
        time.sleep(0.2)
        rec.end("w", t0_s=meter.stream_start_s())
    live = meter.samples()
    out = tmp_path / "s.csv"
    res = CliRunner().invoke(meter_cli, ["decode", str(meter.raw_path), "--out", str(out), "--channels", "0,1",
                                         "--format", "json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert report["samples"] == len(live) and report["emulated"] is True
    assert report["decoder"]["frames_missing"] == 0
    got, _ = read_samples(out)
    np.testing.assert_allclose(got.power_w, live.power_w, rtol=1e-6)
    res = CliRunner().invoke(meter_cli, ["decode", str(meter.raw_path), "--out", str(tmp_path / "t.csv"),
                                         "--r-sense", "0.01"])
    assert isinstance(res.exception, MeterError) and "leave out --rate and --r-sense" in str(res.exception)
