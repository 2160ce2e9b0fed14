"""`archline meter` against the hostile tester's reproducers (issue 22 findings F7, F9, F12, F17, F18, F19): each test
is the tester's case, and each failed before its fix.

* F7: a FIFO named ``*.parquet`` as an output was deleted (pyarrow removes the path it fails to write);
* F9: ``meter decode`` wrote the samples file, then refused its sidecar (an input), leaving the file behind;
* F12: an emulator speed the pty cannot carry gave a thread traceback (or lost 99% of the samples);
* F17: a samples or capture sidecar whose speed, info.speed and clock contradict each other was trusted;
* F18: a capture decoded without its sidecar was labelled real hardware;
* F19: ``"emulated": false`` removed the label although the meter name and version said EMULATED.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.pipes import pipe_of
from support.powermon_helpers import make_capture, one_line, run

from archline.common.exits import EXIT_INPUT, EXIT_OK
from archline.powermon.emulator.device import EMULATED_LINE
from archline.powermon.formats import MAX_EMULATED_RECORDS_PER_S, max_emulator_speed
from archline.powermon.powermon2.protocol import PROMPT, VERSION_REPLY

SPEED = 4.0


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_capture(tmp_path_factory.mktemp("cap") / "c.raw.bin", speed=SPEED, seconds=3,
                        meter="powermon2-emulated", version="PowerMon HW v2.0 SW v2.2 EMULATED by archline")


def copy_capture(capture: Path, dest: Path, **change: object) -> Path:
    dest.write_bytes(capture.read_bytes())
    side = json.loads(capture.with_name(capture.name + ".json").read_text())
    for k, v in change.items():
        if k == "clock_spd":
            side["clock"]["seconds_per_device_s"] = v
        else:
            side[k] = v
    dest.with_name(dest.name + ".json").write_text(json.dumps(side))
    return dest


@pytest.fixture
def recorded(capture: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """t.csv with a sidecar shaped as `meter record --meter emulated:4` writes it (speed, info.speed, info.clock)."""
    out = tmp_path / "t.csv"
    code, _, err = run(capsys, "meter", "decode", str(capture), "--out", str(out))
    assert code == EXIT_OK, err
    sp = out.with_name(out.name + ".json")
    side = json.loads(sp.read_text())
    raw_side = json.loads(capture.with_name(capture.name + ".json").read_text())
    side.update(meter="powermon2-emulated", emulated=True, info=raw_side)
    sp.write_text(json.dumps(side))
    return out


def integrate(capsys: pytest.CaptureFixture[str], p: Path | str) -> tuple[int, dict, str]:
    code, out, err = run(capsys, "meter", "integrate", str(p), "--format", "json")
    return code, (json.loads(out) if out.strip() else {}), err


@contextlib.contextmanager
def fifo_reader(path: Path) -> Iterator[list[bytes]]:
    """A FIFO at ``path`` read to its end by a thread (what `cat fifo >/dev/null &` does); the bytes land in the
    list yielded."""
    os.mkfifo(path)
    got: list[bytes] = []

    def read() -> None:
        with open(path, "rb") as f:
            got.append(f.read())

    t = threading.Thread(target=read, daemon=True)
    t.start()
    try:
        yield got
    finally:
        if t.is_alive() and path.exists():     # nothing opened it for writing: release the reader
            with contextlib.suppress(OSError):
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        t.join(10)


# --- F7 -------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("command", ["decode", "record"])
def test_f7_a_fifo_parquet_output_is_written_as_a_stream_and_kept(command: str, capture: Path, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "d.parquet"
    with fifo_reader(out) as got:
        args = (["meter", "decode", str(capture), "--out", str(out)] if command == "decode" else
                ["meter", "record", "--meter", "emulated:4", "--channels", "0,1", "--duration", "0.3", "--out",
                 str(out)])
        code, _, err = run(capsys, *args)
    assert code == EXIT_OK, err
    assert stat.S_ISFIFO(os.lstat(out).st_mode), "the user's FIFO was removed or replaced"
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(pa.BufferReader(got[0]))
    assert table.num_rows > 0 and {"t_s", "power_w"} <= set(table.column_names)
    assert not out.with_name(out.name + ".json").exists() and not (tmp_path / "d.raw.bin").exists()


# --- F9 -------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_f9_decode_checks_every_output_before_writing(suffix: str, capture: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / f"q{suffix}"
    raw = copy_capture(capture, tmp_path / f"q{suffix}.json")      # the capture is the output's sidecar name
    before = raw.read_bytes()
    code, _, err = run(capsys, "meter", "decode", str(raw), "--out", str(out))
    assert code == EXIT_INPUT and "is an input" in one_line(err)
    assert not out.exists(), "the samples file was written before the command was refused"
    assert raw.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([raw.name, raw.name + ".json"])


# --- F12 ------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("speed", ["1e9", "1e4"])
def test_f12_a_speed_the_pty_cannot_carry_is_refused_up_front(speed: str, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "meter", "record", "--meter", f"emulated:{speed}", "--duration", "1", "--out",
                         str(tmp_path / "f.csv"))
    line = one_line(err)
    assert code == EXIT_INPUT and out == "" and "lower the speed to 58 or less" in line   # 8 channels at 128 Hz
    assert list(tmp_path.iterdir()) == []


def test_f12_meter_emulate_refuses_the_speed_too(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "meter", "emulate", "--speed", "1e9", "--duration", "0.1")
    assert code == EXIT_INPUT and out == "" and "lower --speed to 19 or less" in one_line(err)


def test_f12_one_rule_for_bench_and_meter() -> None:
    from archline.bench.run import session

    assert session.MAX_EMULATED_RECORDS_PER_S == MAX_EMULATED_RECORDS_PER_S
    assert max_emulator_speed(128 * 8) * 128 * 8 <= MAX_EMULATED_RECORDS_PER_S < (max_emulator_speed(1024) + 1) * 1024


# --- F17 ------------------------------------------------------------------------------------------------------------

def test_f17_a_consistent_recording_sidecar_still_integrates(recorded: Path, capsys: pytest.CaptureFixture[str]
                                                             ) -> None:
    code, res, err = integrate(capsys, recorded)
    assert code == EXIT_OK, err
    assert res["time_compression"] == SPEED and res["emulated"] is True


@pytest.mark.parametrize(("change", "keys"), [
    ({"speed": 1.0}, ["speed", "info.speed"]),                         # the tester's case: 4x less energy
    ({"speed": 1e9}, ["speed", "info.speed"]),                         # was "lost 100%", exit 6
    ({"info.clock": 1.0}, ["speed", "info.clock.seconds_per_device_s"]),
    ({"speed": 1e9, "info": None}, ["speed", "58x"]),                  # no info to compare: beyond any emulator
])
def test_f17_a_samples_sidecar_that_contradicts_itself_is_refused(recorded: Path, capsys: pytest.CaptureFixture[str],
                                                                  change: dict, keys: list[str]) -> None:
    sp = recorded.with_name(recorded.name + ".json")
    side = json.loads(sp.read_text())
    for k, v in change.items():
        if k == "info.clock":
            side["info"]["clock"]["seconds_per_device_s"] = v
        elif v is None:
            side.pop(k)
        else:
            side[k] = v
    if "info" not in side:
        side["channels"] = [0, 1, 2, 3, 4, 5, 6, 7]
    sp.write_text(json.dumps(side))
    code, res, err = integrate(capsys, recorded)
    line = one_line(err)
    assert code == EXIT_INPUT and res == {} and "t.csv.json" in line and all(k in line for k in keys), line


@pytest.mark.parametrize(("change", "key"), [
    ({"speed": 1000.0}, "clock.seconds_per_device_s"),
    ({"speed": 1000.0, "clock_spd": 0.001}, "speed 1000"),
])
def test_f17_a_capture_sidecar_with_an_impossible_speed_is_refused(capture: Path, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str], change: dict,
                                                                   key: str) -> None:
    raw = copy_capture(capture, tmp_path / "y.raw.bin", **change)
    code, _, err = run(capsys, "meter", "decode", str(raw), "--out", str(tmp_path / "y.csv"))
    line = one_line(err)
    assert code == EXIT_INPUT and "y.raw.bin.json" in line and key in line, line
    assert not (tmp_path / "y.csv").exists()


# --- F18 ------------------------------------------------------------------------------------------------------------



@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_f18_a_capture_without_its_sidecar_is_not_called_real(suffix: str, capture: Path, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / f"p{suffix}"
    with pipe_of(capture.read_bytes()) as p:
        code, _, err = run(capsys, "meter", "decode", p, "--out", str(out))
    assert code == EXIT_OK, err
    assert "cannot be told" in err and "source unknown" in err
    side = json.loads(out.with_name(out.name + ".json").read_text())
    assert side["emulated"] is None, "labelled real hardware without knowing"
    code, _, err = integrate(capsys, out)
    assert code == EXIT_OK and "source is not known" in err


def test_f18_a_capture_whose_own_bytes_say_emulated_is_labelled_emulated(capture: Path, tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "p.csv"
    session = VERSION_REPLY + EMULATED_LINE + PROMPT + capture.read_bytes()   # the serial session, handshake and all
    with pipe_of(session) as p:
        code, _, err = run(capsys, "meter", "decode", p, "--out", str(out), "--channels", "0,1,2,3")
    assert code == EXIT_OK, err
    assert "lost records 0, resyncs 0, skipped bytes 57" in err, err     # the handshake skipped, every record kept
    assert json.loads(out.with_name(out.name + ".json").read_text())["emulated"] is True and "(emulated)" in err


# --- F19 ------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("says", ["meter", "info.version"])
def test_f19_emulated_false_does_not_remove_the_label(says: str, recorded: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    sp = recorded.with_name(recorded.name + ".json")
    side = json.loads(sp.read_text())
    side["emulated"] = False
    side["info"]["emulated"] = False
    if says == "meter":
        side["info"]["meter"], side["info"]["version"] = "powermon2", "PowerMon HW v2.0 SW v2.2"
    else:
        side["meter"] = side["info"]["meter"] = "powermon2"
    sp.write_text(json.dumps(side))
    code, res, err = integrate(capsys, recorded)
    assert code == EXIT_OK, err
    assert res.get("emulated") is True


def test_f19_a_capture_sidecar_saying_false_beside_an_emulated_meter_stays_emulated(
        capture: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = copy_capture(capture, tmp_path / "w.raw.bin", emulated=False)
    code, _, err = run(capsys, "meter", "decode", str(raw), "--out", str(tmp_path / "w.csv"))
    assert code == EXIT_OK and "(emulated)" in err, err
    assert json.loads((tmp_path / "w.csv.json").read_text())["emulated"] is True


def test_the_open_files_limit_is_named_not_a_meter_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 36 U #11: under ``ulimit -n 8`` the emulated meter's pty could not be opened, reported as a device
    failure (exit 4) "Too many open files": it is this process's limit, the user's to raise (exit 2)."""
    import errno

    import serial

    from archline.common.exits import EXIT_INPUT
    from archline.powermon.errors import DeviceError, MeterError
    from archline.powermon.stream import serial_port

    def emfile(port: str, **kw: object) -> None:
        raise serial.SerialException(errno.EMFILE, f"could not open port {port}: [Errno 24] Too many open files")

    monkeypatch.setattr(serial_port.serial, "serial_for_url", emfile)
    with pytest.raises(MeterError) as e:
        serial_port.open_serial("/dev/pts/1", "PowerMon 2", 115200, 1.0)
    assert not isinstance(e.value, DeviceError) and e.value.exit_code == EXIT_INPUT
    assert "open-files limit (ulimit -n " in str(e.value) and "/dev/pts/1" in str(e.value)
