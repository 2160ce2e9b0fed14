"""Breaker 24b, meter record's outputs: the raw capture keeps the trace's whole name and never replaces another
recording's (1), a trace written to stdout keeps the summary out of it (2), and every output is checked before the
meter starts, with nothing half-written left when a write fails at the end (6)."""

from __future__ import annotations

import csv
import errno
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from archline.common.exits import EXIT_INPUT, EXIT_OK, EXIT_WRITE

HEADER = "t_s,channel,voltage_v,current_a,power_w"


def _record(run_cli: Any, out: str | Path, *extra: str, duration: str = "0.3") -> Any:
    return run_cli("meter", "record", "--meter", "emulated:8", "--duration", duration, "--out", str(out), *extra)


def _files(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir())


# ---------------------------------------------------------------------------------------------- (1) capture name
@pytest.mark.parametrize(("trace", "raw"), [("run.1.csv", "run.1.raw.bin"), ("h1.2.csv.gz", "h1.2.raw.bin"),
                                            ("x_stall_0.5_0.5.parquet", "x_stall_0.5_0.5.raw.bin"),
                                            ("t.CSV", "t.raw.bin")])
def test_the_capture_keeps_the_whole_trace_name(trace: str, raw: str) -> None:
    from archline.powermon.recording import raw_capture_path

    assert raw_capture_path(Path("/d") / trace) == Path("/d") / raw


def test_two_recordings_with_dotted_names_keep_both_captures(run_cli: Any, tmp_path: Path) -> None:
    """run.1.csv then run.2.csv both wrote run.raw.bin: the second replaced the first silently."""
    for n in (1, 2):
        r = _record(run_cli, tmp_path / f"run.{n}.csv")
        assert r.exit_code == EXIT_OK, r.stderr
        assert json.loads(r.stdout)["raw"] == str(tmp_path / f"run.{n}.raw.bin")
    assert _files(tmp_path) == [f"run.{n}.{x}" for n in (1, 2) for x in ("csv", "csv.json", "raw.bin",
                                                                          "raw.bin.json")]
    side = json.loads((tmp_path / "run.1.csv.json").read_text())
    assert side["raw"] == "run.1.raw.bin"
    d = run_cli("meter", "decode", str(tmp_path / "run.1.raw.bin"), "--out", str(tmp_path / "d.csv"))
    assert d.exit_code == EXIT_OK, d.stderr


def test_another_recordings_capture_is_never_replaced(run_cli: Any, tmp_path: Path) -> None:
    """t.csv and then t.parquet share t.raw.bin: the second is refused before it records (exit 2, one line), and the
    first recording's capture is untouched; rerunning t.csv itself replaces its own capture, as any output."""
    assert _record(run_cli, tmp_path / "t.csv").exit_code == EXIT_OK
    before = (tmp_path / "t.raw.bin").read_bytes()
    r = _record(run_cli, tmp_path / "t.parquet", duration="30")      # refused at once: not 30 s
    assert r.exit_code == EXIT_INPUT and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "t.raw.bin" in r.stderr and "already exists" in r.stderr, r.stderr
    assert (tmp_path / "t.raw.bin").read_bytes() == before
    assert _files(tmp_path) == ["t.csv", "t.csv.json", "t.raw.bin", "t.raw.bin.json"]
    first = (tmp_path / "t.raw.bin").stat()
    assert _record(run_cli, tmp_path / "t.csv").exit_code == EXIT_OK       # its own capture: replaced
    again = (tmp_path / "t.raw.bin").stat()
    # a new file (the emulator may stream the very same bytes again, so compare the file, not its bytes)
    assert (again.st_ino, again.st_mtime_ns) != (first.st_ino, first.st_mtime_ns)


def test_a_stray_capture_sidecar_is_not_replaced(run_cli: Any, tmp_path: Path) -> None:
    (tmp_path / "q.raw.bin.json").write_text("{}")
    r = _record(run_cli, tmp_path / "q.csv")
    assert r.exit_code == EXIT_INPUT and "q.raw.bin.json" in r.stderr, r.stderr
    assert _files(tmp_path) == ["q.raw.bin.json"] and (tmp_path / "q.raw.bin.json").read_text() == "{}"


