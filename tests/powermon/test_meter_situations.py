"""`archline meter` with the situation varied, not the value (issue 22): samples files that parse but lie (holes in the
cadence, one time for every row, times that go back, power far from V x I), implausible or mistyped sidecars, pipes
and devices as inputs, an output that is an input, /dev/null as an output, odd file names, and SIGTERM during a
recording or an emulator. Each case: the right result, or one line with its documented exit code."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.pipes import pipe_of
from support.powermon_helpers import make_capture, one_line, run

from archline.common.exits import EXIT_INPUT, EXIT_INTERRUPTED, EXIT_OK, EXIT_SAMPLES_LOST
from archline.formats.meters.versions import MAX_EMULATED_RECORDS_PER_S, max_emulator_speed
from archline.powermon.powermon2.emulator import EMULATED_LINE
from archline.powermon.powermon2.protocol import PROMPT, VERSION_REPLY

RATE_HZ = 128.0


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_capture(tmp_path_factory.mktemp("cap") / "c.raw.bin")


@pytest.fixture
def samples(capture: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    out = tmp_path / "s.csv"
    code, _, err = run(capsys, "meter", "decode", str(capture), "--out", str(out))
    assert code == 0, err
    return out


def rows(p: Path) -> tuple[list[str], list[list[str]]]:
    r = list(csv.reader(io.StringIO(p.read_text())))
    return r[0], r[1:]


def write_rows(p: Path, header: list[str], body: list[list[str]]) -> None:
    p.write_text("\n".join(",".join(r) for r in [header, *body]) + "\n")


def integrate_json(capsys: pytest.CaptureFixture[str], p: Path | str, *extra: str) -> tuple[int, dict, str]:
    code, out, err = run(capsys, "meter", "integrate", str(p), "--format", "json", *extra)
    return code, (json.loads(out) if out.strip() else {}), err


# --- content that parses but lies ---------------------------------------------------------------------------------

def test_a_cadence_with_holes_counts_them_as_lost_samples(samples: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Channel 2 keeps 1 sample in 20 while the sidecar says 128 Hz: the holes are lost samples (the live recorder's
    rule), reported, the bound widened, and over --max-lost the command fails with exit 6 after its report."""
    code, whole, err = integrate_json(capsys, samples)
    assert code == EXIT_OK and whole["lost_samples"] == 0, err
    header, body = rows(samples)
    kept, k = [], 0
    for r in body:
        if r[1] == "2":
            k += 1
            if k % 20:
                continue
        kept.append(r)
    write_rows(samples, header, kept)
    code, res, err = integrate_json(capsys, samples)
    assert code == EXIT_SAMPLES_LOST, err
    assert "lost" in one_line(err) and "--max-lost" in err
    n2 = res["channels"]["2"]["n_samples"]
    assert res["lost_samples"] >= 18 * n2 and res["lost_samples"] == res["channels"]["2"]["lost_samples"]
    assert res["energy_err_j"] > 10 * whole["energy_err_j"] + 1.0
    code, res2, err = integrate_json(capsys, samples, "--max-lost", "1")
    assert code == EXIT_OK and res2["lost_samples"] == res["lost_samples"] and "missing" in err


def test_all_rows_at_one_time_is_an_error(samples: Path, capsys: pytest.CaptureFixture[str]) -> None:
    header, body = rows(samples)
    write_rows(samples, header, [[body[0][0], *r[1:]] for r in body])
    code, _, err = integrate_json(capsys, samples)
    assert code == EXIT_INPUT and "one time" in one_line(err)


def test_times_that_go_back_are_an_error(samples: Path, capsys: pytest.CaptureFixture[str]) -> None:
    header, body = rows(samples)
    body[40], body[400] = body[400], body[40]
    write_rows(samples, header, body)
    code, _, err = integrate_json(capsys, samples)
    assert code == EXIT_INPUT and "does not increase" in one_line(err) and "channel" in err


def test_power_far_from_v_times_i_is_refused(samples: Path, capsys: pytest.CaptureFixture[str]) -> None:
    header, body = rows(samples)
    body[10][4] = "9999"          # beside ~36 W of V x I
    write_rows(samples, header, body)
    code, _, err = integrate_json(capsys, samples)
    line = one_line(err)
    assert code == EXIT_INPUT and "9999" in line and "voltage_v x current_a" in line and "0.1%" in line


