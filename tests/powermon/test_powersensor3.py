"""PowerSensor3: the byte protocol (exact levels and values, config records, resync, the sentinel ambiguity, the
10-bit timestamp onto the cadence), the real driver against the emulator on a pty, each fault counted, and the
clock aligned to in-band markers (with the alignment error with and without them)."""

from __future__ import annotations

import itertools
import struct
import time
from pathlib import Path

import numpy as np
import pytest
from support.stream_meters import POWER, run_window, spec_of

from archline.powermon.powersensor3.emulator import PowerSensor3Core
from archline.powermon.powersensor3.protocol import (
    RECORD_BYTES,
    Decoder,
    SensorConfig,
    default_config,
    encode_frames,
    level_from_value,
    timestamp_us,
    value_from_level,
)
from archline.powermon.record.recorder import Recorder
from archline.powermon.spec import emulate_meter
from archline.powermon.stream.core import StreamFaults


def _frames(n: int, rate_hz: float, levels: np.ndarray | None = None, marker: tuple[int, ...] = ()) -> bytes:
    k = np.arange(n)
    lv = np.tile(np.arange(8) * 100 + 3, (n, 1)) if levels is None else levels
    return encode_frames(timestamp_us(k, rate_hz), lv, np.isin(k, marker))


def test_packet_layout_and_exact_decode() -> None:
    b = _frames(1, 20_000.0)
    assert len(b) == 18
    assert b[0] == 0xF0 and b[1] == 0x40              # timestamp 0: "sensor 7 with the marker bit"
    assert b[2] == 0x80 | (0 << 4) | (3 >> 6) and b[3] == 3 & 0x3F
    assert b[16] == 0x80 | (7 << 4) | (703 >> 6) and b[17] == 703 & 0x3F
    cfg = default_config()
    d = Decoder(cfg, 20_000.0).feed(b)
    vref = np.array([c.vref_v for c in cfg])
    sens = np.array([c.sens for c in cfg])
    want = (3.3 * (np.arange(8) * 100 + 3) / 1023 - vref) / sens          # the divisor is 1023
    assert d.k.tolist() == [0]
    np.testing.assert_allclose(d.amps[0], want[0::2], rtol=0, atol=1e-12)
    np.testing.assert_allclose(d.volts[0], want[1::2], rtol=0, atol=1e-12)


def test_levels_round_trip_and_full_scale() -> None:
    vref, sens = np.array([1.65, 0.0]), np.array([0.0625, 0.09])
    lv = level_from_value(np.array([[5.0, 12.0]]), vref, sens)
    assert lv.tolist() == [[608, 335]]          # 1.9625 V x 1023 / 3.3 = 608.4; 1.08 V -> 334.8
    back = value_from_level(lv, vref, sens)
    assert abs(back[0, 0] - 5.0) <= 0.5 * 3.3 / 1023 / 0.0625 and abs(back[0, 1] - 12.0) <= 0.5 * 3.3 / 1023 / 0.09
    assert level_from_value(np.array([100.0]), np.array([1.65]), np.array([0.0625])).tolist() == [1023]


def test_config_records_are_41_bytes_and_round_trip() -> None:
    c = SensorConfig("MLX20", "gpu12v", 1.6375, -0.0625, True)
    raw = c.pack()
    assert len(raw) == RECORD_BYTES == 41
    assert SensorConfig.unpack(raw) == SensorConfig("MLX20", "gpu12v", pytest.approx(1.6375), -0.0625, True)
    assert SensorConfig.unpack(b"\xff" * 41).type == "INVALID"        # erased flash: no NUL in the name


def test_chunking_does_not_matter_and_timestamps_wrap() -> None:
    b = _frames(500, 20_000.0, marker=(123,))     # 500 x 50 us: the 10-bit stamp wraps 24 times
    whole = Decoder(default_config(), 20_000.0).feed(b)
    dec = Decoder(default_config(), 20_000.0)
    parts = [dec.feed(b[i:i + 7]) for i in range(0, len(b), 7)]
    ks = np.concatenate([p.k for p in parts])
    assert whole.k.tolist() == ks.tolist() == list(range(500))
    assert whole.markers.tolist() == [123] and np.concatenate([p.markers for p in parts]).tolist() == [123]
    assert dec.stats.bytes_skipped == 0 and dec.stats.frames_missing == 0