# ---------------------------------------------------------------------------------------------- (2) stdout
def _cli(args: list[str], cwd: Path, stdout: Any) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "archline.cli", *args], cwd=cwd, stdout=stdout,
                          stderr=subprocess.PIPE, timeout=120, check=False)


def _trace_rows(text: str) -> list[dict[str, str]]:
    assert text.startswith(HEADER + "\n"), text[:200]
    rows = list(csv.DictReader(io.StringIO(text)))
    assert rows and all(len(r) == 5 and None not in r.values() for r in rows)
    float(rows[-1]["power_w"])          # the last line is a whole sample, not the summary
    return rows


@pytest.mark.parametrize("fmt", ["json", "table"])
@pytest.mark.parametrize("name", ["/dev/stdout", "/dev/fd/1", "same file"])
def test_a_trace_on_stdout_redirected_to_a_file_stays_whole(tmp_path: Path, fmt: str, name: str) -> None:
    """`--out /dev/stdout > so.txt`: the summary overwrote the trace's header; now it goes to stderr (also for
    `--out so.csv > so.csv`, where it went to the replaced file and was lost)."""
    so = tmp_path / ("so.csv" if name == "same file" else "so.txt")
    out = str(so) if name == "same file" else name
    with open(so, "wb") as f:
        p = _cli(["meter", "record", "--meter", "emulated:8", "--duration", "0.3", "--out", out, "--format", fmt],
                 tmp_path, f)
    assert p.returncode == EXIT_OK, p.stderr
    rows = _trace_rows(so.read_text())
    assert {r["channel"] for r in rows} == {str(c) for c in range(8)}
    err = p.stderr.decode()
    if fmt == "json":
        summary = json.loads(err)          # the window's samples: within what the trace holds
        assert 0 < summary["powermon2-emulated"]["n_samples"] <= len(rows) and summary["trace"] == out
    else:
        assert "energy_j" in err and f"trace {out}" in err
    if name != "same file":
        assert _files(tmp_path) == ["so.txt"]        # a stream gets no sidecar and no capture


@pytest.mark.parametrize("fmt", ["json", "table"])
def test_a_trace_on_stdout_through_a_pipe_has_no_summary_after_it(tmp_path: Path, fmt: str) -> None:
    p = _cli(["meter", "record", "--meter", "emulated:8", "--duration", "0.3", "--out", "/dev/stdout", "--format",
              fmt], tmp_path, subprocess.PIPE)
    assert p.returncode == EXIT_OK, p.stderr
    rows = _trace_rows(p.stdout.decode())
    err = p.stderr.decode()
    if fmt == "json":
        assert 0 < json.loads(err)["powermon2-emulated"]["n_samples"] <= len(rows)
    else:
        assert "energy_j" in err and "trace /dev/stdout" in err
    assert _files(tmp_path) == []


def test_a_trace_in_a_file_keeps_the_summary_on_stdout(tmp_path: Path) -> None:
    p = _cli(["meter", "record", "--meter", "emulated:8", "--duration", "0.3", "--out", "t.csv"], tmp_path,
             subprocess.PIPE)
    assert p.returncode == EXIT_OK, p.stderr
    assert json.loads(p.stdout)["trace"] == "t.csv" and p.stderr == b""


def test_writes_stdout_tells_dev_null_apart() -> None:
    from archline.powermon.recording import writes_stdout

    assert writes_stdout("/dev/stdout") and writes_stdout("/dev/fd/1")
    assert not writes_stdout(os.devnull)


# ---------------------------------------------------------------------------------------------- (6) checked first
def _refused_at_once(r: Any, name: str) -> None:
    assert r.exit_code == EXIT_WRITE and r.stdout == "", (r.exit_code, r.stderr)
    assert r.stderr.count("\n") == 1 and name in r.stderr and ".tmp" not in r.stderr, r.stderr