# --- sidecars ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("clock", "key"), [
    ({"offset_s": float("nan")}, "offset_s"),
    ({"offset_s": float("inf")}, "offset_s"),
    ({"offset_s": 1.0, "drift_ppm": -1e6}, "drift_ppm"),
    ({"offset_s": 1.0, "drift_ppm": 5000.0}, "drift_ppm"),
    ({"offset_s": 1.0, "seconds_per_device_s": 0.0}, "seconds_per_device_s"),
])
def test_an_implausible_capture_clock_is_one_line(capture: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  clock: dict, key: str) -> None:
    raw = tmp_path / "c.raw.bin"
    raw.write_bytes(capture.read_bytes())
    side = json.loads(capture.with_name(capture.name + ".json").read_text())
    side["clock"] = clock
    raw.with_name(raw.name + ".json").write_text(json.dumps(side))
    code, _, err = run(capsys, "meter", "decode", str(raw), "--out", str(tmp_path / "o.csv"))
    line = one_line(err)
    assert code == EXIT_INPUT and "c.raw.bin.json" in line and key in line
    assert not (tmp_path / "o.csv").exists()


@pytest.mark.parametrize(("change", "key"), [
    ({"rate_hz": 0}, "rate_hz"), ({"rate_hz": float("nan")}, "rate_hz"), ({"rate_hz": "fast"}, "rate_hz"),
    ({"speed": -1}, "speed"), ({"emulated": "yes"}, "emulated"), ({"window_s": [5.0]}, "window_s"),
    ({"format": "archline.results/1"}, "format"),
])
def test_a_bad_samples_sidecar_is_one_line(samples: Path, capsys: pytest.CaptureFixture[str], change: dict,
                                           key: str) -> None:
    sp = samples.with_name(samples.name + ".json")
    sp.write_text(json.dumps({**json.loads(sp.read_text()), **change}))
    code, _, err = integrate_json(capsys, samples)
    line = one_line(err)
    assert code == EXIT_INPUT and "s.csv.json" in line and key in line