def test_a_lost_byte_costs_one_frame_and_a_saturated_sensor7_is_data() -> None:
    lv = np.tile(np.arange(8) * 100 + 3, (40, 1))
    lv[:, 7] = 1023                                   # FF 3F in every frame: the stop sentinel's bytes
    b = _frames(40, 2000.0, lv)
    assert b"\xff\x3f" in b
    bad = b[:18 * 10 + 7] + b[18 * 10 + 8:]
    dec = Decoder(default_config(), 2000.0)
    d = dec.feed(bad)
    assert d.k.tolist() == [k for k in range(40) if k != 10]
    assert dec.stats.frames_missing == 1 and dec.stats.bytes_skipped == 17
    assert np.all(d.volts[:, 3] == value_from_level(np.array(1023), 0.0, 0.09))


class FakeClock:
    """Host seconds that move only when told (the emulator's timing, checked exactly)."""

    def __init__(self) -> None:
        self.t_s = 100.0

    def __call__(self) -> float:
        return self.t_s


def _core(rate_hz: float = 1000.0, **kw: object) -> tuple[PowerSensor3Core, FakeClock]:
    clock = FakeClock()
    return PowerSensor3Core(lambda t_s: POWER, rate_hz, clock=clock, **kw), clock    # type: ignore[arg-type]


def _stamps(b: bytes) -> np.ndarray:
    f = np.frombuffer(b, np.uint8).reshape(-1, 18).astype(np.int64)
    assert np.all(f[:, 0] >> 4 == 0xF) and np.all(f[:, 1] >> 6 == 1)       # the timestamp packet
    return ((f[:, 0] & 0x0F) << 6) | (f[:, 1] & 0x3F)


def test_emulator_commands_version_config_and_count() -> None:
    core, clock = _core()
    core.write(b"V")
    # an F407 (whose cadence only its stamps tell) at 1 kHz; at 20 kHz an F411, at 17.5 kHz an F401
    assert core.read_available() == b"F407-1.6.1\r\n"
    assert [PowerSensor3Core(rate_hz=r).version for r in (20000.0, 17500.0)] == ["F411-1.6.1", "F401-1.6.1"]
    core.write(b"R")
    got = core.read_available()
    for _ in range(7):
        core.write(b"s")
        got += core.read_available()
    core.write(b"s")
    got += core.read_available()
    assert len(got) == 8 * 41 + 1 and got[-1:] == b"D"
    new = [SensorConfig("MLX50", "p", 1.6, 0.025, True)] * 8
    core.write(b"W")
    for rec in new:
        core.write(rec.pack())
    assert core.read_available() == b"S" * 8 + b"D" and core.config[0].type == "MLX50"
    core.write(b"X")                                   # not streaming: the sentinel alone, after delay(100)
    assert core.read_available() == b""
    clock.t_s += 0.1
    assert core.read_available() == b"\xff\x3f\xff\x3f"
    core.write(b"I")
    assert len(core.read_available()) == 18


def test_emulator_clock_free_runs_and_q_keeps_counting() -> None:
    """The first stamp after S is wherever the free-running micros() is (not 0), each stamp 0-1 us late; Q counts 8
    conversions per frame since the last S, streaming or not."""
    core, clock = _core(20_000.0)
    firsts, lates = [], []
    for _ in range(5):
        core.write(b"S")
        t_first = core._first_us                        # device us of frame 0 (free-running, unwrapped)
        clock.t_s += 0.01                               # 200 frames
        st = _stamps(core.read_available())
        assert len(st) == 200
        firsts.append(int(st[0]))
        true = np.floor(t_first + np.arange(200) * 50.0)          # the stamp with no lateness
        late = (st - true.astype(np.int64)) % 1024
        assert set(late.tolist()) <= {0, 1}
        lates.append(late.mean())
        assert core.conversions() == 8 * 200
        core.write(b"X")
        clock.t_s += 0.1
        tail = core.read_available()
        assert tail[:4] == b"\xff\x3f\xff\x3f" and len(tail) == 4 + 18      # one frame trails the sentinel
        assert core.conversions() == 8 * (200 + 2000)                     # it counted on while stopped
        clock.t_s += 0.0123
    assert len(set(firsts)) == 5 and 0 < float(np.mean(lates)) < 1         # random phase; late by 0-1 us
    core.write(b"Q")
    assert core.read_available() == struct.pack("<I", core.conversions())