def test_a_dangling_link_is_refused_before_recording(run_cli: Any, tmp_path: Path) -> None:
    (tmp_path / "dangling.csv").symlink_to(tmp_path / "missing" / "x.csv")
    r = _record(run_cli, tmp_path / "dangling.csv", duration="60")    # refused at once, not after 60 s
    _refused_at_once(r, "dangling.csv")
    assert _files(tmp_path) == ["dangling.csv"] and not (tmp_path / "missing").exists()


def test_a_directory_named_as_the_sidecar_is_refused_before_recording(run_cli: Any, tmp_path: Path) -> None:
    """`mkdir z.csv.json` left z.csv without its sidecar (integrate then lost the 4x time compression) and the
    capture behind."""
    (tmp_path / "z.csv.json").mkdir()
    r = _record(run_cli, tmp_path / "z.csv", duration="60")
    _refused_at_once(r, "z.csv.json")
    assert _files(tmp_path) == ["z.csv.json"] and not any((tmp_path / "z.csv.json").iterdir())


def test_a_directory_named_as_the_capture_is_refused_before_recording(run_cli: Any, tmp_path: Path) -> None:
    (tmp_path / "c.raw.bin").mkdir()
    r = _record(run_cli, tmp_path / "c.csv", duration="60")
    assert r.exit_code in (EXIT_INPUT, EXIT_WRITE) and "c.raw.bin" in r.stderr and r.stderr.count("\n") == 1
    assert _files(tmp_path) == ["c.raw.bin"]


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")
def test_an_output_in_proc_names_the_users_path(run_cli: Any, tmp_path: Path) -> None:
    r = _record(run_cli, "/proc/x.csv", duration="60")
    _refused_at_once(r, "/proc/x.csv")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_dev_full_is_refused_before_recording(run_cli: Any, tmp_path: Path) -> None:
    r = _record(run_cli, "/dev/full", duration="60")
    _refused_at_once(r, "/dev/full")
    assert "space" in r.stderr


@pytest.mark.parametrize("where", ["trace", "sidecar"])
def test_a_write_that_fails_at_the_end_leaves_nothing(run_cli: Any, tmp_path: Path, monkeypatch: Any,
                                                      where: str) -> None:
    """A full disk while the trace or its sidecar is written: exit 7 naming the user's file, and neither the
    trace, its sidecar, nor the capture (finished before them) is left."""
    import archline.powermon.record.samples_file as sf

    def full(*a: Any, **k: Any) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp_path / ("t.csv.json" if where == "sidecar"
                                                                                 else "t.csv")))
    if where == "sidecar":
        monkeypatch.setattr(sf, "_write_sidecar", full)
    else:
        monkeypatch.setattr("archline.powermon.record.traces.csv_bytes", full)
    r = _record(run_cli, tmp_path / "t.csv")
    assert r.exit_code == EXIT_WRITE and "t.csv" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert _files(tmp_path) == []


def test_a_failed_write_keeps_files_it_did_not_make(run_cli: Any, tmp_path: Path, monkeypatch: Any) -> None:
    """Another recording's files beside it are left as they were."""
    assert _record(run_cli, tmp_path / "a.csv").exit_code == EXIT_OK
    before = {n: (tmp_path / n).read_bytes() for n in _files(tmp_path)}
    import archline.powermon.record.samples_file as sf

    def full(*a: Any, **k: Any) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp_path / "b.csv.json"))
    monkeypatch.setattr(sf, "_write_sidecar", full)
    assert _record(run_cli, tmp_path / "b.csv").exit_code == EXIT_WRITE
    assert {n: (tmp_path / n).read_bytes() for n in _files(tmp_path)} == before


def test_probe_checks_its_out_before_the_probe(run_cli: Any, tmp_path: Path) -> None:
    (tmp_path / "dang.json").symlink_to(tmp_path / "missing" / "p.json")
    r = run_cli("meter", "probe", "nvml0", "--emulate", "--steps", "1000", "--step", "3600", "--out",
                str(tmp_path / "dang.json"))
    _refused_at_once(r, "dang.json")
    assert _files(tmp_path) == ["dang.json"]