def test_a_newer_sidecar_is_read_as_far_as_known(samples: Path, capture: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    _, ref, _ = integrate_json(capsys, samples)
    sp = samples.with_name(samples.name + ".json")
    sp.write_text(json.dumps({**json.loads(sp.read_text()), "format": "archline.samples/7", "new_field": {"x": 1}}))
    code, res, err = integrate_json(capsys, samples)
    assert code == EXIT_OK and res == ref, err
    raw = tmp_path / "n.raw.bin"
    raw.write_bytes(capture.read_bytes())
    side = json.loads(capture.with_name(capture.name + ".json").read_text())
    side.update(format="archline.powermon2.raw/3", calibration={"gain": 1.0})
    side["clock"]["temperature_c"] = 25
    raw.with_name(raw.name + ".json").write_text(json.dumps(side))
    code, _, err = run(capsys, "meter", "decode", str(raw), "--out", str(tmp_path / "n.csv"))
    assert code == EXIT_OK, err
    assert (tmp_path / "n.csv").read_bytes() == samples.read_bytes()


# --- pipes and devices ---------------------------------------------------------------------------------------------



def test_integrate_and_decode_read_a_pipe(samples: Path, capture: Path, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    _, ref, _ = integrate_json(capsys, samples, "--start", "100.5", "--end", "103")
    with pipe_of(samples.read_bytes()) as p:
        code, res, err = integrate_json(capsys, p, "--start", "100.5", "--end", "103")
    assert code == EXIT_OK, err
    assert res["total_energy_j"] == ref["total_energy_j"] and "no sidecar" in err
    out = tmp_path / "p.csv"
    with pipe_of(capture.read_bytes()) as p:
        code, _, err = run(capsys, "meter", "decode", p, "--out", str(out), "--channels", "0,1,2,3")
    assert code == EXIT_OK, err
    assert len(out.read_bytes().splitlines()) == len(samples.read_bytes().splitlines())


def test_a_device_and_an_endless_pipe_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    code, _, err = run(capsys, "meter", "decode", "/dev/zero", "--out", str(tmp_path / "z.csv"))
    assert code == EXIT_INPUT and "device" in one_line(err)
    from archline.formats.meters import capture as cap

    monkeypatch.setattr(cap, "MAX_CAPTURE_STREAM_BYTES", 1 << 20)
    with pipe_of(None) as p:
        code, _, err = run(capsys, "meter", "decode", p, "--out", str(tmp_path / "z.csv"))
    assert code == EXIT_INPUT and "more than 1048576 bytes" in one_line(err)
    assert not (tmp_path / "z.csv").exists()


# --- outputs -------------------------------------------------------------------------------------------------------

def test_an_output_that_is_an_input_is_refused(capture: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    raw = tmp_path / "c.raw.bin"
    raw.write_bytes(capture.read_bytes())
    raw.with_name(raw.name + ".json").write_text(capture.with_name(capture.name + ".json").read_text())
    before = raw.read_bytes()
    (tmp_path / "l.csv").symlink_to(raw.name)                 # the output is a link to the capture
    code, _, err = run(capsys, "meter", "decode", str(raw), "--out", str(tmp_path / "l.csv"))
    assert code == EXIT_INPUT and "is an input" in one_line(err)
    (tmp_path / "m.csv.json").symlink_to(raw.name + ".json")  # the output's sidecar is the capture's
    code, _, err = run(capsys, "meter", "decode", str(raw), "--out", str(tmp_path / "m.csv"))
    assert code == EXIT_INPUT and "is an input" in one_line(err)
    assert raw.read_bytes() == before and json.loads(raw.with_name(raw.name + ".json").read_text())["channels"]
    # a recording whose raw capture would be its own trace
    (tmp_path / "t.raw.bin").symlink_to("t.csv")
    code, _, err = run(capsys, "meter", "record", "--meter", "emulated:8", "--duration", "0.2", "--out",
                       str(tmp_path / "t.csv"))
    assert code == EXIT_INPUT and "raw capture" in one_line(err)


def test_dev_null_is_written_as_a_stream(capture: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "meter", "decode", str(capture), "--out", "/dev/null")
    assert code == EXIT_OK and "-> /dev/null" in err
    code, out, err = run(capsys, "meter", "record", "--meter", "emulated:8", "--duration", "0.3", "--out", "/dev/null")
    assert code == EXIT_OK, err
    summary = json.loads(out)
    assert summary["trace"] == "/dev/null" and "raw" not in summary
    assert os.path.exists("/dev/null") and not os.path.exists("/dev/null.json")


# --- odd names and signals (subprocesses) --------------------------------------------------------------------------

def archline(args: list[bytes | str], cwd: Path, **kw: object) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "archline.cli", *args], cwd=cwd, capture_output=True, timeout=60,
                          **kw)  # type: ignore[call-overload]


@pytest.mark.parametrize("name", [b"\xff", b"new\nline"], ids=["not-utf8", "newline"])
def test_odd_file_names(name: bytes, capture: Path, tmp_path: Path) -> None:
    raw = tmp_path / os.fsdecode(name + b".raw.bin")
    raw.write_bytes(capture.read_bytes())
    p = archline([b"meter", b"decode", name + b".raw.bin", b"--out", name + b".csv"], tmp_path)
    assert p.returncode == 0 and b"Traceback" not in p.stderr, p.stderr
    assert (tmp_path / os.fsdecode(name + b".csv")).exists()
    p = archline([b"meter", b"record", b"--meter", b"emulated:8", b"--duration", b"0.3", b"--out",
                  name + b"-rec.csv"], tmp_path)
    assert p.returncode == 0 and b"Traceback" not in p.stderr, p.stderr
    assert (tmp_path / os.fsdecode(name + b"-rec.csv")).exists()
    assert (tmp_path / os.fsdecode(name + b"-rec.raw.bin")).exists()
    p = archline([b"meter", b"integrate", name + b"-rec.csv"], tmp_path)
    assert p.returncode == 0, p.stderr
    p = archline([b"meter", b"decode", name + b"-missing.raw.bin", b"--out", b"x.csv"], tmp_path)
    assert p.returncode == 2 and p.stderr.count(b"\n") == 1 and b"Traceback" not in p.stderr


def _term_after(args: list[str], cwd: Path, after_s: float) -> subprocess.CompletedProcess[bytes]:
    proc = subprocess.Popen([sys.executable, "-m", "archline.cli", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60       # started (its first file, often a hidden temp, exists): a loaded machine
    while not any(cwd.iterdir()) and proc.poll() is None and time.monotonic() < deadline:    # imports slowly
        time.sleep(0.02)
    time.sleep(after_s)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


def test_sigterm_during_a_recording(tmp_path: Path) -> None:
    """SIGTERM ~1.5 s into a 10 s recording: exit 130, the trace, its sidecar and the raw capture finished and
    whole, no hidden temp file left."""
    p = _term_after(["meter", "record", "--meter", "emulated:4", "--duration", "10", "--out", "t.csv"], tmp_path, 1.5)
    assert p.returncode == EXIT_INTERRUPTED and b"interrupted" in p.stderr and b"Traceback" not in p.stderr, p.stderr
    assert sorted(x.name for x in tmp_path.iterdir()) == ["t.csv", "t.csv.json", "t.raw.bin", "t.raw.bin.json"]
    summary = json.loads(p.stdout)
    assert summary["trace"] == "t.csv"
    assert summary["interrupted"] is True and summary["duration_requested_s"] == 10.0   # breaker 24 item 10
    assert json.loads((tmp_path / "t.csv.json").read_text())["interrupted"] is True
    q = archline(["meter", "integrate", "t.csv", "--format", "json"], tmp_path)
    assert q.returncode == 0, q.stderr
    assert b"interrupted (a signal) before its 10 s ended" in q.stderr
    q = archline(["meter", "decode", "t.raw.bin", "--out", "u.csv"], tmp_path)
    assert q.returncode == 0, q.stderr


def test_sigterm_stops_an_emulator(tmp_path: Path) -> None:
    p = _term_after(["meter", "emulate", "--speed", "4", "--port-file", "port.txt"], tmp_path, 1.5)
    assert p.returncode == EXIT_INTERRUPTED and b"interrupted" in p.stderr and b"Traceback" not in p.stderr
    # --port-file names the pty only while it is open: removed when it closes (a pts number the next terminal reuses)
    assert sorted(x.name for x in tmp_path.iterdir()) == []


# --- folded from test_breaker_meter.py (a review round's regression tests) ---------------------------------------
# `archline meter` against the hostile tester's reproducers (issue 22 findings F7, F9, F12, F17, F18, F19): each test
# is the tester's case, and each failed before its fix.
#
# * F7: a FIFO named ``*.parquet`` as an output was deleted (pyarrow removes the path it fails to write);
# * F9: ``meter decode`` wrote the samples file, then refused its sidecar (an input), leaving the file behind;
# * F12: an emulator speed the pty cannot carry gave a thread traceback (or lost 99% of the samples);
# * F17: a samples or capture sidecar whose speed, info.speed and clock contradict each other was trusted;
# * F18: a capture decoded without its sidecar was labelled real hardware;
# * F19: ``"emulated": false`` removed the label although the meter name and version said EMULATED.


SPEED = 4.0


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_capture(tmp_path_factory.mktemp("cap") / "c.raw.bin", speed=SPEED, seconds=3,
                        meter="powermon2-emulated", version="PowerMon HW v2.0 SW v2.2 EMULATED by archline")


def copy_capture(captured: Path, dest: Path, **change: object) -> Path:
    dest.write_bytes(captured.read_bytes())
    side = json.loads(captured.with_name(captured.name + ".json").read_text())
    for k, v in change.items():
        if k == "clock_spd":
            side["clock"]["seconds_per_device_s"] = v
        else:
            side[k] = v
    dest.with_name(dest.name + ".json").write_text(json.dumps(side))
    return dest


@pytest.fixture
def recorded(captured: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """t.csv with a sidecar shaped as `meter record --meter emulated:4` writes it (speed, info.speed, info.clock)."""
    out = tmp_path / "t.csv"
    code, _, err = run(capsys, "meter", "decode", str(captured), "--out", str(out))
    assert code == EXIT_OK, err
    sp = out.with_name(out.name + ".json")
    side = json.loads(sp.read_text())
    raw_side = json.loads(captured.with_name(captured.name + ".json").read_text())
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
def test_f7_a_fifo_parquet_output_is_written_as_a_stream_and_kept(command: str, captured: Path, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "d.parquet"
    with fifo_reader(out) as got:
        args = (["meter", "decode", str(captured), "--out", str(out)] if command == "decode" else
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
def test_f9_decode_checks_every_output_before_writing(suffix: str, captured: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / f"q{suffix}"
    raw = copy_capture(captured, tmp_path / f"q{suffix}.json")      # the capture is the output's sidecar name
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
def test_f17_a_capture_sidecar_with_an_impossible_speed_is_refused(captured: Path, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str], change: dict,
                                                                   key: str) -> None:
    raw = copy_capture(captured, tmp_path / "y.raw.bin", **change)
    code, _, err = run(capsys, "meter", "decode", str(raw), "--out", str(tmp_path / "y.csv"))
    line = one_line(err)
    assert code == EXIT_INPUT and "y.raw.bin.json" in line and key in line, line
    assert not (tmp_path / "y.csv").exists()


# --- F18 ------------------------------------------------------------------------------------------------------------



@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_f18_a_capture_without_its_sidecar_is_not_called_real(suffix: str, captured: Path, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / f"p{suffix}"
    with pipe_of(captured.read_bytes()) as p:
        code, _, err = run(capsys, "meter", "decode", p, "--out", str(out))
    assert code == EXIT_OK, err
    assert "cannot be told" in err and "source unknown" in err
    side = json.loads(out.with_name(out.name + ".json").read_text())
    assert side["emulated"] is None, "labelled real hardware without knowing"
    code, _, err = integrate(capsys, out)
    assert code == EXIT_OK and "source is not known" in err


def test_f18_a_capture_whose_own_bytes_say_emulated_is_labelled_emulated(captured: Path, tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "p.csv"
    session = VERSION_REPLY + EMULATED_LINE + PROMPT + captured.read_bytes()   # the serial session, handshake and all
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
        captured: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = copy_capture(captured, tmp_path / "w.raw.bin", emulated=False)
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