def test_emulator_x_waits_100ms_and_hangs_on_a_pending_marker() -> None:
    core, clock = _core()
    core.write(b"S")
    clock.t_s += 0.01
    core.read_available()
    core.write(b"XV")                                   # V waits in the USB buffer while the firmware is in delay()
    clock.t_s += 0.099
    assert core.read_available() == b""
    clock.t_s += 0.001
    out = core.read_available()
    assert out[:4] == b"\xff\x3f\xff\x3f" and out[4 + 18:] == b"F407-1.6.1\r\n"
    core.write(b"SM")
    core.write(b"X")                                    # a marker still pending: the firmware never returns
    clock.t_s += 1.0
    core.write(b"VS")
    assert core.hung and core.read_available() == b""


def test_emulator_output_queue_is_bounded() -> None:
    """A host that stops reading: frames that find the queue full are lost whole and counted; when it reads again
    the decoder counts exactly those (a gap under one stamp wrap)."""
    core, clock = _core(20_000.0, queue_bytes=18 * 100)
    dec = Decoder(default_config(), 20_000.0)
    core.write(b"S")
    clock.t_s += 0.005                                   # 100 frames, read
    first = dec.feed(core.read_available())
    clock.t_s += 0.0075                                  # 150 frames unread: 100 fit the queue, 50 are lost
    queued = dec.feed(core.read_available())
    assert core.frames_overflowed == 50 and core.truth.frames_stalled == 50
    clock.t_s += 0.005                                   # read on time again: nothing more lost
    after = dec.feed(core.read_available())
    assert (first.k.size, queued.k.size, after.k.size) == (100, 100, 100)
    assert dec.stats.frames_missing == 50 and int(after.k[0]) == 100 + 150


@pytest.mark.parametrize("seed", range(10))
def test_free_running_late_stamps_count_no_loss_and_real_gaps_exactly(seed: int) -> None:
    """At 20 kHz: a first stamp anywhere and every stamp 0-1 us late (as the firmware's interrupt makes them) give 0
    frames missing; frames dropped (a run of 37 and one of 700, more than a stamp wrap) are counted exactly."""
    rng = np.random.default_rng(seed)
    n = 20_000
    k = np.arange(n)
    first_us = float(rng.uniform(0, 2 ** 32))
    ts = timestamp_us(k, 20_000.0, first_us % 1024, rng.uniform(0, 1.0, n))
    lv = np.tile(np.arange(8) * 100 + 3, (n, 1))
    b = encode_frames(ts, lv, np.zeros(n, bool))
    dec = Decoder(default_config(), 20_000.0)
    d = dec.feed(b)
    assert d.k.tolist() == list(range(n)) and dec.stats.frames_missing == 0
    keep = ~(((k >= 5000) & (k < 5037)) | ((k >= 12000) & (k < 12700)))
    dec = Decoder(default_config(), 20_000.0)
    got = dec.feed(encode_frames(ts[keep], lv[keep], np.zeros(int(keep.sum()), bool)))
    # 700 frames is 1 wrap (512) and 188: the stamps alone see 188; the driver's arrival times see the wrap
    assert dec.stats.frames_missing == 37 + 188 and got.k[-1] == n - 1 - 512


def test_driver_reads_config_and_values_on_the_pty() -> None:
    mr, truth, stats = run_window("powersensor3")
    assert stats["error"] is None and mr.emulated
    assert mr.lost_samples == 0 and stats["frames_missing"] == 0 and stats["bytes_skipped"] == 0
    lsb_a, lsb_v = 3.3 / 1023 / 0.0625, 3.3 / 1023 / 0.09
    assert mr.channels["0"].mean_power_w == pytest.approx(60.0, abs=12.0 * lsb_a / 2 + 5.0 * lsb_v / 2)
    assert mr.channels["1"].mean_power_w == pytest.approx(6.6, abs=3.3 * lsb_a / 2 + 2.0 * lsb_v / 2)
    assert truth.markers_sent == stats["markers"] >= 1


