"""The real PowerMon 2 driver against the emulator over a real pty (and the in-process powermon:// URL)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest
import serial
from support.powermon_helpers import SCRIPT, match_truth

from archline.powermon.emulator import Faults, register_device, unregister_device
from archline.powermon.errors import MeterError
from archline.powermon.powermon2.decode import StreamDecoder, decode_bytes, guess_channels
from archline.powermon.powermon2.driver import PowerMon2, sidecar_path
from archline.powermon.powermon2.protocol import TICK_HZ, encode_samples, encode_time, split_words, words_from_bytes


def _capture(make, channels, rate_hz, seconds, faults=None, speed=1.0, raw_path=None, transport="pty"):
    if transport == "pty":
        core, srv = make(faults, speed)
        port = srv.port
    else:
        url = register_device("test-url", SCRIPT, faults, speed=speed)
        port = url
    pm = PowerMon2(port, channels, rate_hz=rate_hz, speed=speed, raw_path=raw_path)
    with pm:
        time.sleep(seconds / speed)
    if transport != "pty":
        from archline.powermon.emulator import get_device
        spec = get_device("test-url")
        assert spec is not None
        core = spec.cores[-1]
        unregister_device("test-url")
    return pm, core


def test_record_fields_decode_vectorised() -> None:
    rng = np.random.default_rng(1)
    s, v, i = rng.integers(0, 16, 1000), rng.integers(0, 4096, 1000), rng.integers(0, 4096, 1000)
    f = split_words(words_from_bytes(encode_samples(s, v, i) + encode_time(7)))
    assert (f.sensor[:-1] == s).all() and (f.vcode[:-1] == v).all() and (f.icode[:-1] == i).all()
    assert f.is_sample[:-1].all() and f.is_time[-1] and f.counter[-1] == 7


@pytest.mark.parametrize("transport", ["pty", "url"])
def test_128hz_8_channels_every_sample_and_energy(pty_device, transport, tmp_path: Path) -> None:
    chans = list(range(8))
    pm, core = _capture(pty_device, chans, 128, 5.0, speed=5.0, raw_path=tmp_path / "cap.bin", transport=transport)
    assert pm.emulated and "PowerMon" in pm.version and pm.error is None
    st = pm.stats
    truth, _ = core.truth.records()
    rec = pm.decoder.records()
    assert st.done and st.lost_records == 0 and st.gaps == 0 and st.overflows == 0 and st.resyncs == 0
    assert match_truth(truth, rec) == len(truth) == len(rec) >= 5 * 128 * 8
    assert st.time_records == core.truth.time_records
    # energy of the whole capture, on the device timeline, against the exact integral of the script
    s = pm.samples()
    t_dev = s.meta["t_dev_s"]
    total = 0.0
    for c in chans:
        sel = s.channel == c
        total += float(np.trapezoid(s.power_w[sel], t_dev[sel]))
    t_end = float(t_dev.max())
    assert total == pytest.approx(SCRIPT.energy_j(0.0, t_end, chans), rel=1e-3)
    # the raw capture decodes offline to the same records
    raw = (tmp_path / "cap.bin").read_bytes()
    assert sidecar_path(tmp_path / "cap.bin").exists()
    off = decode_bytes(raw, chans, pm.period_ticks)
    assert np.array_equal(off.records().event, rec.event) and np.array_equal(off.records().vcode, rec.vcode)
    assert guess_channels(raw) == chans


def test_aggregate_limit_3_channels_1024hz_real_time(pty_device) -> None:
    pm, core = _capture(pty_device, [0, 1, 2], 1024, 2.0, speed=1.0)
    truth, _ = core.truth.records()
    rec = pm.decoder.records()
    assert pm.stats.lost_records == 0 and pm.stats.gaps == 0 and pm.stats.resyncs == 0
    assert match_truth(truth, rec) == len(truth) >= 2 * 3072 * 0.95


FAULTS = {
    "partial_first": (Faults(partial_first=3), dict(skipped_min=1)),
    "dropped_bytes": (Faults(drop_bytes=(1001, 15002, 30003)), dict(resyncs=3)),
    "noise": (Faults(noise=((8000, 7), (30000, 13))), dict(resyncs_min=1)),
    "overflow_burst": (Faults(overflow=((300, 5),)), dict(overflows=1, lost=5)),
    "stall": (Faults(stall=(1.6, 0.7)), dict(overflows=1)),
}


@pytest.mark.parametrize("name", list(FAULTS))
def test_injected_faults_are_decoded_and_counted(pty_device, name: str) -> None:
    faults, want = FAULTS[name]
    speed = 1.0 if name == "stall" else 4.0
    pm, core = _capture(pty_device, [0, 1, 2], 1024 if name != "stall" else 256, 3.0, faults=faults, speed=speed)
    st = pm.stats
    truth, sent = core.truth.records()
    rec = pm.decoder.records()
    matched = match_truth(truth, rec)
    assert matched == len(rec)
    assert matched + st.lost_records == len(truth), st        # every record: decoded or counted lost
    assert st.cadence_errors == 0 and st.done
    if "overflows" in want:
        assert st.overflows == want["overflows"] and st.gaps >= 1
    if "lost" in want:
        assert st.lost_records == want["lost"] == np.count_nonzero(~sent)
    if "resyncs" in want:
        assert st.resyncs == want["resyncs"] and st.lost_records >= 3 and st.gaps >= 3
    if "resyncs_min" in want:
        assert st.resyncs >= want["resyncs_min"]
    if "skipped_min" in want:
        assert st.skipped_bytes >= want["skipped_min"] and st.lost_records == 1
    if name == "stall":
        assert pm.stalls >= 1 and st.lost_records == np.count_nonzero(~sent) > 0


def test_disconnect_is_an_error_and_keeps_what_came(pty_device, tmp_path: Path) -> None:
    _, srv = pty_device(Faults(disconnect_s=0.5), 1.0)
    pm = PowerMon2(srv.port, [0, 1], rate_hz=128, raw_path=tmp_path / "d.bin")
    with pm:
        time.sleep(1.0)
    assert isinstance(pm.error, MeterError) and "disconnected" in str(pm.error)
    assert len(pm.decoder.records()) >= 100
    assert (tmp_path / "d.bin").stat().st_size >= 400


def test_stops_streaming_after_an_exception(pty_device) -> None:
    core, srv = pty_device(None, 1.0)
    with pytest.raises(RuntimeError), PowerMon2(srv.port, [0], rate_hz=128):
        time.sleep(0.2)
        raise RuntimeError("kernel crashed")
    assert not core.streaming and core.truth.parts


def test_port_closed_under_a_read_in_flight_ends_the_stream_quietly(pty_device) -> None:
    """On a busy host stop() may wait out its join timeout and close the port while the reader thread is inside
    pyserial's read (a SIGTERM'd sweep in CI did): the thread ends without an uncaught exception or a fault."""
    import threading

    _, srv = pty_device(None, 1.0)
    caught: list[threading.ExceptHookArgs] = []
    old_hook = threading.excepthook
    threading.excepthook = caught.append
    try:
        pm = PowerMon2(srv.port, [0, 1], rate_hz=128)
        pm.open()
        pm.start()
        time.sleep(0.3)
        pm._close_port()                      # what stop() does once its join has timed out
        assert pm._thread is not None
        pm._thread.join(timeout=5)
        assert not pm._thread.is_alive()
    finally:
        threading.excepthook = old_hook
    assert not caught, [repr(c.exc_value) for c in caught]
    assert pm.error is None
    assert len(pm.decoder.records()) > 0


def test_silent_device(pty_device) -> None:
    _, srv = pty_device(Faults(silent=True))
    with pytest.raises(MeterError, match="no PowerMon 2 answers"):
        PowerMon2(srv.port, [0], timeout_s=0.3).open()


def test_missing_and_busy_port(pty_device, tmp_path: Path) -> None:
    with pytest.raises(MeterError, match="does not exist"):
        PowerMon2(str(tmp_path / "ttyUSB9"), [0]).open()
    _, srv = pty_device()
    holder = serial.Serial(srv.port, exclusive=True)
    try:
        with pytest.raises(MeterError, match="busy"):
            PowerMon2(srv.port, [0]).open()
    finally:
        holder.close()


def test_bad_channel_map_and_rate() -> None:
    with pytest.raises(MeterError, match="channel 9"):
        PowerMon2("/dev/null", [0, 9])
    with pytest.raises(MeterError, match="1024/N"):
        PowerMon2("/dev/null", [0], rate_hz=100)


def test_garbage_and_truncated_captures() -> None:
    with pytest.raises(MeterError, match="not a PowerMon 2 capture"):
        guess_channels(os.urandom(4000) + b"\xff" * 4000)
    d = StreamDecoder([0, 1], 8)
    d.feed(os.urandom(64))
    d.finish()
    assert len(d.records()) == 0 and d.stats.skipped_bytes == 64 and not d.stats.done


def test_chunking_does_not_change_the_decode(pty_device) -> None:
    pm, _ = _capture(pty_device, [0, 1, 2], 512, 2.0, faults=Faults(drop_bytes=(777,), noise=((5000, 3),)), speed=4)
    rec = pm.decoder.records()
    # the same bytes fed one odd-sized chunk at a time
    stream = bytearray()
    from archline.powermon.powermon2.emulator import PowerMon2Core

    class Clock:
        t = 0.0

        def __call__(self) -> float:
            return self.t
    clk = Clock()
    core = PowerMon2Core(SCRIPT, Faults(drop_bytes=(777,), noise=((5000, 3),)), clock=clk)
    core.write(b"t 0\rm 7\rs 2 0\r")
    core.read_available()
    core.write(b"e\r")
    clk.t = 2.0
    stream += core.read_available()
    core.write(b"d\r")
    stream += core.read_available()
    one = decode_bytes(stream, [0, 1, 2], 2)
    dec = StreamDecoder([0, 1, 2], 2)
    for k in range(0, len(stream), 37):
        dec.feed(stream[k:k + 37])
    dec.finish()
    assert np.array_equal(one.records().event, dec.records().event)
    assert one.stats == dec.stats
    assert one.stats.lost_records == len(core.truth.records()[0]) - len(one.records())
    assert len(rec) > 0 and TICK_HZ == 1024
