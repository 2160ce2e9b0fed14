"""`archline meter` with the situation varied, not the value (issue 22): samples files that parse but lie (holes in the
cadence, one time for every row, times that go back, power far from V x I), implausible or mistyped sidecars, pipes
and devices as inputs, an output that is an input, /dev/null as an output, odd file names, and SIGTERM during a
recording or an emulator. Each case: the right result, or one line with its documented exit code."""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.pipes import pipe_of
from support.powermon_helpers import make_capture, one_line, run

from archline.common.exits import EXIT_INPUT, EXIT_INTERRUPTED, EXIT_OK, EXIT_SAMPLES_LOST

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
    from archline.powermon.powermon2 import capture as cap

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