@pytest.mark.parametrize(("name", "faults", "missing", "skipped"), [
    ("dropped byte", StreamFaults(drop_bytes=(18 * 100 + 5,)), 1, 17),
    ("garbage between frames", StreamFaults(noise=((18 * 300, 3),)), 0, 3),
    ("garbage inside a frame", StreamFaults(noise=((18 * 300 + 5, 3),)), 1, 21),
    ("cut first frame", StreamFaults(cut_first=5), 1, 13),
    ("stall", StreamFaults(stall=(0.2, 0.1)), 200, 0),
])
def test_each_fault_is_counted(name: str, faults: StreamFaults, missing: int, skipped: int) -> None:
    mr, truth, stats = run_window("powersensor3", faults)
    assert stats["frames_missing"] == missing, name
    assert stats["bytes_skipped"] == skipped, name
    assert truth.bytes_dropped + truth.bytes_inserted == len(faults.drop_bytes) + sum(n for _, n in faults.noise)
    assert truth.frames_stalled == (200 if faults.stall else 0)
    # two channels per lost frame inside the window (the cut first frame is before the window's first mark)
    assert mr.lost_samples == (0 if faults.cut_first else 2 * missing)
    if mr.lost_samples:
        assert any("lost" in w for w in mr.warnings)


def test_disconnect_is_reported_and_the_rest_counted_lost() -> None:
    mr, truth, stats = run_window("powersensor3", StreamFaults(disconnect_s=0.3))
    assert truth.frames_cut == 1
    assert stats["error"] is not None and "disconnected" in str(stats["error"])
    assert any("disconnected" in w for w in mr.warnings)
    got = mr.expected_samples - mr.lost_samples
    assert mr.lost_samples > 0 and got <= 2 * (round(0.3 * 2000) + 1)


def test_stop_waits_for_pending_markers_so_the_firmware_does_not_hang() -> None:
    """A mark asked just before the stop: the driver sends X only once its marker came back (a frame every 10 ms
    here), so the firmware is not caught waiting for it; the sentinel comes after the firmware's 100 ms delay."""
    meter = emulate_meter(spec_of("powersensor3", rate_hz=100.0), lambda t_s: POWER, speed=1.0, seed=0)
    meter.start()
    t_mark = time.monotonic()
    meter.mark(t_mark)
    meter.stop()
    assert not meter.core.hung and meter.core.pending_markers == 0 and meter.error is None
    assert len(meter.driver.markers()) == 1 and meter.core.truth.markers_sent == 1


def test_markers_align_the_clock() -> None:
    """Each window mark is an in-band marker; the true offset lies between the markers' bound and the read
    envelope's, and the aligned clock is within its stated bound of the truth."""
    spec = spec_of("powersensor3", rate_hz=2000.0)
    with_m, without = [], []
    for seed in range(3):
        meter = emulate_meter(spec, lambda t_s: POWER, speed=1.0, seed=seed)
        with Recorder([meter]) as rec:
            for i in range(6):
                rec.begin(f"w{i}")
                time.sleep(0.03)
                rec.end(f"w{i}")
            true_offset = meter.core.host_time_s(0.0)
            env = meter.driver.clock_map(False).offset_s
            aligned = meter.clock_map().offset_s
            bound = meter.clock_err_s
        assert len(meter.driver.markers()) == 12
        assert env >= true_offset                     # data arrive after they are taken
        assert bound is not None and abs(aligned - true_offset) <= bound + 1e-9
        with_m.append(abs(aligned - true_offset))
        without.append(abs(env - true_offset))
    assert max(with_m) < 5e-3                     # a few ms at most even on a loaded host
    print(f"clock offset error: with markers {1e6 * max(with_m):.0f} us (max of 3), "
          f"without {1e6 * max(without):.0f} us")


# --- issue 35 (fixer FS): a stopped reader, the board's own clock rate, impossible calibration, old firmware ---------

def _reader_stopped(rate_hz: float, drops: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, int]:
    """A reader that reads a chunk every 2 ms, is stopped for 0.5 s (kill -STOP), then reads on: the device queued
    ``queue`` frames after the stop (with board drops of 3 frames at ``drops`` among them) and lost the rest of the
    stop; fed to a driver as the reader feeds it: (true frame indices stored, decoded, frames truly lost)."""
    from archline.powermon.powersensor3.driver import PowerSensor3
    from archline.powermon.stream.relocate import relocate

    per_chunk = max(int(rate_hz * 0.002), 1)
    stop_at, stop_s, queue = 300 * per_chunk, 0.5, int(rate_hz * 0.18)
    resume = stop_at + int(stop_s * rate_hz)
    true_k = np.arange(resume + 400 * per_chunk)
    lost = (true_k >= stop_at + queue) & (true_k < resume)
    for d in drops:
        lost |= (true_k >= stop_at + d) & (true_k < stop_at + d + 3)
    sent = true_k[~lost]
    b = encode_frames(timestamp_us(sent, rate_hz, 321.0), np.tile(np.arange(8) * 100 + 3, (len(sent), 1)),
                      np.zeros(len(sent), bool))
    drv = PowerSensor3("unused", rate_hz, name="ps3")
    # chunks: per 2 ms before the stop; the whole queue in one read at the resume; per 2 ms after
    cuts = [*range(0, stop_at, per_chunk), stop_at, int(np.searchsorted(sent, resume)),
            *range(int(np.searchsorted(sent, resume)) + per_chunk, len(sent), per_chunk), len(sent)]
    for lo, hi in itertools.pairwise(cuts):
        if hi <= lo:
            continue
        arrival = 10.0 + max(float(sent[hi - 1]) / rate_hz, resume / rate_hz if lo >= stop_at else 0.0) + 0.001
        drv._store(drv.decoder.feed(b[18 * lo:18 * hi]), arrival, (18 * lo, 18 * hi))
    with drv._lock:
        relocate(drv, final=True)
    k, _, _ = drv.frames()
    return sent, k, int(lost.sum())


@pytest.mark.parametrize(("rate_hz", "drops"), [(20000.0, ()), (20000.0, (100, 900)), (2000.0, (10, 200))])
def test_a_stopped_reader_loses_frames_at_the_stamps_gap_not_at_the_silence(rate_hz: float,
                                                                            drops: tuple[int, ...]) -> None:
    """Issue 35 S#1: the frames queued before the loss stay before it (were placed a whole 0.33 s late), whole
    wraps are added at the stamps' discontinuity only (the board's own drops among the queued frames keep theirs),
    and the count is exact (was over by 1024 frames)."""
    sent, k, lost = _reader_stopped(rate_hz, drops)
    k = k - k[0] + sent[0]
    assert len(k) == len(sent)
    assert np.array_equal(k, sent)
    assert int(k[-1] - k[0] + 1 - len(k)) == lost


def _open_emulated(config: tuple[SensorConfig, ...] | None = None, version: str | None = None) -> str:
    """Open an emulated board whose flash holds ``config`` and whose V answers ``version``: the error, or ''."""
    from archline.powermon.errors import MeterError

    meter = emulate_meter(spec_of("powersensor3", rate_hz=2000.0), lambda t_s: POWER, speed=1.0, seed=0)
    if config is not None:
        meter.core.config = config
    if version is not None:
        meter.core.version = version
    try:
        meter.start()
    except MeterError as e:
        return f"{e.exit_code}: {e}"
    meter.stop()
    return ""


@pytest.mark.parametrize(("bad", "says"), [(dict(vref_v=float("nan"), sens=float("nan")), "vref nan"),
                                           (dict(sens=0.0), "sensitivity 0"),
                                           (dict(sens=float("inf")), "sensitivity inf")])
def test_an_impossible_calibration_is_refused_at_open(bad: dict[str, float], says: str) -> None:
    """Issue 35 S#3: NaN (never configured), 0 or infinite sensitivity were recorded (energy NaN, inf, exit 0):
    refused at open, exit 4, naming the sensor and its value and psconfig; a negative one is a polarity."""
    import dataclasses

    cfg = list(default_config())
    cfg[2] = dataclasses.replace(cfg[2], **bad)
    err = _open_emulated(tuple(cfg))
    assert err.startswith("4: ") and f"sensor 2 (pair 1 current, type 'MLX20') has {says}" in err
    assert "configure it with psconfig" in err
    cfg[2] = dataclasses.replace(default_config()[2], sens=-0.0625)
    assert _open_emulated(tuple(cfg)) == ""


def test_erased_flash_and_a_short_config_are_refused_by_decode_too() -> None:
    """Issue 35 S#3/#5: a sidecar's config_hex of erased flash (ff x 328) wrote NaN rows; a short one crashed with a
    struct.error traceback: both one line, exit 2, naming the sidecar key."""
    from archline.powermon.errors import MeterError
    from archline.powermon.powersensor3.driver import PowerSensor3
    from archline.powermon.stream.meter import decode_capture

    data = _frames(100, 2000.0)
    for hexed, says in (("ff" * 328, "has vref nan (its flash looks erased)"), ("00" * 40, "is 40 bytes"),
                        ("zz", "not hex")):
        with pytest.raises(MeterError) as e:
            decode_capture(PowerSensor3, data, {"rate_hz": 2000.0, "config_hex": hexed})
        assert e.value.exit_code == 2 and "config_hex" in str(e.value) and says in str(e.value)


@pytest.mark.parametrize("line", ["F411-1.4.1", "Firmware version: 1.4.1"])
def test_firmware_before_1_5_is_refused(line: str) -> None:
    """Issue 35 S#4: the docs say firmware before 1.5.0 is not supported; it was accepted silently."""
    err = _open_emulated(version=line)
    assert err.startswith("4: ") and "firmware 1.4.1" in err and "before 1.5.0 is not supported" in err


def test_the_boards_own_rate_from_its_mcu_and_from_its_stamps() -> None:
    """Issue 35 S#2: an F401 streams 17500 frames/s; told 20000 (the default) it was decoded into a 235 s window
    for 2 s: refused from V's MCU (exit 2, naming the rate to set), and from the stamps where V does not say it."""
    from archline.powermon.errors import MeterError
    from archline.powermon.powersensor3.driver import PowerSensor3

    drv = PowerSensor3("/dev/ttyACM0", 20000.0, name="ps3")
    drv.version = "F401-1.6.1"
    with pytest.raises(MeterError) as e:
        drv.check_version()
    assert e.value.exit_code == 2 and "set rate_hz = 17500" in str(e.value)
    drv = PowerSensor3("/dev/ttyACM0", 17500.0, name="ps3")
    drv.version = "F401-1.6.1"
    drv.check_version()
    assert drv.mcu == "F401"
    dec = Decoder(default_config(), 20000.0)
    with pytest.raises(MeterError, match=r"step 57 us per frame \(about 17[45]\d\d frames/s\)"):
        dec.feed(_frames(200, 17500.0))
    got = Decoder(default_config(), 17500.0).feed(_frames(200, 17500.0))
    assert got.k.tolist() == list(range(200))


def test_a_killed_recording_leaves_a_decodable_capture_and_a_later_one_cleans_it(tmp_path: Path) -> None:
    """Issue 35 S#6: kill -9 left .k.raw.bin.PID.tmp without a sidecar (decode refused it, --partial too) and a
    later record left it there: the sidecar is written beside the temp file as the stream opens, and a later
    capture of the same name removes the temp files of a process that is gone."""
    import json
    import subprocess
    import sys

    from archline.formats.meters.capture import STREAM_RAW_FORMAT, sidecar_path, stream_capture
    from archline.powermon.powersensor3.meter import decode_capture

    cap = stream_capture("powersensor3", None, tmp_path / "k.raw.bin")
    assert cap is not None
    cap.open()
    cap.note_open(lambda: {"type": "powersensor3", "rate_hz": 2000.0, "config_hex": b"".join(
        c.pack() for c in default_config()).hex(), "emulated": True})
    cap.write(_frames(300, 2000.0) + b"\xf3")           # killed mid-frame: never finished
    cap._f.flush()                                      # type: ignore[union-attr]
    side = json.loads(sidecar_path(cap.tmp).read_text())
    assert side["format"] == STREAM_RAW_FORMAT and "did not finish" in side["recovery"]
    samples, stats = decode_capture(cap.tmp)
    assert stats["frames"] == 300 and len(samples) == 4 * 300
    # the process that wrote them is gone: a later capture of the same name removes both
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / f".k.raw.bin.{int(dead.stdout)}.tmp"
    cap.tmp.rename(stale)
    sidecar_path(cap.tmp).rename(sidecar_path(stale))
    cap._f = None
    again = stream_capture("powersensor3", None, tmp_path / "k.raw.bin")
    assert again is not None
    again.open()
    again.abandon()
    assert sorted(p.name for p in tmp_path.iterdir()) == []
